/**
 * One suspicion of one member: who has independently suspected it and when it expires.
 *
 * Owns the confirmation set and the deadline arithmetic (via suspicion_math.ts). It reads no
 * clock: the core passes `nowMs` in and polls `deadlineMs` (the member table keeps the
 * earliest one for the core's wake).
 */

import { suspicionTimeoutMs } from "./suspicion_math.ts";

export class Suspicion {
  readonly startMs: number;
  readonly #minMs: number;
  readonly #maxMs: number;
  readonly #wanted: number;
  /** Members that suspected independently; the first suspector is in it but does not count. */
  readonly #suspectors = new Set<string>();
  #confirmations = 0;
  #deadlineMs: number;
  /** Set by `postpone`: no confirmation brings the deadline before it. */
  #notBeforeMs = -Infinity;

  constructor(
    nowMs: number,
    fromId: string,
    bounds: { minMs: number; maxMs: number; confirmationsWanted: number },
  ) {
    this.startMs = nowMs;
    this.#minMs = bounds.minMs;
    this.#maxMs = bounds.maxMs;
    this.#wanted = bounds.confirmationsWanted;
    this.#suspectors.add(fromId);
    this.#deadlineMs = nowMs + suspicionTimeoutMs(0, this.#wanted, this.#minMs, this.#maxMs);
  }

  get deadlineMs(): number {
    return this.#deadlineMs;
  }

  get confirmations(): number {
    return this.#confirmations;
  }

  /**
   * Records a suspicion from `fromId`; returns whether it was new (then the caller re-gossips
   * it, so that others' timers shrink too). Confirmations beyond those wanted change nothing.
   */
  confirm(fromId: string): boolean {
    if (this.#confirmations >= this.#wanted) return false;
    if (this.#suspectors.has(fromId)) return false;
    this.#suspectors.add(fromId);
    this.#confirmations++;
    this.#deadlineMs = Math.max(
      this.#notBeforeMs,
      this.startMs +
        suspicionTimeoutMs(this.#confirmations, this.#wanted, this.#minMs, this.#maxMs),
    );
    return true;
  }

  /** Moves the deadline to `notBeforeMs` if it is earlier (never brings it forward). */
  postpone(notBeforeMs: number): void {
    this.#notBeforeMs = Math.max(this.#notBeforeMs, notBeforeMs);
    this.#deadlineMs = Math.max(this.#deadlineMs, notBeforeMs);
  }
}
