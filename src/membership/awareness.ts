/**
 * Lifeguard local-health awareness: a small score that rises when this node sees signs that it
 * is itself slow (probes with missing nacks, having to refute a suspicion of itself) and falls
 * on every successful probe. Probe timeouts are multiplied by (score + 1), so a struggling node
 * gives others more time instead of accusing them.
 *
 * Owns the score only; the core (swim_core.ts) and its prober (prober.ts) decide when to apply
 * deltas.
 */

import { assert } from "../lib/assert.ts";

export class Awareness {
  readonly #max: number;
  #score = 0;

  /** `maxMultiplier`: the score stays in [0, maxMultiplier − 1]. */
  constructor(maxMultiplier: number) {
    assert(Number.isInteger(maxMultiplier) && maxMultiplier >= 1, "awareness max >= 1");
    this.#max = maxMultiplier;
  }

  get score(): number {
    return this.#score;
  }

  applyDelta(delta: number): void {
    this.#score = Math.min(this.#max - 1, Math.max(0, this.#score + delta));
  }

  scaleMs(timeoutMs: number): number {
    return timeoutMs * (this.#score + 1);
  }
}
