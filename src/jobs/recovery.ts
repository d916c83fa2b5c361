/**
 * Recovery and checkpoints: replaying the WAL at open, the seqs of ours a restart voids once it
 * has caught up, and when a checkpoint is due and what it writes.
 *
 * Owns: decoding replayed WAL payloads into the table, the held tracker and the catch-up log;
 * the SKIP ranges a restart declares void (the margin and the holes); the bytes appended since
 * the last checkpoint and whether one is asked for. Must not: own the phase, the own seqs (it
 * raises and reads them through the host), the WAL batch, or do I/O: the shell writes the
 * checkpoint, and the core (replication_core.ts) asks whether one is due after each append.
 */

import type { JobsConfig } from "../config/jobs.ts";
import type { AppendBatcher } from "./append_batcher.ts";
import type { CatchupLog } from "./catchup_log.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { ByteWriter } from "../lib/bytes.ts";
import { decodeWalBatch, encodeWalSingleInto } from "./job_codec.ts";
import type { JobRecord } from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import { type SeqTracker, subtractSeqs } from "./seq_tracker.ts";

/** What recovery needs of the core: each a narrow door, none the whole core. */
export interface RecoveryHost {
  /** The next seq this node's own origin gives a record. */
  nextOwnSeq(): number;
  /** A seq below `seq` is held or was given: the next own seq is at least `seq`. */
  raiseNextOwnSeq(seq: number): void;
}

export interface RecoveryOptions {
  readonly self: string;
  readonly config: Pick<JobsConfig, "originPendingMax" | "checkpointBytes">;
  readonly metrics: Pick<CoreMetrics, "decodeErrors">;
  readonly table: Pick<JobTable, "apply" | "snapshotRecordsOrBytes">;
  readonly tracker: Pick<SeqTracker, "merge" | "addRange" | "add" | "max" | "gaps" | "summary">;
  readonly catchupLog: Pick<CatchupLog, "raiseFloor" | "add">;
  readonly appends: Pick<AppendBatcher, "notDurableSeqs">;
  readonly host: RecoveryHost;
}

export class Recovery {
  readonly #self: string;
  readonly #config: RecoveryOptions["config"];
  readonly #metrics: RecoveryOptions["metrics"];
  readonly #table: RecoveryOptions["table"];
  readonly #tracker: RecoveryOptions["tracker"];
  readonly #log: RecoveryOptions["catchupLog"];
  readonly #appends: RecoveryOptions["appends"];
  readonly #host: RecoveryHost;
  #appendedBytesSinceCheckpoint = 0;
  #lastSnapshotBytes = 0;
  #checkpointRequested = false;
  /** What the requested checkpoint covers, given back if it fails. */
  #bytesBeforeCut = 0;

  constructor(options: RecoveryOptions) {
    this.#self = options.self;
    this.#config = options.config;
    this.#metrics = options.metrics;
    this.#table = options.table;
    this.#tracker = options.tracker;
    this.#log = options.catchupLog;
    this.#appends = options.appends;
    this.#host = options.host;
  }

  /**
   * One WAL record (a batch of records, replayed in log order), at open, before `recovered`.
   * Returns why it could not be decoded, or undefined. Nothing of an undecodable batch is
   * applied, and the caller must not go on: the batch was durable (the WAL replays only
   * complete batches), so it may hold acknowledged jobs of other clients, and skipping it once
   * lost one that then lived on only two disks (issue 17).
   */
  replay(kind: "snapshot" | "data", payload: Uint8Array, wallMs: number): string | undefined {
    if (kind === "snapshot") {
      // Checkpoint records are written one record per WAL record, not batched.
      const decoded = decodeWalBatch(payload);
      if (!decoded.ok || decoded.value.length !== 1) {
        this.#metrics.decodeErrors.inc();
        return decoded.ok
          ? `a checkpoint record holds ${decoded.value.length} records, not 1`
          : decoded.reason;
      }
      const item = decoded.value[0]!;
      this.#replayRecord(item.record, item.bytes, wallMs, true);
      return undefined;
    }
    const decoded = decodeWalBatch(payload);
    if (!decoded.ok) {
      this.#metrics.decodeErrors.inc();
      return decoded.reason;
    }
    for (const item of decoded.value) this.#replayRecord(item.record, item.bytes, wallMs, false);
    return undefined;
  }

