/**
 * The replication core's append batcher: the WAL batch being built, the appends handed to the
 * WAL and not yet durable (by token), and which records and dead letters wait on which append.
 *
 * Owns: batch building and splitting by the WAL's record bound, token issue and completion
 * (in issue order), the lazy-append deadline, and batch accounting (the bytes counted are the
 * bytes encoded). It must not touch the job table, the seq tracker, proposals or the network:
 * it returns batches, and the core (replication_core.ts) applies what their durability lets
 * happen (tracker ranges, ACKs, votes) and emits the append output.
 */

import { fail } from "../lib/assert.ts";
import { KeyOrderQueue } from "../lib/key_order_queue.ts";
import type { AckEntry } from "./job_messages.ts";
import { encodeWalBatch, WAL_BATCH_HEADER_BYTES } from "./job_codec.ts";
import type { JobRecord, Stamp } from "./job_model.ts";

/** Room a WAL batch needs besides its records' bytes (its header, each record's length). */
export const WAL_BATCH_SLACK_BYTES = 64;

/** What a persisted append lets happen. */
export interface AppendBatch {
  readonly records: Uint8Array[];
  bytes: number;
  /** Stamps held durably once the batch is. */
  readonly stamps: Stamp[];
  /** Skip ranges held once durable. */
  readonly skips: Array<{ origin: string; from: number; to: number }>;
  /** ACKs to send once durable: voter → entries. */
  readonly acks: Map<string, AckEntry[]>;
  /** Own proposals whose local copy is in this batch (stamp keys). */
  readonly votes: string[];
  /** Own-origin records in the batch (released from the pending bound when durable). */
  ownRecords: number;
  /** Jobs made dead by a record in the batch: listed as dead letters once it is durable. */
  readonly deadJobs: string[];
  /** Held summaries to merge once durable (snapshot catch-up). */
  readonly heldMerges: JobRecord[];
  /** Holds a record other than a COMMIT or DONE (see `waitedOn`). */
  awaitedRecords: boolean;
}

/**
 * Stamps of records applied here whose append is not yet durable, with that append's token:
 * per origin a numeric map (a string key per record was a measurable share of the garbage).
 */
class StampTokens {
  readonly #byOrigin = new Map<string, Map<number, number>>();

  get(stamp: Stamp): number | undefined {
    return this.#byOrigin.get(stamp.origin)?.get(stamp.seq);
  }

  set(stamp: Stamp, token: number): void {
    let m = this.#byOrigin.get(stamp.origin);
    if (m === undefined) {
      m = new Map();
      this.#byOrigin.set(stamp.origin, m);
    }
    m.set(stamp.seq, token);
  }

  /** Forgets `stamp` if it still waits on `token` (a later append may hold it again). */
  deleteIf(stamp: Stamp, token: number): void {
    const m = this.#byOrigin.get(stamp.origin);
    if (m !== undefined && m.get(stamp.seq) === token) m.delete(stamp.seq);
  }

  clear(): void {
    this.#byOrigin.clear();
  }

