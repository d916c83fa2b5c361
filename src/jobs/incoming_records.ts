/**
 * Records peers send this node (replication, and catch-up pages), and the ACK a replica answers
 * for each SUBMIT, REVIVE and ENDPOINT: they are applied, put on the WAL batch being built, and voted
 * for only once the append holding them is durable.
 *
 * Owns: which incoming records are stored (not those held already, on their way to disk, or
 * too large for our WAL), the status an ACK carries (a vote, a conflict, the key's other
 * incarnation, a finished job), and holding an "ok" back until its append is durable. Must
 * not: own the phase, the WAL batch, the catch-up log or the table (it adds to them), count
 * votes (proposal_driver.ts does) or read a clock: it reaches the core (replication_core.ts)
 * through the narrow host it passes, and the core routes `repl` messages, catch-up pages and
 * the ACKs a durable append releases here.
 */

import type { CatchupLog } from "./catchup_log.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { type AppendBatcher, WAL_BATCH_SLACK_BYTES } from "./append_batcher.ts";
import { decodeRecord, type Skipped } from "./job_codec.ts";
import type { AckEntry, AckStatus, OutgoingMessage } from "./job_messages.ts";
import {
  type ApplyEffect,
  type JobRecord,
  type ReplicatedRecord,
  sameStamp,
  type Stamp,
} from "./job_model.ts";
import type { Incarnation, JobTable } from "./job_table.ts";
import type { SeqTracker } from "./seq_tracker.ts";

/** What the incoming side needs of the core: each a narrow door, none the whole core. */
export interface IncomingRecordsHost {
  /** The WAL failed (fail-stop): this node votes for nothing. */
  failed(): boolean;
  /** Counts (and logs once) records a peer sent that this node cannot take. */
  undecodable(from: string, skipped: Skipped): void;
  /** Applies a record to the table and reacts (schedules, cancels). */
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  /** Adds a record to the append being built. */
  addToBatch(bytes: Uint8Array, record: JobRecord): void;
  send(to: string, message: OutgoingMessage): void;
  /**
   * Sends a record a peer's restart voided again, as a record of this node's own (a new
   * stamp), once this node knows its own next seq.
   */
  respread(record: VoidedRecord): void;
}

/**
 * The records a replica sends again when their origin voids their seqs (see
 * `#respreadVoided`): those that merge whoever states them. Not a SUBMIT, EVENT or ENDPOINT:
 * their stamp is part of what they are (a confirm round resends the SUBMIT's own stamp; an
 * endpoint value's version is its record's stamp).
 */
const VOIDED_RECORD_TYPES = [
  "retry",
  "done",
  "dead",
  "revive",
  "commit",
  "event-commit",
  "endpoint-health",
] as const;

export type VoidedRecord = Extract<
  ReplicatedRecord,
  { type: (typeof VOIDED_RECORD_TYPES)[number] }
>;

const VOIDED_TYPE_SET: ReadonlySet<string> = new Set(VOIDED_RECORD_TYPES);

/** Whether `record` is one a replica sends again when its seq is voided. */
function respreads(record: JobRecord): record is VoidedRecord {
  return VOIDED_TYPE_SET.has(record.type);
}

export interface IncomingRecordsOptions {
  readonly self: string;
  /** Largest WAL append the shell's WAL takes (`wal.recordBytesMax`). */
  readonly walRecordBytesMax: number;
  readonly metrics: Pick<CoreMetrics, "acksSent">;
  readonly table: Pick<
    JobTable,
    | "get"
    | "keyTombstone"
    | "goneTombstone"
    | "liveIncarnation"
    | "liveEventIncarnation"
    | "event"
    | "events"
  >;
  readonly tracker: Pick<SeqTracker, "has">;
  readonly catchupLog: Pick<CatchupLog, "add" | "collectSorted">;
  readonly appends: Pick<AppendBatcher, "notDurableToken" | "batchFor" | "nextToken">;
  readonly host: IncomingRecordsHost;
}

export class IncomingRecords {
  readonly #self: string;
  readonly #walRecordBytesMax: number;
  readonly #metrics: IncomingRecordsOptions["metrics"];
  readonly #table: IncomingRecordsOptions["table"];
  readonly #tracker: IncomingRecordsOptions["tracker"];
  readonly #log: IncomingRecordsOptions["catchupLog"];
  readonly #appends: IncomingRecordsOptions["appends"];
  readonly #host: IncomingRecordsHost;

  constructor(options: IncomingRecordsOptions) {
    this.#self = options.self;
    this.#walRecordBytesMax = options.walRecordBytesMax;
    this.#metrics = options.metrics;
    this.#table = options.table;
    this.#tracker = options.tracker;
    this.#log = options.catchupLog;
    this.#appends = options.appends;
    this.#host = options.host;
  }

