/**
 * Status queries this node forwarded to its peers because it holds no copy of the job: which
 * peers have yet to answer, and until when the query waits.
 *
 * Owns: the queries in flight and when each is settled (the first peer that holds the job,
 * or the last peer's "not here", or the deadline). Must not send queries, arm timers or emit
 * outputs: the core (replication_core.ts) does, with what these methods return.
 */

interface QueryState {
  readonly jobId: string;
  readonly waiting: Set<string>;
  readonly deadlineMs: number;
}

export class PendingQueries<State> {
  readonly #queries = new Map<number, QueryState>();

  /** Starts waiting on `waiting` (at least one peer) for the job `jobId` until `deadlineMs`. */
  open(requestId: number, jobId: string, waiting: Set<string>, deadlineMs: number): void {
    this.#queries.set(requestId, { jobId, waiting, deadlineMs });
  }

  /**
   * A peer's answer. Returns `{ state }` when it settles the query (the peer holds the job, or
   * it was the last one waited on), else undefined (still waiting, or no such query).
   */
  reply(
    from: string,
    requestId: number,
    state: State | undefined,
  ): { state: State | undefined } | undefined {
    const q = this.#queries.get(requestId);
    if (q === undefined) return undefined;
    q.waiting.delete(from);
    if (state !== undefined || q.waiting.size === 0) {
      this.#queries.delete(requestId);
      return { state };
    }
    return undefined;
  }

  /** Whether the query `requestId` was still open and is past its deadline (it is closed). */
  expire(requestId: number, nowMs: number): boolean {
    const q = this.#queries.get(requestId);
    if (q === undefined || q.deadlineMs > nowMs) return false;
    this.#queries.delete(requestId);
    return true;
  }
}
