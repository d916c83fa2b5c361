/**
 * A `Runtime` on a virtual clock for driving async harness code (the load generator's step)
 * deterministically: timers fire one at a time in deadline order, and between two firings
 * every promise callback runs, so what a step measures depends on the timers alone, never on
 * how busy the machine is.
 */

import type { Runtime } from "../../src/lib/runtime.ts";

interface Timer {
  readonly atMs: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/** Real time one pass waits for outside I/O (a file write) while no virtual timer is due. */
const IO_WAIT_MS = 1;

export class VirtualRuntime implements Runtime {
  #nowMs: number;
  #seq = 0;
  readonly #timers: Timer[] = [];

  constructor(startMs = 1_700_000_000_000) {
    this.#nowMs = startMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  wallMs(): number {
    return this.#nowMs;
  }

  setTimer(delayMs: number, fn: () => void): () => void {
    const timer: Timer = {
      atMs: this.#nowMs + Math.max(0, delayMs),
      seq: this.#seq++,
      fn,
      cancelled: false,
    };
    this.#timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }
  defer(fn: () => void): void {
    this.setTimer(0, fn);
  }

  /**
   * Runs `work` to its end, firing virtual timers whenever nothing else can make progress.
   * Bounded: at most `passesMax` passes (a pass fires one timer or waits 1 ms of real time
   * for outside I/O), then it throws.
   */
  async run<T>(work: Promise<T>, passesMax = 100_000): Promise<T> {
    let settled = false;
    const watched = work.finally(() => (settled = true));
    for (let pass = 0; pass < passesMax; pass++) {
      // A real macrotask: every pending promise callback runs before the clock moves.
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (settled) return await watched;
      const next = this.#popNext();
      if (next === undefined) {
        await new Promise((resolve) => setTimeout(resolve, IO_WAIT_MS));
        continue;
      }
      this.#nowMs = Math.max(this.#nowMs, next.atMs);
      next.fn();
    }
    throw new Error(`VirtualRuntime.run: not done after ${passesMax} passes`);
  }

  #popNext(): Timer | undefined {
    let best = -1;
    for (let i = 0; i < this.#timers.length; i++) {
      const t = this.#timers[i]!;
      if (t.cancelled) continue;
      const b = this.#timers[best];
      if (b === undefined || t.atMs < b.atMs || (t.atMs === b.atMs && t.seq < b.seq)) best = i;
    }
    if (best < 0) {
      this.#timers.length = 0;
      return undefined;
    }
    return this.#timers.splice(best, 1)[0];
  }
}