  /** Records from a peer (replication, or catch-up with `ack` false). */
  onRecords(
    nowMs: number,
    wallMs: number,
    from: string,
    records: readonly { record: ReplicatedRecord; bytes: Uint8Array }[],
    ack: boolean,
  ): void {
    const immediate: AckEntry[] = [];
    for (const { record, bytes } of records) {
      // A record this node's WAL cannot hold (a peer with a larger wal.recordBytesMax) would
      // fail the append and stop this node: it is left out like one that does not decode.
      if (bytes.length + WAL_BATCH_SLACK_BYTES > this.#walRecordBytesMax) {
        this.#host.undecodable(from, { count: 1, reason: "record larger than wal.recordBytesMax" });
        continue;
      }
      const wantsAck = ack &&
        (record.type === "submit" || record.type === "revive" || record.type === "endpoint" ||
          record.type === "event");
      if (
        this.#tracker.has(record.stamp.origin, record.stamp.seq) &&
        (!wantsAck ||
          (record.type === "submit"
            ? this.#holdsSubmit(record.spec.id)
            : record.type === "event"
            ? this.#holdsEvent(record.body.event.id)
            : true))
      ) {
        if (wantsAck) immediate.push(this.#ackFor(record));
        continue;
      }
      const pendingToken = this.#appends.notDurableToken(record.stamp);
      if (pendingToken !== undefined) {
        if (wantsAck) this.#deferAck(pendingToken, from, this.#ackFor(record));
        continue;
      }
      let effect: ApplyEffect = "unchanged";
      if (record.type === "skip") this.#respreadVoided(record);
      else effect = this.#host.applyAndReact(nowMs, record, wallMs);
      this.#host.addToBatch(bytes, record);
      this.#log.add(record.stamp.origin, record.stamp.seq, bytes);
      if (!wantsAck) continue;
      const entry = this.#ackFor(record, effect === "conflict");
      if (entry.status === "ok") this.#deferAck(this.#appends.nextToken, from, entry);
      else immediate.push(entry);
    }
    if (immediate.length > 0) this.sendAcks(from, immediate);
  }

  /**
   * A peer's restart voids the seqs of its own it cannot show a majority holds (recovery.ts):
   * records it sent just before it crashed, still on their way to the replicas' disks, may have
   * reached some. Once the SKIP is applied every replica counts those seqs as held, so one that
   * missed such a record never fetches it. A record among them that merges whatever its stamp
   * (`VoidedRecord`) is sent again by each holder under its own stamp: without it a replica
   * that missed a DONE kept the job pending, and would deliver it again once it owned it
   * (`hookd sim --revives --seed 1183`); one that missed a REVIVE kept the dead letter while
   * the holders delivered the retry. A SUBMIT, EVENT or ENDPOINT held so was never
   * acknowledged: a copy left uncommitted is confirmed by its owner's round (job_duties.ts) or
   * dropped after `uncommittedRetentionMs`; an ENDPOINT value a minority holds stays open.
   */
  #respreadVoided(skip: Extract<ReplicatedRecord, { type: "skip" }>): void {
    for (const [from, to] of skip.ranges) {
      for (const [, bytes] of this.#log.collectSorted(skip.stamp.origin, from, to)) {
        const decoded = decodeRecord(bytes);
        if (!decoded.ok) continue;
        if (respreads(decoded.value)) this.#host.respread(decoded.value);
      }
    }
  }

