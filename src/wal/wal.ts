/**
 * The write-ahead log: durable, ordered, checksummed records with group commit.
 *
 * Owns the segment files of one directory and the single writer that appends to them. Records
 * are opaque bytes; the WAL assigns each an LSN (its position in the log, from 0) and resolves
 * `append` only once the record is on disk (write + `syncData`).
 *
 * Group commit: appends join a queue; one writer takes as many queued appends as the batch
 * bounds allow, writes them with one write and one `syncData`, then resolves every waiter of
 * the batch. Appends that arrive during the fsync form the next batch, and when some did (a
 * stream) the writer waits as long as that fsync took before it writes them (`syncPaceMsMax`,
 * sync_pace.ts), so more of them share it. `per-append` mode writes and syncs each record
 * alone, for comparison.
 *
 * Fail-stop: a failed write or fsync rejects every waiter of that batch and every queued
 * append, and the WAL refuses all further appends with `WalFailedError`. An fsync is never
 * retried: after a failed fsync the kernel may have dropped the dirty pages, so a retry that
 * succeeds proves nothing. A rejected append's outcome is unknown, not negative: its bytes may
 * still have reached the disk and be replayed on the next open (callers treat records as
 * idempotent).
 *
 * Must not: interpret record payloads, or retry I/O.
 */

import { assert } from "../lib/assert.ts";
import { randomRng, type Rng } from "../lib/rng.ts";
import { validateWalConfig, type WalConfig, walDefaults } from "../config/wal.ts";
import type { Histogram } from "../metrics/histogram.ts";
import { type Counter, type Gauge, MetricsRegistry } from "../metrics/registry.ts";
import {
  BATCH_END_PAYLOAD_BYTES,
  encodeRecordInto,
  encodeSegmentHeader,
  frameBytes,
  RecordType,
  SEGMENT_FLAG_CHECKPOINT,
  SEGMENT_HEADER_BYTES,
  SEGMENT_VERSION,
  segmentFileName,
  writeBatchEndPayload,
} from "./record_codec.ts";
import { recoverWal, type RecoveryReport, type ReplayedRecord } from "./recovery.ts";
import { denoWalFsWith, joinPath, type WalFile, type WalFs } from "./wal_fs.ts";
import { syncPaceWaitMs } from "./sync_pace.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";

/** The WAL stopped accepting appends after a write or fsync failed. */
export class WalFailedError extends Error {
  override name = "WalFailedError";
}

/** What a checkpoint's caller failed to produce (its `cause`): that checkpoint fails, not the WAL. */
class SnapshotSourceError extends Error {
  override name = "SnapshotSourceError";
  constructor(cause: unknown) {
    super("the checkpoint's snapshot could not be drawn", { cause });
  }
}

/** The append queue is full; the caller should shed load (a 503), not wait. */
export class WalBusyError extends Error {
  override name = "WalBusyError";
}

export interface WalOpenOptions {
  /** Overrides of `walDefaults`. */
  config?: Partial<WalConfig>;
  /** File-system adapter. @default the real disk */
  fs?: WalFs;
  /** Where the WAL's metrics are registered. @default a private registry */
  metrics?: MetricsRegistry;
  /** Called for every recovered record, in log order, before `open` resolves. */
  replay?: (record: ReplayedRecord) => void;
  /** Draws each new segment's checksum salt. @default seeded from the OS */
  rng?: Rng;
  /**
   * The clock and timer fsync pacing reads and waits on (`syncPaceMsMax`): the simulator's
   * virtual ones there, so a seed replays exactly. @default realRuntime
   */
  clock?: Pick<Runtime, "nowMs" | "setTimer">;
}

export interface CheckpointResult {
  snapshotRecords: number;
  snapshotBytes: number;
  removedSegments: string[];
}

interface AppendWaiter {
  kind: "append";
  payload: Uint8Array;
  lsn: number;
  resolve: (lsn: number) => void;
  reject: (error: Error) => void;
}

