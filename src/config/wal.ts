/**
 * Write-ahead log (src/wal/)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { nonNegative, positiveInteger, relation } from "./checks.ts";

export type WalSyncMode = "batched" | "per-append";

export interface WalConfig {
  /**
   * A segment is closed and a new one started once it holds this many bytes. Large enough that
   * rotation (an open, a header write, a directory fsync) is rare next to the batch rate; small
   * enough that reclamation after a checkpoint frees disk promptly.
   * @default 64 MiB
   */
  segmentBytes: number;
  /**
   * `batched`: concurrent appends share one write and one `syncData` (group commit).
   * `per-append`: one write and one `syncData` per append — the earlier system's mode, kept so
   * the benchmark can show the difference in one run.
   * @default "batched"
   */
  syncMode: WalSyncMode;
  /**
   * Most records one batch may carry. Bounds the latency an append can wait behind others and
   * the size of one write. 4,096 records of 300 bytes is 1.2 MB: one write, still well under
   * the time of an fsync on this disk.
   * @default 4096
   */
  batchRecordsMax: number;
  /** Most bytes one batch may carry (framing included). @default 4 MiB */
  batchBytesMax: number;
  /**
   * How long an idle writer waits for company before it writes a lone append. Zero: batches
   * form by themselves from the appends that arrive while the previous fsync runs, so waiting
   * would only add latency at low load.
   * @default 0
   */
  batchWaitMs: number;
  /**
   * Most appends queued (written or not) before `append` refuses with `WalBusyError`. Bounds
   * memory when the disk cannot keep up; callers turn it into a 503.
   * @default 65536
   */
  queueRecordsMax: number;
  /**
   * Largest record payload accepted. One job-store append holds a job with the largest
   * payload (delivery.payloadBytesMax, 1 MiB) plus its headers, URL and framing.
   * @default 2 MiB
   */
  recordBytesMax: number;
  /**
   * An fsync runs on the event-loop thread while the recent ones took less than this (a moving
   * average), and in Deno's blocking-thread pool once they take longer. Inline, a small batch's
   * write + fdatasync cost 28-31 µs of CPU against 62-65 µs through the pool
   * (bench/results/cost/fsync_modes.ts), and five nodes spent 7-9 % less CPU per job at 200
   * jobs/s (bench/results/cost/wake_census_output.txt; issue 19).
   *
   * Off-thread, a disk that stalls for seconds cannot stall the node's probes, acks and timers
   * with it; inline, what is queued for peers leaves just before the fsync blocks
   * (`beforeInlineSync`), so a SUBMIT's replicas fsync while the leader does.
   *
   * On by default (2 ms) since session 23. Through the blocking pool an fsync wakes a pool
   * thread and then the event loop again, and on the 2-core VM every wake-up costs about 140 µs
   * of CPU (bench/results/session23/wakes/). With perf's exact task-clock of the five nodes over
   * 8 s at 200 jobs/s, alternated three times (bench/results/session23/inline_fsync/): 7.5-8.7 s
   * of CPU on against 8.3-9.5 off (7-11 % less in each pair), 27 % fewer context switches, 13.0
   * datagrams per job against 16.4, p50 4.0-4.6 ms against 4.6-5.1; no worse at 1,600/s, for
   * lone jobs or under 10-20 % loss. (Session 19's alternated runs had found no CPU difference:
   * bench/results/ab_session19/.) The price: a disk that suddenly stalls blocks the thread for
   * that one fsync, after which the average moves fsyncs off-thread.
   * 0: always off-thread.
   * @default 2
   */
  inlineSyncMsMax: number;
  /**
   * Group commit under a stream of appends: when appends queued while the last fsync ran, the
   * writer waits as long as that fsync took (at most this) before it writes them, so the
   * appends arriving meanwhile share the next fsync too. An append that finds the writer idle
   * is written at once: a lone job never waits, and at 200 jobs/s it rarely engages (fsyncs a
   * job unchanged). The wait is a timer: on this loaded host, timers asked for 0-1 ms right after
   * an fsync fired after 2.2-2.7 ms on average (bench/results/session29/pace/timer_after_fsync*),
   * so a paced batch may wait that long. Without it five nodes on one disk made about a
   * third of an fsync per commit at `hookd bench replication`'s maximum rate and queued on the
   * disk. With it, three alternated pairs (bench/results/session29/pace/ab_v2/): 0.11 fsyncs a
   * commit against 0.29-0.34, 4,814-5,759 commits/s against 3,605-4,700, CPU 346-414 µs a
   * commit against 407-538, and at 1,000/s p99 31-57 ms against 112-428 (the 428 from a run
   * that also refused 29 submits). The loss sweep at 200/s did not resolve either way. 0: off
   * (wal/sync_pace.ts).
   * @default 1
   */
  syncPaceMsMax: number;
  /**
   * A checkpoint's snapshot is encoded and written in slices between event-loop turns, while
   * appends go on into the next segment: a slice ends once it has framed this many bytes, or
   * run `checkpointSliceMs`. At 143,000 delivered jobs (35 MB) one synchronous step froze five
   * loaded nodes for 4-6 s with every append behind it (bench/results/session33/aged/), and
   * stalled one process's event loop for 1.4 s (bench/results/session34/micro/). 64 KiB stays a
   * synchronous page-cache write (wal_fs.ts) and holds about 270 delivered jobs.
   * @default 64 KiB
   */
  checkpointSliceBytes: number;
  /**
   * Most time one slice of a checkpoint may run before it yields to the event loop (timers,
   * datagrams, HTTP), read on the WAL's clock. The simulator's clock stands still inside a
   * slice, so there only `checkpointSliceBytes` ends one.
   * @default 2
   */
  checkpointSliceMs: number;
  /**
   * A checkpoint's segment is synced (off the event-loop thread) each time this many bytes of
   * it were written: an append's fsync on the same disk has to write out the file system's
   * dirty data with its own, and a whole unsynced snapshot made it wait as long as the disk
   * took for that.
   * @default 1 MiB
   */
  checkpointSyncBytes: number;
}

