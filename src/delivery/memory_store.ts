/**
 * An in-memory `DeliveryStore` for tests and the bench: it plays the part the replicated job
 * store will play (holds jobs, persists reports, lists and revives dead letters), with no
 * durability at all.
 *
 * Owns its maps only. Bounded: attempt history per job (`historyAttemptsMax`), and delivered
 * jobs are forgotten (only counted) so a long bench does not grow without end.
 */

import type {
  AttemptRecord,
  DeadLetter,
  DeliveryJob,
  DeliveryReport,
  DeliveryStore,
} from "./types.ts";

export interface MemoryStoreOptions {
  /** Attempts kept per job, newest last. @default 10 */
  historyAttemptsMax?: number;
  /** Dead letters kept; the oldest is dropped past this. @default 10_000 */
  deadLettersMax?: number;
}

interface Held {
  job: DeliveryJob;
  attemptsMade: number;
  nextAttemptAtMs: number;
  history: AttemptRecord[];
}

export class MemoryDeliveryStore implements DeliveryStore {
  readonly #historyMax: number;
  readonly #deadMax: number;
  readonly #held = new Map<string, Held>();
  readonly #dead = new Map<string, DeadLetter>();
  delivered = 0;
  retriesRecorded = 0;

  constructor(options: MemoryStoreOptions = {}) {
    this.#historyMax = options.historyAttemptsMax ?? 10;
    this.#deadMax = options.deadLettersMax ?? 10_000;
  }

  /** A job committed to the store (what the replicated store does on submit). */
  add(job: DeliveryJob): void {
    this.#held.set(job.id, { job, attemptsMade: 0, nextAttemptAtMs: 0, history: [] });
  }

  /** A held (not yet delivered or dead) job's state, for tests. */
  held(jobId: string): Readonly<Held> | undefined {
    return this.#held.get(jobId);
  }

  get heldCount(): number {
    return this.#held.size;
  }

  recordRetry(report: Extract<DeliveryReport, { kind: "retry" }>): Promise<void> {
    this.retriesRecorded++;
    const held = this.#held.get(report.jobId);
    if (held !== undefined) {
      held.attemptsMade = report.attemptsMade;
      held.nextAttemptAtMs = report.nextAttemptAtMs;
      this.#push(held, report.attempt);
    }
    return Promise.resolve();
  }

  recordDelivered(report: Extract<DeliveryReport, { kind: "delivered" }>): void {
    this.delivered++;
    this.#held.delete(report.jobId);
  }

  recordDead(job: DeliveryJob, report: Extract<DeliveryReport, { kind: "dead" }>): Promise<void> {
    const held = this.#held.get(report.jobId);
    this.#held.delete(report.jobId);
    const history = held?.history ?? [];
    if (report.attempt !== undefined) {
      history.push(report.attempt);
      if (history.length > this.#historyMax) history.shift();
    }
    // Replacing a letter already held (the same job dead again) needs no room.
    if (!this.#dead.has(job.id) && this.#dead.size >= this.#deadMax) {
      const oldest = this.#dead.keys().next();
      if (!oldest.done) this.#dead.delete(oldest.value);
    }
    this.#dead.set(job.id, {
      job,
      attemptsMade: report.attemptsMade,
      reason: report.reason,
      history,
    });
    return Promise.resolve();
  }

  listDead(limit: number): readonly DeadLetter[] {
    const out: DeadLetter[] = [];
    for (const letter of this.#dead.values()) {
      if (out.length >= limit) break;
      out.push(letter);
    }
    return out;
  }

  reviveDead(jobId: string): Promise<DeliveryJob | undefined> {
    const letter = this.#dead.get(jobId);
    if (letter === undefined) return Promise.resolve(undefined);
    this.#dead.delete(jobId);
    this.#held.set(jobId, {
      job: letter.job,
      attemptsMade: 0,
      nextAttemptAtMs: 0,
      history: [...letter.history],
    });
    return Promise.resolve(letter.job);
  }

  #push(held: Held, record: AttemptRecord): void {
    held.history.push(record);
    if (held.history.length > this.#historyMax) held.history.shift();
  }
}
