/**
 * The replicated job store's sans-I/O core: majority-durable submits, ownership and failover,
 * handoffs, catch-up after a restart, anti-entropy, confirm rounds, and the records delivery
 * reports become. Driven by inputs that carry the time (`nowMs`, monotonic) and the wall clock
 * (`wallMs`); answers with outputs the shell (job_store.ts) carries out. The same core runs on
 * real sockets and disks and inside the whole-cluster simulator.
 *
 * Owns: the job table, the per-origin "held" tracker, the catch-up log, the ownership view,
 * the phase, this node's own seqs (and its records not yet durable), the timers, and what
 * goes out (outputs, messages cut to size); it originates records, applies them and routes
 * every input to the piece that handles it. Must not: do I/O, read a clock, call Math.random,
 * or decide delivery timing (the delivery engine does). Delegates to pieces it owns, each
 * reaching back only through a narrow host: client submits, manual retries and status
 * queries to their answers (submit_path.ts); proposals driven to their outcome, commits and
 * confirm rounds (proposal_driver.ts, over proposals.ts, which counts votes and gives the
 * verdict); what this node does about each job given its owner: scheduling, confirming,
 * handoffs (job_duties.ts); peers' records stored and acknowledged (incoming_records.ts);
 * delivery reports made records (delivery_reports.ts); WAL replay, the seqs a restart voids,
 * and checkpoints (recovery.ts); the WAL batch being built and the appends awaiting their
 * fsync (append_batcher.ts); the serving side of sync exchanges and its snapshot sessions
 * (sync_server.ts); the asking side of catch-up and anti-entropy (catchup_client.ts); the
 * voter view and owner cache (ownership_view.ts); the per-peer send queues and lazy records
 * (repl_outbox.ts); metric registration (core_metrics.ts); whether a submit may start now
 * (submit_admission.ts); the outputs' types (core_output.ts).
 *
 * Durability order (what the shell must respect, etcd-raft style):
 * - An `append` output must be durable (WAL write + fsync) before the shell calls
 *   `persisted(token)`; tokens complete in the order they were issued.
 * - An ACK for a record is only produced after the append holding that record is persisted:
 *   a replica never says "on my disk" before it is.
 * - A proposal counts this node's own vote only after its own append is persisted, so a submit
 *   is acknowledged only once a majority of the configured voters has it on disk
 *   (invariant 1). Remote votes come from ACKs, which replicas send after their fsync.
 * - Sends need no durability: a record sent before it is durable here may reach a peer that
 *   keeps it while we crash; records are idempotent and the restart's SKIP covers the seqs.
 *
 * Quorum is floor(N/2)+1 of the N configured voters, never of the live ones.
 */

import { type JobsConfig, jobsDefaults, validateJobsConfig } from "../config/jobs.ts";
import { assert, fail } from "../lib/assert.ts";
import { MinHeap } from "../lib/min_heap.ts";
import type { Rng } from "../lib/rng.ts";
import type { MetricsRegistry } from "../metrics/registry.ts";
import type { DeliveryReport } from "../delivery/types.ts";
import { dashboardDefaults } from "../config/dashboard.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import { EndpointAttemptStats } from "./endpoint_attempt_stats.ts";
import { endpointOfJob } from "./event_model.ts";
import { CatchupLog } from "./catchup_log.ts";
import { ReplicationOutbox } from "./repl_outbox.ts";
import { type CoreMetrics, registerMetrics } from "./core_metrics.ts";
import type { ReplicationOutput } from "./core_output.ts";
import {
  decodeMessage,
  encodeMessage,
  type JobsMessage,
  type OutgoingMessage,
} from "./job_messages.ts";
import { encodeRecord, type Skipped } from "./job_codec.ts";
import { type AppendBatch, AppendBatcher } from "./append_batcher.ts";
import {
  holdsAttempt,
  type JobEntry,
  type JobRecord,
  ownerKeyOf,
  type ReplicatedRecord,
  sameStamp,
  type Stamp,
} from "./job_model.ts";
import type { EndpointWrite } from "./endpoint_model.ts";
import { JobTable } from "./job_table.ts";
import { eventJobIds } from "./event_table.ts";
import { OwnershipView, type VoterState } from "./ownership_view.ts";
import { SeqTracker } from "./seq_tracker.ts";
import { SyncServer } from "./sync_server.ts";
import type { CorePhase } from "./submit_admission.ts";
import { CatchupClient, type CaughtUp } from "./catchup_client.ts";
import { type SubmitLimitOptions, SubmitPath, type SubmitPathHost } from "./submit_path.ts";
import { ProposalDriver, type ProposalDriverHost } from "./proposal_driver.ts";
import { JobDuties, type JobDutiesHost } from "./job_duties.ts";
import {
  IncomingRecords,
  type IncomingRecordsHost,
  type VoidedRecord,
} from "./incoming_records.ts";
import { DeliveryReports, type DeliveryReportsHost } from "./delivery_reports.ts";
import { merged, Recovery, type RecoveryHost } from "./recovery.ts";
import { EndpointHealth } from "./endpoint_health.ts";
import { PendingChecks, type PendingChecksHost } from "./pending_checks.ts";
import type { EventRequest, SubmitRequest } from "./service.ts";

/** The core's phase; it takes submits only when `ready` (submit_admission.ts). */
export type { CorePhase } from "./submit_admission.ts";

/** How this node sees a voter (from membership). Unknown voters count as alive. */
export type { VoterState } from "./ownership_view.ts";

/** What the shell carries out (core_output.ts). */
export type { ReplicationOutput } from "./core_output.ts";

/** The hash of everything a client sent in a submit (submit_path.ts). */
export { submitBodyHash } from "./submit_path.ts";

export interface ReplicationCoreOptions {
  /** This node's voter address (canonical `host:port`): its identity in the voter set. */
  readonly self: string;
  /** The configured voters, this node included (canonical addresses). */
  readonly voters: readonly string[];
  readonly config?: Partial<JobsConfig>;
  readonly rng: Rng;
  readonly metrics: MetricsRegistry;
  /** Largest WAL append the shell's WAL takes (`wal.recordBytesMax`). */
  readonly walRecordBytesMax: number;
  /** Largest payload a UDP client may submit (`delivery.payloadBytesMax`). */
  readonly payloadBytesMax: number;
  /**
   * The rest of the bounds a UDP client's submit is checked against (`validateSubmit`, the
   * API's rules): each absent one is its default; `allowPrivateTargets` absent: no check.
   */
  readonly submitLimits?: SubmitLimitOptions;
}

interface TimerItem {
  readonly atMs: number;
  readonly kind: "confirm" | "proposal" | "answer-by" | "query" | "endpoint-read" | "ordered";
  readonly key: string;
}

/** Largest seq a 53-bit field carries. */
const SEQ_MAX = Number.MAX_SAFE_INTEGER;

