/**
 * The replication core's metrics: the counters, gauges and histogram it updates, registered
 * once per core.
 *
 * Owns metric names, help texts and labels only; must not compute or read job state (the
 * core, replication_core.ts, updates the values).
 */

import type { Counter, Gauge, MetricsRegistry } from "../metrics/registry.ts";
import type { Histogram } from "../metrics/histogram.ts";

export interface CoreMetrics {
  submitsAccepted: Counter;
  submitsExisting: Counter;
  rejected: Map<string, Counter>;
  quorumWaitMs: Histogram;
  replMessages: Counter;
  replBytes: Counter;
  replRecords: Counter;
  acksSent: Counter;
  decodeErrors: Counter;
  forgedSenders: Counter;
  recordsUndecodable: Counter;
  handoffsSent: Counter;
  handoffsReceived: Counter;
  catchupRecords: Counter;
  catchupSnapshots: Counter;
  confirmRounds: Counter;
  commitConflicts: Counter;
  finishedElsewhere: Counter;
  staleHandoffs: Counter;
  voidedRecordsResent: Counter;
  pendingChecksSent: Counter;
  pendingChecksSettled: Counter;
  jobsPending: Gauge;
  queueAgeRefusals: Counter;
  backlogRefusals: Counter;
  backlogBytes: Gauge;
  deadLetterBytes: Gauge;
  jobsDead: Gauge;
  jobsDelivered: Gauge;
  jobsUncommitted: Gauge;
  proposals: Gauge;
  scheduled: Gauge;
  logBytes: Gauge;
  goneTombstones: Gauge;
  archivedJobs: Gauge;
  archiveBytes: Gauge;
  lateRecords: Gauge;
}