  #replayRecord(record: JobRecord, bytes: Uint8Array, wallMs: number, fromSnapshot: boolean): void {
    if (record.type === "meta") {
      this.#tracker.merge(record.held);
      for (const h of record.held) {
        // What a checkpoint covered is no longer in the log: serve it by snapshot.
        this.#log.raiseFloor(
          h.origin,
          h.above.length > 0 ? h.above[h.above.length - 1]![1] : h.contiguous,
        );
      }
      this.#host.raiseNextOwnSeq(record.nextOwnSeq);
      return;
    }
    if (record.type === "skip") {
      for (const [a, b] of record.ranges) this.#tracker.addRange(record.stamp.origin, a, b);
    }
    if (record.type !== "skip") this.#table.apply(record, wallMs);
    if ("stamp" in record) {
      this.#tracker.add(record.stamp.origin, record.stamp.seq);
      if (!fromSnapshot) this.#log.add(record.stamp.origin, record.stamp.seq, bytes);
      if (record.stamp.origin === this.#self) {
        this.#host.raiseNextOwnSeq(record.stamp.seq + 1);
      }
    }
  }

  /**
   * The records a checkpoint writes: the live table, kept keys, and replication bookkeeping.
   * Each record but the last is a view of one reused buffer, valid until the next is drawn: a
   * caller that keeps them copies each as it comes (`Array.from(records, (b) => b.slice())`).
   * Called at the WAL's cut; the WAL draws the records a slice at a time while the table moves
   * on, so a job may be written as it stood after the cut (recovery replays the records from
   * the cut on over it, and applying a record again changes nothing). The held seqs and the
   * next own seq are taken now, at the cut: a seq held only after it is in the data records
   * replayed after the snapshot, and claiming it here would also raise the catch-up log's
   * floor past records that log could still serve.
   */
  snapshotRecords(): Iterable<Uint8Array> {
    const meta = encodeWalSingleInto(new ByteWriter(), {
      type: "meta",
      nextOwnSeq: this.#host.nextOwnSeq(),
      held: this.#tracker.summary(1 << 16),
    });
    const table = this.#table;
    return (function* () {
      // One buffer for every record: each is copied into the checkpoint before the next is
      // drawn (Wal.checkpoint), so no job costs a buffer of its own.
      const writer = new ByteWriter(1024);
      for (const r of table.snapshotRecordsOrBytes()) yield encodeWalSingleInto(writer, r);
      yield meta;
    })();
  }

  /** A checkpoint was asked for and has not finished: its snapshot may still be drawn. */
  get checkpointPending(): boolean {
    return this.#checkpointRequested;
  }

  /** A checkpoint finished (or failed: `snapshotBytes` undefined). */
  checkpointDone(snapshotBytes: number | undefined): void {
    this.#checkpointRequested = false;
    if (snapshotBytes !== undefined) this.#lastSnapshotBytes = snapshotBytes;
    // A failed one covered nothing: what it would have covered still counts.
    else this.#appendedBytesSinceCheckpoint += this.#bytesBeforeCut;
    this.#bytesBeforeCut = 0;
  }

  /**
   * The own seqs a restart declares void once a majority answered its catch-up, and the next
   * own seq after them. Seqs the majority does not know of were never durable here: voided
   * (with a margin for what others may hold), nobody waits for them and no seq is ever reused
   * for a different record. `peerSeqOfMine`: the highest seq of ours a peer reported.
   */
  voidedAfterRestart(
    peerSeqOfMine: number,
  ): { ranges: Array<[number, number]>; nextOwnSeq: number } {
    const known = Math.max(
      this.#tracker.max(this.#self),
      peerSeqOfMine,
      this.#host.nextOwnSeq() - 1,
    );
    // Always the whole margin, even having heard from every voter: a peer reports only the
    // seqs it holds durably, so a record of ours still on its way to its disk (or still in
    // the network) is missing from every answer, and without the margin its seq was given to
    // a new record that the peer then took for the old one and acknowledged unstored.
    const margin = this.#config.originPendingMax;
    // A hole is a seq held neither durably nor on its way to disk: our own records that
    // catch-up just brought back are still being written, and must not be voided.
    const holes = subtractSeqs(
      this.#tracker.gaps(this.#self, known, 4096),
      this.#appends.notDurableSeqs(this.#self),
    );
    const ranges: Array<[number, number]> = [...holes];
    ranges.push([known + 1, known + margin]);
    return { ranges, nextOwnSeq: known + margin + 1 };
  }

  /** An append of `bytes` went to the WAL: returns whether a checkpoint is due now. */
  appended(bytes: number): boolean {
    this.#appendedBytesSinceCheckpoint += bytes;
    if (
      !this.#checkpointRequested &&
      this.#appendedBytesSinceCheckpoint >=
        Math.max(this.#config.checkpointBytes, 2 * this.#lastSnapshotBytes)
    ) {
      this.#checkpointRequested = true;
      // Appends asked for from now on are queued behind the checkpoint, after its cut: they
      // are replayed after its snapshot, so they count toward the next one (a checkpoint
      // written in slices takes seconds, and a stream of appends goes on meanwhile).
      this.#bytesBeforeCut = this.#appendedBytesSinceCheckpoint;
      this.#appendedBytesSinceCheckpoint = 0;
      return true;
    }
    return false;
  }
}

/** Sorts and joins ranges, dropping any at or above `below` (the SKIP's own seq). */
export function merged(ranges: Array<[number, number]>, below: number): Array<[number, number]> {
  const sorted = ranges.filter(([a]) => a < below).map(([a, b]) =>
    [a, Math.min(b, below - 1)] as [number, number]
  )
    .sort((x, y) => x[0] - y[0]);
  const out: Array<[number, number]> = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}