/** The doors every piece's narrow host is cut from: each piece sees only its own interface. */
type Hosts =
  & SubmitPathHost
  & ProposalDriverHost
  & JobDutiesHost
  & IncomingRecordsHost
  & DeliveryReportsHost
  & RecoveryHost
  & PendingChecksHost;

/**
 * Driven like every core (docs/architecture.md, "Driving a core"): inputs by named methods
 * (`submit`, `receive`, `persisted`, `viewChanged`, …, each taking `nowMs`); `tick(nowMs,
 * wallMs)`; `takeOutputs()` for its `ReplicationOutput`s; `nextWakeMs()` for the next tick
 * (Infinity: none).
 */
export class ReplicationCore {
  readonly self: string;
  readonly voters: readonly string[];
  readonly quorum: number;
  readonly config: Readonly<JobsConfig>;
  readonly table: JobTable;
  readonly tracker = new SeqTracker();
  readonly log: CatchupLog;
  readonly #metrics: CoreMetrics;
  readonly #peers: readonly string[];
  #phase: CorePhase = "recovering";
  #nextOwnSeq = 1;
  #ownPending = 0;
  /** Voided records a peer's SKIP brought while this node caught up: sent once it is ready. */
  #respreadLater: VoidedRecord[] = [];
  /** Which voters are down, and the owners that implies (ownership_view.ts). */
  readonly #ownership: OwnershipView;
  /** Records on their way to peers, lazy ones included (repl_outbox.ts). */
  readonly #outbox: ReplicationOutbox;
  #outputs: ReplicationOutput[] = [];
  /** The WAL batch being built and the appends not yet durable (append_batcher.ts). */
  readonly #appends: AppendBatcher;
  /** Submits, confirm rounds and revives waiting for their majority (proposal_driver.ts). */
  readonly #proposals: ProposalDriver;
  /** Client submits, revives and queries, to their answers (submit_path.ts). */
  readonly #submits: SubmitPath;
  /** Scheduling, confirming and handing over the jobs held here (job_duties.ts). */
  readonly #duties: JobDuties;
  /** Overdue pending jobs of other owners, asked about (pending_checks.ts). */
  readonly #checks: PendingChecks;
  /**
   * Each endpoint's recent attempts, from the delivery records applied here (every node's),
   * for the dashboard (endpoint_attempt_stats.ts). Read-only for everything but
   * `#applyAndReact`.
   */
  readonly endpointAttempts = new EndpointAttemptStats({
    windowMs: dashboardDefaults.endpointHealthWindowMs,
    bucketMs: dashboardDefaults.endpointHealthBucketMs,
    endpointsMax: ENDPOINT_LIMITS.endpointsMax,
    detailCharsMax: dashboardDefaults.failureDetailCharsMax,
  });
  /** Peers' records, stored and acknowledged (incoming_records.ts). */
  readonly #incoming: IncomingRecords;
  /** Delivery reports made records (delivery_reports.ts). */
  readonly #reports: DeliveryReports;
  /** WAL replay, the seqs a restart voids, checkpoints (recovery.ts). */
  readonly #recovery: Recovery;
  /** Disables on a 410 or a failing window, last successes, jobs of disabled endpoints. */
  readonly #health: EndpointHealth;
  readonly #timers = new MinHeap<TimerItem>((a, b) => a.atMs < b.atMs);
  /** A peer's record failed to decode and was logged (see `#undecodable`). */
  #undecodableLogged = false;
  /** Answers peers' sync requests (sync_server.ts). */
  readonly #syncServer: SyncServer;
  /** Asks peers for what this node lacks: catch-up and anti-entropy (catchup_client.ts). */
  readonly #catchup: CatchupClient;
  #expireAtMs = Infinity;
  /** The next archive slice while a backlog lasts (`JobTable.archiveDue`); Infinity: none. */
  #archiveAtMs = Infinity;
  /** The wall clock as of the latest input (for records made where no wall time is passed). */
  #wallMs = 0;

