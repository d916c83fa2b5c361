/**
 * Time and timers, injected: the one seam between hookd's shells and the real world's clocks.
 * Production passes `realRuntime`; the simulator passes a runtime driven by its virtual
 * scheduler (src/sim/sim_runtime.ts), so the same shells (transport adapter, membership
 * service, job store, delivery engine) run under one seed and replay exactly.
 *
 * Owns nothing but the interface and the production implementation. Must not import any
 * protocol module.
 */

import { setImmediate } from "node:timers";

/** setTimeout's largest delay; a later deadline is re-armed when this one fires. */
export const TIMER_DELAY_MAX_MS = 2_147_483_647;

export interface Runtime {
  /** Monotonic milliseconds (fractional): timeouts, RTTs, protocol deadlines. */
  nowMs(): number;
  /**
   * Wall-clock epoch milliseconds (fractional allowed): every time that crosses nodes (a job's
   * submit time, its next attempt) or reaches a receiver (`webhook-timestamp`). Nodes' wall
   * clocks may differ; the simulator skews them on purpose.
   */
  wallMs(): number;
  /** Runs `fn` once after `delayMs` (clamped to [0, TIMER_DELAY_MAX_MS]); returns a cancel. */
  setTimer(delayMs: number, fn: () => void): () => void;
  /**
   * Runs `fn` once after this turn's microtasks (and those they queue), before the event loop
   * waits for I/O again: `setImmediate`, not a timer. A shell that defers its flush here sends
   * in one go what a whole turn produced, e.g. a replica's transport ack in the datagram of the
   * vote its inline fsync made in that same turn.
   */
  defer(fn: () => void): void;
}

/**
 * Timers armed and fired through `realRuntime` in this process: every fire is a wake-up of the
 * event loop that some shell asked for, which `hookd bench cost` counts per job.
 */
export const realTimerCounts = { armed: 0, fired: 0 };

export const realRuntime: Runtime = Object.freeze({
  nowMs: () => performance.now(),
  wallMs: () => Date.now(),
  setTimer(delayMs: number, fn: () => void): () => void {
    realTimerCounts.armed++;
    const handle = setTimeout(() => {
      realTimerCounts.fired++;
      fn();
    }, clampDelayMs(delayMs));
    return () => clearTimeout(handle);
  },
  defer(fn: () => void): void {
    setImmediate(fn);
  },
});

export function clampDelayMs(delayMs: number): number {
  if (!(delayMs > 0)) return 0;
  return Math.min(delayMs, TIMER_DELAY_MAX_MS);
}