/** The segment being appended to. */
interface OpenSegment {
  file: WalFile;
  index: number;
  sizeBytes: number;
  /** Seeds the checksum of every frame written to it (see record_codec.ts). */
  salt: number;
}

interface CheckpointWaiter {
  kind: "checkpoint";
  takeSnapshot: () => Iterable<Uint8Array>;
  resolve: (result: CheckpointResult) => void;
  reject: (error: Error) => void;
}

type QueueItem = AppendWaiter | CheckpointWaiter;

const BATCH_END_BYTES = frameBytes(BATCH_END_PAYLOAD_BYTES);
/** A checkpoint's BatchEnd: empty (record_codec.ts says why only data batches carry one). */
const CHECKPOINT_END_BYTES = frameBytes(0);
const EMPTY = new Uint8Array(0);
/** The BatchEnd payload, rewritten for each batch (encodeRecordInto copies it at once). */
const batchEndPayload = new Uint8Array(BATCH_END_PAYLOAD_BYTES);

export interface WalMetrics {
  appends: Counter;
  batches: Counter;
  fsyncs: Counter;
  paceWaits: Counter;
  bytesWritten: Counter;
  checkpoints: Counter;
  batchRecords: Histogram;
  fsyncMs: Histogram;
  segments: Gauge;
  failed: Gauge;
}

function registerMetrics(registry: MetricsRegistry): WalMetrics {
  return {
    appends: registry.counter("hookd_wal_appends_total", "Records acknowledged as durable"),
    batches: registry.counter("hookd_wal_batches_total", "Batches written (one write each)"),
    paceWaits: registry.counter(
      "hookd_wal_sync_pace_waits_total",
      "Batches held back for company while appends came in a stream (syncPaceMsMax)",
    ),
    fsyncs: registry.counter(
      "hookd_wal_fsyncs_total",
      "fsyncs while appending: syncData of segments, and directory syncs for rotations and checkpoints",
    ),
    bytesWritten: registry.counter(
      "hookd_wal_bytes_written_total",
      "Bytes written, framing included",
    ),
    checkpoints: registry.counter("hookd_wal_checkpoints_total", "Checkpoints completed"),
    batchRecords: registry.histogram("hookd_wal_batch_records", "Records per batch", {}, 1),
    fsyncMs: registry.histogram("hookd_wal_fsync_ms", "Write + syncData time per batch, ms"),
    segments: registry.gauge("hookd_wal_segments", "Segment files on disk"),
    failed: registry.gauge("hookd_wal_failed", "1 once a write or fsync failed (fail-stop)"),
  };
}

export class Wal {
  readonly #dir: string;
  readonly #fs: WalFs;
  readonly #config: WalConfig;
  readonly metrics: WalMetrics;
  readonly #rng: Rng;
  #file: WalFile;
  #segmentIndex: number;
  #segmentSizeBytes: number;
  #salt: number;
  #segments: Array<{ index: number; name: string }>;
  /** LSN the next `append` gets. */
  #nextLsn: number;
  /** Queue of waiters; `#head` is the first not yet taken by the writer. */
  #queue: QueueItem[] = [];
  #head = 0;
  /** Appends accepted but not yet settled (queued or in the batch being written). */
  #unsettled = 0;
  #writing = false;
  #failure: WalFailedError | undefined;
  #closing: Promise<void> | undefined;
  #idle: Array<() => void> = [];
  /** The checkpoint being written beside the appends, if any (`#writeSnapshot`). */
  #checkpointTask: Promise<void> | undefined;
  readonly #clock: Pick<Runtime, "nowMs" | "setTimer">;

  private constructor(
    dir: string,
    fs: WalFs,
    config: WalConfig,
    metrics: WalMetrics,
    rng: Rng,
    clock: Pick<Runtime, "nowMs" | "setTimer">,
    tail: OpenSegment,
    segments: Array<{ index: number; name: string }>,
    nextLsn: number,
  ) {
    this.#clock = clock;
    this.#dir = dir;
    this.#fs = fs;
    this.#config = config;
    this.metrics = metrics;
    this.#rng = rng;
    this.#file = tail.file;
    this.#segmentIndex = tail.index;
    this.#segmentSizeBytes = tail.sizeBytes;
    this.#salt = tail.salt;
    this.#segments = segments;
    this.#nextLsn = nextLsn;
    metrics.segments.set(segments.length);
  }