export const walDefaults: Readonly<WalConfig> = Object.freeze({
  segmentBytes: 64 * 1024 * 1024,
  syncMode: "batched",
  batchRecordsMax: 4096,
  batchBytesMax: 4 * 1024 * 1024,
  batchWaitMs: 0,
  queueRecordsMax: 65536,
  recordBytesMax: 2 * 1024 * 1024,
  inlineSyncMsMax: 2,
  syncPaceMsMax: 1,
  checkpointSliceBytes: 64 * 1024,
  checkpointSliceMs: 2,
  checkpointSyncBytes: 1024 * 1024,
});

export function validateWalConfig(config: WalConfig): WalConfig {
  positiveInteger("wal.segmentBytes", config.segmentBytes);
  positiveInteger("wal.batchRecordsMax", config.batchRecordsMax);
  positiveInteger("wal.batchBytesMax", config.batchBytesMax);
  nonNegative("wal.inlineSyncMsMax", config.inlineSyncMsMax);
  positiveInteger("wal.queueRecordsMax", config.queueRecordsMax);
  positiveInteger("wal.recordBytesMax", config.recordBytesMax);
  nonNegative("wal.batchWaitMs", config.batchWaitMs);
  nonNegative("wal.syncPaceMsMax", config.syncPaceMsMax);
  positiveInteger("wal.checkpointSliceBytes", config.checkpointSliceBytes);
  nonNegative("wal.checkpointSliceMs", config.checkpointSliceMs);
  positiveInteger("wal.checkpointSyncBytes", config.checkpointSyncBytes);
  if (config.syncMode !== "batched" && config.syncMode !== "per-append") {
    throw new RangeError(`wal.syncMode must be "batched" or "per-append", got ${config.syncMode}`);
  }
  // A record must fit in a batch and a batch in a segment, or the writer could never place it.
  relation(
    "wal.recordBytesMax",
    config.recordBytesMax,
    "<",
    "wal.batchBytesMax",
    config.batchBytesMax,
  );
  relation("wal.batchBytesMax", config.batchBytesMax, "<", "wal.segmentBytes", config.segmentBytes);
  relation(
    "wal.batchRecordsMax",
    config.batchRecordsMax,
    "<=",
    "wal.queueRecordsMax",
    config.queueRecordsMax,
  );
  return config;
}
