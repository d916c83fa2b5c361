/**
 * Notices that this process was frozen — SIGSTOP, a paused VM, a swap storm, a very long GC —
 * for longer than the cluster takes to declare a silent node dead. After such a freeze the
 * node wakes with a stale view: the others may have taken its jobs over and delivered them,
 * and the timers that expired meanwhile (its retries) are about to fire all at once.
 *
 * Owns one periodic timer on an injected `Runtime` and the time of its last beat. Every timer
 * armed through `beatingRuntime()` beats too when it fires: a process whose other timers fire
 * is not frozen, so on a node whose membership ticks every probe period this monitor's own
 * timer never fires (it was four of an idle node's 23 wake-ups a second). `check()`
 * is synchronous and cheap, so the code about to act on old state (the delivery engine before
 * it starts attempts, the job store before it schedules) calls it first: whichever runs first
 * after the freeze — an expired timer, a socket read, this monitor's own beat — sees the gap
 * and the listeners run before anything stale happens. (Expired timers do not fire in
 * deadline order after a freeze, so a beat alone could come too late.) Must not decide what a
 * freeze means: the listeners do.
 */

import type { Runtime } from "./runtime.ts";

export interface StallMonitorOptions {
  readonly runtime: Runtime;
  /** Beat period, ms. */
  readonly periodMs: number;
  /** A gap between beats longer than this (beyond the period) is a freeze, ms. */
  readonly thresholdMs: number;
}

export class StallMonitor {
  readonly #runtime: Runtime;
  readonly #periodMs: number;
  readonly #thresholdMs: number;
  readonly #listeners = new Set<(gapMs: number) => void>();
  #lastBeatMs: number;
  #cancel: (() => void) | undefined;
  /** When the armed beat fires (Infinity: none armed). */
  #beatDueMs = Infinity;
  #closed = false;
  #stalls = 0;

  constructor(options: StallMonitorOptions) {
    if (!(options.periodMs > 0) || !(options.thresholdMs > 0)) {
      throw new RangeError(
        `StallMonitor: periodMs and thresholdMs must be > 0, got ${options.periodMs}, ${options.thresholdMs}`,
      );
    }
    this.#runtime = options.runtime;
    this.#periodMs = options.periodMs;
    this.#thresholdMs = options.thresholdMs;
    this.#lastBeatMs = options.runtime.nowMs();
  }

  /** Freezes seen so far. */
  get stalls(): number {
    return this.#stalls;
  }

  /** Calls `listener(gapMs)` on every freeze; returns the unsubscribe function. */
  onStall(listener: (gapMs: number) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  start(): void {
    if (this.#closed || this.#cancel !== undefined) return;
    this.#lastBeatMs = this.#runtime.nowMs();
    this.#arm();
  }

  /**
   * Whether the process was frozen since the last beat; if so, the listeners run now (once
   * per freeze) before this returns.
   */
  check(): boolean {
    if (this.#closed) return false;
    const nowMs = this.#runtime.nowMs();
    const gapMs = nowMs - this.#lastBeatMs - this.#periodMs;
    if (gapMs <= this.#thresholdMs) return false;
    this.#lastBeatMs = nowMs;
    this.#stalls++;
    for (const listener of [...this.#listeners]) listener(gapMs);
    return true;
  }

  /**
   * `runtime` whose timers beat this monitor as they fire, before their callback runs: the
   * callback (a retry, a probe deadline) then finds the freeze's listeners already run, as
   * if it had called `check()` itself.
   */
  beatingRuntime(runtime: Runtime): Runtime {
    return {
      nowMs: () => runtime.nowMs(),
      wallMs: () => runtime.wallMs(),
      defer: (fn) => runtime.defer(fn),
      setTimer: (delayMs, fn) =>
        runtime.setTimer(delayMs, () => {
          this.#beat();
          fn();
        }),
    };
  }

  close(): void {
    this.#closed = true;
    this.#cancel?.();
    this.#cancel = undefined;
    this.#beatDueMs = Infinity;
  }

  #beat(): void {
    if (this.#closed || this.#cancel === undefined) return;
    this.check();
    const nowMs = this.#runtime.nowMs();
    this.#lastBeatMs = nowMs;
    // Push the own beat back a period, but at most once per half period: at a thousand
    // timer fires a second, re-arming at each would cost more than the wake-ups it saves.
    if (this.#beatDueMs - nowMs < this.#periodMs / 2) {
      this.#cancel();
      this.#arm();
    }
  }

  #arm(): void {
    this.#beatDueMs = this.#runtime.nowMs() + this.#periodMs;
    this.#cancel = this.#runtime.setTimer(this.#periodMs, () => {
      this.#cancel = undefined;
      this.#beatDueMs = Infinity;
      if (this.#closed) return;
      this.check();
      this.#lastBeatMs = this.#runtime.nowMs();
      this.#arm();
    });
  }
}
