/**
 * Ordered endpoints' queues (docs/replication.md, "Ordered endpoints"): for each endpoint, the
 * pending jobs this node holds that were made ordered (`JobSpec.ordered`), in **order-key**
 * order. A job's order key is its event record's `(submittedAtMs, origin, seq)`: the submit
 * time the node that took the event stamped, then that record's stamp. All three are in the
 * one immutable `event` record every holder of the job applied (the job's SUBMIT carries the
 * event's stamp, a handoff's `state` its `submitStamp`), so every node derives the same key,
 * and the same order, from the same data.
 *
 * Owns the index only: which held jobs are pending per ordered endpoint, by key, and so each
 * endpoint's head. Committed or not: an uncommitted job holds its place (its owner confirms
 * it, or it is dropped), since a lost COMMIT does not make an acknowledged event younger.
 * Must not read the table, decide ownership or schedule: the duties (job_duties.ts) tell it
 * each entry they reconsider and ask it for heads.
 */

import type { JobEntry } from "./job_model.ts";

/** Where an ordered job stands in its endpoint's queue: earlier keys go first. */
export interface OrderKey {
  /** The event's submit time at the node that took it (wall-clock epoch ms). */
  readonly atMs: number;
  /** The event record's stamp: ties in time break by origin, then by that origin's seq. */
  readonly origin: string;
  readonly seq: number;
}

/** A total order over keys; no two records share a stamp, so no two jobs compare equal. */
export function compareOrderKeys(a: OrderKey, b: OrderKey): number {
  if (a.atMs !== b.atMs) return a.atMs < b.atMs ? -1 : 1;
  if (a.origin !== b.origin) return a.origin < b.origin ? -1 : 1;
  return a.seq - b.seq;
}

/**
 * The ordered endpoint a held job belongs to and its key, or undefined: not an ordered job,
 * or not yet known well enough to place (no spec, or no stamp of the record that made it).
 */
export function orderOf(entry: JobEntry): { endpointId: string; key: OrderKey } | undefined {
  const spec = entry.spec;
  const stamp = entry.submitStamp;
  if (spec?.ordered !== true || spec.webhookId === undefined || stamp === undefined) {
    return undefined;
  }
  return {
    endpointId: entry.jobId.slice(spec.webhookId.length + 1),
    key: { atMs: spec.submittedAtMs, origin: stamp.origin, seq: stamp.seq },
  };
}

interface Queued {
  readonly jobId: string;
  readonly key: OrderKey;
}

export class OrderedQueues {
  /** Per endpoint, its pending ordered jobs held here, ascending by key. */
  readonly #queues = new Map<string, Queued[]>();
  /** Where each queued job is: its endpoint and key (a replaced body may move it). */
  readonly #placed = new Map<string, { endpointId: string; key: OrderKey }>();

  /**
   * Takes the entry as it is now: queued while pending and ordered, else removed. Returns the
   * endpoint whose head changed (undefined: none did), so its new head can be reconsidered.
   */
  note(entry: JobEntry): string | undefined {
    const order = entry.phase === "pending" ? orderOf(entry) : undefined;
    const placed = this.#placed.get(entry.jobId);
    if (
      placed !== undefined && order !== undefined && placed.endpointId === order.endpointId &&
      compareOrderKeys(placed.key, order.key) === 0
    ) return undefined;
    let changed: string | undefined;
    if (placed !== undefined && this.#remove(entry.jobId, placed)) changed = placed.endpointId;
    if (order !== undefined && this.#insert(entry.jobId, order.endpointId, order.key)) {
      changed = order.endpointId;
    }
    return changed;
  }

  /** The job left this node's table (dropped, compacted): out of its queue. */
  forget(jobId: string): string | undefined {
    const placed = this.#placed.get(jobId);
    if (placed === undefined) return undefined;
    return this.#remove(jobId, placed) ? placed.endpointId : undefined;
  }

  /** The first job of `endpointId`'s queue: the only one of it that may be attempted. */
  head(endpointId: string): string | undefined {
    return this.#queues.get(endpointId)?.[0]?.jobId;
  }

  /** Jobs in `endpointId`'s queue here: its backlog on this node (0: none). */
  queued(endpointId: string): number {
    return this.#queues.get(endpointId)?.length ?? 0;
  }

  /** The endpoints that have a queue here. */
  endpoints(): IterableIterator<string> {
    return this.#queues.keys();
  }

  /** Inserts by key; true when it became the head. */
  #insert(jobId: string, endpointId: string, key: OrderKey): boolean {
    let queue = this.#queues.get(endpointId);
    if (queue === undefined) {
      queue = [];
      this.#queues.set(endpointId, queue);
    }
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareOrderKeys(queue[mid]!.key, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    queue.splice(lo, 0, { jobId, key });
    this.#placed.set(jobId, { endpointId, key });
    return lo === 0;
  }

  /** Removes; true when it was the head. */
  #remove(jobId: string, placed: { endpointId: string; key: OrderKey }): boolean {
    this.#placed.delete(jobId);
    const queue = this.#queues.get(placed.endpointId);
    if (queue === undefined) return false;
    const at = queue.findIndex((q) => q.jobId === jobId);
    if (at < 0) return false;
    queue.splice(at, 1);
    if (queue.length === 0) this.#queues.delete(placed.endpointId);
    return at === 0;
  }
}