  /**
   * Whether this node holds job `jobId`'s body (or the key its finished job left). A seq the
   * tracker counts as held does not prove it: a restart's SKIP voids seqs a minority may hold,
   * a snapshot's summary covers jobs its server had dropped, and uncommitted copies are
   * dropped. A SUBMIT for a job not held is stored again before it is acknowledged (a confirm
   * round resends the original stamp): an "ok" for it would be a vote with nothing on disk.
   */
  #holdsSubmit(jobId: string): boolean {
    return this.#table.get(jobId)?.spec !== undefined ||
      this.#table.keyTombstone(jobId) !== undefined;
  }

  /** Whether this node holds event `eventId` (or the key it left): as `#holdsSubmit`, for events. */
  #holdsEvent(eventId: string): boolean {
    return this.#table.event(eventId) !== undefined ||
      this.#table.keyTombstone(eventId) !== undefined;
  }

  /**
   * An event's ACK: put-if-absent by the event's id (a keyed event's id is its key's): held
   * with another body is a conflict, the key of a finished one answers `finished`.
   */
  #eventAck(record: Extract<ReplicatedRecord, { type: "event" }>, conflicted: boolean): AckEntry {
    const id = record.body.event.id;
    const held = this.#table.events.get(id);
    const key = record.body.event.idempotencyKey;
    if (key !== undefined) {
      const other = this.#otherAck(
        record.stamp,
        this.#table.liveEventIncarnation(key, record.body.event.submittedAtMs, id),
        held?.body !== undefined || this.#table.keyTombstone(id) !== undefined,
      );
      if (other !== undefined) return other;
    }
    if (held === undefined) {
      const tombstone = this.#table.keyTombstone(id);
      if (tombstone === undefined) return { stamp: record.stamp, status: "ok", bodyHash: "" };
      const status: AckStatus = tombstone.bodyHash === record.body.event.bodyHash
        ? "finished"
        : "conflict_committed";
      return { stamp: record.stamp, status, bodyHash: tombstone.bodyHash };
    }
    if (conflicted || held.bodyHash !== record.body.event.bodyHash) {
      return {
        stamp: record.stamp,
        status: held.committed ? "conflict_committed" : "conflict",
        bodyHash: held.bodyHash,
      };
    }
    return { stamp: record.stamp, status: "ok", bodyHash: "" };
  }

  /**
   * Put-if-absent per key, for a keyed SUBMIT or event: another incarnation of its key live for
   * it (by the two submit times, not this node's clock, so every holder answers alike) is named
   * in the answer instead of a vote. A settled one always wins; an uncommitted one only where
   * this id is not held (`holdsThis`: a holder of this id votes for it, as before).
   */
  #otherAck(
    stamp: Stamp,
    other: Incarnation | undefined,
    holdsThis: boolean,
  ): AckEntry | undefined {
    if (other === undefined || (!other.settled && holdsThis)) return undefined;
    return {
      stamp,
      status: other.settled ? "other_settled" : "other_live",
      bodyHash: other.bodyHash,
      incarnation: { jobId: other.jobId, submittedAtMs: other.submittedAtMs },
    };
  }

  /**
   * Whether this node holds job `jobId` past generation `gen`'s start: delivered (in any
   * generation), finished in `gen`, or in a later one, here or in its tombstone or key. A
   * REVIVE of `gen` is then stale (its node's copy was a generation behind: a first retry
   * and its end went by while it was cut off) and changes nothing here: dead beats pending
   * within a generation. Acknowledged as usual, that retry was never attempted (session 39's
   * review).
   *
   * So is one of `gen` when another REVIVE claimed that generation here (`reviveOf`): this one
   * was made from a copy a generation behind as well, while that first retry still runs here.
   * Its end (a DEAD on its owner alone, the owner cut off) would absorb this one the same way.
   * Where no REVIVE of it is known here (it came by a state whose writer knew none), the vote
   * is `ok` as before.
   */
  #pastStartOf(jobId: string, gen: number, stamp: Stamp): boolean {
    const entry = this.#table.get(jobId);
    if (entry !== undefined) {
      if (entry.phase === "delivered" || entry.gen > gen) return true;
      if (entry.gen < gen) return false;
      if (entry.phase === "dead") return true;
      const startedBy = entry.reviveOf;
      return startedBy !== undefined && startedBy.gen === gen && !sameStamp(startedBy.stamp, stamp);
    }
    const gone = this.#table.goneTombstone(jobId);
    const key = this.#table.keyTombstone(jobId);
    return (gone !== undefined && gone.gen >= gen) ||
      (key !== undefined && (key.gen ?? 0) >= gen);
  }

  #ackFor(record: ReplicatedRecord, conflicted = false): AckEntry {
    if (record.type === "event") return this.#eventAck(record, conflicted);
    if (record.type === "revive") {
      const stale = this.#pastStartOf(record.jobId, record.gen, record.stamp);
      return { stamp: record.stamp, status: stale ? "finished" : "ok", bodyHash: "" };
    }
    if (record.type !== "submit") return { stamp: record.stamp, status: "ok", bodyHash: "" };
    const entry = this.#table.get(record.spec.id);
    const key = record.spec.idempotencyKey;
    if (key !== undefined) {
      const other = this.#otherAck(
        record.stamp,
        this.#table.liveIncarnation(key, record.spec.submittedAtMs, record.spec.id),
        entry?.spec !== undefined || this.#table.keyTombstone(record.spec.id) !== undefined,
      );
      if (other !== undefined) return other;
    }
    if (entry === undefined) {
      const tombstone = this.#table.keyTombstone(record.spec.id);
      if (tombstone !== undefined) {
        const status: AckStatus = tombstone.bodyHash === record.spec.bodyHash
          ? "finished"
          : "conflict_committed";
        return { stamp: record.stamp, status, bodyHash: tombstone.bodyHash };
      }
      return { stamp: record.stamp, status: "ok", bodyHash: "" };
    }
    if (conflicted || (entry.spec !== undefined && entry.bodyHash !== record.spec.bodyHash)) {
      return {
        stamp: record.stamp,
        status: entry.committed ? "conflict_committed" : "conflict",
        bodyHash: entry.bodyHash,
      };
    }
    return { stamp: record.stamp, status: "ok", bodyHash: "" };
  }

  #deferAck(token: number, to: string, entry: AckEntry): void {
    const batch = this.#appends.batchFor(token);
    if (batch === undefined) {
      // The append already completed: the record is durable.
      this.sendAcks(to, [entry]);
      return;
    }
    let list = batch.acks.get(to);
    if (list === undefined) {
      list = [];
      batch.acks.set(to, list);
    }
    list.push(entry);
  }

  sendAcks(to: string, entries: AckEntry[]): void {
    // Fail-stop (invariant 5): a node whose WAL failed votes for nothing, not even for what
    // it holds, so no path can count it toward a majority.
    if (this.#host.failed()) return;
    this.#metrics.acksSent.inc();
    this.#host.send(to, { kind: "ack", from: this.#self, entries });
  }
}