  /**
   * Opens (or creates) the WAL in `dir`: recovers every valid record through
   * `options.replay`, cuts a torn tail (reported), and fails with `WalCorruptionError` on
   * damage to acknowledged data.
   */
  static async open(
    dir: string,
    options: WalOpenOptions = {},
  ): Promise<{ wal: Wal; report: RecoveryReport }> {
    const config = validateWalConfig({ ...walDefaults, ...options.config });
    const fs = options.fs ?? denoWalFsWith(config);
    const metrics = registerMetrics(options.metrics ?? new MetricsRegistry());
    const recovered = await recoverWal(
      fs,
      dir,
      config.recordBytesMax,
      options.replay ?? (() => {}),
    );
    const rng = options.rng ?? randomRng();
    let segments = recovered.segments;
    let tail: OpenSegment;
    const last = recovered.lastSegment;
    if (last === undefined) {
      tail = await createSegment(fs, dir, 0, 0, recovered.nextLsn, newSalt(rng));
      segments = [{ index: 0, name: segmentFileName(0) }];
    } else {
      tail = {
        file: await fs.openAppend(joinPath(dir, last.name), false),
        index: last.index,
        sizeBytes: last.sizeBytes,
        salt: last.header.salt,
      };
    }
    const wal = new Wal(
      dir,
      fs,
      config,
      metrics,
      rng,
      options.clock ?? realRuntime,
      tail,
      segments,
      recovered.nextLsn,
    );
    return { wal, report: recovered.report };
  }

  /** The LSN the next append will get; every LSN below it has been handed out. */
  get nextLsn(): number {
    return this.#nextLsn;
  }

  /** Appends accepted and not yet settled. */
  get queuedAppends(): number {
    return this.#unsettled;
  }

  get failed(): boolean {
    return this.#failure !== undefined;
  }

  get segmentCount(): number {
    return this.#segments.length;
  }

