/**
 * A `Runtime` on the simulator's virtual clock: what lets the real shells (transport adapter,
 * membership service, job store, delivery engine) run inside a seeded simulation.
 *
 * Owns one node's view of time: its monotonic clock is the scheduler's, its wall clock is the
 * scheduler's plus a per-node skew (nodes' wall clocks differ in a real cluster), and its
 * timers are scheduler events that a crashed node's `halt()` cancels all at once.
 */

import type { Runtime } from "../lib/runtime.ts";
import type { SimScheduler, TimerHandle } from "./scheduler.ts";

/** Wall-clock epoch ms at virtual time 0: a fixed date, so runs replay exactly. */
export const SIM_WALL_EPOCH_MS = Date.UTC(2026, 0, 1);

export class SimRuntime implements Runtime {
  readonly #scheduler: SimScheduler;
  readonly #timers = new Set<TimerHandle>();
  #halted = false;
  /** Added to this node's wall clock, ms (may be negative). */
  wallSkewMs: number;

  constructor(scheduler: SimScheduler, wallSkewMs = 0) {
    this.#scheduler = scheduler;
    this.wallSkewMs = wallSkewMs;
  }

  nowMs(): number {
    return this.#scheduler.nowMs;
  }

  wallMs(): number {
    return SIM_WALL_EPOCH_MS + this.#scheduler.nowMs + this.wallSkewMs;
  }

  setTimer(delayMs: number, fn: () => void): () => void {
    if (this.#halted) return () => {};
    const handle = this.#scheduler.after(Math.max(0, delayMs), () => {
      this.#timers.delete(handle);
      if (!this.#halted) fn();
    });
    this.#timers.add(handle);
    return () => {
      handle.cancel();
      this.#timers.delete(handle);
    };
  }

  /** After the events already due now (and their microtasks), as `setImmediate` would. */
  defer(fn: () => void): void {
    this.setTimer(0, fn);
  }

  /** The node crashed: every pending timer is dropped and no new one fires. */
  halt(): void {
    this.#halted = true;
    for (const handle of this.#timers) handle.cancel();
    this.#timers.clear();
  }

  get halted(): boolean {
    return this.#halted;
  }
}
