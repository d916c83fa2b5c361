/**
 * The simulator's virtual clock and event queue.
 *
 * Owns virtual time. Events run in (time, insertion order), so a run is a pure function of the
 * seed and the scripted inputs: a failing seed replays exactly. Nothing here touches real
 * timers or the wall clock.
 */

import { setImmediate } from "node:timers";
import { assert } from "../lib/assert.ts";
import { MinHeap } from "../lib/min_heap.ts";

/**
 * Resolves after every microtask queued so far, and every one those queue, has run: a
 * macrotask that is not clamped like a nested `setTimeout(0)` (measured ~1 µs against 2 ms).
 */
export function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Scheduled {
  atMs: number;
  seq: number;
  run: () => void;
  cancelled: boolean;
}

export interface TimerHandle {
  cancel(): void;
}

export class SimScheduler {
  #nowMs = 0;
  #seq = 0;
  #eventsRun = 0;
  readonly #queue = new MinHeap<Scheduled>((a, b) =>
    a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq)
  );

  get nowMs(): number {
    return this.#nowMs;
  }

  get eventsRun(): number {
    return this.#eventsRun;
  }

  get pending(): number {
    return this.#queue.size;
  }

  /** Runs `run` at virtual time `atMs` (never earlier than now). */
  at(atMs: number, run: () => void): TimerHandle {
    assert(Number.isFinite(atMs), `SimScheduler.at: time must be finite, got ${atMs}`);
    const event: Scheduled = {
      atMs: Math.max(atMs, this.#nowMs),
      seq: this.#seq++,
      run,
      cancelled: false,
    };
    this.#queue.push(event);
    return { cancel: () => void (event.cancelled = true) };
  }

  after(delayMs: number, run: () => void): TimerHandle {
    return this.at(this.#nowMs + Math.max(0, delayMs), run);
  }

  /** Runs every event due at or before `untilMs`, then sets the clock to `untilMs`. */
  runUntil(untilMs: number, maxEvents = 50_000_000): void {
    let budget = maxEvents;
    for (;;) {
      const next = this.#queue.peek();
      if (next === undefined || next.atMs > untilMs) break;
      assert(
        budget-- > 0,
        `SimScheduler.runUntil: more than ${maxEvents} events before ${untilMs} ms`,
      );
      this.#queue.pop();
      if (next.cancelled) continue;
      this.#nowMs = next.atMs;
      this.#eventsRun++;
      next.run();
    }
    this.#nowMs = Math.max(this.#nowMs, untilMs);
  }

  /**
   * `runUntil` for code that awaits promises (the WAL on a SimDisk, the shells around the
   * cores): after each event every microtask it caused runs before the next event, so a run is
   * still a pure function of the seed. Stops early when `stop()` holds.
   */
  async runUntilAsync(
    untilMs: number,
    stop: () => boolean = () => false,
    maxEvents = 50_000_000,
  ): Promise<boolean> {
    let budget = maxEvents;
    await drainMicrotasks();
    for (;;) {
      if (stop()) return true;
      const next = this.#queue.peek();
      if (next === undefined || next.atMs > untilMs) break;
      assert(budget-- > 0, `SimScheduler.runUntilAsync: more than ${maxEvents} events`);
      this.#queue.pop();
      if (next.cancelled) continue;
      this.#nowMs = next.atMs;
      this.#eventsRun++;
      next.run();
      await drainMicrotasks();
    }
    this.#nowMs = Math.max(this.#nowMs, untilMs);
    return stop();
  }

  /** Runs until `done()` holds or virtual time passes `limitMs`; returns whether `done()` held. */
  runWhile(notDone: () => boolean, limitMs: number, maxEvents = 50_000_000): boolean {
    let budget = maxEvents;
    while (notDone()) {
      const next = this.#queue.peek();
      if (next === undefined || next.atMs > limitMs) return false;
      assert(budget-- > 0, `SimScheduler.runWhile: more than ${maxEvents} events`);
      this.#queue.pop();
      if (next.cancelled) continue;
      this.#nowMs = next.atMs;
      this.#eventsRun++;
      next.run();
    }
    return true;
  }
}