export function registerMetrics(m: MetricsRegistry): CoreMetrics {
  return {
    submitsAccepted: m.counter(
      "hookd_jobs_submits_total",
      "Submits answered, by result",
      { result: "accepted" },
    ),
    submitsExisting: m.counter(
      "hookd_jobs_submits_total",
      "Submits answered, by result",
      { result: "existing" },
    ),
    rejected: new Map(),
    quorumWaitMs: m.histogram(
      "hookd_jobs_quorum_wait_ms",
      "Submit to majority-durable on the node that took it, ms",
    ),
    replMessages: m.counter(
      "hookd_jobs_repl_messages_total",
      "Replication messages sent (records to peers)",
    ),
    replBytes: m.counter("hookd_jobs_repl_bytes_total", "Replication message bytes sent"),
    replRecords: m.counter(
      "hookd_jobs_repl_records_total",
      "Records sent to peers in replication messages",
    ),
    acksSent: m.counter("hookd_jobs_acks_sent_total", "ACK messages sent to proposers"),
    forgedSenders: m.counter(
      "hookd_jobs_forged_senders_total",
      "Voter messages dropped: the sender they name is not a peer voter or not the address " +
        "the transport authenticated them from",
    ),
    decodeErrors: m.counter(
      "hookd_jobs_decode_errors_total",
      "Job-store messages or WAL batches that failed to decode (dropped)",
    ),
    recordsUndecodable: m.counter(
      "hookd_jobs_records_undecodable_total",
      "Records in a peer's message that did not decode: left out, the rest of it applied",
    ),
    handoffsSent: m.counter(
      "hookd_jobs_handoffs_total",
      "Jobs handed to a new owner after a failover, by direction",
      { direction: "sent" },
    ),
    handoffsReceived: m.counter(
      "hookd_jobs_handoffs_total",
      "Jobs handed to a new owner after a failover, by direction",
      { direction: "received" },
    ),
    catchupRecords: m.counter(
      "hookd_jobs_catchup_records_total",
      "Records received through catch-up and anti-entropy",
    ),
    catchupSnapshots: m.counter(
      "hookd_jobs_catchup_snapshots_total",
      "Catch-up replies that had to ship the table (the log no longer covered the gap)",
    ),
    confirmRounds: m.counter(
      "hookd_jobs_confirm_rounds_total",
      "Confirm rounds run by owners for jobs they held uncommitted",
    ),
    finishedElsewhere: m.counter(
      "hookd_jobs_finished_elsewhere_total",
      "Pending jobs a snapshot catch-up showed were finished and compacted on a peer",
    ),
    staleHandoffs: m.counter(
      "hookd_jobs_stale_handoffs_total",
      "Handoffs of a pending job this node held, saw finish and compacted: ignored",
    ),
    voidedRecordsResent: m.counter(
      "hookd_jobs_voided_records_resent_total",
      "Records a peer's restart voided that this node held and sent again under its own stamp",
    ),
    pendingChecksSent: m.counter(
      "hookd_jobs_pending_checks_total",
      "Pending jobs this node does not own, overdue and not heard of, asked about of their " +
        "owner, and those the answer ended here (missed DONE/DEAD repaired)",
      { result: "asked" },
    ),
    pendingChecksSettled: m.counter(
      "hookd_jobs_pending_checks_total",
      "Pending jobs this node does not own, overdue and not heard of, asked about of their " +
        "owner, and those the answer ended here (missed DONE/DEAD repaired)",
      { result: "settled" },
    ),
    commitConflicts: m.counter(
      "hookd_jobs_commit_conflicts_total",
      "Two committed bodies met for one job id (a broken invariant; must stay 0)",
    ),
    jobsPending: m.gauge("hookd_jobs", "Jobs held by state", { state: "pending" }),
    queueAgeRefusals: m.counter(
      "hookd_jobs_queue_age_refusals_total",
      "Submits refused because the oldest waiting submit was older than submitQueueAgeMaxMs",
    ),
    backlogRefusals: m.counter(
      "hookd_jobs_backlog_refusals_total",
      "Submits, events and retries by hand refused because the pending jobs held passed " +
        "backlogJobsMax or their payloads backlogBytesMax",
    ),
    backlogBytes: m.gauge(
      "hookd_jobs_backlog_bytes",
      "Memory the pending jobs' bodies hold (payloads, an event's once, URLs, headers, " +
        "secrets), as V8 holds strings; submits are refused past backlogBytesMax",
    ),
    deadLetterBytes: m.gauge(
      "hookd_jobs_dead_letter_bytes",
      "Memory the dead letters' bodies hold; the oldest go past deadLetterBytesMax",
    ),
    jobsDead: m.gauge("hookd_jobs", "Jobs held by state", { state: "dead" }),
    jobsDelivered: m.gauge("hookd_jobs", "Jobs held by state", { state: "delivered" }),
    jobsUncommitted: m.gauge("hookd_jobs", "Jobs held by state", { state: "uncommitted" }),
    proposals: m.gauge("hookd_jobs_proposals", "Submits and confirm rounds awaiting a majority"),
    scheduled: m.gauge("hookd_jobs_scheduled", "Jobs this node owns and has handed to delivery"),
    logBytes: m.gauge("hookd_jobs_catchup_log_bytes", "Bytes of records kept to serve catch-up"),
    goneTombstones: m.gauge(
      "hookd_jobs_gone_tombstones",
      "Unkeyed jobs finished and compacted whose tombstone is kept (finishedTombstonesMax)",
    ),
    archivedJobs: m.gauge(
      "hookd_jobs_archived",
      "Delivered jobs held as bytes in the archive's slabs, not as objects " +
        "(deliveredArchiveAfterMs)",
    ),
    archiveBytes: m.gauge(
      "hookd_jobs_archive_bytes",
      "Bytes of the slabs the archived jobs are kept in (outside the JavaScript heap's objects)",
    ),
    lateRecords: m.gauge(
      "hookd_jobs_late_records",
      "Records of a job finished and compacted here that arrived late and were dropped",
    ),
  };
}
