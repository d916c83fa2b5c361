/**
 * A token bucket in the caller's time: up to `perSecond` tokens, refilled continuously at
 * `perSecond` a second, starting full. The endpoint budgets key derivations with it.
 *
 * Owns its count and last refill time only; no clock (every call takes `nowMs`).
 */

import { assert } from "../lib/assert.ts";

export class TokenBucket {
  readonly #perSecond: number;
  #tokens: number;
  #refilledMs = -Infinity;

  constructor(perSecond: number) {
    assert(perSecond > 0, "a token bucket needs a positive rate");
    this.#perSecond = perSecond;
    this.#tokens = perSecond;
  }

  /** Takes one token if there is one now. */
  take(nowMs: number): boolean {
    if (nowMs > this.#refilledMs) {
      const earned = this.#refilledMs === -Infinity
        ? this.#perSecond
        : (nowMs - this.#refilledMs) * this.#perSecond / 1000;
      this.#tokens = Math.min(this.#perSecond, this.#tokens + earned);
      this.#refilledMs = nowMs;
    }
    if (this.#tokens < 1) return false;
    this.#tokens--;
    return true;
  }
}
