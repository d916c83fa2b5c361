/**
 * A small, fast, seedable PRNG (sfc32) injected into every protocol core.
 *
 * Owns the generator state only. No core may call `Math.random`: the simulator must replay a
 * failing seed exactly, so every random choice flows from an `Rng` the caller hands in.
 * Production nodes seed one from `crypto.getRandomValues`.
 */

export interface Rng {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** A new generator whose stream is independent of this one's future draws. */
  fork(): Rng;
}

export class Sfc32 implements Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    // splitmix32 spreads a small seed over the four words so that nearby seeds diverge at once.
    let s = seed >>> 0;
    const split = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = split();
    this.#b = split();
    this.#c = split();
    this.#d = split();
    for (let i = 0; i < 12; i++) this.#u32();
  }

  #u32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  next(): number {
    return this.#u32() / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  fork(): Rng {
    return new Sfc32(this.#u32());
  }
}

/** A generator seeded from the operating system, for production use. */
export function randomRng(): Rng {
  const seed = crypto.getRandomValues(new Uint32Array(1))[0]!;
  return new Sfc32(seed);
}
