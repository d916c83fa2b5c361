/**
 * Admission control at the HTTP edge, two bounds:
 * - `AdmissionGate`: at most `limit` submit requests (a job, a batch, a retry by hand) are
 *   inside the node at once, from the end of their body read to the store's answer. When all
 *   are taken a submit is refused 503 before its body is read, so an overloaded node spends
 *   almost nothing on it and keeps its event loop for /healthz, /readyz, /metrics and SWIM.
 * - `ByteBudget`: the bytes of request bodies held at once, counted as they arrive. It bounds
 *   memory, so a body is read before its request takes a slot: a client trickling its body
 *   holds the bytes it sent, not a slot (256 of them once locked every submitter out).
 *
 * Owns the counts only (no I/O, no clock). The job store has its own queue bounds behind
 * these; they bound what the HTTP layer holds (bodies and parked promises).
 */

import { assert, fail } from "../lib/assert.ts";

export class AdmissionGate {
  readonly #limit: number;
  #inFlight = 0;

  constructor(limit: number) {
    if (!(Number.isInteger(limit) && limit > 0)) {
      fail(`admission limit must be a positive integer, got ${limit}`);
    }
    this.#limit = limit;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Every slot is taken: a submit now would be refused (checked before reading a body). */
  get full(): boolean {
    return this.#inFlight >= this.#limit;
  }

  /** Takes a slot, or false when all are taken. Each true must be paired with `release`. */
  tryAcquire(): boolean {
    if (this.#inFlight >= this.#limit) return false;
    this.#inFlight++;
    return true;
  }

  release(): void {
    assert(this.#inFlight > 0, "admission slot released twice");
    this.#inFlight--;
  }
}

/** A bound on bytes held at once; every successful `tryTake(n)` is paired with `give(n)`. */
export class ByteBudget {
  readonly #bytesMax: number;
  #held = 0;

  constructor(bytesMax: number) {
    if (!(Number.isInteger(bytesMax) && bytesMax > 0)) {
      fail(`byte budget must be a positive integer, got ${bytesMax}`);
    }
    this.#bytesMax = bytesMax;
  }

  get held(): number {
    return this.#held;
  }

  /** Takes `bytes`, or false (taking nothing) when that would pass the bound. */
  tryTake(bytes: number): boolean {
    if (!(Number.isInteger(bytes) && bytes >= 0)) fail(`byte budget: bad take ${bytes}`);
    if (this.#held + bytes > this.#bytesMax) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    if (!(bytes >= 0 && bytes <= this.#held)) fail(`byte budget: gave ${bytes} of ${this.#held}`);
    this.#held -= bytes;
  }
}
