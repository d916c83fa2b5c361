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
// Child-process output: the longest line read from a child, defined beside its reader so that
// src/lib/ imports nothing above it
// ---------------------------------------------------------------------------------------------

export { LINE_CHARS_MAX } from "./lib/lines.ts";

// ---------------------------------------------------------------------------------------------
// Job limits: what one job may hold (src/jobs/job_limits.ts enforces them, the job codec
// decodes by them, the API and the UDP client path refuse past them)
// ---------------------------------------------------------------------------------------------

/**
 * The bounds of one job's fields, in the units the job codec counts (UTF-8 bytes of each
 * string, numbers of items). They are part of the wire and WAL formats: every node must agree
 * on them, so they are constants, not per-node options. Each is enforced in three places from
 * this one object: the API and the UDP client path refuse a submit past one (400 naming the
 * field and the limit), the encoders assert them (a job past one is our bug, caught where it is
 * made), and the decoders refuse bytes past them (hostile or corrupt input). Before they were
 * one object, the API counted a URL in characters and the codec in bytes: a URL of 5,000 "é"
 * passed the API, and every peer then dropped the replication message carrying it.
 *
 * Per-node options may only be stricter: `delivery.payloadBytesMax`,
 * `delivery.jobHeadersBytesMax` and `api.idempotencyKeyCharsMax` are checked against these.
 */
export const JOB_LIMITS = Object.freeze({
  /**
   * Job id, bytes. Ids are minted by hookd (hex, or a hash of the idempotency key: 64 chars at
   * most), so this only stops hostile bytes; it also fits the `webhook-id` header.
   */
  idBytesMax: 128,
  /**
   * Target URL, UTF-8 bytes: the common 8 KiB request-line limit of servers. In bytes, not
   * characters, because the codec stores UTF-8 and a receiver's server counts bytes too.
   */
  urlBytesMax: 8192,
  /**
   * Payload, UTF-8 bytes: the ceiling `delivery.payloadBytesMax` (the limit a node enforces,
   * 1 MiB by default) may be raised to. It bounds what a decoder allocates for one field.
   */
  payloadBytesMax: 16 * 1024 * 1024,
  /**
   * A job's own headers, count. 256 is far above what a webhook needs (a tenant, a trace id),
   * and bounds the per-header framing (8 bytes each) a record carries.
   */
  headersMax: 256,
  /**
   * One header name or one header value, UTF-8 bytes. Twice `delivery.jobHeadersBytesMax`
   * (counted in characters, Latin-1 values: at most 2 UTF-8 bytes each), so any job the
   * delivery check allows fits.
   */
  headerBytesMax: 16 * 1024,
  /** All header names and values of one job together, UTF-8 bytes (same reason). */
  headersBytesMax: 16 * 1024,
  /**
   * Signing secrets of one job (current and old ones during rotation); the delivery check
   * allows 8, the codec's u8 count could carry 255.
   */
  secretsMax: 16,
  /**
   * One signing secret, UTF-8 bytes. A Standard Webhooks secret is `whsec_` and the base64 of
   * at most 64 bytes (94 characters); 1 KiB leaves room for a longer scheme later.
   */
  secretBytesMax: 1024,
  /**
   * Idempotency key, bytes (printable ASCII, so characters). The API's own bound
   * (`api.idempotencyKeyCharsMax`, 256) may not exceed it.
   */
  idempotencyKeyBytesMax: 1024,
});

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
  /**
   * Largest record payload accepted. One job-store append holds a job with the largest
   * payload (delivery.payloadBytesMax, 1 MiB) plus its headers, URL and framing.
   * @default 2 MiB
   */
  recordBytesMax: number;
}

