/**
 * One endpoint's token bucket on one node, as a generic cell rate algorithm (GCRA): the bucket
 * is a single time, the "theoretical arrival time" `tatMs`, instead of a fractional token count.
 * An attempt may start at `nowMs` when `nowMs >= tatMs - toleranceMs`, and then moves `tatMs`
 * on by one interval. Comparing times the same arithmetic produced keeps the wake time exact:
 * a timer armed at `nextAllowedMs()` finds the attempt allowed when it fires, where a
 * fractional token count could read 0.9999999 there and wake again.
 *
 * Owns the arithmetic only (the delivery core keeps the queues and timers). Pure: no clock, no
 * I/O; callers pass `nowMs`.
 *
 * Bound: from any state, at most `capacity + windowMs / intervalMs` attempts start in a window
 * of `windowMs` (half-open), so a node makes at most `share + capacity` attempts in any second.
 */

import { assert, fail } from "../lib/assert.ts";

export class RateBucket {
  #intervalMs: number;
  #capacity: number;
  #tatMs = -Infinity;

  /** `ratePerS` > 0 attempts per second; the bucket holds `burstMs` of them (at least one). */
  constructor(ratePerS: number, burstMs: number) {
    const { intervalMs, capacity } = shape(ratePerS, burstMs);
    this.#intervalMs = intervalMs;
    this.#capacity = capacity;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /**
   * The rate changed: the debt left (how far `tatMs` lies ahead) is rescaled to the new
   * interval, so a raised limit frees held attempts at once and a lowered one slows them.
   */
  setRate(nowMs: number, ratePerS: number, burstMs: number): void {
    const { intervalMs, capacity } = shape(ratePerS, burstMs);
    if (intervalMs === this.#intervalMs && capacity === this.#capacity) return;
    if (this.#tatMs > nowMs) {
      this.#tatMs = nowMs + (this.#tatMs - nowMs) * (intervalMs / this.#intervalMs);
    }
    this.#intervalMs = intervalMs;
    this.#capacity = capacity;
  }

  #toleranceMs(): number {
    return (this.#capacity - 1) * this.#intervalMs;
  }

  /** When the next attempt may start (epoch ms); at or before `nowMs` when one may now. */
  nextAllowedMs(): number {
    return this.#tatMs - this.#toleranceMs();
  }

  /** When the bucket is full again: past it, it is the same as a new one (and can go). */
  fullAtMs(): number {
    return this.#tatMs;
  }

  /** Takes one attempt's token if one is there. */
  take(nowMs: number): boolean {
    if (nowMs < this.nextAllowedMs()) return false;
    this.#tatMs = Math.max(this.#tatMs, nowMs) + this.#intervalMs;
    assert(this.#tatMs - nowMs <= this.#capacity * this.#intervalMs + 1e-6, "bucket overfilled");
    return true;
  }

  /** Attempts that may start now, one after the other (0 when none). */
  available(nowMs: number): number {
    if (nowMs < this.nextAllowedMs()) return 0;
    if (this.#tatMs <= nowMs) return this.#capacity;
    const n = Math.floor((nowMs - this.nextAllowedMs()) / this.#intervalMs) + 1;
    return Math.min(this.#capacity, n);
  }
}

function shape(ratePerS: number, burstMs: number): { intervalMs: number; capacity: number } {
  if (!(Number.isFinite(ratePerS) && ratePerS > 0)) fail(`rate ${ratePerS} must be > 0`);
  if (!(Number.isFinite(burstMs) && burstMs >= 0)) fail(`burst ${burstMs} must be >= 0`);
  return {
    intervalMs: 1_000 / ratePerS,
    capacity: Math.max(1, Math.floor((ratePerS * burstMs) / 1_000)),
  };
}
