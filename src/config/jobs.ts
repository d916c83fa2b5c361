/**
 * Replicated job store (src/jobs/)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { nonNegative, positiveInteger, relation } from "./checks.ts";
import {
  type EndpointHealthConfig,
  endpointHealthDefaults,
  validateEndpointHealthConfig,
} from "./endpoints.ts";

/** Includes the endpoint health timing (src/config/endpoints.ts), which the core runs. */
export interface JobsConfig extends EndpointHealthConfig {
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
   * A pending job this node holds but does not own, whose attempt is due (its timeout on top)
   * and which this node has seen so, its progress unmoved (no RETRY, DONE or DEAD), for this
   * long, is asked about of its owner. The owner answers with its end if it finished (its
   * state, or its tombstone) and with nothing while it is pending (pending_checks.ts). The
   * repair of a replica that missed a job's end and can no longer get the record (a restart
   * voided its seq while the holders' catch-up logs had let it go: `hookd sim --events --seed
   * 1802`). Longer than an attempt's timeout plus its report's way here, so a job merely in
   * flight is rarely asked about. @default 60_000
   */
  pendingCheckAfterMs: number;
  /** How often a node walks on through its pending jobs for such ones. @default 10_000 */
  pendingCheckIntervalMs: number;
  /**
   * A job asked about and still pending is asked again after twice the previous wait (the
   * first is `pendingCheckAfterMs`), up to this: a job its owner holds back (an open circuit,
   * an ordered queue, a long backlog) costs a few ids in a message per wait, not one per walk.
   * @default 3_600_000 (1 h)
   */
  pendingCheckBackoffMaxMs: number;
  /** Most jobs asked about in one walk; the rest wait for the next one. @default 1000 */
  pendingChecksPerWalkMax: number;
  /**
   * Most pending jobs one walk looks at; the next walk goes on from there, so a backlog of a
   * million is gone through in ten walks, and no walk holds the event loop long (a look is a
   * few comparisons; the owner is computed only for a job long overdue). @default 100_000
   */
  pendingCheckScanMax: number;
  /**
   * A restarting node re-asks voters that have not finished its catch-up this often, and a
   * page of a catch-up or anti-entropy reply that has not come in this long is asked again.
   * @default 500
   */
  catchupRetryMs: number;
  /**
   * A catch-up (after a restart or a freeze) completes on a majority's answers, but then waits
   * this long for the voters not yet heard from that this node does not hold down: a job its
   * replacement delivered moments ago has its DONE only there (nobody waits for a DONE's
   * majority), and turning ready without it would attempt the job again. A voter that cannot
   * answer (down, but not yet seen so) delays readiness by this much at most.
   * @default 250
   */
  catchupStragglerWaitMs: number;
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
  /**
   * A query for a job this node does not hold waits this long for its peers; so does the
   * majority read an endpoint PATCH or DELETE makes before it is built (endpoint_reads.ts),
   * which is answered `no_quorum` without a majority of answers by then. @default 500
   */
  queryTimeoutMs: number;
  /**
   * Delivered jobs stay queryable this long after they finished, then leave the table and
   * (at the next checkpoint) the disk. Their payloads are dropped at once on delivery.
   * @default 3_600_000 (1 h)
   */
  finishedRetentionMs: number;
  /**
   * Most delivered jobs kept queryable; past it those finished (or last changed) longest ago
   * leave first, before their `finishedRetentionMs`. Every node holds every job, so without it
   * a node's memory would follow the job rate: about 690 bytes a delivered job
   * (bench/results/session28/), so 1 h at 1,500 jobs/s is 3.7 GB, near V8's default 4-GB heap
   * limit. At the default a node keeps about 0.7 GB of them: the whole hour below 278 jobs/s.
   * @default 1_000_000
   */
  finishedJobsMax: number;
  /**
   * A delivered job is archived this long after this node learned of its delivery (or last
   * changed it): its state is kept as the bytes of its `state` record in large slabs, not as
   * objects (job_table.ts, Archive), so an hour of delivered jobs stops being most of the heap
   * and of every full GC's work. Reading an archived job decodes it (a few µs); a record that
   * changes it makes it an object again until this long after. @default 10_000
   */
  deliveredArchiveAfterMs: number;
  /**
   * Most delivered jobs one archive slice archives, one slice a turn: 500 at 2.46 µs a job
   * (one process, bench/results/session44/memory/) is about 1.2 ms of a turn. A retention pass
   * (`expireIntervalMs`) runs a slice; while slices come back full the next follows
   * `archiveSliceGapMs` later, so a burst's jobs (or a restart's replayed ones) are archived in
   * small steps between other work rather than in one stall (session 44's passes of 5,000 took
   * 11.3 ms each), and an idle node wakes no more often than its retention pass. @default 500
   */
  archiveBatchMax: number;
  /**
   * Ms between archive slices while they come back full: at the defaults, up to 25,000 jobs a
   * second (by formula), five times the rate hookd delivers at on the 2-core machine.
   * @default 20
   */
  archiveSliceGapMs: number;
  /** Dead letters stay this long (they can be retried by hand until then). @default 604_800_000 (7 d) */
  deadRetentionMs: number;
  /** Most dead letters kept; the oldest go first past it. @default 100_000 */
  deadLettersMax: number;
  /**
   * Most memory dead letters may hold, bytes: their payloads, URLs, headers and secrets,
   * counted as V8 holds strings (2 bytes a UTF-16 unit at most). A dead letter keeps all of it
   * for a retry by hand, and `deadLettersMax` alone let 100,000 dead letters of 1 MiB claim
   * 100-200 GB on every node. Past it the oldest dead letters go first, as past
   * `deadLettersMax`. An event's dead jobs each count its payload, which they share: a fan-out
   * is over-counted, so bounded. @default 268_435_456 (256 MiB)
   */
  deadLetterBytesMax: number;
  /**
   * Most pending jobs (committed or not, waiting, retrying or in flight) a node holds before it
   * refuses new submits, events and retries by hand with a 503 (`overloaded`): every node holds
   * every job in memory until it is delivered, so a receiver down for hours under load would
   * otherwise grow every node's heap towards V8's limit (4,192 MB here) with no refusal before
   * it. A pending job takes about 770 bytes of the job table besides its payload
   * (bench/results/session29/micro/), 1.2-1.5 KB of heap on a running node with a 200-byte
   * payload (everything a node keeps for it: the slope of heap against pending jobs up to
   * 400,000, bench/results/session29/backlog/), so about 1.4 GB at the default. With the
   * byte bounds (their bodies, counted at 2 bytes a character) and `finishedJobsMax`'s 0.7 GB
   * that is about 3.5 GB of the 4,192 MB, by formula: events delivered keep their payloads for
   * their retention, bounded by time only (docs/reliability.md). A backlog all overdue (queued
   * behind a busy owner) adds up to 2 × 94 bytes a job of pending checks' watch (about 0.19 GB
   * at the default; pending_checks.ts). Endpoint writes are never
   * refused by it: disabling a failing endpoint is how an operator drains a backlog.
   * @default 1_000_000
   */
  backlogJobsMax: number;
  /**
   * Most memory pending jobs' bodies may claim (payloads, URLs, headers, secrets) before new
   * submits, events and retries by hand are refused with a 503, bytes, counted as
   * `deadLetterBytesMax` counts; an event's payload once, however many of its jobs are pending
   * (they share the one string). @default 1_073_741_824 (1 GiB)
   */
  backlogBytesMax: number;
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
   * A deleted endpoint stays in every node's table as a tombstone this long after its delete
   * (by the delete's version time), in checkpoints and snapshots: an older write of it that
   * arrives later (a replica cut off, then caught up by anti-entropy) loses to the tombstone
   * instead of bringing the endpoint back. Endpoints are few, so the horizon is long: longer
   * than any outage a node is expected to come back from with its log (docs/endpoints.md).
   * @default 2_592_000_000 (30 days)
   */
  endpointTombstoneMs: number;
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
  /**
   * Attempts a job gets (the first one included) when its submit names none: the store writes
   * it into the job, and the delivery engine uses it for a job handed to it without one. The
   * only attempts default (it replaced `delivery.attemptsMax`, issue 18). @default 7
   */
  maxAttemptsDefault: number;
  /**
   * Largest `maxAttempts` a submit may ask for, over HTTP or UDP (`validateSubmit`); also the
   * OpenAPI document's maximum. The only attempts maximum (it replaced `api.jobAttemptsMax`,
   * issue 18). @default 100
   */
  maxAttemptsMax: number;
  /** Jobs the engine refused (full) are offered to it again after this long. @default 500 */
  scheduleRetryMs: number;
  /**
   * How far apart the wall clocks of the nodes may be for ordered endpoints to keep their
   * order exactly (docs/replication.md, "Ordered endpoints"). An ordered job's key is its
   * event's submit time on the node that took it; its owner attempts it only once its own
   * clock is past that key by `submitTimeoutMs` + this (no node then stamps an earlier key,
   * and every proposal stamped earlier has ended) and an order barrier started then was
   * answered by a majority. So this is latency an idle ordered endpoint pays on each event
   * (with a backlog the keys are long past): 1 s covers NTP-kept clocks with margin. Nodes
   * further apart can deliver two events stamped less than their skew apart out of key order.
   * @default 1000
   */
  orderedClockSkewMs: number;
  /**
   * Whether a node that sees fewer than a majority of the voters reachable still delivers:
   * the jobs it owns, and those it took over from voters it holds dead. Off (the default), it
   * delivers nothing until a majority is reachable again. In a partition the majority side
   * takes over the minority's jobs once it holds those nodes dead, about when they hold the
   * majority dead: a minority that kept delivering sent every such job twice, one from each
   * side (`deno task sim --seeds 1..300`: 6,099 duplicates with it on, 3,265 off). What off costs:
   * with a majority of the voters down, the rest deliver nothing until enough come back (they
   * already take no submit). On: deliveries go on from any node that can reach a receiver, with
   * the duplicates of every partition.
   * @default false
   */
  deliverWithoutMajority: boolean;
}

export const jobsDefaults: Readonly<JobsConfig> = Object.freeze({
  submitTimeoutMs: 1000,
  proposalsMax: 20_000,
  submitQueueAgeMaxMs: 500,
  originPendingMax: 65_536,
  confirmDelayMs: 3000,
  confirmRetryMs: 2000,
  antiEntropyIntervalMs: 2000,
  pendingCheckAfterMs: 60_000,
  pendingCheckIntervalMs: 10_000,
  pendingCheckBackoffMaxMs: 3_600_000,
  pendingChecksPerWalkMax: 1000,
  pendingCheckScanMax: 100_000,
  catchupRetryMs: 500,
  catchupStragglerWaitMs: 250,
  catchupLogBytesMax: 64 * 1024 * 1024,
  messageBytesMax: 256 * 1024,
  syncReplyBytesMax: 1024 * 1024,
  syncSessionIdleMs: 10_000,
  lazySendMs: 20,
  lazyAppendMs: 20,
  queryTimeoutMs: 500,
  finishedRetentionMs: 3_600_000,
  finishedJobsMax: 1_000_000,
  deliveredArchiveAfterMs: 10_000,
  archiveBatchMax: 500,
  archiveSliceGapMs: 20,
  deadRetentionMs: 7 * 24 * 3_600_000,
  deadLettersMax: 100_000,
  deadLetterBytesMax: 256 * 1024 * 1024,
  backlogJobsMax: 1_000_000,
  backlogBytesMax: 1024 * 1024 * 1024,
  idempotencyWindowMs: 24 * 3_600_000,
  idempotencyClockSkewMs: 600_000,
  historyMax: 20,
  stubRetentionMs: 3_600_000,
  uncommittedRetentionMs: 86_400_000,
  finishedTombstoneMs: 86_400_000,
  endpointTombstoneMs: 30 * 86_400_000,
  finishedTombstonesMax: 1_000_000,
  expireIntervalMs: 1000,
  checkpointBytes: 64 * 1024 * 1024,
  maxAttemptsDefault: 7,
  maxAttemptsMax: 100,
  scheduleRetryMs: 500,
  orderedClockSkewMs: 1000,
  deliverWithoutMajority: false,
  ...endpointHealthDefaults,
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
      "pendingCheckAfterMs",
      "pendingCheckIntervalMs",
      "pendingCheckBackoffMaxMs",
      "pendingChecksPerWalkMax",
      "pendingCheckScanMax",
      "catchupRetryMs",
      "catchupLogBytesMax",
      "messageBytesMax",
      "syncReplyBytesMax",
      "syncSessionIdleMs",
      "lazySendMs",
      "queryTimeoutMs",
      "deadLettersMax",
      "deadLetterBytesMax",
      "backlogJobsMax",
      "backlogBytesMax",
      "finishedJobsMax",
      "archiveBatchMax",
      "archiveSliceGapMs",
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
      "deliveredArchiveAfterMs",
      "deadRetentionMs",
      "idempotencyClockSkewMs",
      "stubRetentionMs",
      "uncommittedRetentionMs",
      "finishedTombstoneMs",
      "endpointTombstoneMs",
      "lazyAppendMs",
      "catchupStragglerWaitMs",
      "orderedClockSkewMs",
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
  relation(
    "jobs.pendingCheckAfterMs",
    config.pendingCheckAfterMs,
    "<=",
    "jobs.pendingCheckBackoffMaxMs",
    config.pendingCheckBackoffMaxMs,
  );
  // History is u16-counted on the wire and in records.
  relation("jobs.historyMax", config.historyMax, "<=", "1024", 1024);
  relation("jobs.maxAttemptsMax", config.maxAttemptsMax, "<=", "65535", 65535);
  validateEndpointHealthConfig(config);
  // A recover's batch of revives must leave room for submits' proposals.
  relation(
    "jobs.endpointRecoverBatchMax",
    config.endpointRecoverBatchMax,
    "<",
    "jobs.proposalsMax",
    config.proposalsMax,
  );
  return config;
}