  /** The seqs of `origin` waiting for their append, ascending. */
  seqs(origin: string): number[] {
    return [...(this.#byOrigin.get(origin)?.keys() ?? [])].sort((a, b) => a - b);
  }
}

/**
 * Whether something waits on `batch`'s fsync: a vote, an ACK, a held summary to merge, or a
 * record other than a COMMIT or DONE (a SUBMIT to vote for, a retry the engine awaits). A
 * batch of only COMMITs and DONEs is not waited on: it may wait for one that is.
 */
function waitedOn(batch: AppendBatch): boolean {
  return batch.awaitedRecords || batch.votes.length > 0 || batch.acks.size > 0 ||
    batch.heldMerges.length > 0;
}

export class AppendBatcher {
  readonly #walRecordBytesMax: number;
  readonly #lazyAppendMs: number;
  #nextToken = 1;
  #batch: AppendBatch | undefined;
  /** When the batch being built is written even if nothing waits on it (`lazyAppendMs`). */
  #dueMs = Infinity;
  /** Write the batch being built at the next flush, waited on or not. */
  #due = false;
  /** Appends handed to the WAL and not durable yet, by token (key_order_queue.ts: no Map churn). */
  readonly #pending = new KeyOrderQueue<AppendBatch>();
  /** Stamps applied here whose append is not durable yet (see `StampTokens`). */
  readonly #notDurable = new StampTokens();
  /**
   * Jobs a DEAD record (or a dead state) made dead here whose append is not yet durable → the
   * token of that append. They are not listed as dead letters nor revived until it is: the
   * contract of src/delivery/types.ts (a `dead` report is durable before the job is listed).
   */
  readonly #deadNotDurable = new Map<string, number>();

  constructor(walRecordBytesMax: number, lazyAppendMs: number) {
    this.#walRecordBytesMax = walRecordBytesMax;
    this.#lazyAppendMs = lazyAppendMs;
  }

  /** The token the batch being built will get (its records wait on it). */
  get nextToken(): number {
    return this.#nextToken;
  }

  /** When a lazy batch must go (Infinity: none waits). */
  get dueMs(): number {
    return this.#dueMs;
  }

  /** The batch being built, started if none is. */
  current(): AppendBatch {
    this.#batch ??= {
      records: [],
      bytes: 0,
      stamps: [],
      skips: [],
      acks: new Map(),
      votes: [],
      ownRecords: 0,
      deadJobs: [],
      heldMerges: [],
      awaitedRecords: false,
    };
    return this.#batch;
  }

  /** Whether `recordBytes` more would take the batch being built past the WAL's bound. */
  full(recordBytes: number): boolean {
    const batch = this.#batch;
    return batch !== undefined &&
      batch.bytes + recordBytes + WAL_BATCH_SLACK_BYTES > this.#walRecordBytesMax &&
      batch.records.length > 0;
  }

  /** Adds a record to the batch being built (the caller emits a full one first). */
  add(bytes: Uint8Array, record: JobRecord): AppendBatch {
    const batch = this.current();
    if (record.type !== "commit" && record.type !== "event-commit" && record.type !== "done") {
      batch.awaitedRecords = true;
    }
    batch.records.push(bytes);
    batch.bytes += bytes.length + 4;
    const deadJobId = record.type === "dead"
      ? record.jobId
      : record.type === "state" && record.state.phase === "dead"
      ? record.state.jobId
      : undefined;
    if (deadJobId !== undefined) {
      batch.deadJobs.push(deadJobId);
      this.#deadNotDurable.set(deadJobId, this.#nextToken);
    }
    if ("stamp" in record) {
      batch.stamps.push(record.stamp);
      this.#notDurable.set(record.stamp, this.#nextToken);
      if (record.type === "skip") {
        for (const [a, b] of record.ranges) {
          batch.skips.push({ origin: record.stamp.origin, from: a, to: b });
        }
      }
    }
    return batch;
  }

  /** The append a token names: the one being built, or one waiting for its fsync. */
  batchFor(token: number): AppendBatch | undefined {
    if (token === this.#nextToken && this.#batch !== undefined) return this.#batch;
    return this.#pending.get(token);
  }

  /** The token of the append holding `stamp`, if it is not durable yet. */
  notDurableToken(stamp: Stamp): number | undefined {
    return this.#notDurable.get(stamp);
  }

  /** The seqs of `origin` on their way to disk, ascending. */
  notDurableSeqs(origin: string): number[] {
    return this.#notDurable.seqs(origin);
  }

  /** Whether the latest DEAD of `jobId` is not durable yet. */
  deadNotDurable(jobId: string): boolean {
    return this.#deadNotDurable.has(jobId);
  }

  /** Marks a lazy batch due once its deadline has passed. */
  tick(nowMs: number): void {
    if (nowMs >= this.#dueMs) this.#due = true;
  }

  /** The batch goes at the next flush, lazy or not (the node is stopping). */
  markDue(): void {
    this.#due = true;
  }

  /**
   * Hands over the batch being built, encoded, under a new token; at `nowMs`, one nobody
   * waits on may stay until `lazyAppendMs` later (undefined is returned). Without `nowMs`
   * (the batch is full) it goes now.
   */
  take(nowMs?: number): { token: number; payload: Uint8Array } | undefined {
    const batch = this.#batch;
    if (batch === undefined) return undefined;
    if (
      batch.records.length === 0 && batch.acks.size === 0 && batch.votes.length === 0 &&
      batch.heldMerges.length === 0
    ) {
      this.#batch = undefined;
      return undefined;
    }
    if (nowMs !== undefined && !waitedOn(batch) && !this.#due && this.#lazyAppendMs > 0) {
      this.#dueMs = Math.min(this.#dueMs, nowMs + this.#lazyAppendMs);
      return undefined;
    }
    this.#batch = undefined;
    this.#due = false;
    this.#dueMs = Infinity;
    const token = this.#nextToken++;
    this.#pending.push(token, batch);
    const payload = encodeWalBatch(batch.records);
    // Batch accounting: the bytes counted (what batches are split by, against the WAL's
    // record bound) are the bytes written, the batch header aside.
    if (payload.length !== batch.bytes + WAL_BATCH_HEADER_BYTES) {
      fail(`append ${token}: ${payload.length} bytes encoded, ${batch.bytes} counted`);
    }
    return { token, payload };
  }

  /**
   * The append `token` is durable: returns its batch (undefined if it was forgotten, after a
   * storage failure) and forgets what waited on it.
   */
  complete(token: number): AppendBatch | undefined {
    const batch = this.#pending.get(token);
    if (batch === undefined) return undefined;
    // The WAL makes appends durable in the order they were issued: a token that overtook an
    // earlier one would mark its stamps held while the earlier records could still be lost.
    if (this.#pending.firstKey() !== token) {
      fail(`append ${token} persisted before an earlier pending append`);
    }
    this.#pending.delete(token);
    for (const s of batch.stamps) this.#notDurable.deleteIf(s, token);
    // Only the job's latest DEAD counts: an earlier one may be of an earlier generation.
    for (const jobId of batch.deadJobs) {
      if (this.#deadNotDurable.get(jobId) === token) this.#deadNotDurable.delete(jobId);
    }
    return batch;
  }

  /**
   * The WAL failed: appends in flight and the one being built are gone, and records waiting on
   * them are not on their way to disk any more.
   */
  clear(): void {
    this.#pending.clear();
    this.#batch = undefined;
    this.#dueMs = Infinity;
    this.#notDurable.clear();
  }
}
