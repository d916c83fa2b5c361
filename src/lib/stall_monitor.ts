/**
 * Notices that this process was frozen — SIGSTOP, a paused VM, a swap storm, a very long GC —
 * for longer than the cluster takes to declare a silent node dead. After such a freeze the
 * node wakes with a stale view: the others may have taken its jobs over and delivered them,
 * and the timers that expired meanwhile (its retries) are about to fire all at once.
 *
 * Owns one timer on an injected `Runtime`, the time of its last beat and when the timers armed
 * through `beatingRuntime()` are due. Every such timer beats the monitor when it fires: a
 * process whose other timers fire is not frozen. So the monitor arms its own timer only while
 * none of them is due within a period, and does not cancel it when one is armed (on Deno a
 * cancelled timer still wakes the thread at its old deadline: bench/results/session23/wakes/),
 * so that each wake-up it costs is one the process needed anyway: on a node whose
 * membership ticks every probe period its own timer is not armed at all. Timers of
 * `lazyRuntime()` ride on those beats the same way, up to a slack late. `check()`
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
  #started = false;
  #closed = false;
  #stalls = 0;
  /** The pending timers armed through `beatingRuntime()`: token → when due (runtime clock). */
  readonly #beatersDueMs = new Map<number, number>();
  #timerTokens = 0;
  /** A cover check is deferred to the end of this turn (a beater cancelled, a lazy timer armed). */
  #coverDeferred = false;
  /** Timers of `lazyRuntime()`: token → when due, how late they may run, and what. */
  readonly #lazy = new Map<number, { dueMs: number; slackMs: number; fn: () => void }>();
  /** When the own timer fires (Infinity: not armed). */
  #ownDueMs = Infinity;

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
    if (this.#closed || this.#started) return;
    this.#started = true;
    this.#lastBeatMs = this.#runtime.nowMs();
    this.#cover();
  }

  /** Whether the monitor's own timer is armed (for tests). */
  get ownTimerArmed(): boolean {
    return this.#cancel !== undefined;
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
    return withTimers(runtime, (delayMs, fn) => {
      const token = ++this.#timerTokens;
      this.#beatersDueMs.set(token, this.#runtime.nowMs() + Math.max(0, delayMs));
      const cancel = runtime.setTimer(delayMs, () => {
        this.#beatersDueMs.delete(token);
        this.#beat();
        fn();
        this.#runLazy();
        // The callbacks have re-armed what they need: is a beat still due within a period?
        this.#cover();
      });
      return () => {
        if (!this.#beatersDueMs.delete(token)) return;
        cancel();
        // A shell that cancels usually arms again in the same turn (a deadline moved).
        this.#coverAtTurnEnd();
      };
    });
  }

  /**
   * `runtime` whose timers may run up to `slackMs` late, at a beat the process makes anyway:
   * a timer due is run by the first beat at or after its time, and the monitor arms its own
   * timer for due + slack only when no beater is due by then. For periodic work nobody waits
   * on (the dashboard's one-second samples); needs `start()`, and `close()` drops them.
   */
  lazyRuntime(runtime: Runtime, slackMs: number): Runtime {
    return withTimers(runtime, (delayMs, fn) => {
      const token = ++this.#timerTokens;
      const dueMs = this.#runtime.nowMs() + Math.max(0, delayMs);
      this.#lazy.set(token, { dueMs, slackMs: Math.max(0, slackMs), fn });
      // Armed from a beat, a shell's timer may yet be armed in this turn to carry it.
      this.#coverAtTurnEnd();
      return () => void this.#lazy.delete(token);
    });
  }

  close(): void {
    this.#closed = true;
    this.#cancel?.();
    this.#cancel = undefined;
    this.#ownDueMs = Infinity;
    this.#lazy.clear();
  }

  #beat(): void {
    if (this.#closed || !this.#started) return;
    this.check();
    this.#lastBeatMs = this.#runtime.nowMs();
  }

  /** Runs the lazy timers due. */
  #runLazy(): void {
    if (this.#closed || !this.#started || this.#lazy.size === 0) return;
    const nowMs = this.#runtime.nowMs();
    const due: Array<() => void> = [];
    for (const [token, timer] of this.#lazy) {
      if (timer.dueMs > nowMs) continue;
      this.#lazy.delete(token);
      due.push(timer.fn);
    }
    for (const fn of due) fn();
  }

  /**
   * Arms the own timer unless a beater is due within a period (or the own timer is armed
   * already): some timer must fire at least every period, or an idle spell would read as a
   * freeze.
   */
  #cover(): void {
    if (this.#closed || !this.#started) return;
    const nowMs = this.#runtime.nowMs();
    let beatByMs = nowMs + this.#periodMs;
    for (const timer of this.#lazy.values()) {
      beatByMs = Math.min(beatByMs, timer.dueMs + timer.slackMs);
    }
    if (this.#ownDueMs <= beatByMs) return;
    for (const dueMs of this.#beatersDueMs.values()) {
      if (dueMs <= beatByMs) return;
    }
    // Armed for later than needed (a lazy timer came since): a cancelled timer still wakes the
    // thread on Deno, but an earlier one must be armed anyway.
    this.#cancel?.();
    this.#ownDueMs = beatByMs;
    this.#cancel = this.#runtime.setTimer(beatByMs - nowMs, () => {
      this.#cancel = undefined;
      this.#ownDueMs = Infinity;
      if (this.#closed) return;
      this.#beat();
      this.#runLazy();
      this.#cover();
    });
  }

  /** Decides whether the own timer is needed once this turn's callbacks are done. */
  #coverAtTurnEnd(): void {
    if (this.#coverDeferred) return;
    this.#coverDeferred = true;
    this.#runtime.defer(() => {
      this.#coverDeferred = false;
      this.#cover();
    });
  }
}

/** `runtime` with its timers replaced by `setTimer`. */
function withTimers(runtime: Runtime, setTimer: Runtime["setTimer"]): Runtime {
  return {
    nowMs: () => runtime.nowMs(),
    wallMs: () => runtime.wallMs(),
    defer: (fn) => runtime.defer(fn),
    setTimer,
  };
}