  constructor(options: ReplicationCoreOptions) {
    this.config = validateJobsConfig({ ...jobsDefaults, ...options.config });
    this.self = options.self;
    const voters = [...new Set(options.voters)].sort();
    assert(voters.includes(options.self), "the voter set includes this node");
    this.voters = voters;
    this.quorum = Math.floor(voters.length / 2) + 1;
    // Any two majorities of N intersect: what the keyed-submit and commit rules rest on.
    if (!(this.quorum <= voters.length && 2 * this.quorum > voters.length)) {
      fail(`quorum ${this.quorum} of ${voters.length} voters is not a majority`);
    }
    this.#peers = voters.filter((v) => v !== options.self);
    this.#ownership = new OwnershipView(options.self, voters, this.#peers);
    this.#metrics = registerMetrics(options.metrics);
    this.#appends = new AppendBatcher(options.walRecordBytesMax, this.config.lazyAppendMs);
    this.table = new JobTable({
      historyMax: this.config.historyMax,
      finishedRetentionMs: this.config.finishedRetentionMs,
      finishedJobsMax: this.config.finishedJobsMax,
      deadRetentionMs: this.config.deadRetentionMs,
      deadLettersMax: this.config.deadLettersMax,
      deadLetterBytesMax: this.config.deadLetterBytesMax,
      idempotencyWindowMs: this.config.idempotencyWindowMs,
      idempotencyClockSkewMs: this.config.idempotencyClockSkewMs,
      stubRetentionMs: this.config.stubRetentionMs,
      uncommittedRetentionMs: this.config.uncommittedRetentionMs,
      finishedTombstoneMs: this.config.finishedTombstoneMs,
      finishedTombstonesMax: this.config.finishedTombstonesMax,
      endpointTombstoneMs: this.config.endpointTombstoneMs,
      archiveAfterMs: this.config.deliveredArchiveAfterMs,
      archiveBatchMax: this.config.archiveBatchMax,
    });
    this.log = new CatchupLog(this.config.catchupLogBytesMax);
    this.#outbox = new ReplicationOutbox(this.config.lazySendMs);
    this.#syncServer = new SyncServer({
      tracker: this.tracker,
      log: this.log,
      table: this.table,
      syncReplyBytesMax: this.config.syncReplyBytesMax,
      syncSessionIdleMs: this.config.syncSessionIdleMs,
    });
    const shared = {
      self: this.self,
      voters,
      peers: this.#peers,
      quorum: this.quorum,
      config: this.config,
      metrics: this.#metrics,
      table: this.table,
      tracker: this.tracker,
      catchupLog: this.log,
      appends: this.#appends,
      ownership: this.#ownership,
      outbox: this.#outbox,
      walRecordBytesMax: options.walRecordBytesMax,
      host: this.#hosts(),
    };
    this.#catchup = new CatchupClient({
      ...shared,
      rng: options.rng,
      host: {
        catchingUp: () => this.#phase === "catching_up",
        isDown: (peer) => this.isDown(peer),
        send: (to, message) => this.#send(to, message),
        onRecords: (nowMs, wallMs, from, records) =>
          this.#incoming.onRecords(nowMs, wallMs, from, records, false),
        applyAndReact: (nowMs, record, wallMs) => this.#applyAndReact(nowMs, record, wallMs),
        addToBatch: (bytes, record) => {
          this.#addToBatch(bytes, record);
        },
        mergeHeld: (held) => {
          this.#appends.current().heldMerges.push({ type: "meta", nextOwnSeq: 0, held });
        },
        log: (event, fields) => this.#log(event, fields),
        caughtUp: (nowMs, done) => this.#finishCatchup(nowMs, done),
        orderSettled: (nowMs, startedWallMs) => this.#duties.orderSettled(nowMs, startedWallMs),
      },
    });
    this.#proposals = new ProposalDriver(shared);
    this.#submits = new SubmitPath({
      ...shared,
      rng: options.rng,
      registry: options.metrics,
      payloadBytesMax: options.payloadBytesMax,
      submitLimits: options.submitLimits,
      proposals: this.#proposals,
    });
    this.#duties = new JobDuties(shared);
    this.#checks = new PendingChecks(shared);
    this.#incoming = new IncomingRecords(shared);
    this.#reports = new DeliveryReports(shared);
    this.#recovery = new Recovery(shared);
    this.#health = new EndpointHealth({
      config: this.config,
      table: this.table,
      host: {
        writeEndpoint: (nowMs, wallMs, write) =>
          this.#submits.writeEndpoint(nowMs, wallMs, undefined, write),
        reportDead: (nowMs, wallMs, report) => void this.#reports.dead(nowMs, wallMs, report),
        scheduledIds: () => this.#duties.scheduledIds(),
        isScheduled: (jobId) => this.#duties.isScheduled(jobId),
        reschedule: (nowMs, jobId) => {
          this.#duties.cancel(jobId);
          const entry = this.table.get(jobId);
          if (entry !== undefined) this.#duties.reconsider(nowMs, entry);
        },
        ownStamp: () => this.#ownStamp(),
        applyAndReact: (nowMs, record, wallMs) => this.#applyAndReact(nowMs, record, wallMs),
        originate: (record, voteKey, lazyAtMs) => {
          this.#originate(record, voteKey, lazyAtMs);
        },
        log: (event, fields) => this.#log(event, fields),
      },
    });
  }

  /** The core's doors, for the pieces it owns; each piece's host type lets it see a few. */
  #hosts(): Hosts {
    return {
      phase: () => this.#phase,
      failed: () => this.#phase === "failed",
      ownPending: () => this.#ownPending,
      ownStamp: () => this.#ownStamp(),
      nextOwnSeq: () => this.#nextOwnSeq,
      raiseNextOwnSeq: (seq) => {
        this.#nextOwnSeq = Math.max(this.#nextOwnSeq, seq);
      },
      wallMs: () => this.#wallMs,
      originate: (record, voteKey, lazyAtMs) => {
        this.#originate(record, voteKey, lazyAtMs);
      },
      addToBatch: (bytes, record) => this.#addToBatch(bytes, record),
      applyAndReact: (nowMs, record, wallMs) => this.#applyAndReact(nowMs, record, wallMs),
      respread: (record) => this.#respread(record),
      undecodable: (from, skipped) => this.#undecodable(from, skipped),
      reconsider: (nowMs, entry) => this.#duties.reconsider(nowMs, entry),
      orderedHead: (endpointId) => this.#duties.orderedHead(endpointId),
      handOff: (to, states) => this.#duties.handOff(to, states),
      endpointChanged: (endpointId) => this.#health.endpointChanged(endpointId),
      dropUncommittedCopy: (jobId, stamp) => this.#duties.dropUncommittedCopy(jobId, stamp),
      dropUncommittedEvent: (nowMs, eventId, stamp) =>
        this.#dropUncommittedEvent(nowMs, eventId, stamp),
      scheduledGen: (jobId) => this.#duties.scheduledGen(jobId),
      hasProposal: (jobId) => this.#proposals.hasJob(jobId),
      proposalCount: () => this.#proposals.size,
      startConfirm: (nowMs, entry) => this.#startConfirm(nowMs, entry),
      answer: (requestId, jobId, existing) => this.#submits.answer(requestId, jobId, existing),
      refuse: (requestId, code, message, retryAfterS) =>
        this.#submits.refuse(requestId, code, message, retryAfterS),
      resubmit: (nowMs, wallMs, request, spec) =>
        this.#submits.submitSpec(nowMs, wallMs, request, spec),
      resubmitEvent: (nowMs, wallMs, request, body) =>
        this.#submits.submitEventBody(nowMs, wallMs, request, body),
      timer: (atMs, kind, key) => this.#timers.push({ atMs, kind, key }),
      orderBarrier: (nowMs, sinceWallMs) =>
        this.#catchup.requestBarrier(nowMs, this.#wallMs, sinceWallMs),
      send: (to, message) => this.#send(to, message),
      sendChunked: (to, records, build) => this.#sendChunked(to, records, build),
      output: (output) => {
        // A job of a disabled endpoint is not handed to the engine: it goes dead at flush.
        if (output.type === "schedule" && this.#health.holdBack(output.job.id)) return;
        this.#outputs.push(output);
      },
      log: (event, fields) => this.#log(event, fields),
    };
  }

  get phase(): CorePhase {
    return this.#phase;
  }

  get proposalCount(): number {
    return this.#proposals.size;
  }

  get scheduledCount(): number {
    return this.#duties.scheduledCount;
  }

  get nextOwnSeq(): number {
    return this.#nextOwnSeq;
  }

  isScheduled(jobId: string): boolean {
    return this.#duties.isScheduled(jobId);
  }

  voterState(voter: string): VoterState {
    return this.#ownership.voterState(voter);
  }

  isDown(voter: string): boolean {
    return this.#ownership.isDown(voter);
  }

  /** Voters not held dead or left, this node included. */
  reachableVoters(): number {
    return this.#ownership.reachableVoters();
  }

  /** The owner of `key`: a job id, or an ordered endpoint's id (see `ownerOfJob`). */
  ownerOf(key: string): string | undefined {
    return this.#ownership.ownerOf(key);
  }

  /** The owner of a job held here: its ordered endpoint's owner for an ordered one. */
  ownerOfJob(jobId: string): string | undefined {
    return this.#ownership.ownerOf(ownerKeyOf(jobId, this.table.get(jobId)?.spec));
  }

  takeOutputs(): ReplicationOutput[] {
    const out = this.#outputs;
    this.#outputs = [];
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Recovery (recovery.ts)
  // -------------------------------------------------------------------------------------------

  /**
   * One WAL record, at open (recovery.ts). Returns why it could not be decoded, or undefined:
   * the caller must not go on.
   */
  replay(kind: "snapshot" | "data", payload: Uint8Array, wallMs: number): string | undefined {
    assert(this.#phase === "recovering", "replay happens before recovery ends");
    return this.#recovery.replay(kind, payload, wallMs);
  }

  /**
   * Recovery is over: start catching up with the other voters. Nothing is delivered, and no
   * submit is taken, until a majority (this node included) has sent us everything it holds
   * that we lack.
   */
  recovered(nowMs: number, wallMs: number): void {
    this.#wallMs = wallMs;
    assert(this.#phase === "recovering", "recovered once");
    this.#phase = "catching_up";
    this.#catchup.begin(nowMs);
    this.#expireAtMs = nowMs + this.config.expireIntervalMs;
    this.#log("catching-up", {
      jobs: this.table.size,
      held: this.tracker.summary(0).map((h) => `${h.origin}:${h.contiguous}`).join(","),
    });
    this.#catchup.catchupTick(nowMs);
    this.#updateGauges();
  }

  /**
   * This node's process was frozen for `gapMs` (SIGSTOP, a paused VM): long enough that the
   * others may have declared it dead, taken its jobs over and delivered them, so what it holds
   * may be stale. It stops delivering at once (attempts in flight finish and are reported) and
   * catches up from a majority again, as after a restart, before it schedules any job: a job
   * its replacement delivered meanwhile comes back `delivered` and is not attempted again.
   * Nothing was lost from its own log (no crash), so unlike a restart no seq is voided.
   */
  stalled(nowMs: number, wallMs: number, gapMs: number): void {
    // Frozen while catching up (after a restart, or after an earlier freeze): the answers it
    // was collecting describe the cluster before the freeze, and finishing on them would make
    // it ready, and deliver, on a table that misses what the others did meanwhile (found by
    // a 60-s chaos run: a node stopped 14 s while catching up never logged the freeze). So
    // the catch-up starts over; after a restart it stays a restart's (seqs still voided).
    if (this.#phase !== "ready" && this.#phase !== "catching_up") return;
    this.#wallMs = wallMs;
    const resync = this.#phase === "ready";
    this.#phase = "catching_up";
    this.#duties.cancelAll();
    this.#catchup.startOver(nowMs, resync);
    this.#log("stalled", { gapMs: Math.round(gapMs), jobs: this.table.size });
    this.#catchup.catchupTick(nowMs);
    this.#updateGauges();
  }

  /** A majority answered our catch-up (catchup_client.ts): this node turns ready. */
  #finishCatchup(nowMs: number, done: CaughtUp): void {
    if (done.resync) {
      // After a freeze (see `stalled`): caught up again; no seq of ours needs voiding.
      this.#phase = "ready";
      this.#log("resynced", { from: done.from, tookMs: done.tookMs });
      this.#respreadDeferred();
      this.#catchup.scheduleAntiEntropy(nowMs);
      for (const entry of this.table.activeEntries()) this.#duties.reconsider(nowMs, entry);
      return;
    }
    // After a restart: our own seqs the majority does not know of are declared void
    // (recovery.ts) by a SKIP, the first record of ours once ready.
    const voided = this.#recovery.voidedAfterRestart(done.peerSeqOfMine);
    this.#nextOwnSeq = voided.nextOwnSeq;
    this.#phase = "ready";
    const stamp = this.#ownStamp();
    this.#originate({ type: "skip", stamp, ranges: merged(voided.ranges, stamp.seq) });
    this.#respreadDeferred();
    this.#log("caught-up", {
      from: done.from,
      tookMs: done.tookMs,
      jobs: this.table.size,
      nextOwnSeq: this.#nextOwnSeq,
    });
    this.#catchup.scheduleAntiEntropy(nowMs);
    for (const entry of this.table.activeEntries()) this.#duties.reconsider(nowMs, entry);
  }

  /**
   * Sends again, as a record of this node's own, a record a peer's restart voided that this
   * node holds (incoming_records.ts, `#respreadVoided`). Not before catch-up ends: our next seq
   * is not known then (a restart voids past it), so the record waits for `#finishCatchup`. Our
   * own records not yet on disk stay within `originPendingMax`, the margin a restart of ours
   * voids past; beyond it the record is not sent (another holder may; the case needs a peer's
   * crash to void tens of thousands of records this node holds).
   */
  #respread(record: VoidedRecord): void {
    if (this.#phase === "catching_up") {
      if (this.#respreadLater.length < this.config.originPendingMax) {
        this.#respreadLater.push(record);
      }
      return;
    }
    if (this.#phase !== "ready" || this.#ownPending >= this.config.originPendingMax) return;
    if (!this.#stillOpen(record)) return;
    this.#originate({ ...record, stamp: this.#ownStamp() });
    this.#metrics.voidedRecordsResent.inc();
  }

  /**
   * Whether a voided record still speaks of a life this node holds and that is not over, when
   * it is sent (a put-off one, after the catch-up that may have brought the life's end). Under
   * its old stamp a late copy could never land again (the seq is held everywhere); under a new
   * one only tombstones stop it, and they expire: a REVIVE or a keyed COMMIT carries the spec,
   * so one sent by a holder back after a day would make a job delivered and compacted anew,
   * and deliver it again. A life that ended needs none of them: the record that ended it
   * (a DONE or DEAD of that generation) spreads, or is sent again itself.
   */
  #stillOpen(record: VoidedRecord): boolean {
    switch (record.type) {
      case "endpoint-health":
        return true;
      case "event-commit": {
        const body = this.table.event(record.eventId)?.body;
        return body !== undefined &&
          eventJobIds(body).some((jobId) => this.table.get(jobId)?.phase === "pending");
      }
      case "commit":
        return this.table.get(record.jobId)?.phase === "pending";
      case "revive": {
        const entry = this.table.get(record.jobId);
        return entry?.gen === record.gen && entry.phase === "pending";
      }
      case "retry":
      case "done":
      case "dead":
        // No spec: a late one makes at most a stub; still, only a generation held here.
        return this.table.get(record.jobId)?.gen === record.gen;
    }
  }

  #respreadDeferred(): void {
    const later = this.#respreadLater;
    this.#respreadLater = [];
    for (const record of later) this.#respread(record);
  }

  // -------------------------------------------------------------------------------------------
  // Submits, retries by hand, queries (submit_path.ts, proposal_driver.ts)
  // -------------------------------------------------------------------------------------------

  /** A client submit (already validated). Answered by a `submit-done` output, never hangs. */
  submit(nowMs: number, wallMs: number, requestId: number, request: SubmitRequest): void {
    this.#wallMs = wallMs;
    this.#submits.submit(nowMs, wallMs, requestId, request);
  }

  /** Retries a dead letter by hand: a REVIVE record durable on a majority. */
  revive(nowMs: number, wallMs: number, requestId: number, jobId: string): void {
    this.#wallMs = wallMs;
    this.#submits.revive(nowMs, wallMs, requestId, jobId);
  }

  /**
   * An event (docs/endpoints.md): answered by an `event-done` output once the event and all its
   * jobs are durable on a majority, or refused.
   */
  submitEvent(nowMs: number, wallMs: number, requestId: number, request: EventRequest): void {
    this.#wallMs = wallMs;
    this.#submits.submitEvent(nowMs, wallMs, requestId, request);
  }

  /**
   * Drops this node's uncommitted copy of a keyed event that lost to another incarnation of its
   * key, with all its jobs (`stamp`: only the copy of that record, the one proposed here).
   */
  #dropUncommittedEvent(nowMs: number, eventId: string, stamp: Stamp | undefined): void {
    const event = this.table.event(eventId);
    if (event === undefined || event.committed) return;
    if (
      stamp !== undefined &&
      (event.stamp === undefined || !sameStamp(event.stamp, stamp))
    ) return;
    for (const jobId of this.table.dropUncommittedEvent(eventId)) {
      this.#duties.removed(nowMs, jobId);
    }
  }

  /**
   * A confirm round of a job held uncommitted. An event's job is confirmed by its whole event
   * (its record, never the job alone); returns false when that cannot start now (the event is
   * not held here yet, or its confirm is in flight), so the duties ask again later.
   */
  #startConfirm(nowMs: number, entry: JobEntry): boolean {
    const eventId = entry.spec?.webhookId;
    if (eventId === undefined) {
      this.#proposals.startConfirm(nowMs, entry, undefined);
      return true;
    }
    const event = this.table.event(eventId);
    if (event === undefined || event.stamp === undefined || this.#proposals.hasJob(eventId)) {
      return false;
    }
    if (event.committed) {
      // The event is committed here already; its job missed the commit (it came by a state).
      this.#applyAndReact(nowMs, {
        type: "event-state",
        state: { body: event.body!, stamp: event.stamp, committed: true },
      }, this.#wallMs);
      return true;
    }
    this.#proposals.startEventConfirm(nowMs, event, undefined);
    return true;
  }

  /** An endpoint write: answered by an `endpoint-done` output once durable on a majority. */
  writeEndpoint(nowMs: number, wallMs: number, requestId: number, write: EndpointWrite): void {
    this.#wallMs = wallMs;
    this.#submits.writeEndpoint(nowMs, wallMs, requestId, write);
  }

  /**
   * A client's read of an endpoint: answered by an `endpoint-read-done` output once this
   * node's table holds the newest value a majority has (or the read failed).
   */
  lookupEndpoint(nowMs: number, wallMs: number, requestId: number, id: string): void {
    this.#wallMs = wallMs;
    this.#submits.lookupEndpoint(nowMs, wallMs, requestId, id);
  }

  /**
   * Dead letters oldest first, after place `after`: only those whose DEAD is durable here
   * (the `dead` contract of src/delivery/types.ts).
   */
  deadLetters(
    limit: number,
    after?: number,
  ): { items: JobEntry[]; more: boolean; next: number | undefined } {
    return this.table.deadLetters(limit, after, (jobId) => !this.#appends.deadNotDurable(jobId));
  }

  /** Looks a job up here, or asks the peers when this node does not hold it. */
  query(nowMs: number, requestId: number, jobId: string): void {
    this.#submits.query(nowMs, requestId, jobId);
  }

  #ownStamp(): Stamp {
    assert(this.#nextOwnSeq <= SEQ_MAX, "own seq space exhausted");
    return { origin: this.self, seq: this.#nextOwnSeq++ };
  }

  // -------------------------------------------------------------------------------------------
  // Records: originate, receive, persist
  // -------------------------------------------------------------------------------------------

  /** Puts a record this node originated on its WAL and sends it to every live peer. */
  #originate(record: ReplicatedRecord, voteKey?: string, lazyAtMs?: number): Uint8Array {
    const bytes = encodeRecord(record);
    const batch = this.#addToBatch(bytes, record);
    batch.ownRecords++;
    this.#ownPending++;
    if (voteKey !== undefined) batch.votes.push(voteKey);
    this.log.add(record.stamp.origin, record.stamp.seq, bytes);
    // An unkeyed EVENT-COMMIT rides along, except to the owners of the event's jobs: an event's
    // jobs are owned by the rendezvous of their own ids, mostly other nodes, which deliver only
    // once they hold it, so to them the lazy window would be part of the delivery's latency.
    const eager = lazyAtMs !== undefined && record.type === "event-commit"
      ? this.#eventJobOwners(record.eventId)
      : undefined;
    for (const peer of this.#peers) {
      if (this.isDown(peer)) continue;
      if (lazyAtMs === undefined || this.#phase !== "ready" || eager?.has(peer) === true) {
        this.#outbox.queue(peer, bytes);
      } else this.#outbox.queueLazy(peer, bytes, lazyAtMs);
    }
    return bytes;
  }

  /** The nodes that own a job of event `eventId` as this node holds it (none if not held). */
  #eventJobOwners(eventId: string): Set<string> {
    const owners = new Set<string>();
    const body = this.table.event(eventId)?.body;
    if (body === undefined) return owners;
    for (const jobId of eventJobIds(body)) {
      const owner = this.ownerOfJob(jobId);
      if (owner !== undefined) owners.add(owner);
    }
    return owners;
  }

  /** Adds a record to the append being built (the full one goes to the WAL first). */
  #addToBatch(bytes: Uint8Array, record: JobRecord): AppendBatch {
    // One WAL append must stay under the WAL's record bound: start a new batch when full.
    if (this.#appends.full(bytes.length)) this.#emitAppend();
    return this.#appends.add(bytes, record);
  }

  /** A message from a peer voter or a client, on JOBS_CHANNEL. */
  receive(nowMs: number, wallMs: number, fromAddress: string, bytes: Uint8Array): void {
    this.#wallMs = wallMs;
    const decoded = decodeMessage(bytes);
    if (!decoded.ok) {
      this.#metrics.decodeErrors.inc();
      return;
    }
    const m = decoded.value;
    if (m.kind === "client-submit") {
      this.#submits.clientSubmit(nowMs, wallMs, fromAddress, m);
      return;
    }
    if (m.kind === "client-result") return;
    // Voter messages name their sender, and the name must be the address the transport
    // authenticated the datagram from: any holder of the cluster key (a UDP submit client is
    // one) could otherwise cast ACKs in four voters' names and get a submit acknowledged while
    // it is on one disk. Anything else from a non-voter is ignored.
    if (m.from !== fromAddress || !this.#peers.includes(m.from)) {
      this.#metrics.forgedSenders.inc();
      return;
    }
    if ("undecodable" in m && m.undecodable !== undefined) this.#undecodable(m.from, m.undecodable);
    switch (m.kind) {
      case "repl":
        this.#incoming.onRecords(nowMs, wallMs, m.from, m.records, true);
        return;
      case "ack":
        this.#proposals.ack(nowMs, m.from, m.entries);
        return;
      case "sync-req":
        this.#onSyncRequest(nowMs, m);
        return;
      case "sync-reply":
        this.#catchup.onSyncReply(nowMs, wallMs, m);
        return;
      case "handoff":
        this.#duties.onHandoff(nowMs, wallMs, m.records);
        return;
      case "query":
        this.#submits.answerQuery(m.from, m.requestId, m.jobId);
        return;
      case "pending-check":
        this.#checks.answer(m.from, m.jobIds);
        return;
      case "pending-check-reply":
        this.#checks.onReply(nowMs, wallMs, m.from, m.records);
        return;
      case "query-reply":
        this.#submits.queryReply(m.from, m.requestId, m.state);
        return;
      case "endpoint-read":
        // A node still replaying its WAL does not know what its disk holds: it stays silent,
        // and the asker counts on the others.
        if (this.#phase !== "recovering") {
          this.#submits.answerEndpointRead(m.from, m.roundId, m.endpointId);
        }
        return;
      case "endpoint-read-reply":
        this.#submits.endpointReadReply(nowMs, wallMs, m.from, m.roundId, m.state);
        return;
    }
  }

  /**
   * Records a peer sent that this node cannot decode (a peer with other limits, or a bug):
   * left out and counted, logged once per node lifetime (a peer that keeps sending one must
   * not flood the log), and the rest of their message applied.
   */
  #undecodable(from: string, skipped: Skipped): void {
    this.#metrics.recordsUndecodable.inc(skipped.count);
    if (this.#undecodableLogged) return;
    this.#undecodableLogged = true;
    this.#log("records-undecodable", { from, count: skipped.count, reason: skipped.reason });
  }

  /**
   * Applies a record to the table and reacts: schedules or cancels delivery, counts
   * conflicts. Returns the table's effect.
   */
  #applyAndReact(
    nowMs: number,
    record: JobRecord,
    wallMs: number,
  ): "unchanged" | "changed" | "conflict" {
    const attemptKnown = this.#attemptKnown(record);
    const result = this.table.apply(record, wallMs);
    if (result.effect === "conflict" && record.type === "commit") {
      this.#metrics.commitConflicts.inc();
    }
    if (result.removed !== undefined) {
      // A kept key ended a job held here: stop delivering or confirming it.
      this.#duties.removed(nowMs, result.removed.jobId);
    }
    if (result.entry !== undefined && result.effect === "changed") {
      this.#duties.reconsider(nowMs, result.entry);
    }
    // An event record made, committed or dropped its jobs together: each is reconsidered.
    for (const jobId of result.fanoutRemoved ?? []) this.#duties.removed(nowMs, jobId);
    for (const entry of result.fanout ?? []) this.#duties.reconsider(nowMs, entry);
    if (
      result.effect === "changed" &&
      (record.type === "endpoint" || record.type === "endpoint-state")
    ) this.#health.endpointChanged(record.state.id);
    if (!attemptKnown) this.#noteAttempt(record, result.entry, wallMs);
    return result.effect;
  }

  /**
   * Whether a delivery record is a copy sent again by a replica (`#respread`: its origin's
   * restart voided it) of an attempt this node's history of the job holds already: each
   * holder sends one, and the attempt counts once. The record its attempting node wrote
   * counts as it always did, whatever came first (a `state` may bring the history before it).
   */
  #attemptKnown(record: JobRecord): boolean {
    if (record.type !== "retry" && record.type !== "done" && record.type !== "dead") return false;
    if (record.attempt === undefined || record.attempt.node === record.stamp.origin) return false;
    const entry = this.table.get(record.jobId);
    return entry !== undefined && holdsAttempt(entry, record.attempt);
  }

  /**
   * The attempt a delivery record brought, counted in its endpoint's health. Once: a record
   * reaches here once per node (incoming records are dropped by stamp when already held or on
   * their way to disk), each attempt is reported in one record, and one sent again under
   * another stamp is not counted again (`#attemptKnown`). Whatever the job's state:
   * a RETRY that arrives after the job's DONE changes nothing in the job but still tells of an
   * attempt. The endpoint comes from the job's id, so a record applied before the job's body
   * (a stub) counts too; a record the table refused (its job finished and was compacted here)
   * does not.
   */
  #noteAttempt(record: JobRecord, entry: JobEntry | undefined, wallMs: number): void {
    if (record.type !== "retry" && record.type !== "done" && record.type !== "dead") return;
    const attempt = record.attempt;
    if (attempt === undefined || entry === undefined) return;
    const endpointId = endpointOfJob(record.jobId);
    if (endpointId === undefined) return;
    this.endpointAttempts.attempt(endpointId, attempt, record.type === "done", wallMs);
  }

  /** Pending ordered jobs this node holds for `endpointId` (its ordered queue here). */
  orderedBacklog(endpointId: string): number {
    return this.#duties.orderedBacklog(endpointId);
  }

  /** The WAL made a batch durable. Tokens complete in issue order. */
  persisted(nowMs: number, token: number): void {
    const batch = this.#appends.complete(token);
    if (batch === undefined) return;
    for (const s of batch.stamps) this.tracker.add(s.origin, s.seq);
    for (const s of batch.skips) this.tracker.addRange(s.origin, s.from, s.to);
    for (const r of batch.heldMerges) {
      if (r.type === "meta") this.tracker.merge(r.held);
    }
    this.#ownPending -= batch.ownRecords;
    assert(this.#ownPending >= 0, "own pending records never go negative");
    for (const [to, entries] of batch.acks) this.#incoming.sendAcks(to, entries);
    for (const key of batch.votes) this.#proposals.voted(nowMs, key);
  }

  /**
   * The WAL failed (fail-stop, invariant 5): nothing more is acknowledged. Proposals waiting
   * for a majority are answered `storage_failed`; no ACK leaves this node again.
   */
  storageFailed(reason: string): void {
    if (this.#phase === "failed") return;
    this.#phase = "failed";
    this.#proposals.storageFailed(reason);
    // Records whose append was lost with the WAL are not on their way to disk any more: kept
    // here, a repeat of one (a confirm round) deferred its ACK to an append that no longer
    // exists, which reads as "already durable", and voted with a disk that does not hold it.
    this.#appends.clear();
    this.#duties.cancelAll();
    this.#log("storage-failed", { reason });
  }

  /** Stop taking submits (SIGTERM); replication and delivery go on until the shell stops. */
  stopping(): void {
    if (this.#phase === "ready" || this.#phase === "catching_up") this.#phase = "stopping";
    // What waits to ride along leaves with the next flush: the node is about to go.
    this.#outbox.markDue();
    this.#appends.markDue();
  }

  // -------------------------------------------------------------------------------------------
  // Delivery reports, the DeliveryStore side (delivery_reports.ts)
  // -------------------------------------------------------------------------------------------

  /** A failed attempt with a retry due: returns the token whose persistence the engine awaits. */
  reportRetry(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "retry" }>,
  ): number | undefined {
    const token = this.#reports.retry(nowMs, wallMs, report);
    this.#health.reported(nowMs, wallMs, report);
    return token;
  }

  reportDead(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "dead" }>,
  ): number | undefined {
    const token = this.#reports.dead(nowMs, wallMs, report);
    this.#health.reported(nowMs, wallMs, report);
    return token;
  }

  reportDelivered(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "delivered" }>,
  ): void {
    this.#reports.delivered(nowMs, wallMs, report);
    this.#health.reported(nowMs, wallMs, report);
  }

  /** The engine refused a job (full): offer it again later. */
  scheduleRefused(nowMs: number, jobId: string): void {
    this.#duties.scheduleRefused(nowMs, jobId);
  }

  // -------------------------------------------------------------------------------------------
  // Ownership (job_duties.ts)
  // -------------------------------------------------------------------------------------------

  /**
   * Membership changed. Quorum never depends on this view (it counts configured voters); only
   * ownership and where records are sent do. Jobs whose owner changed because their owner
   * died are handed to the new owner by every holder (idempotent), so a new owner that missed
   * the submit still learns of it.
   */
  viewChanged(nowMs: number, view: ReadonlyMap<string, VoterState>): void {
    // Ownership follows only which voters are down: alive <-> suspect moves no job, so the
    // table is not walked for it (under load suspicions come and go every few seconds).
    const wasGone = this.#ownership.update(view);
    if (wasGone === undefined) return;
    this.#duties.ownersChanged(nowMs, wasGone);
  }

  // -------------------------------------------------------------------------------------------
  // Catch-up and anti-entropy
  // -------------------------------------------------------------------------------------------

  /**
   * A peer asks for what it lacks (a page of it). Records come from the catch-up log, in the
   * order of a walk over origins and seqs that the cursor resumes; when the log no longer
   * holds what the peer lacks, the table is sent instead, as a snapshot session.
   */
  #onSyncRequest(nowMs: number, m: Extract<JobsMessage, { kind: "sync-req" }>): void {
    const yourSeqMax = this.tracker.max(m.from);
    const answer = this.#syncServer.answer(nowMs, m);
    if (answer === undefined) return;
    if (answer.snapshotStarted) this.#metrics.catchupSnapshots.inc();
    const { snapshot, more, cursor, held, records } = answer.page;
    this.#sendChunked(m.from, records, (chunk, part, parts) => ({
      kind: "sync-reply",
      from: this.self,
      requestId: m.requestId,
      page: m.page,
      ask: m.ask,
      part,
      parts,
      snapshot,
      more,
      cursor,
      yourSeqMax,
      held: part === parts - 1 ? held : [],
      records: chunk,
    }));
  }

  /**
   * The transport gave up on messages of ours to `peer` (its session was reset or expired,
   * or the peer was released): what they carried is missing there. If the peer is live, swap
   * held summaries with it now rather than at some later random anti-entropy round.
   */
  peerMissedMessages(nowMs: number, peer: string): void {
    if (this.#phase !== "ready" || !this.#peers.includes(peer) || this.isDown(peer)) return;
    this.#catchup.exchangeWith(nowMs, peer);
  }

  // -------------------------------------------------------------------------------------------
  // Time, flushing, checkpoints
  // -------------------------------------------------------------------------------------------

  /**
   * Pops, from the top of the timer heap, the deadlines of proposals already decided. Every
   * submit pushes one (`submitTimeoutMs` ahead) and nearly all are decided within milliseconds:
   * left in the heap, each woke the node at its old deadline to do nothing, a wake-up per job
   * at its origin (bench/results/session36/). Lazy deletion: only the top is looked at.
   */
  #dropDecidedProposalTimers(): void {
    for (;;) {
      const top = this.#timers.peek();
      if (top === undefined || top.kind !== "proposal" || this.#proposals.isOpen(top.key)) return;
      this.#timers.pop();
    }
  }

  tick(nowMs: number, wallMs: number): void {
    this.#wallMs = wallMs;
    for (;;) {
      const top = this.#timers.peek();
      if (top === undefined || top.atMs > nowMs) break;
      this.#timers.pop();
      switch (top.kind) {
        case "proposal":
          this.#proposals.expire(nowMs, top.key);
          break;
        case "answer-by":
          this.#proposals.answerByExpired(nowMs, top.key);
          break;
        case "confirm":
          this.#duties.confirmTimer(nowMs, top.key);
          break;
        case "query":
          this.#submits.queryExpired(nowMs, Number(top.key));
          break;
        case "endpoint-read":
          this.#submits.endpointReadExpired(nowMs, Number(top.key));
          break;
        case "ordered":
          this.#duties.orderedTimer(nowMs, top.key);
          break;
      }
    }
    this.#catchup.tick(nowMs, wallMs);
    this.#syncServer.expire(nowMs);
    if (this.#phase === "catching_up") this.#catchup.catchupTick(nowMs);
    if (this.#phase === "ready") this.#catchup.antiEntropy(nowMs);
    this.#checks.tick(nowMs, wallMs);
    // Not while a checkpoint's snapshot is being drawn (the next round is then an interval
    // later): it walks the live table, and a key or a tombstone expired before the walk reached
    // it would be missing from the snapshot while a late record it had blocked, appended after
    // the cut, is replayed over it on recovery.
    if (nowMs >= this.#expireAtMs) {
      this.#expireAtMs = nowMs + this.config.expireIntervalMs;
      if (!this.#recovery.checkpointPending) {
        this.#expire(nowMs, wallMs);
        this.#archiveAtMs = this.table.archiveBacklogged
          ? nowMs + this.config.archiveSliceGapMs
          : Infinity;
      }
    } else if (nowMs >= this.#archiveAtMs) {
      // Another slice of a backlog (a burst's deliveries, a restart's replay): small steps
      // between other work, not one long turn.
      this.#archiveAtMs = this.table.archiveDue(wallMs)
        ? nowMs + this.config.archiveSliceGapMs
        : Infinity;
    }
    this.#outbox.tick(nowMs);
    this.#appends.tick(nowMs);
    this.#duties.retryDeferred(nowMs);
    this.#updateGauges();
  }

  /** Retention: what `JobTable.expire` drops, and uncommitted jobs past their time. */
  #expire(nowMs: number, wallMs: number): void {
    for (const jobId of this.table.expire(wallMs)) this.#duties.cancel(jobId);
    for (const entry of this.table.dueUncommitted(wallMs)) {
      if (entry.phase !== "pending") {
        // A keyed copy finished here whose COMMIT never came: nothing is left to confirm or
        // deliver, and the majority that acknowledged the key holds its committed copy and
        // key. Dropped without a key (its tombstone guards the id), it no longer waits for
        // ever, unless a retry of its key is being proposed here: that round settles it.
        if (this.#proposals.hasJob(entry.jobId)) {
          this.table.recheckUncommitted(entry.jobId, wallMs + this.config.uncommittedRetentionMs);
        } else if (this.table.dropUncommitted(entry.jobId)) {
          this.#duties.removed(nowMs, entry.jobId);
        }
        continue;
      }
      // An event's jobs go together: kept while this node owns any of them (it confirms the
      // whole event), else dropped with their event, so no part of an event is left here.
      const eventId = entry.spec?.webhookId;
      const event = eventId !== undefined ? this.table.event(eventId) : undefined;
      const ids = event !== undefined ? eventJobIds(event.body!) : [entry.jobId];
      if (
        ids.some((id) => this.ownerOfJob(id) === this.self) ||
        this.#proposals.hasJob(eventId ?? entry.jobId)
      ) {
        this.table.recheckUncommitted(entry.jobId, wallMs + this.config.uncommittedRetentionMs);
      } else if (event !== undefined) {
        for (const jobId of this.table.dropUncommittedEvent(event.id)) {
          this.#duties.removed(nowMs, jobId);
        }
      } else {
        this.table.dropUncommitted(entry.jobId);
      }
    }
  }

  nextWakeMs(): number {
    this.#dropDecidedProposalTimers();
    let t = Math.min(
      this.#expireAtMs,
      this.#archiveAtMs,
      this.#duties.deferredAtMs,
      this.#outbox.lazyDueMs,
      this.#appends.dueMs,
    );
    const top = this.#timers.peek();
    if (top !== undefined) t = Math.min(t, top.atMs);
    if (this.#phase === "catching_up") t = Math.min(t, this.#catchup.catchupDueMs);
    t = Math.min(t, this.#catchup.exchangesDueMs());
    t = Math.min(t, this.#syncServer.nextWakeMs());
    if (this.#phase === "ready") t = Math.min(t, this.#catchup.antiEntropyDueMs);
    if (this.#phase === "ready") t = Math.min(t, this.#checks.walkDueMs);
    return t;
  }

  /**
   * Emits this turn's work: one WAL append, one replication message (or a few) per peer. An
   * append nobody waits on may stay for up to `lazyAppendMs` from `nowMs`.
   */
  flush(nowMs: number): void {
    // Jobs of endpoints disabled this turn go dead first: their records join this append.
    this.#health.flush(nowMs, this.#wallMs);
    for (const [peer, records] of this.#outbox.take()) {
      this.#metrics.replRecords.inc(records.length);
      this.#sendChunked(
        peer,
        records,
        (chunk) => ({ kind: "repl", from: this.self, records: chunk }),
        true,
        // COMMITs and DONEs alone: nobody waits for them, nor for their acknowledgement, which
        // rides on what the peer sends us next (its votes, its own SUBMITs).
        this.#outbox.tookOnlyLazy(peer),
      );
    }
    this.#emitAppend(nowMs);
  }

  /**
   * Hands the batch being built to the WAL; at `nowMs`, one nobody waits on may stay until
   * `lazyAppendMs` later. Without `nowMs` (the batch is full) it goes now.
   */
  #emitAppend(nowMs?: number): void {
    const taken = this.#appends.take(nowMs);
    if (taken === undefined) return;
    const { token, payload } = taken;
    this.#outputs.push({ type: "append", token, payload });
    if (this.#recovery.appended(payload.length)) this.#outputs.push({ type: "checkpoint" });
  }

  /**
   * The records a checkpoint writes: the live table, kept keys, and replication bookkeeping.
   * Call at the WAL's cut; the records may be drawn later (Recovery.snapshotRecords).
   */
  snapshotRecords(): Iterable<Uint8Array> {
    return this.#recovery.snapshotRecords();
  }

  /** A checkpoint finished (or failed: `snapshotBytes` undefined). */
  checkpointDone(snapshotBytes: number | undefined): void {
    this.#recovery.checkpointDone(snapshotBytes);
  }

  #send(to: string, message: OutgoingMessage): void {
    this.#outbox.sent(to);
    const bytes = encodeMessage(message);
    // A vote's proposer owes the voter a COMMIT (lazySendMs), which carries the transport's
    // acknowledgement of the vote: acknowledged at once, each vote cost a datagram of its own
    // and a wake-up of the voter.
    this.#outputs.push({ type: "send", to, bytes, ackMayWait: message.kind === "ack" });
  }

  /** Splits `records` over messages of at most `messageBytesMax` (one record may exceed it). */
  #sendChunked(
    to: string,
    records: readonly Uint8Array[],
    build: (chunk: Uint8Array[], part: number, parts: number) => OutgoingMessage,
    replication = false,
    ackMayWait = false,
  ): void {
    // Cut every chunk first: each message says how many parts make the whole, since they may
    // arrive in any order.
    const chunks: Uint8Array[][] = [[]];
    let bytes = 0;
    for (const r of records) {
      const current = chunks[chunks.length - 1]!;
      if (current.length > 0 && bytes + r.length > this.config.messageBytesMax) {
        chunks.push([r]);
        bytes = r.length + 4;
      } else {
        current.push(r);
        bytes += r.length + 4;
      }
    }
    chunks.forEach((chunk, part) => {
      const bytesOut = encodeMessage(build(chunk, part, chunks.length));
      if (replication) {
        this.#metrics.replMessages.inc();
        this.#metrics.replBytes.inc(bytesOut.length);
      }
      this.#outputs.push({ type: "send", to, bytes: bytesOut, ackMayWait });
    });
  }

  #log(event: string, fields: Record<string, unknown>): void {
    this.#outputs.push({ type: "log", event, fields });
  }

  #updateGauges(): void {
    const c = this.table.counts;
    this.#metrics.jobsPending.set(c.pending);
    this.#metrics.jobsDead.set(c.dead);
    this.#metrics.jobsDelivered.set(c.delivered);
    this.#metrics.jobsUncommitted.set(this.table.uncommitted);
    this.#metrics.backlogBytes.set(this.table.backlogBytes);
    this.#metrics.deadLetterBytes.set(this.table.deadLetterBytes);
    this.#metrics.proposals.set(this.#proposals.size);
    this.#metrics.scheduled.set(this.#duties.scheduledCount);
    this.#metrics.logBytes.set(this.log.bytes);
    this.#metrics.goneTombstones.set(this.table.goneTombstones);
    this.#metrics.archivedJobs.set(this.table.archivedJobs);
    this.#metrics.archiveBytes.set(this.table.archiveBytes);
    this.#metrics.lateRecords.set(this.table.lateRecords);
  }
}
