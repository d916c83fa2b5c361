/**
 * A per-origin circuit breaker: after `failureThreshold` consecutive origin failures it opens
 * and lets no attempt start for `openMs`; then it lets one trial through (half-open). A
 * successful trial closes it; a failed one reopens it for twice as long, up to `openMaxMs`.
 *
 * Owns one origin's breaker state. Pure: time comes in as `nowMs`. Must not schedule timers;
 * the engine core wakes itself at `reopenAtMs`.
 */

import { assert } from "../lib/assert.ts";

export type BreakerState = "closed" | "open" | "half_open";

export interface BreakerConfig {
  failureThreshold: number;
  openMs: number;
  openMaxMs: number;
}

export class CircuitBreaker {
  readonly #config: BreakerConfig;
  #state: BreakerState = "closed";
  #consecutiveFailures = 0;
  #openForMs: number;
  #reopenAtMs = 0;
  #trialInFlight = false;

  constructor(config: BreakerConfig) {
    this.#config = config;
    this.#openForMs = config.openMs;
  }

  get state(): BreakerState {
    return this.#state;
  }

  /** When an open breaker next lets a trial through (epoch ms); meaningful only when open. */
  get reopenAtMs(): number {
    return this.#reopenAtMs;
  }

  get consecutiveFailures(): number {
    return this.#consecutiveFailures;
  }

  /** Whether an attempt may start now. Moves open → half-open once the open time is over. */
  canStart(nowMs: number): boolean {
    if (this.#state === "open" && nowMs >= this.#reopenAtMs) {
      this.#state = "half_open";
      this.#trialInFlight = false;
    }
    if (this.#state === "closed") return true;
    return this.#state === "half_open" && !this.#trialInFlight;
  }

  /** An attempt starts (after `canStart` said yes); returns whether it is the half-open trial. */
  onStart(nowMs: number): boolean {
    assert(this.canStart(nowMs), "CircuitBreaker.onStart without canStart");
    if (this.#state !== "half_open") return false;
    this.#trialInFlight = true;
    return true;
  }

  /**
   * An attempt ended; `originFailed` says whether it counts against the origin. In half-open
   * state only the trial's result counts; results of attempts started before the breaker
   * opened do not move an open breaker (they describe the past).
   */
  onResult(nowMs: number, originFailed: boolean, wasTrial: boolean): void {
    switch (this.#state) {
      case "closed":
        if (!originFailed) {
          this.#consecutiveFailures = 0;
          return;
        }
        this.#consecutiveFailures++;
        if (this.#consecutiveFailures >= this.#config.failureThreshold) this.#open(nowMs);
        return;
      case "half_open":
        if (!wasTrial || !this.#trialInFlight) return;
        this.#trialInFlight = false;
        if (originFailed) {
          this.#consecutiveFailures++;
          this.#openForMs = Math.min(this.#openForMs * 2, this.#config.openMaxMs);
          this.#open(nowMs);
        } else {
          this.#state = "closed";
          this.#consecutiveFailures = 0;
          this.#openForMs = this.#config.openMs;
        }
        return;
      case "open":
        return;
    }
  }

  /** True when the breaker holds no memory worth keeping (closed, no failures). */
  get idle(): boolean {
    return this.#state === "closed" && this.#consecutiveFailures === 0;
  }

  #open(nowMs: number): void {
    this.#state = "open";
    this.#reopenAtMs = nowMs + this.#openForMs;
    this.#trialInFlight = false;
  }
}
