/**
 * "Arm one timer at the core's next deadline": the adapter every sans-I/O shell needs (the
 * transport, membership, the delivery engine, the job store). Each core reports its next
 * deadline (`nextWakeMs()`, Infinity for none); the shell calls `arm(deadline)` after every
 * step, and `onFire` steps the core.
 *
 * Owns one timer on an injected `Runtime`. An earlier armed timer is kept when a later
 * deadline is asked for: firing early is harmless (the handler steps the core, which re-arms
 * for its real next deadline) and re-arming on every step would cost a timer per message.
 */

import type { Runtime } from "./runtime.ts";

export class DeadlineTimer {
  readonly #runtime: Runtime;
  readonly #onFire: () => void;
  #cancel: (() => void) | undefined;
  #armedAtMs = Infinity;
  #closed = false;

  constructor(runtime: Runtime, onFire: () => void) {
    this.#runtime = runtime;
    this.#onFire = onFire;
  }

  /** The deadline the timer is armed for (runtime.nowMs clock); Infinity when disarmed. */
  get armedAtMs(): number {
    return this.#armedAtMs;
  }

  /**
   * Makes sure the timer fires no later than `deadlineMs` (in `runtime.nowMs()` time).
   * Infinity (no deadline) disarms it, so an idle shell keeps no timer alive.
   */
  arm(deadlineMs: number): void {
    if (this.#closed) return;
    if (deadlineMs === Infinity) {
      this.#disarm();
      return;
    }
    if (this.#cancel !== undefined && this.#armedAtMs <= deadlineMs) return;
    this.#disarm();
    this.#armedAtMs = deadlineMs;
    this.#cancel = this.#runtime.setTimer(deadlineMs - this.#runtime.nowMs(), () => {
      this.#cancel = undefined;
      this.#armedAtMs = Infinity;
      if (!this.#closed) this.#onFire();
    });
  }

  /** Disarms for good; later `arm` calls do nothing. */
  close(): void {
    this.#closed = true;
    this.#disarm();
  }

  #disarm(): void {
    this.#cancel?.();
    this.#cancel = undefined;
    this.#armedAtMs = Infinity;
  }
}
