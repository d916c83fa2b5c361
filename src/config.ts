/**
 * Every default hookd uses, in one place, with its unit in its name and the reason for its
 * value. Each area has a `XxxConfig` type, its `xxxDefaults`, and a `validateXxxConfig` that
 * checks the relations between its limits once at start-up and throws a `RangeError` naming
 * the option and its value.
 *
 * Owns defaults and validation only. Subsystems receive a config object; none reads
 * environment variables or flags itself.
 */

// ---------------------------------------------------------------------------------------------
// Write-ahead log (src/wal/)
// ---------------------------------------------------------------------------------------------

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
  /** Largest record payload accepted. @default 1 MiB */
  recordBytesMax: number;
}

export const walDefaults: Readonly<WalConfig> = Object.freeze({
  segmentBytes: 64 * 1024 * 1024,
  syncMode: "batched",
  batchRecordsMax: 4096,
  batchBytesMax: 4 * 1024 * 1024,
  batchWaitMs: 0,
  queueRecordsMax: 65536,
  recordBytesMax: 1024 * 1024,
});

export function validateWalConfig(config: WalConfig): WalConfig {
  positiveInteger("wal.segmentBytes", config.segmentBytes);
  positiveInteger("wal.batchRecordsMax", config.batchRecordsMax);
  positiveInteger("wal.batchBytesMax", config.batchBytesMax);
  positiveInteger("wal.queueRecordsMax", config.queueRecordsMax);
  positiveInteger("wal.recordBytesMax", config.recordBytesMax);
  nonNegative("wal.batchWaitMs", config.batchWaitMs);
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

// ---------------------------------------------------------------------------------------------
// Webhook delivery engine (src/delivery/)
// ---------------------------------------------------------------------------------------------

export interface DeliveryConfig {
  /**
   * Delay before retry n (after the n-th failed attempt), ms. Modelled on what webhook services
   * use (Svix, Stripe): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h. Past the end the last entry repeats.
   * Tests and the bench pass a short schedule.
   * @default [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]
   */
  retryScheduleMs: readonly number[];
  /**
   * Each retry delay is multiplied by a uniform factor in [1 - ratio, 1 + ratio], so that jobs
   * failing together (one receiver outage) do not come back as one burst.
   * @default 0.2
   */
  retryJitterRatio: number;
  /** Attempts in total (the first one included) before a job becomes a dead letter. @default 7 */
  attemptsMax: number;
  /**
   * A receiver's `Retry-After` replaces the scheduled delay, clamped to
   * [retryAfterMinMs, retryAfterMaxMs]: the floor stops a receiver asking for a hot loop, the
   * ceiling stops it parking a job for a year. @default 1_000
   */
  retryAfterMinMs: number;
  /** See `retryAfterMinMs`. @default 7_200_000 (2 h) */
  retryAfterMaxMs: number;
  /** Per-attempt timeout when the job sets none, ms (headers and body). @default 15_000 */
  attemptTimeoutMs: number;
  /** Largest per-job timeout a job may ask for, ms. @default 60_000 */
  attemptTimeoutMaxMs: number;
  /**
   * Attempts in flight on this node at once. Bounds sockets, memory and the event loop's work;
   * 256 is several times the ~64 concurrent requests at which fetch saturates this machine.
   * @default 256
   */
  concurrentDeliveriesMax: number;
  /**
   * Attempts in flight to one origin (scheme://host:port) at once: one slow receiver can hold at
   * most this many of the node's slots, so the others keep flowing. @default 64
   */
  originConcurrencyMax: number;
  /**
   * Jobs the engine holds in memory (waiting, queued or in flight). `schedule` says no past it;
   * the job store offers the job again later. @default 100_000
   */
  jobsMax: number;
  /** Largest payload accepted, bytes (UTF-8). @default 256 KiB */
  payloadBytesMax: number;
  /** Response body kept in an attempt record, bytes; the rest is discarded unread. @default 1_024 */
  responseBodyBytesMax: number;
  /**
   * Consecutive failed attempts (timeout, connection error, 5xx, 429) to one origin that open
   * its circuit breaker; an open breaker starts no attempt to that origin. @default 5
   */
  breakerFailureThreshold: number;
  /** First time a breaker stays open before it lets one trial attempt through, ms. @default 5_000 */
  breakerOpenMs: number;
  /** Each failed trial doubles the open time, up to this, ms. @default 300_000 */
  breakerOpenMaxMs: number;
  /**
   * Deliver to loopback, private, link-local and other special addresses. Off in production
   * (SSRF guard); the node flag `--allow-private-targets`, tests and benchmarks turn it on.
   * @default false
   */
  allowPrivateTargets: boolean;
}

export const deliveryDefaults: Readonly<DeliveryConfig> = Object.freeze({
  retryScheduleMs: Object.freeze([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]),
  retryJitterRatio: 0.2,
  attemptsMax: 7,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 7_200_000,
  attemptTimeoutMs: 15_000,
  attemptTimeoutMaxMs: 60_000,
  concurrentDeliveriesMax: 256,
  originConcurrencyMax: 64,
  jobsMax: 100_000,
  payloadBytesMax: 256 * 1024,
  responseBodyBytesMax: 1_024,
  breakerFailureThreshold: 5,
  breakerOpenMs: 5_000,
  breakerOpenMaxMs: 300_000,
  allowPrivateTargets: false,
});

export function validateDeliveryConfig(config: DeliveryConfig): DeliveryConfig {
  if (config.retryScheduleMs.length === 0) {
    throw new RangeError("delivery.retryScheduleMs must not be empty, got []");
  }
  config.retryScheduleMs.forEach((ms, i) => nonNegative(`delivery.retryScheduleMs[${i}]`, ms));
  probability("delivery.retryJitterRatio", config.retryJitterRatio);
  positiveInteger("delivery.attemptsMax", config.attemptsMax);
  nonNegative("delivery.retryAfterMinMs", config.retryAfterMinMs);
  nonNegative("delivery.retryAfterMaxMs", config.retryAfterMaxMs);
  relation(
    "delivery.retryAfterMinMs",
    config.retryAfterMinMs,
    "<=",
    "delivery.retryAfterMaxMs",
    config.retryAfterMaxMs,
  );
  positiveInteger("delivery.attemptTimeoutMs", config.attemptTimeoutMs);
  positiveInteger("delivery.attemptTimeoutMaxMs", config.attemptTimeoutMaxMs);
  relation(
    "delivery.attemptTimeoutMs",
    config.attemptTimeoutMs,
    "<=",
    "delivery.attemptTimeoutMaxMs",
    config.attemptTimeoutMaxMs,
  );
  positiveInteger("delivery.concurrentDeliveriesMax", config.concurrentDeliveriesMax);
  positiveInteger("delivery.originConcurrencyMax", config.originConcurrencyMax);
  // An origin limit above the node limit would let one receiver take every slot.
  relation(
    "delivery.originConcurrencyMax",
    config.originConcurrencyMax,
    "<=",
    "delivery.concurrentDeliveriesMax",
    config.concurrentDeliveriesMax,
  );
  positiveInteger("delivery.jobsMax", config.jobsMax);
  positiveInteger("delivery.payloadBytesMax", config.payloadBytesMax);
  nonNegative("delivery.responseBodyBytesMax", config.responseBodyBytesMax);
  positiveInteger("delivery.breakerFailureThreshold", config.breakerFailureThreshold);
  positiveInteger("delivery.breakerOpenMs", config.breakerOpenMs);
  relation(
    "delivery.breakerOpenMs",
    config.breakerOpenMs,
    "<=",
    "delivery.breakerOpenMaxMs",
    config.breakerOpenMaxMs,
  );
  return config;
}

// ---------------------------------------------------------------------------------------------
// Checks shared by every validate function.
// ---------------------------------------------------------------------------------------------

export function positiveInteger(name: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
}

export function nonNegative(name: string, value: number): void {
  if (!(value >= 0) || !Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
  }
}

export function probability(name: string, value: number): void {
  if (!(value >= 0 && value <= 1)) {
    throw new RangeError(`${name} must be in [0, 1], got ${value}`);
  }
}

export function relation(
  leftName: string,
  left: number,
  op: "<" | "<=",
  rightName: string,
  right: number,
): void {
  const holds = op === "<" ? left < right : left <= right;
  if (!holds) {
    throw new RangeError(`${leftName} (${left}) must be ${op} ${rightName} (${right})`);
  }
}
