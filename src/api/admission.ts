/**
 * Admission control at the HTTP edge: at most `limit` submit requests (a job, a batch, a retry
 * by hand) are inside the node at once, body read included. Past it the answer is an
 * immediate 503, before the body is read, so an overloaded node spends almost nothing on the
 * requests it refuses and keeps its event loop for /healthz, /readyz, /metrics and SWIM.
 *
 * Owns the in-flight count only (no I/O, no clock). The job store has its own queue bounds
 * behind this one; this gate bounds what the HTTP layer holds (bodies and parked promises).
 */

import { assert } from "../lib/assert.ts";

export class AdmissionGate {
  readonly #limit: number;
  #inFlight = 0;

  constructor(limit: number) {
    assert(
      Number.isInteger(limit) && limit > 0,
      `admission limit must be a positive integer, got ${limit}`,
    );
    this.#limit = limit;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get limit(): number {
    return this.#limit;
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