  /**
   * Appends `payload` and resolves with its LSN once it is durable. The WAL keeps a reference
   * to `payload` until then: do not modify it. Rejects with `WalFailedError` after a failure,
   * `WalBusyError` when the queue is full, and `RangeError` for an oversized record.
   */
  append(payload: Uint8Array): Promise<number> {
    const refusal = this.#refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    if (payload.length > this.#config.recordBytesMax) {
      return Promise.reject(
        new RangeError(
          `WAL record of ${payload.length} bytes exceeds recordBytesMax ${this.#config.recordBytesMax}`,
        ),
      );
    }
    if (this.#unsettled >= this.#config.queueRecordsMax) {
      return Promise.reject(
        new WalBusyError(`WAL append queue is full (${this.#config.queueRecordsMax} records)`),
      );
    }
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ kind: "append", payload, lsn: this.#nextLsn++, resolve, reject });
      this.#unsettled++;
      this.#kick();
    });
  }

  /**
   * Writes a checkpoint and reclaims the segments it makes obsolete. `takeSnapshot` is called
   * by the writer at the cut: after every append made before this call is durable, and before
   * any later append is written. The records its iterable yields must stand for the whole
   * state up to the cut; they are drawn a slice at a time while appends go on, so they may
   * also hold what came after it. On recovery every data record from the cut on is replayed
   * after the snapshot: applying a record twice must be harmless. The WAL copies each record
   * before it draws the next, so the iterable may yield views of one buffer it reuses.
   */
  checkpoint(takeSnapshot: () => Iterable<Uint8Array>): Promise<CheckpointResult> {
    const refusal = this.#refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    return new Promise<CheckpointResult>((resolve, reject) => {
      this.#queue.push({ kind: "checkpoint", takeSnapshot, resolve, reject });
      this.#kick();
    });
  }

  /**
   * Waits for every queued append to settle, then closes the segment file. Every call
   * resolves only once the file is closed, not just the first.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#writing || this.#head < this.#queue.length) {
        await new Promise<void>((resolve) => this.#idle.push(resolve));
      }
      await this.#checkpointTask;
      this.#file.close();
    })();
    return this.#closing;
  }

  #refusal(): Error | undefined {
    if (this.#failure !== undefined) {
      return new WalFailedError(`WAL is failed and refuses appends: ${this.#failure.message}`, {
        cause: this.#failure.cause,
      });
    }
    if (this.#closing !== undefined) return new WalFailedError("WAL is closed");
    return undefined;
  }

  #kick(): void {
    if (this.#writing) return;
    this.#writing = true;
    // Start on a microtask, not synchronously: appends made in this same turn (a burst of
    // resolved appenders appending again) then join the first batch instead of trailing it.
    queueMicrotask(() => void this.#drain());
  }

  /** How long the last batch's write + fsync took, and whether appends queued meanwhile. */
  #lastSyncMs = 0;
  #queuedDuringSync = false;

  async #drain(): Promise<void> {
    try {
      while (this.#head < this.#queue.length && this.#failure === undefined) {
        const first = this.#queue[this.#head]!;
        if (first.kind === "checkpoint") {
          // What follows a checkpoint is judged afresh (it may fail before any write).
          this.#queuedDuringSync = false;
          this.#head++;
          // One checkpoint at a time (the job store asks for the next only once one is done).
          if (this.#checkpointTask !== undefined) await this.#checkpointTask;
          if (this.#failure !== undefined) {
            first.reject(this.#failure);
            break;
          }
          await this.#startCheckpoint(first);
          continue;
        }
        if (this.#queue.length - this.#head < this.#config.batchRecordsMax) {
          const waitMs = Math.max(
            this.#config.batchWaitMs,
            syncPaceWaitMs(
              this.#lastSyncMs,
              this.#config.syncMode === "batched" ? this.#config.syncPaceMsMax : 0,
              this.#queuedDuringSync,
            ),
          );
          if (waitMs > 0) {
            if (waitMs > this.#config.batchWaitMs) this.metrics.paceWaits.inc();
            await new Promise<void>((resolve) => this.#clock.setTimer(waitMs, resolve));
          }
        }
        await this.#writeBatch(this.#takeBatch());
        // Under sustained load the writer never goes idle, so drop settled waiters here; only
        // once they are at least half the queue, so the copy costs O(1) per append.
        if (this.#head >= 1024 && 2 * this.#head >= this.#queue.length) this.#compactQueue();
      }
    } catch (error) {
      this.#fail(error);
    } finally {
      this.#writing = false;
      this.#compactQueue();
      if (this.#head < this.#queue.length && this.#failure === undefined) {
        this.#kick();
      } else {
        for (const resolve of this.#idle.splice(0)) resolve();
      }
    }
  }

  #takeBatch(): AppendWaiter[] {
    const recordsMax = this.#config.syncMode === "per-append" ? 1 : this.#config.batchRecordsMax;
    const batch: AppendWaiter[] = [];
    let bytes = BATCH_END_BYTES;
    while (this.#head < this.#queue.length && batch.length < recordsMax) {
      const item = this.#queue[this.#head]!;
      if (item.kind !== "append") break;
      const size = frameBytes(item.payload.length);
      if (batch.length > 0 && bytes + size > this.#config.batchBytesMax) break;
      batch.push(item);
      bytes += size;
      this.#head++;
    }
    assert(batch.length > 0, "a batch starts with an append");
    return batch;
  }

  async #writeBatch(batch: AppendWaiter[]): Promise<void> {
    let bytes = BATCH_END_BYTES;
    for (const item of batch) bytes += frameBytes(item.payload.length);
    try {
      if (
        this.#segmentSizeBytes + bytes > this.#config.segmentBytes &&
        this.#segmentSizeBytes > SEGMENT_HEADER_BYTES
      ) {
        await this.#rotate(0, batch[0]!.lsn);
      }
      // Encoded after any rotation: the frames carry the salt of the segment they land in.
      const buffer = new Uint8Array(bytes);
      let offset = 0;
      for (const item of batch) {
        offset = encodeRecordInto(buffer, offset, RecordType.Data, item.payload, this.#salt);
        // Settled waiters linger in the queue until it is compacted; they must not pin
        // payloads (up to recordBytesMax each) already copied into the batch buffer.
        item.payload = EMPTY;
      }
      offset = encodeRecordInto(
        buffer,
        offset,
        RecordType.BatchEnd,
        writeBatchEndPayload(batchEndPayload, offset),
        this.#salt,
      );
      assert(offset === bytes, "batch buffer filled exactly");
      await this.#writeAndSync(buffer);
    } catch (error) {
      const failure = this.#fail(error);
      for (const item of batch) item.reject(failure);
      this.#unsettled -= batch.length;
      return;
    }
    this.metrics.appends.inc(batch.length);
    this.metrics.batches.inc();
    this.metrics.batchRecords.record(batch.length);
    this.#unsettled -= batch.length;
    for (const item of batch) item.resolve(item.lsn);
  }

  /**
   * The cut: every append before it is durable and none after it is written. The checkpoint
   * gets a segment of its own, and appends go on at once in the segment after it, while
   * `#writeSnapshot` fills the checkpoint's segment in slices (so a large table no longer
   * stalls the event loop and every append for seconds: session 33's freeze).
   */
  async #startCheckpoint(waiter: CheckpointWaiter): Promise<void> {
    // Taking the snapshot touches no file: a caller's callback that throws fails this
    // checkpoint only, not the WAL.
    let records: Iterator<Uint8Array>;
    try {
      records = waiter.takeSnapshot()[Symbol.iterator]();
    } catch (error) {
      waiter.reject(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    // Every append before the cut is durable (the writer is FIFO), so the next data LSN is the
    // first LSN not yet written; the checkpoint's segment and the data segment after it both
    // start there, and recovery replays that data segment after the snapshot.
    const cutLsn = this.#firstUnwrittenLsn();
    const index = this.#segmentIndex + 1;
    let target: OpenSegment;
    try {
      target = await createSegment(
        this.#fs,
        this.#dir,
        index,
        SEGMENT_FLAG_CHECKPOINT,
        cutLsn,
        newSalt(this.#rng),
      );
      this.metrics.fsyncs.inc(2);
    } catch (error) {
      waiter.reject(this.#fail(error));
      return;
    }
    // Listed from now on, complete or not: a torn one is reclaimed by the next checkpoint.
    this.#segments.push({ index, name: segmentFileName(index) });
    try {
      this.#segmentIndex = index;
      await this.#rotate(0, cutLsn);
    } catch (error) {
      target.file.close();
      waiter.reject(this.#fail(error));
      return;
    }
    this.#checkpointTask = this.#writeSnapshot(waiter, target, records).finally(() => {
      this.#checkpointTask = undefined;
    });
  }

  /**
   * Writes the snapshot into the checkpoint's segment, a slice per event-loop turn, then
   * syncs it and reclaims the segments before it. What the records say may be newer than the
   * cut (the caller's state moves on between slices): recovery replays every append from the
   * cut on after the snapshot, so the caller's records must be idempotent, as they are for a
   * rejected append's unknown outcome.
   */
  async #writeSnapshot(
    waiter: CheckpointWaiter,
    target: OpenSegment,
    records: Iterator<Uint8Array>,
  ): Promise<void> {
    const salt = target.salt;
    const sliceBytes = this.#config.checkpointSliceBytes;
    const result: CheckpointResult = {
      snapshotRecords: 0,
      snapshotBytes: frameBytes(0) * 2 + CHECKPOINT_END_BYTES,
      removedSegments: [],
    };
    let chunk = new Uint8Array(sliceBytes + 3 * frameBytes(0));
    let offset = encodeRecordInto(chunk, 0, RecordType.SnapshotBegin, EMPTY, salt);
    let unsyncedBytes = 0;
    // Producing the records is the caller's code: an error there, or a record over the limit,
    // fails this checkpoint only (below); any other error is the disk's and fails the WAL.
    const draw = (): IteratorResult<Uint8Array> => {
      try {
        const next = records.next();
        if (next.done !== true && next.value.length > this.#config.recordBytesMax) {
          throw new RangeError(
            `snapshot record of ${next.value.length} bytes exceeds recordBytesMax ${this.#config.recordBytesMax}`,
          );
        }
        return next;
      } catch (error) {
        throw new SnapshotSourceError(error);
      }
    };
    const flush = async () => {
      await target.file.writeAll(chunk.subarray(0, offset));
      this.metrics.bytesWritten.inc(offset);
      unsyncedBytes += offset;
      offset = 0;
    };
    try {
      for (let done = false; !done;) {
        if (this.#failure !== undefined) throw this.#failure;
        const sliceStartMs = this.#clock.nowMs();
        for (let framedBytes = 0; framedBytes < sliceBytes;) {
          const next = draw();
          if (next.done === true) {
            done = true;
            break;
          }
          const record = next.value;
          const size = frameBytes(record.length);
          if (offset + size > chunk.length) {
            await flush();
            if (size + 2 * frameBytes(0) > chunk.length) {
              chunk = new Uint8Array(size + 2 * frameBytes(0));
            }
          }
          offset = encodeRecordInto(chunk, offset, RecordType.Snapshot, record, salt);
          framedBytes += size;
          result.snapshotRecords++;
          result.snapshotBytes += size;
          if (this.#clock.nowMs() - sliceStartMs >= this.#config.checkpointSliceMs) break;
        }
        if (done) {
          if (offset + 2 * frameBytes(0) > chunk.length) await flush();
          offset = encodeRecordInto(chunk, offset, RecordType.SnapshotEnd, EMPTY, salt);
          offset = encodeRecordInto(chunk, offset, RecordType.BatchEnd, EMPTY, salt);
        }
        await flush();
        if (!done && unsyncedBytes >= this.#config.checkpointSyncBytes) {
          // Off-thread, and awaited: the appends' fsyncs on the same disk then never have
          // more than this much of the checkpoint's dirty data to write ahead of their own.
          unsyncedBytes = 0;
          await target.file.syncData(true);
          this.metrics.fsyncs.inc();
        }
        // A macrotask, not a microtask: timers, datagrams and HTTP run between slices.
        if (!done) await new Promise<void>((resolve) => this.#clock.setTimer(0, resolve));
      }
      if (this.#failure !== undefined) throw this.#failure;
      // Off the event-loop thread whatever the inline policy says: tens of MB of dirty pages
      // would block it for as long as the disk takes.
      await target.file.syncData(true);
      this.metrics.fsyncs.inc();
    } catch (error) {
      target.file.close();
      if (!(error instanceof SnapshotSourceError)) {
        waiter.reject(this.#fail(error));
        return;
      }
      // The caller's failure: the WAL is sound, only this checkpoint is void. Its segment
      // stays: appends went on in the next one, and recovery knows a torn checkpoint there by
      // that segment starting at its cut, while a missing number would read as a lost
      // segment. The next checkpoint reclaims it with the segments before it.
      const cause = error.cause;
      waiter.reject(cause instanceof Error ? cause : new Error(String(cause)));
      return;
    }
    target.file.close();
    // The checkpoint is durable; the segments before it are now garbage. A crash during the
    // removals is finished by recovery, which starts at the newest complete checkpoint.
    const obsolete = this.#segments.filter((s) => s.index < target.index);
    this.#segments = this.#segments.filter((s) => s.index >= target.index);
    this.metrics.segments.set(this.#segments.length);
    try {
      for (const segment of obsolete) {
        await this.#fs.remove(joinPath(this.#dir, segment.name));
        result.removedSegments.push(segment.name);
      }
      if (obsolete.length > 0) {
        await this.#fs.syncDir(this.#dir);
        this.metrics.fsyncs.inc();
      }
    } catch (error) {
      waiter.reject(this.#fail(error));
      return;
    }
    this.metrics.checkpoints.inc();
    waiter.resolve(result);
  }

  #firstUnwrittenLsn(): number {
    for (let i = this.#head; i < this.#queue.length; i++) {
      const item = this.#queue[i]!;
      if (item.kind === "append") return item.lsn;
    }
    return this.#nextLsn;
  }

  async #writeAndSync(buffer: Uint8Array): Promise<void> {
    const started = this.#clock.nowMs();
    // Appends left behind by the batch bounds do not count, only those that came while it ran
    // (nothing compacts the queue meanwhile).
    const queuedBefore = this.#queue.length;
    await this.#file.writeAll(buffer);
    await this.#file.syncData();
    this.#lastSyncMs = this.#clock.nowMs() - started;
    this.#queuedDuringSync = this.#queue.length > queuedBefore;
    this.metrics.fsyncMs.record(this.#lastSyncMs);
    this.metrics.fsyncs.inc();
    this.metrics.bytesWritten.inc(buffer.length);
    this.#segmentSizeBytes += buffer.length;
  }

  async #rotate(flags: number, firstLsn: number): Promise<void> {
    const index = this.#segmentIndex + 1;
    // The old file is closed only once the new one exists: if creating it fails, `#file`
    // must still be an open handle for `close()` to close (a closed Deno file throws).
    const next = await createSegment(
      this.#fs,
      this.#dir,
      index,
      flags,
      firstLsn,
      newSalt(this.#rng),
    );
    this.#file.close();
    this.#file = next.file;
    this.metrics.fsyncs.inc(2);
    this.#segmentIndex = index;
    this.#segmentSizeBytes = next.sizeBytes;
    this.#salt = next.salt;
    this.#segments.push({ index, name: segmentFileName(index) });
    this.metrics.segments.set(this.#segments.length);
  }

  /** Enters the failed state (once) and rejects everything still queued. */
  #fail(error: unknown): WalFailedError {
    if (this.#failure === undefined) {
      const message = error instanceof Error ? error.message : String(error);
      this.#failure = new WalFailedError(`WAL write or fsync failed: ${message}`, { cause: error });
      this.metrics.failed.set(1);
    }
    const failure = this.#failure;
    for (let i = this.#head; i < this.#queue.length; i++) {
      const item = this.#queue[i]!;
      item.reject(failure);
      if (item.kind === "append") this.#unsettled--;
    }
    this.#head = this.#queue.length;
    return failure;
  }

  #compactQueue(): void {
    if (this.#head === 0) return;
    this.#queue = this.#queue.slice(this.#head);
    this.#head = 0;
  }
}

/** A random u32 that whoever chose a payload cannot predict. */
function newSalt(rng: Rng): number {
  return rng.int(0x1_0000_0000) >>> 0;
}

/**
 * Creates segment `index` and makes its header and its directory entry durable before any
 * record goes in: recovery relies on a damaged header meaning nothing follows it.
 */
async function createSegment(
  fs: WalFs,
  dir: string,
  index: number,
  flags: number,
  firstLsn: number,
  salt: number,
): Promise<OpenSegment> {
  const file = await fs.openAppend(joinPath(dir, segmentFileName(index)), true);
  try {
    await file.writeAll(
      encodeSegmentHeader({ version: SEGMENT_VERSION, flags, segmentIndex: index, firstLsn, salt }),
    );
    await file.syncData();
    await fs.syncDir(dir);
  } catch (error) {
    file.close();
    throw error;
  }
  return { file, index, sizeBytes: SEGMENT_HEADER_BYTES, salt };
}
