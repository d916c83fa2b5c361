/**
 * The events a node holds (docs/endpoints.md, "Events and fan-out"), and the jobs an event
 * makes. The job table (job_table.ts) owns one and routes `event`, `event-commit` and
 * `event-state` records here through `JobTable.apply`, which makes or commits the event's jobs
 * in the same call: an event and its jobs are stored, and committed, together.
 *
 * Owns the events by id and when each comes up for retention. Must not apply job records,
 * decide ownership, do I/O or read a clock (callers pass wall-clock times in).
 *
 * Memory: an event keeps its body (payload, fan-out) while any of its jobs is held, and at
 * least `retentionMs` after its submit; then it leaves, and the job table keeps its tombstone
 * (or its idempotency key) like a compacted job's, so a late `event` record does not make it
 * anew.
 */

import type { EventState, JobSpec, Stamp } from "./job_model.ts";
import { type EventBody, eventJobId, type EventSpec, type FanoutJob } from "./event_model.ts";

/** An event as held: a stub (its `event-commit` came first) has no body yet. */
export interface EventEntry {
  readonly id: string;
  body: EventBody | undefined;
  stamp: Stamp | undefined;
  bodyHash: string;
  committed: boolean;
}

/** The job an event makes for one endpoint: the same bytes on every replica. */
export function eventJobSpec(event: EventSpec, job: FanoutJob): JobSpec {
  return {
    id: eventJobId(event.id, job.endpointId),
    url: job.url,
    payload: event.payload,
    headers: job.headers,
    secrets: job.secrets,
    timeoutMs: job.timeoutMs,
    maxAttempts: job.maxAttempts,
    submittedAtMs: event.submittedAtMs,
    // The event's key makes the event's id; its jobs are put-if-absent through the event.
    bodyHash: "",
    webhookId: event.id,
    ...(job.ordered === true ? { ordered: true as const } : {}),
  };
}

/** The ids of the jobs `body` makes, in endpoint order. */
export function eventJobIds(body: EventBody): string[] {
  return body.jobs.map((j) => eventJobId(body.event.id, j.endpointId));
}

export class EventTable {
  readonly #byId = new Map<string, EventEntry>();
  /** Event id → when it comes up for retention (wall ms), in push order (roughly due order). */
  readonly #due = new Map<string, number>();

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): EventEntry | undefined {
    return this.#byId.get(id);
  }

  values(): IterableIterator<EventEntry> {
    return this.#byId.values();
  }

  /** Holds `entry` (new), up for retention at `dueAtMs`. */
  add(entry: EventEntry, dueAtMs: number): void {
    this.#byId.set(entry.id, entry);
    this.recheck(entry.id, dueAtMs);
  }

  /** Asks about event `id` again at `dueAtMs`. */
  recheck(id: string, dueAtMs: number): void {
    this.#due.delete(id);
    this.#due.set(id, dueAtMs);
  }

  delete(id: string): void {
    this.#byId.delete(id);
    this.#due.delete(id);
  }

  /** The events up for retention at `nowWallMs` (the caller keeps or deletes each). */
  *due(nowWallMs: number): Generator<EventEntry> {
    for (const [id, atMs] of this.#due) {
      if (atMs > nowWallMs) break;
      this.#due.delete(id);
      const entry = this.#byId.get(id);
      if (entry !== undefined) yield entry;
    }
  }

  /** The event as an `event-state` value, or undefined for a stub. */
  stateOf(entry: EventEntry): EventState | undefined {
    if (entry.body === undefined || entry.stamp === undefined) return undefined;
    return { body: entry.body, stamp: entry.stamp, committed: entry.committed };
  }
}