export const walDefaults: Readonly<WalConfig> = Object.freeze({
  segmentBytes: 64 * 1024 * 1024,
  syncMode: "batched",
  batchRecordsMax: 4096,
  batchBytesMax: 4 * 1024 * 1024,
  batchWaitMs: 0,
  queueRecordsMax: 65536,
  recordBytesMax: 2 * 1024 * 1024,
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
   * A receiver's `Retry-After`, clamped to [retryAfterMinMs, retryAfterMaxMs], replaces the
   * scheduled delay when it is longer ("not before": it never shortens the schedule, or a
   * receiver in an outage could burn a job's attempts in seconds). The ceiling stops it parking
   * a job for a year; the floor is what a past HTTP-date or "0" becomes. @default 1_000
   */
  retryAfterMinMs: number;
  /** See `retryAfterMinMs`. @default 7_200_000 (2 h) */
  retryAfterMaxMs: number;
  /** Per-attempt timeout when the job sets none, ms (headers and body). @default 15_000 */
  attemptTimeoutMs: number;
  /** Largest per-job timeout a job may ask for, ms. @default 60_000 */
  attemptTimeoutMaxMs: number;
  /**
   * How long past its timeout an attempt's request stays open to hear a late answer, ms (0:
   * abort at the timeout). A receiver slower than the timeout usually still handles the
   * request; the attempt counts as a timeout, but the job's next attempt waits for that answer
   * (up to this long), and a late 2xx ends the job instead of a retry delivering it twice
   * (issue 17: most duplicates with no ownership change were such retries). 5 s is the first
   * delay of the default retry schedule, so by default it delays no retry; it also bounds the
   * requests held open past their timeout (they no longer count against the concurrency
   * limits). @default 5_000
   */
  lateAnswerWaitMs: number;
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
  /**
   * Payload memory the engine may hold across all its jobs, bytes, counted as V8 holds strings
   * (at most 2 bytes per UTF-16 unit). `jobsMax` alone let 100,000 jobs of 256 KiB claim 25-50
   * GiB; past this `schedule` says no like it does past `jobsMax`. Must fit one largest
   * payload. @default 268_435_456 (256 MiB)
   */
  heldPayloadBytesMax: number;
  /**
   * Largest payload accepted, bytes (UTF-8): the job store, the API (413 past it) and the
   * engine all use this one limit. Svix and Convoy accept payloads around 1 MB.
   * @default 1 MiB
   */
  payloadBytesMax: number;
  /**
   * Largest total of a job's own header names and values, bytes; a job past it is refused (a
   * dead letter at once). 8 KiB leaves room for hookd's own headers under the 16 KiB request
   * header limit common in servers (Node's default). @default 8_192
   */
  jobHeadersBytesMax: number;
  /** Response body kept in an attempt record, bytes; the rest is discarded unread. @default 1_024 */
  responseBodyBytesMax: number;
  /**
   * Consecutive failed attempts (timeout, connection error, 5xx, 429) to one origin that open
   * its circuit breaker; an open breaker starts no attempt to that origin. A timeout counts
   * only when the job's timeout was at least `attemptTimeoutMs` (a job's own shorter timeout
   * is no evidence against the receiver). @default 5
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
  lateAnswerWaitMs: 5_000,
  concurrentDeliveriesMax: 256,
  originConcurrencyMax: 64,
  jobsMax: 100_000,
  heldPayloadBytesMax: 256 * 1024 * 1024,
  payloadBytesMax: 1024 * 1024,
  jobHeadersBytesMax: 8_192,
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
  nonNegative("delivery.lateAnswerWaitMs", config.lateAnswerWaitMs);
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
  positiveInteger("delivery.heldPayloadBytesMax", config.heldPayloadBytesMax);
  relation(
    "2 * delivery.payloadBytesMax",
    2 * config.payloadBytesMax,
    "<=",
    "delivery.heldPayloadBytesMax",
    config.heldPayloadBytesMax,
  );
  positiveInteger("delivery.payloadBytesMax", config.payloadBytesMax);
  positiveInteger("delivery.jobHeadersBytesMax", config.jobHeadersBytesMax);
  // A job this node accepts must fit the job codec's bounds, which every node shares.
  relation(
    "delivery.payloadBytesMax",
    config.payloadBytesMax,
    "<=",
    "JOB_LIMITS.payloadBytesMax",
    JOB_LIMITS.payloadBytesMax,
  );
  // Header sizes are counted in characters here, Latin-1 values: at most 2 UTF-8 bytes each.
  relation(
    "2 * delivery.jobHeadersBytesMax",
    2 * config.jobHeadersBytesMax,
    "<=",
    "JOB_LIMITS.headersBytesMax",
    JOB_LIMITS.headersBytesMax,
  );
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
// Membership: SWIM with the Lifeguard extensions (src/membership/)
// ---------------------------------------------------------------------------------------------

/**
 * Timing formulas (T = probeIntervalMs, N = members known, a = awareness score 0..max-1):
 * - a probe round lasts T·(a+1); its direct ack is awaited probeTimeoutMs·(a+1), then
 *   `indirectChecks` members are asked to probe and a second direct ping is sent;
 * - suspicion timeout: minMs = suspicionMult · max(1, log10 N) · T, maxMs =
 *   suspicionMaxTimeoutMult · minMs; it starts at maxMs and falls (logarithmically) to minMs as
 *   k = suspicionMult − 2 independent confirmations arrive (Lifeguard);
 * - gossip: each update is sent at most retransmitMult · ceil(log10(N + 1)) times.
 * Detection bound after a crash, no loss (see `detectionBoundMs` in
 * src/membership/suspicion_math.ts), with A = a + 1 the probers' awareness stretch:
 * 2·(N−1)·T·A (worst wait until some member's round-robin reaches the crashed node) + T·A (that
 * probe fails) + maxMs (suspicion with no confirmation; awareness does not stretch it) +
 * R·gossipIntervalMs with R = ceil(log_{gossipFanout+1} N) + 1 (the dead notice spreads).
 * At N = 5 with the defaults: healthy probers (A = 1) 1,600 + 200 + 4,000 + 600 = 6,400 ms;
 * probers at the largest stretch (A = awarenessMaxMultiplier = 4) 6,400 + 800 + 4,000 + 600 =
 * 11,800 ms. Measured figures (README, `hookd bench membership`) are far lower: confirmations
 * shrink the suspicion towards minMs = 800 ms.
 */
export interface MembershipConfig {
  /**
   * Protocol period: each member probes one other member per period. 200 ms keeps detection
   * near one to two seconds on a LAN while costing ~15 small datagrams per node per second.
   * @default 200
   */
  probeIntervalMs: number;
  /**
   * How long a direct ping waits for its ack before indirect probes start. Loopback and LAN
   * round trips are well under 1 ms; 100 ms leaves room for a busy event loop and GC pauses
   * and still leaves half a period for the indirect probes.
   * @default 100
   */
  probeTimeoutMs: number;
  /**
   * Members asked to probe a target whose direct ping went unanswered (ping-req). Three relays
   * make a false suspicion at 20 % loss rare (each relayed path needs four datagrams).
   * @default 3
   */
  indirectChecks: number;
  /**
   * Suspicion timeout multiplier (see the formula above); k = suspicionMult − 2 confirmations
   * shrink the timeout to its minimum.
   * @default 4
   */
  suspicionMult: number;
  /**
   * Ratio of the longest suspicion timeout (no confirmation) to the shortest. A lone suspicion
   * (most likely a false one from packet loss) gets 5× longer to be refuted.
   * @default 5
   */
  suspicionMaxTimeoutMult: number;
  /**
   * Lifeguard local-health awareness: probe timeouts stretch by (score + 1), score in
   * [0, awarenessMaxMultiplier − 1]. It rises on missed nacks and on refuting a suspicion of
   * ourselves, and falls on every successful probe. memberlist uses 8; at 20 % loss healthy
   * nodes then stretched their probe period so far that detection p99 reached 2.6 s (bench,
   * 12 seeds); 4 keeps it near 2.1 s and still gives a struggling node 4× the time.
   * @default 4
   */
  awarenessMaxMultiplier: number;
  /**
   * A step this much later than the deadline the core asked to be woken at means this node's
   * event loop stalled: timers that expired meanwhile wait probeTimeoutMs for the datagrams
   * queued during the stall, and the awareness score rises. Timer lateness on a busy host is a
   * few ms; a false alarm only delays an expired suspicion by probeTimeoutMs.
   * @default 50
   */
  lateWakeToleranceMs: number;
  /**
   * Gossip retransmit multiplier: an update is piggybacked at most
   * retransmitMult · ceil(log10(N + 1)) times. memberlist uses 4; at 20 % loss that left a
   * member missing a join for a whole sync period in ~2 % of the simulated joins, and extra
   * retransmissions ride on datagrams that are sent anyway.
   * @default 6
   */
  retransmitMult: number;
  /** Period of the dedicated gossip send (updates not yet piggybacked elsewhere). @default 200 */
  gossipIntervalMs: number;
  /**
   * Random live members a notice is pushed to at once, besides gossip: a death or leave by
   * every member that first learns it, a refutation by the refuted member. A member then gets
   * about noticeFanout pushes, so at 20 % loss it misses all of them with probability about
   * e^(−0.8·fanout): 9 % at 3, under 1 % at 6. `hookd bench membership --nodes 50 --loss 0.2
   * --minutes 20 --seeds 4`: fanout 3 gives detection p50 1.76 s and p99 2.94 s, 6 gives 1.69 s
   * and 2.59 s, against 1.74 s and 2.62 s when every notice went to every member, at 41.8
   * instead of 45.2 packets per node per second (README, Membership, for 5 and 200 nodes).
   * @default 6
   */
  noticeFanout: number;
  /** Members sent a gossip packet each gossip period. @default 3 */
  gossipFanout: number;
  /**
   * Recently dead members still receive gossip for this long, so the side of a healed partition
   * learns it was declared dead and refutes. @default 30000
   */
  gossipToDeadMs: number;
  /**
   * Period of the full state sync (push-pull) with one random member: a slow anti-entropy for
   * anything gossip missed, and the way healed partitions converge. @default 10000
   */
  syncIntervalMs: number;
  /** A node that has not heard back from any seed retries the join this often. @default 1000 */
  joinRetryMs: number;
  /**
   * Dead or left members leave the table after this long; a bounded tombstone keeps their last
   * incarnation so a stale alive message cannot resurrect them. @default 30000
   */
  deadReapMs: number;
  /** Tombstones kept (oldest evicted first). @default 1024 */
  tombstonesMax: number;
  /** Most members the table accepts; more are refused and counted. @default 1024 */
  membersMax: number;
  /**
   * Largest membership datagram (a message plus piggybacked gossip). Fits one Ethernet frame
   * after the transport's header and MAC. Full state syncs are exempt (sent reliably).
   * @default 1100
   */
  packetBytesMax: number;
  /** Most indirect probes this node relays at once for others; more are refused. @default 256 */
  relayPendingMax: number;
  /** Most distinct updates queued for gossip; the most-sent are dropped first. @default 1024 */
  gossipQueueMax: number;
}

export const membershipDefaults: Readonly<MembershipConfig> = Object.freeze({
  probeIntervalMs: 200,
  probeTimeoutMs: 100,
  indirectChecks: 3,
  suspicionMult: 4,
  suspicionMaxTimeoutMult: 5,
  awarenessMaxMultiplier: 4,
  lateWakeToleranceMs: 50,
  retransmitMult: 6,
  gossipIntervalMs: 200,
  noticeFanout: 6,
  gossipFanout: 3,
  gossipToDeadMs: 30_000,
  syncIntervalMs: 10_000,
  joinRetryMs: 1_000,
  deadReapMs: 30_000,
  tombstonesMax: 1024,
  membersMax: 1024,
  packetBytesMax: 1100,
  relayPendingMax: 256,
  gossipQueueMax: 1024,
});

/** Smallest membership packet: the largest single message (a full-length alive) fits. */
export const MEMBERSHIP_PACKET_BYTES_MIN = 600;

export function validateMembershipConfig(config: MembershipConfig): MembershipConfig {
  positiveInteger("membership.probeIntervalMs", config.probeIntervalMs);
  positiveInteger("membership.probeTimeoutMs", config.probeTimeoutMs);
  nonNegative("membership.indirectChecks", config.indirectChecks);
  if (!Number.isInteger(config.indirectChecks)) {
    throw new RangeError(
      `membership.indirectChecks must be an integer, got ${config.indirectChecks}`,
    );
  }
  positiveInteger("membership.suspicionMult", config.suspicionMult);
  positiveInteger("membership.suspicionMaxTimeoutMult", config.suspicionMaxTimeoutMult);
  positiveInteger("membership.awarenessMaxMultiplier", config.awarenessMaxMultiplier);
  positiveInteger("membership.lateWakeToleranceMs", config.lateWakeToleranceMs);
  positiveInteger("membership.retransmitMult", config.retransmitMult);
  positiveInteger("membership.gossipIntervalMs", config.gossipIntervalMs);
  nonNegative("membership.noticeFanout", config.noticeFanout);
  if (!Number.isInteger(config.noticeFanout)) {
    throw new RangeError(
      `membership.noticeFanout must be an integer, got ${config.noticeFanout}`,
    );
  }
  positiveInteger("membership.gossipFanout", config.gossipFanout);
  nonNegative("membership.gossipToDeadMs", config.gossipToDeadMs);
  positiveInteger("membership.syncIntervalMs", config.syncIntervalMs);
  positiveInteger("membership.joinRetryMs", config.joinRetryMs);
  positiveInteger("membership.deadReapMs", config.deadReapMs);
  positiveInteger("membership.tombstonesMax", config.tombstonesMax);
  positiveInteger("membership.membersMax", config.membersMax);
  positiveInteger("membership.packetBytesMax", config.packetBytesMax);
  positiveInteger("membership.relayPendingMax", config.relayPendingMax);
  positiveInteger("membership.gossipQueueMax", config.gossipQueueMax);
  // The ack must be awaited for less than a period, or no time is left for indirect probes.
  relation(
    "membership.probeTimeoutMs",
    config.probeTimeoutMs,
    "<",
    "membership.probeIntervalMs",
    config.probeIntervalMs,
  );
  // The largest single message (a full-length alive) must fit a packet with its header.
  relation(
    "membership.packetBytesMax (min)",
    MEMBERSHIP_PACKET_BYTES_MIN,
    "<=",
    "membership.packetBytesMax",
    config.packetBytesMax,
  );
  return config;
}

// ---------------------------------------------------------------------------------------------
// Transport (src/transport/)
// ---------------------------------------------------------------------------------------------

export interface TransportConfig {
  /**
   * Largest datagram the transport builds, header and MAC included. 1,400 bytes stays under a
   * 1,500-byte Ethernet MTU with room for IP/UDP headers; on loopback up to 65,000 is allowed
   * and lets one socket write carry hundreds of small messages.
   * @default 1400
   */
  datagramBytes: number;
  /**
   * Ceiling of the congestion window: most bytes in flight (sent, neither acknowledged nor
   * declared lost, retransmissions included) per peer, whatever the congestion controller's
   * model says. The kernel's default receive buffer (212,992 bytes, counting ~2.3 KB per
   * 1,400-byte datagram) holds ~90 datagrams; four peers sending to one node (a five-node
   * cluster) must fit in it together while that node's event loop stalls. Measured with `hookd
   * bench transport --senders 2|4` (real processes): 65,536 let the receiver's kernel drop
   * 45-989 datagrams per 3 s run, 32,768 dropped 0-42, at the same goodput.
   * @default 32768
   */
  windowBytes: number;
  /**
   * Congestion window before the first measurement, in datagrams (RFC 9002 §7.2's 10), capped
   * at `windowBytes`.
   * @default 10
   */
  cwndInitialDatagrams: number;
  /**
   * Least congestion window, in datagrams: BBR's 4, so that loss recovery and probing always
   * have room whatever the model says.
   * @default 4
   */
  cwndMinDatagrams: number;
  /**
   * Least RTT used in the congestion window's bandwidth-delay product. Two processes on a host
   * measure a least RTT of tens of µs, but an ack waits for the receiver's event-loop turn
   * (1-3 ms on a busy 2-core machine): a window of two least-RTT products would starve the
   * sender. `windowBytes` still caps the window.
   * @default 2
   */
  cwndRttFloorMs: number;
  /**
   * Round trips over which the largest delivery rate is the bottleneck estimate (BBR's 10): long
   * enough that 20 % random loss and the probing cycle do not pull it down, short enough (tens
   * of ms on a LAN) that a receiver that slows down is followed at once.
   * @default 10
   */
  bandwidthWindowRounds: number;
  /**
   * How long the least RTT seen stays valid before the next sample replaces it (BBR's 10 s).
   * @default 10000
   */
  minRttWindowMs: number;
  /**
   * Most of the pacing rate that may leave in one burst, in ms of that rate (never less than
   * `cwndMinDatagrams` datagrams). Timers fire 2-5 ms late here, so each flush sends what the
   * elapsed time paid for, up to this; 2 ms at a receiver's 15,000 datagrams/s is 30 datagrams,
   * a third of what its socket buffer holds.
   * @default 2
   */
  pacingBurstMs: number;
  /**
   * Most reliable messages per peer between the oldest unacknowledged one and the newest sent
   * one. At most `TRANSPORT_WINDOW_MESSAGES_MAX`: receivers track message ids over twice that
   * span whatever their own setting, so nodes configured differently still interoperate.
   * @default 8192
   */
  windowMessages: number;
  /**
   * Most reliable messages waiting per peer (queued or in flight). Past it `send` answers
   * backpressure instead of growing memory.
   * @default 16384
   */
  sendQueueMessagesMax: number;
  /** Most bytes of reliable messages waiting per peer (queued or in flight). @default 8 MiB */
  sendQueueBytesMax: number;
  /**
   * Most unreliable messages waiting per peer for the next flush; extra ones are dropped and
   * counted (they are unreliable by contract, so dropping them is the bounded answer).
   * @default 1024
   */
  unreliableQueueMessagesMax: number;
  /**
   * Largest reliable message; larger ones are fragmented up to this. A job-store record with
   * the largest payload (1 MiB) and its headers must fit. @default 2 MiB
   */
  messageBytesMax: number;
  /**
   * Most bytes of partly reassembled messages kept per peer, so also the largest message
   * taken from a peer (whose `messageBytesMax` may differ). A datagram whose fragments would
   * exceed it is dropped unacknowledged (and counted), so the sender retransmits later.
   * @default 8 MiB
   */
  reassemblyBytesMax: number;
  /**
   * RTO before any RTT sample (RFC 6298 says 1 s for the Internet; a LAN answers in well under
   * a millisecond, and the first packets of a session should not wait a second on a loss).
   * @default 30
   */
  rtoInitialMs: number;
  /**
   * Floor of the RTO, > 0 (a zero RTO would re-arm its timer for now, forever). RFC 6298
   * recommends 1 s for the Internet; on a LAN a few milliseconds covers event-loop stalls on
   * a busy 2-core machine without making a lost packet wait long.
   * @default 5
   */
  rtoMinMs: number;
  /** Ceiling of the RTO, backoff included. @default 2000 */
  rtoMaxMs: number;
  /**
   * Longest a receiver holds back an acknowledgement. Acks go out at once when a gap or a
   * repeat is seen, after `ackEveryPackets` ack-eliciting datagrams, or after a quiet spell
   * (`ackImmediateAfterMs`), and they ride on every data datagram.
   * @default 1
   */
  maxAckDelayMs: number;
  /**
   * In a burst, every this-many ack-eliciting datagrams are acknowledged at once; halving the
   * acks gave ~15 % more messages/s at 1,400-byte datagrams on loopback.
   * @default 2
   */
  ackEveryPackets: number;
  /**
   * An ack-eliciting datagram arriving at least this long after our previous ack to its
   * sender is acknowledged at once. So below ~2,000 datagrams/s every datagram is acked in
   * the flush that follows it, with no timer: `setTimeout` fires 2-5 ms late on a busy 2-core
   * machine, longer than a LAN RTT. Only a burst's last odd datagram waits `maxAckDelayMs`.
   * @default 0.5
   */
  ackImmediateAfterMs: number;
  /** Most acknowledgement ranges in one datagram. @default 16 */
  ackRangesMax: number;
  /**
   * Most received-packet ranges remembered per peer; the oldest are forgotten first (a
   * retransmission of a forgotten one is then suppressed by message ids instead).
   * @default 64
   */
  receivedRangesMax: number;
  /**
   * Fast retransmit: a packet is lost once a packet this many numbers later is acknowledged
   * (RFC 9002's kPacketThreshold).
   * @default 3
   */
  packetThreshold: number;
  /**
   * Time-threshold loss: a packet is lost once a later one is acknowledged and this multiple
   * of max(SRTT, latest RTT) has passed since it was sent (RFC 9002's kTimeThreshold).
   * @default 1.125
   */
  timeThreshold: number;
  /** Least time-threshold loss delay; the timer granularity of the event loop. @default 1 */
  lossDelayMinMs: number;
  /**
   * Tail-loss probe: with data in flight and no acknowledgement for
   * max(2·SRTT + maxAckDelayMs, tlpMinMs), resend the newest unacknowledged data once so the
   * tail of a burst is not left to the RTO.
   * @default 2
   */
  tlpMinMs: number;
  /** Tail-loss probes before the RTO takes over. @default 2 */
  tlpMax: number;
  /**
   * A datagram with at least this many spare bytes asks the piggyback provider for gossip.
   * @default 32
   */
  piggybackBytesMin: number;
  /** Most peer sessions; datagrams from further addresses are dropped and counted. @default 1024 */
  peersMax: number;
  /**
   * A session not heard from for this long is released to make room when the table is full
   * and a new peer comes (its unacknowledged messages reported as `messages-dropped`). Sessions
   * are never released otherwise (a member's is, by membership, once it is dead), so without
   * this every UDP client process that ever talked to a node kept a session, and the
   * (peersMax + 1)th was refused for good. A minute of silence is far past SWIM's detection
   * bound, so no live member's session goes this way. @default 60_000
   */
  sessionIdleMs: number;
  /**
   * Most keys derived per second for key ids not seen yet (new peers, restarted ones). Each
   * costs an HMAC before its datagram can even be checked, so junk with random key ids must not
   * be able to force one per datagram; a thousand peers restarting at once are all known again
   * within seconds. Datagrams from an address we have a session with draw on that session's
   * own budget instead (`keyDerivationsPerPeerPerSecondMax`).
   * @default 200
   */
  keyDerivationsPerSecondMax: number;
  /**
   * Most keys derived per second for datagrams from the address of one existing session (its
   * peer restarted with a new key id, or moved to its next key generation every 2^24
   * datagrams). Kept apart from the shared budget above, which a junk flood with random key ids
   * spends entirely: a restarted member must not be locked out by a flood it has no part in.
   * Four is a restart and a generation change at once, twice over.
   * @default 4
   */
  keyDerivationsPerPeerPerSecondMax: number;
}

export const transportDefaults: Readonly<TransportConfig> = Object.freeze({
  datagramBytes: 1400,
  windowBytes: 32768,
  cwndInitialDatagrams: 10,
  cwndMinDatagrams: 4,
  cwndRttFloorMs: 2,
  bandwidthWindowRounds: 10,
  minRttWindowMs: 10_000,
  pacingBurstMs: 2,
  windowMessages: 8192,
  sendQueueMessagesMax: 16384,
  sendQueueBytesMax: 8 * 1024 * 1024,
  unreliableQueueMessagesMax: 1024,
  messageBytesMax: 2 * 1024 * 1024,
  reassemblyBytesMax: 8 * 1024 * 1024,
  rtoInitialMs: 30,
  rtoMinMs: 5,
  rtoMaxMs: 2000,
  maxAckDelayMs: 1,
  ackEveryPackets: 2,
  ackImmediateAfterMs: 0.5,
  ackRangesMax: 16,
  receivedRangesMax: 64,
  packetThreshold: 3,
  timeThreshold: 1.125,
  lossDelayMinMs: 1,
  tlpMinMs: 2,
  tlpMax: 2,
  piggybackBytesMin: 32,
  peersMax: 1024,
  sessionIdleMs: 60_000,
  keyDerivationsPerSecondMax: 200,
  keyDerivationsPerPeerPerSecondMax: 4,
});

/** Smallest and largest datagram sizes the codec accepts (65,000 keeps under the UDP limit). */
export const TRANSPORT_DATAGRAM_BYTES_MIN = 512;
export const TRANSPORT_DATAGRAM_BYTES_MAX = 65000;
/** Largest `windowMessages`; a wire-protocol constant (receivers track twice this span). */
export const TRANSPORT_WINDOW_MESSAGES_MAX = 16384;

export function validateTransportConfig(config: TransportConfig): TransportConfig {
  positiveInteger("transport.datagramBytes", config.datagramBytes);
  if (
    config.datagramBytes < TRANSPORT_DATAGRAM_BYTES_MIN ||
    config.datagramBytes > TRANSPORT_DATAGRAM_BYTES_MAX
  ) {
    throw new RangeError(
      `transport.datagramBytes must be in [${TRANSPORT_DATAGRAM_BYTES_MIN}, ${TRANSPORT_DATAGRAM_BYTES_MAX}], got ${config.datagramBytes}`,
    );
  }
  for (
    const name of [
      "windowBytes",
      "cwndInitialDatagrams",
      "cwndMinDatagrams",
      "bandwidthWindowRounds",
      "windowMessages",
      "sendQueueMessagesMax",
      "sendQueueBytesMax",
      "unreliableQueueMessagesMax",
      "messageBytesMax",
      "reassemblyBytesMax",
      "ackEveryPackets",
      "ackRangesMax",
      "receivedRangesMax",
      "packetThreshold",
      "peersMax",
      "sessionIdleMs",
      "keyDerivationsPerSecondMax",
      "keyDerivationsPerPeerPerSecondMax",
    ] as const
  ) positiveInteger(`transport.${name}`, config[name]);
  for (
    const name of [
      "rtoInitialMs",
      "rtoMinMs",
      "rtoMaxMs",
      "maxAckDelayMs",
      "ackImmediateAfterMs",
      "lossDelayMinMs",
      "tlpMinMs",
      "tlpMax",
      "cwndRttFloorMs",
      "minRttWindowMs",
      "pacingBurstMs",
      "piggybackBytesMin",
    ] as const
  ) nonNegative(`transport.${name}`, config[name]);
  if (!(config.timeThreshold >= 1) || !Number.isFinite(config.timeThreshold)) {
    throw new RangeError(`transport.timeThreshold must be >= 1, got ${config.timeThreshold}`);
  }
  if (!(config.rtoMinMs > 0)) {
    throw new RangeError(`transport.rtoMinMs must be > 0, got ${config.rtoMinMs}`);
  }
  if (config.windowMessages > TRANSPORT_WINDOW_MESSAGES_MAX) {
    throw new RangeError(
      `transport.windowMessages must be <= ${TRANSPORT_WINDOW_MESSAGES_MAX}, got ${config.windowMessages}`,
    );
  }
  if (config.ackRangesMax > 255) {
    throw new RangeError(`transport.ackRangesMax must be <= 255, got ${config.ackRangesMax}`);
  }
  // A window smaller than one datagram could never send a full one.
  relation(
    "transport.datagramBytes",
    config.datagramBytes,
    "<=",
    "transport.windowBytes",
    config.windowBytes,
  );
  relation("transport.rtoMinMs", config.rtoMinMs, "<=", "transport.rtoMaxMs", config.rtoMaxMs);
  relation(
    "transport.rtoInitialMs",
    config.rtoInitialMs,
    "<=",
    "transport.rtoMaxMs",
    config.rtoMaxMs,
  );
  // One message must fit in the queue bound and in the reassembly bound, or it could never go.
  relation(
    "transport.messageBytesMax",
    config.messageBytesMax,
    "<=",
    "transport.sendQueueBytesMax",
    config.sendQueueBytesMax,
  );
  relation(
    "transport.messageBytesMax",
    config.messageBytesMax,
    "<=",
    "transport.reassemblyBytesMax",
    config.reassemblyBytesMax,
  );
  relation(
    "transport.ackRangesMax",
    config.ackRangesMax,
    "<=",
    "transport.receivedRangesMax",
    config.receivedRangesMax,
  );
  return config;
}

// ---------------------------------------------------------------------------------------------
// HTTP API (src/api/)
// ---------------------------------------------------------------------------------------------

export interface ApiConfig {
  /**
   * Largest request body, bytes; a larger one is answered 413 (by its Content-Length before a
   * byte is read, or as soon as the streamed body passes it). 1 MiB holds a batch of 1,000
   * small jobs; a single job's payload has its own, smaller bound (delivery.payloadBytesMax).
   * @default 2 MiB
   */
  bodyBytesMax: number;
  /**
   * Longest a request body may take to arrive once its headers are in, ms; then 408. While it
   * arrives a body holds only the bytes it has sent (bodyBytesHeldMax), never a submit slot,
   * so a client that trickles one costs a connection and a timer. 10 s is far beyond what
   * 2 MiB needs on any link a node serves.
   * @default 10_000
   */
  bodyReadTimeoutMs: number;
  /**
   * Bytes of request bodies the API holds at once, counted as they arrive (not as declared)
   * and given back when the request is answered. A chunk that would pass it gets 503 +
   * Retry-After at once. It, not the slot count, bounds the bodies in memory, so the body can
   * be read before a submit slot is taken: a client trickling its body (with the token or
   * without) holds the few bytes it sent, not one of submitsInFlightMax's slots. 256 MiB is
   * what the slots bounded before (128 full-size bodies; thousands of ordinary submits).
   * @default 256 MiB
   */
  bodyBytesHeldMax: number;
  /**
   * Submit requests (a job, a batch, a retry by hand) inside the node at once, from the end
   * of the body read to the store's answer; the next one is answered 503 + Retry-After. When
   * every slot is taken a submit is refused before its body is read, so an overloaded node
   * spends almost nothing on it. Bounds the promises parked on the store, which has its own
   * queue bounds behind this one. 256 is far above the ~64 concurrent requests at which
   * Deno.serve saturates this 2-core machine.
   * @default 256
   */
  submitsInFlightMax: number;
  /** Jobs one `POST /v1/jobs/batch` may carry; more is a 400 naming `jobs`. @default 1000 */
  batchJobsMax: number;
  /**
   * Longest `Idempotency-Key`, characters (printable ASCII). Keys are hashed into ids, so this
   * only bounds what a node stores per job; 256 holds any UUID, ULID or composite key.
   * @default 256
   */
  idempotencyKeyCharsMax: number;
  /** Largest `maxAttempts` a job may ask for. @default 100 */
  jobAttemptsMax: number;
  /** Jobs listed when a list request gives no `limit`. @default 50 */
  listLimitDefault: number;
  /** Largest `limit` of a list request (lists carry no payloads). @default 1000 */
  listLimitMax: number;
  /**
   * Retry-After, seconds, for a 503 whose refusal names no delay (the admission gate's among
   * them). One second: submits in flight finish in milliseconds, so a slot frees quickly.
   * @default 1
   */
  retryAfterS: number;
}

export const apiDefaults: Readonly<ApiConfig> = Object.freeze({
  bodyBytesMax: 2 * 1024 * 1024,
  bodyReadTimeoutMs: 10_000,
  bodyBytesHeldMax: 256 * 1024 * 1024,
  submitsInFlightMax: 256,
  batchJobsMax: 1000,
  idempotencyKeyCharsMax: 256,
  jobAttemptsMax: 100,
  listLimitDefault: 50,
  listLimitMax: 1000,
  retryAfterS: 1,
});

export function validateApiConfig(config: ApiConfig): ApiConfig {
  for (
    const name of [
      "bodyBytesMax",
      "bodyReadTimeoutMs",
      "bodyBytesHeldMax",
      "submitsInFlightMax",
      "batchJobsMax",
      "idempotencyKeyCharsMax",
      "jobAttemptsMax",
      "listLimitDefault",
      "listLimitMax",
      "retryAfterS",
    ] as const
  ) positiveInteger(`api.${name}`, config[name]);
  relation(
    "api.bodyBytesMax",
    config.bodyBytesMax,
    "<=",
    "api.bodyBytesHeldMax",
    config.bodyBytesHeldMax,
  );
  // A key the API takes must fit the job codec, or every peer would refuse its record.
  relation(
    "api.idempotencyKeyCharsMax",
    config.idempotencyKeyCharsMax,
    "<=",
    "JOB_LIMITS.idempotencyKeyBytesMax",
    JOB_LIMITS.idempotencyKeyBytesMax,
  );
  relation(
    "api.listLimitDefault",
    config.listLimitDefault,
    "<=",
    "api.listLimitMax",
    config.listLimitMax,
  );
  return config;
}

// ---------------------------------------------------------------------------------------------
// Command-line clients of the API: hookd submit, status and cluster (src/cli/)
// ---------------------------------------------------------------------------------------------

export interface CliConfig {
  /**
   * Longest one API request of `submit` or `status` may take before the next node is tried,
   * ms. A node answers a submit within jobs.submitTimeoutMs (1 s) or refuses it at once; ten
   * times that covers a stalled event loop without leaving a user staring at nothing.
   * @default 10_000
   */
  requestTimeoutMs: number;
  /**
   * Largest API response the CLI reads, bytes; a node's /metrics is tens of KiB and a job
   * view with its 1 MiB payload a little over 1 MiB. A larger answer is an error, not memory.
   * @default 8_388_608
   */
  responseBytesMax: number;
  /**
   * How long `submit --wait` follows a job before it gives up (exit 4; the job goes on), ms.
   * It covers the first retry (5 s) of a receiver that is briefly down; the next is minutes
   * away on the default schedule, which `hookd status` can follow instead.
   * @default 120_000
   */
  waitTimeoutMs: number;
  /** `submit --wait`'s first pause between two reads of the job, ms. @default 100 */
  waitPollFirstMs: number;
  /**
   * Longest pause between two reads of a followed job, ms (pauses double up to it): about one
   * request every two seconds per waiting CLI, nothing next to what a node serves.
   * @default 2000
   */
  waitPollMaxMs: number;
  /**
   * `status` scrapes every node's /metrics twice this far apart and reports counters' rates
   * over the window (the node's counters are totals since it started). One second: long
   * enough to see a few submits, short enough for a command a person waits on.
   * @default 1000
   */
  statusWindowMs: number;
  /** `cluster` gives its nodes this long to converge and report ready, ms. @default 60_000 */
  clusterReadyTimeoutMs: number;
  /** `cluster --sink` reads the sink's counters this often to report receipts, ms. @default 500 */
  clusterSinkPollMs: number;
}

export const cliDefaults: Readonly<CliConfig> = Object.freeze({
  requestTimeoutMs: 10_000,
  responseBytesMax: 8 * 1024 * 1024,
  waitTimeoutMs: 120_000,
  waitPollFirstMs: 100,
  waitPollMaxMs: 2000,
  statusWindowMs: 1000,
  clusterReadyTimeoutMs: 60_000,
  clusterSinkPollMs: 500,
});

export function validateCliConfig(config: CliConfig): CliConfig {
  for (
    const name of [
      "requestTimeoutMs",
      "responseBytesMax",
      "waitTimeoutMs",
      "waitPollFirstMs",
      "waitPollMaxMs",
      "statusWindowMs",
      "clusterReadyTimeoutMs",
      "clusterSinkPollMs",
    ] as const
  ) positiveInteger(`cli.${name}`, config[name]);
  relation(
    "cli.waitPollFirstMs",
    config.waitPollFirstMs,
    "<=",
    "cli.waitPollMaxMs",
    config.waitPollMaxMs,
  );
  return config;
}

// ---------------------------------------------------------------------------------------------
// Replicated job store (src/jobs/)
// ---------------------------------------------------------------------------------------------

export interface JobsConfig {
  /**
   * Longest a submit waits for a majority of the voters to have it on disk before it fails
   * with `no_quorum` (503). Invariant 4: without a majority a submit fails fast and is never
   * acknowledged afterwards. A healthy LAN majority answers in milliseconds; a second covers
   * a stalled event loop and a few retransmissions at 20 % loss.
   * @default 1000
   */
  submitTimeoutMs: number;
  /**
   * Submits being replicated at once on this node (waiting for their majority). Past it a
   * submit is refused with `overloaded` at once (503) instead of queueing: bounded memory and
   * an early, clear no.
   * @default 20000
   */
  proposalsMax: number;
  /**
   * A node refuses new submits (`overloaded`, 503) while its oldest submit has waited this
   * long for its majority. Past the knee every submit taken waits behind the others and then
   * times out at `submitTimeoutMs`: work done for nothing, and the write-up's collapse. A
   * healthy majority answers in milliseconds (tens at 20 % loss). Half the submit timeout:
   * a submit taken behind a queue this old still gets its majority in time, one taken later
   * would not. (250 ms refused submits at 200 jobs/s on a machine other work kept at load 9,
   * where every submit was slow but the queue was not growing.)
   * @default 500
   */
  submitQueueAgeMaxMs: number;
  /**
   * Records this node originated that are not yet on its own disk. A restarted node cannot
   * know which of these reached a peer, so it skips this many seqs after the highest one its
   * peers report (a SKIP record tells everyone); the bound makes that gap finite. Past it a
   * submit is refused with `overloaded`.
   * @default 65536
   */
  originPendingMax: number;
  /**
   * How long the owner of a job it holds uncommitted (its submit's node died, or timed out,
   * before the majority was seen) waits before it asks every voter to confirm the job itself.
   * Longer than `submitTimeoutMs`, so a live coordinator's own COMMIT normally wins.
   * @default 3000
   */
  confirmDelayMs: number;
  /** Between two confirm rounds of one job that did not reach a majority. @default 2000 */
  confirmRetryMs: number;
  /**
   * Period of anti-entropy: each node swaps its per-origin "held" summary with one random
   * live voter, which ships exactly the records it lacks. Fills gaps left by released
   * sessions and restarts; in steady state it costs one small message each way.
   * @default 2000
   */
  antiEntropyIntervalMs: number;
  /**
   * A restarting node re-asks voters that have not finished its catch-up this often, and a
   * page of a catch-up or anti-entropy reply that has not come in this long is asked again.
   * @default 500
   */
  catchupRetryMs: number;
  /**
   * Records kept in memory (encoded) to serve anti-entropy and catch-up, bytes. A peer that
   * needs older records gets a snapshot of the job table instead. 64 MiB is minutes of
   * history at a thousand 1-KiB jobs a second.
   * @default 67_108_864
   */
  catchupLogBytesMax: number;
  /**
   * Largest replication or catch-up message, bytes: records for one peer are split across
   * messages of at most this size (the transport fragments each into datagrams).
   * @default 262_144
   */
  messageBytesMax: number;
  /**
   * Most record bytes one page of a catch-up or anti-entropy reply carries; the requester
   * asks for the next page once it has this one. A reply sent whole outgrew the transport's
   * per-peer send queue (`transport.sendQueueBytesMax`, 8 MiB: a snapshot of some 35,000
   * delivered jobs), its tail was refused every time, and a restarted node never caught up.
   * An eighth of that queue leaves room for live replication beside it.
   * @default 1_048_576
   */
  syncReplyBytesMax: number;
  /**
   * A snapshot being sent page by page (a live walk of the table) is dropped when its
   * requester has not asked for the next page for this long (it died, or gave up).
   * @default 10_000
   */
  syncSessionIdleMs: number;
  /**
   * Records nobody waits for (an unkeyed COMMIT, DONE, retry state, dead letters) wait this
   * long to ride in the next replication message to the same peer, instead of costing a datagram
   * and its acknowledgement each at every peer. Only who learns a job finished is delayed
   * (a failover inside this window may repeat a delivery, which at-least-once allows); no
   * submit waits for them.
   * @default 20
   */
  lazySendMs: number;
  /**
   * A WAL append holding only records nobody waits on (COMMIT, DONE) is not written on its
   * own: it waits this long for a record someone does wait on (a SUBMIT's vote, a retry the
   * engine awaits), and rides in that record's fsync. At 200 jobs/s a node otherwise paid an
   * fsync for each job's COMMIT and another for its DONE besides the SUBMIT's, and a SUBMIT
   * that arrived during one waited behind it. A crash inside the window loses the COMMIT (the
   * confirm round restores it from the majority that holds the SUBMIT) or the DONE (the job
   * may be delivered again, which at-least-once allows). 0 writes every append at once.
   * @default 20
   */
  lazyAppendMs: number;
  /** A query for a job this node does not hold waits this long for its peers. @default 500 */
  queryTimeoutMs: number;
  /**
   * Delivered jobs stay queryable this long after they finished, then leave the table and
   * (at the next checkpoint) the disk. Their payloads are dropped at once on delivery.
   * @default 3_600_000 (1 h)
   */
  finishedRetentionMs: number;
  /** Dead letters stay this long (they can be retried by hand until then). @default 604_800_000 (7 d) */
  deadRetentionMs: number;
  /** Most dead letters kept; the oldest go first past it. @default 100_000 */
  deadLettersMax: number;
  /**
   * An idempotency key is remembered this long after its first submit, also after its job left
   * the table: a retry within the window returns the same id instead of a second job; a submit
   * after it makes a new job with a new id (and so a new `webhook-id`). Measured on the clock
   * of the node that takes each submit, and it also slices time into the epochs keyed ids
   * derive from (src/jobs/keyed_id.ts): every node must use the same value.
   * @default 86_400_000 (24 h)
   */
  idempotencyWindowMs: number;
  /**
   * How far apart two nodes' wall clocks may be, as idempotency keys see it: a node keeps a key
   * this long past its window, so that while a submit stamped by a slower clock is still
   * within the window, every node that held the key still answers for it. Past this skew a
   * key reused at the very end of its window may be taken for a new job.
   * @default 600_000 (10 min)
   */
  idempotencyClockSkewMs: number;
  /** Attempts kept in a job's history (the oldest go first). @default 20 */
  historyMax: number;
  /**
   * Records arriving before their job's SUBMIT make a stub; a stub whose SUBMIT never comes
   * is dropped after this long. @default 3_600_000
   */
  stubRetentionMs: number;
  /**
   * A job held uncommitted (its submit never saw a majority: it was refused 503, so never
   * acknowledged) by a node that does not own it is dropped this long after it was
   * submitted. Owners keep theirs and keep confirming them, so an acknowledged job whose
   * COMMIT was lost is never dropped; this only bounds the memory of failed submits.
   * @default 86_400_000 (24 h)
   */
  uncommittedRetentionMs: number;
  /**
   * An unkeyed job that finished and was compacted leaves a tombstone (its id) for this long:
   * a late record of it (a SUBMIT or COMMIT that anti-entropy, a confirm round or a catch-up
   * brings to a node that held the job only through a `state`, or a stale handoff) is dropped
   * instead of making the job anew, pending for ever. As long as the other windows that bound
   * old copies of a job: the uncommitted retention and the idempotency window (a keyed job's
   * kept key is its tombstone). docs/replication.md, "Compaction", argues the horizon.
   * @default 86_400_000 (24 h)
   */
  finishedTombstoneMs: number;
  /**
   * Most tombstones of finished jobs kept; the oldest go first past it, so their memory is
   * bounded whatever the job rate: about 110 bytes each (bench/tombstone_memory.ts measures
   * it), so 1,000,000 is about 110 MB. At 1,000 jobs/s this keeps about 17 minutes of them
   * beyond `finishedRetentionMs`; at 100 jobs/s, 2.8 hours.
   * @default 1_000_000
   */
  finishedTombstonesMax: number;
  /** How often retention runs. @default 1000 */
  expireIntervalMs: number;
  /**
   * WAL bytes appended since the last checkpoint that trigger the next one (which writes the
   * live table and lets older segments go), at least twice the last snapshot's size so a
   * large table is not rewritten over and over.
   * @default 67_108_864
   */
  checkpointBytes: number;
  /** Attempts a job gets when its submit names none. @default 7 */
  maxAttemptsDefault: number;
  /** Largest `maxAttempts` a submit may ask for. @default 100 */
  maxAttemptsMax: number;
  /** Jobs the engine refused (full) are offered to it again after this long. @default 500 */
  scheduleRetryMs: number;
}

export const jobsDefaults: Readonly<JobsConfig> = Object.freeze({
  submitTimeoutMs: 1000,
  proposalsMax: 20_000,
  submitQueueAgeMaxMs: 500,
  originPendingMax: 65_536,
  confirmDelayMs: 3000,
  confirmRetryMs: 2000,
  antiEntropyIntervalMs: 2000,
  catchupRetryMs: 500,
  catchupLogBytesMax: 64 * 1024 * 1024,
  messageBytesMax: 256 * 1024,
  syncReplyBytesMax: 1024 * 1024,
  syncSessionIdleMs: 10_000,
  lazySendMs: 20,
  lazyAppendMs: 20,
  queryTimeoutMs: 500,
  finishedRetentionMs: 3_600_000,
  deadRetentionMs: 7 * 24 * 3_600_000,
  deadLettersMax: 100_000,
  idempotencyWindowMs: 24 * 3_600_000,
  idempotencyClockSkewMs: 600_000,
  historyMax: 20,
  stubRetentionMs: 3_600_000,
  uncommittedRetentionMs: 86_400_000,
  finishedTombstoneMs: 86_400_000,
  finishedTombstonesMax: 1_000_000,
  expireIntervalMs: 1000,
  checkpointBytes: 64 * 1024 * 1024,
  maxAttemptsDefault: 7,
  maxAttemptsMax: 100,
  scheduleRetryMs: 500,
});

export function validateJobsConfig(config: JobsConfig): JobsConfig {
  for (
    const name of [
      "submitTimeoutMs",
      "proposalsMax",
      "submitQueueAgeMaxMs",
      "originPendingMax",
      "confirmDelayMs",
      "confirmRetryMs",
      "antiEntropyIntervalMs",
      "catchupRetryMs",
      "catchupLogBytesMax",
      "messageBytesMax",
      "syncReplyBytesMax",
      "syncSessionIdleMs",
      "lazySendMs",
      "queryTimeoutMs",
      "deadLettersMax",
      "finishedTombstonesMax",
      "historyMax",
      "expireIntervalMs",
      "checkpointBytes",
      "idempotencyWindowMs",
      "maxAttemptsDefault",
      "maxAttemptsMax",
      "scheduleRetryMs",
    ] as const
  ) positiveInteger(`jobs.${name}`, config[name]);
  for (
    const name of [
      "finishedRetentionMs",
      "deadRetentionMs",
      "idempotencyClockSkewMs",
      "stubRetentionMs",
      "uncommittedRetentionMs",
      "finishedTombstoneMs",
      "lazyAppendMs",
    ] as const
  ) nonNegative(`jobs.${name}`, config[name]);
  // Shedding load must start before submits time out, or it sheds nothing.
  relation(
    "jobs.submitQueueAgeMaxMs",
    config.submitQueueAgeMaxMs,
    "<",
    "jobs.submitTimeoutMs",
    config.submitTimeoutMs,
  );
  // A confirm round must not race the live coordinator's own commit.
  relation(
    "jobs.submitTimeoutMs",
    config.submitTimeoutMs,
    "<",
    "jobs.confirmDelayMs",
    config.confirmDelayMs,
  );
  relation(
    "jobs.maxAttemptsDefault",
    config.maxAttemptsDefault,
    "<=",
    "jobs.maxAttemptsMax",
    config.maxAttemptsMax,
  );
  // History is u16-counted on the wire and in records.
  relation("jobs.historyMax", config.historyMax, "<=", "1024", 1024);
  relation("jobs.maxAttemptsMax", config.maxAttemptsMax, "<=", "65535", 65535);
  return config;
}

// ---------------------------------------------------------------------------------------------
// UDP job client (src/jobs/udp_client.ts): a non-member endpoint that submits on JOBS_CHANNEL
// ---------------------------------------------------------------------------------------------

export interface UdpClientConfig {
  /**
   * Longest a submit waits for its `client-result`, ms; then it resolves as `timeout` (its
   * outcome unknown: the node may still acknowledge it). A node answers every submit within
   * `jobs.submitTimeoutMs` (1 s); the rest covers retransmissions of the request and the
   * answer at 20 % loss.
   * @default 3000
   */
  requestTimeoutMs: number;
  /**
   * Submits waiting for their answers at once, over all nodes. Past it a submit is refused at
   * once (`client_busy`) instead of queueing without end. A node takes `jobs.proposalsMax`
   * (20,000) at once; five nodes' worth is more than any one client needs.
   * @default 50_000
   */
  submitsOutstandingMax: number;
  /**
   * Submits to one node made in one event-loop turn travel in one `client-submit` message, up
   * to this many (the transport fragments a message into datagrams; 256 submits of a few
   * hundred bytes is about 64 KiB, well under `transport.messageBytesMax`).
   * @default 256
   */
  batchSubmitsMax: number;
}

export const udpClientDefaults: Readonly<UdpClientConfig> = Object.freeze({
  requestTimeoutMs: 3000,
  submitsOutstandingMax: 50_000,
  batchSubmitsMax: 256,
});

export function validateUdpClientConfig(config: UdpClientConfig): UdpClientConfig {
  for (const name of ["requestTimeoutMs", "submitsOutstandingMax", "batchSubmitsMax"] as const) {
    positiveInteger(`udpClient.${name}`, config[name]);
  }
  return config;
}

// ---------------------------------------------------------------------------------------------
// Node process (src/node/node.ts): noticing that the process was frozen
// ---------------------------------------------------------------------------------------------

export interface NodeConfig {
  /** Beat of the freeze monitor (src/lib/stall_monitor.ts), ms: one cheap timer. @default 100 */
  stallCheckIntervalMs: number;
  /**
   * A gap between beats longer than this means the process was frozen (SIGSTOP, a paused VM)
   * and may have lost its jobs to the others: the store stops delivering and catches up from a
   * majority before it attempts anything again. The fastest the others can declare a silent
   * node dead is about one probe (probeTimeoutMs + an indirect round, ~300 ms) plus the
   * shortest suspicion (800 ms), so a shorter freeze cannot have cost it its jobs; a false
   * alarm (a 1 s event-loop stall) costs one catch-up round trip. @default 1_000
   */
  stallThresholdMs: number;
}

export const nodeDefaults: Readonly<NodeConfig> = Object.freeze({
  stallCheckIntervalMs: 100,
  stallThresholdMs: 1_000,
});

// ---------------------------------------------------------------------------------------------
// Fault injection (src/node/fault_injection.ts): TEST-ONLY, on with `hookd node --fault-injection`
// ---------------------------------------------------------------------------------------------

export interface FaultInjectionConfig {
  /** Largest control request body, bytes: a command names a few addresses. @default 65_536 */
  controlBodyBytesMax: number;
  /** Addresses one partition command may name: far more than any local cluster. @default 64 */
  partitionAddressesMax: number;
  /**
   * Longest a fault with a duration lasts, ms: a mistyped `ms` still ends, so a node cannot be
   * left partitioned for days by a harness that died. @default 600_000 (10 min)
   */
  faultDurationMaxMs: number;
}

export const faultInjectionDefaults: Readonly<FaultInjectionConfig> = Object.freeze({
  controlBodyBytesMax: 65_536,
  partitionAddressesMax: 64,
  faultDurationMaxMs: 600_000,
});

// ---------------------------------------------------------------------------------------------
// Dashboard (src/dashboard/): what a node keeps for its own page, beyond its metrics
// ---------------------------------------------------------------------------------------------

export interface DashboardConfig {
  /**
   * One point of the node's series per this many ms (submits, deliveries, p50/p99). One
   * second is what a person reads as "live"; the page polls at the same pace.
   * @default 1000
   */
  sampleIntervalMs: number;
  /**
   * Points kept: 300 at one a second is the last five minutes, enough to see a burst come and
   * go; about 40 KiB of JSON per poll.
   * @default 300
   */
  seriesPoints: number;
  /**
   * "Recent" for a receiver's failure rate, ms: long enough that a receiver failing one
   * request in ten shows a rate, short enough that one that recovered stops standing out
   * within a minute.
   * @default 60_000
   */
  receiverWindowMs: number;
  /** Buckets the receiver window slides in (60 s / 12 = 5 s steps). @default 12 */
  receiverWindowBuckets: number;
  /**
   * Receiver origins remembered; past it the one attempted longest ago is forgotten, so a
   * node delivering to many receivers keeps bounded memory (about 40 numbers each).
   * @default 256
   */
  receiverOriginsMax: number;
  /** Longest last-failure detail kept per origin, characters. @default 200 */
  failureDetailCharsMax: number;
}

export const dashboardDefaults: Readonly<DashboardConfig> = Object.freeze({
  sampleIntervalMs: 1000,
  seriesPoints: 300,
  receiverWindowMs: 60_000,
  receiverWindowBuckets: 12,
  receiverOriginsMax: 256,
  failureDetailCharsMax: 200,
});

export function validateDashboardConfig(config: DashboardConfig): DashboardConfig {
  for (
    const name of [
      "sampleIntervalMs",
      "seriesPoints",
      "receiverWindowMs",
      "receiverWindowBuckets",
      "receiverOriginsMax",
      "failureDetailCharsMax",
    ] as const
  ) positiveInteger(`dashboard.${name}`, config[name]);
  relation(
    "dashboard.receiverWindowBuckets",
    config.receiverWindowBuckets,
    "<=",
    "dashboard.receiverWindowMs",
    config.receiverWindowMs,
  );
  return config;
}

// ---------------------------------------------------------------------------------------------
// Chaos runs (src/chaos/): `hookd chaos`, its seeded fault schedule and its checks
// ---------------------------------------------------------------------------------------------

/** A closed range `[min, max]` a duration or probability is drawn from, uniformly. */
export type Range = readonly [number, number];

export interface ChaosConfig {
  /** Submits per second the load offers, open loop, round-robin over the nodes. @default 100 */
  rate: number;
  /** Load before the first fault, ms: the cluster settles and delivers a baseline. @default 5_000 */
  warmupMs: number;
  /** Time between two fault starts, ms. @default [1_500, 5_000] */
  gapMs: Range;
  /** Most nodes impaired at once (killed, stopped, cut off by a partition). @default 2 */
  impairedMax: number;
  /** How long a SIGKILLed node stays down before its restart, ms. @default [2_000, 8_000] */
  killDownMs: Range;
  /**
   * How long a node stays SIGSTOPped, ms: past the detection bound at 5 nodes (6.4 s with
   * healthy probers, see membership) plus a confirm round (3 s), so the others declare it
   * dead and take its jobs over before it resumes. @default [10_000, 14_000]
   */
  stopMs: Range;
  /** A one-way partition (a node's ingress from 1-2 peers dropped), ms. @default [5_000, 12_000] */
  onewayMs: Range;
  /** A full partition of two nodes from three, ms. @default [8_000, 15_000] */
  splitMs: Range;
  /** An ingress loss burst on 1-3 nodes, ms. @default [3_000, 8_000] */
  lossMs: Range;
  /** Its loss probability: up to the 20 % the design must survive, and past it. @default [0.2, 0.5] */
  lossProbability: Range;
  /** A receiver outage (500, 503, slow, reset), ms. @default [3_000, 10_000] */
  outageMs: Range;
  /**
   * Retry delays the nodes run with, ms: short, so that jobs failed by an outage finish within
   * the run; about 30 s of retrying at the last step outlasts every outage. @default
   * [100, 250, 500, 1_000, 2_000]
   */
  retryScheduleMs: readonly number[];
  /**
   * Attempts a chaos job gets before it is dead-lettered (the API's largest, api.jobAttemptsMax):
   * at the schedule's last step that is over three minutes of failures, so never within a run.
   * @default 100
   */
  jobMaxAttempts: number;
  /** Per-attempt timeout of a chaos job, ms; the slow receiver holds requests longer. @default 1_000 */
  jobTimeoutMs: number;
  /** How long the slow receiver holds a request, ms (past `jobTimeoutMs`). @default 2_000 */
  slowReceiverMs: number;
  /** A submit with no answer after this long counts as an error (not acked), ms. @default 5_000 */
  submitTimeoutMs: number;
  /**
   * Submits the generator keeps waiting for answers at once (its --in-flight): a stopped node
   * holds its share until the submit timeout; past it a due submit waits its turn. @default 2_000
   */
  submitsInFlightMax: number;
  /**
   * After the heal, how long the run waits for every acknowledged job to reach the sink, ms;
   * a breaker opened by an outage may stay open up to a minute on the node. @default 120_000
   */
  drainMsMax: number;
  /**
   * A member-dead about a node that was killed, stopped or cut off from the observer is
   * explained for this long after that fault ended (a late notice of the old incarnation);
   * later, or without such a fault, it counts as false. Detection bound (11.8 s at the largest
   * awareness stretch) plus dissemination. @default 15_000
   */
  deadExplainedMs: number;
  /** Longest the nodes may take to start and report ready, ms. @default 60_000 */
  readyLimitMs: number;
}

export const chaosDefaults: Readonly<ChaosConfig> = Object.freeze(
  {
    rate: 100,
    warmupMs: 5_000,
    gapMs: [1_500, 5_000],
    impairedMax: 2,
    killDownMs: [2_000, 8_000],
    stopMs: [10_000, 14_000],
    onewayMs: [5_000, 12_000],
    splitMs: [8_000, 15_000],
    lossMs: [3_000, 8_000],
    lossProbability: [0.2, 0.5],
    outageMs: [3_000, 10_000],
    retryScheduleMs: Object.freeze([100, 250, 500, 1_000, 2_000]),
    jobMaxAttempts: 100,
    jobTimeoutMs: 1_000,
    slowReceiverMs: 2_000,
    submitTimeoutMs: 5_000,
    submitsInFlightMax: 2_000,
    drainMsMax: 120_000,
    deadExplainedMs: 15_000,
    readyLimitMs: 60_000,
  } as const,
);

/**
 * The relations a chaos run's meaning rests on: the slow receiver holds a request past the
 * attempt timeout (else a "slow" outage tests nothing), a job retries for longer than the
 * longest outage (else an outage dead-letters jobs and `lost` 0 proves less), the schedule's
 * loop advances (gapMs > 0) and every range is ordered.
 */
export function validateChaosConfig(config: ChaosConfig): ChaosConfig {
  for (
    const name of [
      "gapMs",
      "killDownMs",
      "stopMs",
      "onewayMs",
      "splitMs",
      "lossMs",
      "lossProbability",
      "outageMs",
    ] as const
  ) {
    const [min, max] = config[name];
    nonNegative(`chaos.${name}[0]`, min);
    relation(`chaos.${name}[0]`, min, "<=", `chaos.${name}[1]`, max);
  }
  probability("chaos.lossProbability[1]", config.lossProbability[1]);
  relation("0", 0, "<", "chaos.gapMs[0]", config.gapMs[0]);
  for (const name of ["jobMaxAttempts", "impairedMax", "submitsInFlightMax"] as const) {
    positiveInteger(`chaos.${name}`, config[name]);
  }
  relation(
    "chaos.jobTimeoutMs",
    config.jobTimeoutMs,
    "<",
    "chaos.slowReceiverMs",
    config.slowReceiverMs,
  );
  const steps = config.retryScheduleMs;
  let retryingMs = 0;
  for (let attempt = 1; attempt < config.jobMaxAttempts; attempt++) {
    retryingMs += steps[Math.min(attempt, steps.length) - 1] ?? 0;
  }
  relation("chaos.outageMs[1]", config.outageMs[1], "<", "retrying time (ms)", retryingMs);
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
