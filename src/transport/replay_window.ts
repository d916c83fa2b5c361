/**
 * Which datagram counters of one sender key have been accepted: the replay defence of
 * RFC 4303 §3.4.3 (IPsec's anti-replay window), over the AEAD counter every datagram carries.
 *
 * Owns one bitmap of the last `size` counters below the largest accepted. A counter seen
 * before, or older than the window, is refused: a datagram replayed or duplicated (by the
 * network or an attacker, from any address) is never processed twice. Honest reordering
 * deeper than the window only costs a retransmission. Pure arithmetic; no clock.
 */

import { assert } from "../lib/assert.ts";

export class ReplayWindow {
  readonly #size: number;
  readonly #bits: Uint32Array;
  /** The largest counter accepted; -1 before the first. */
  #top = -1;

  /** `size`: counters remembered below the largest (a multiple of 32). */
  constructor(size: number) {
    assert(size >= 32 && size % 32 === 0, "replay window size must be a multiple of 32");
    this.#size = size;
    this.#bits = new Uint32Array(size / 32);
  }

  /** Whether `counter` would be accepted (changes nothing: check before authenticating). */
  isNew(counter: number): boolean {
    if (counter > this.#top) return true;
    if (this.#top - counter >= this.#size) return false;
    return !this.#has(counter);
  }

  /** Accepts `counter`; call only once its datagram authenticated and `isNew` held. */
  mark(counter: number): void {
    assert(this.isNew(counter), "replay window: counter marked twice");
    if (counter > this.#top) {
      // Slide: the slots of the counters skipped over are cleared for reuse.
      const skipped = this.#top < 0 ? this.#size : Math.min(counter - this.#top, this.#size);
      if (skipped >= this.#size) this.#bits.fill(0);
      else for (let c = this.#top + 1; c <= counter; c++) this.#clear(c);
      this.#top = counter;
    }
    const slot = counter % this.#size;
    this.#bits[slot >>> 5]! |= 1 << (slot & 31);
  }

  #has(counter: number): boolean {
    const slot = counter % this.#size;
    return (this.#bits[slot >>> 5]! & (1 << (slot & 31))) !== 0;
  }

  #clear(counter: number): void {
    const slot = counter % this.#size;
    this.#bits[slot >>> 5]! &= ~(1 << (slot & 31));
  }
}
