/**
 * Proposals driven to their outcome: a SUBMIT, a confirm round (a SUBMIT this node holds,
 * stored again on every voter) or a REVIVE waits here for a majority of the configured voters
 * to hold it durably, and is then committed and answered, or answered otherwise (another
 * incarnation of its key stands, a conflict, no majority in time, the WAL failed).
 *
 * Owns: the proposals in flight (proposals.ts counts their votes and gives the verdict; this
 * acts on it), their deadlines, our own vote (counted once our append is durable), the COMMIT
 * a majority earns, and confirm rounds. Must not: own the phase, the own seqs, the WAL batch
 * or delivery scheduling, build a client's answer or read a clock: it reaches them through the
 * narrow host the core (replication_core.ts) passes; requests come from submit_path.ts, and
 * the core routes ACKs, durable votes and the proposal timers here.
 */

import type { JobsConfig } from "../config/jobs.ts";
import { assert, unreachable } from "../lib/assert.ts";
import type { CatchupLog } from "./catchup_log.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { type ReplicationOutput, reviveRefused } from "./core_output.ts";
import type { AppendBatch, AppendBatcher } from "./append_batcher.ts";
import { encodeRecord } from "./job_codec.ts";
import type { AckEntry } from "./job_messages.ts";
import type { EndpointState } from "./endpoint_model.ts";
import type { EventBody } from "./event_model.ts";
import type { EventEntry } from "./event_table.ts";
import type {
  ApplyEffect,
  JobEntry,
  JobRecord,
  JobSpec,
  ReplicatedRecord,
  Stamp,
} from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import type { OwnershipView } from "./ownership_view.ts";
import {
  isEventKind,
  type Proposal,
  type ProposalKind,
  type ProposalRequest,
  Proposals,
} from "./proposals.ts";

export type { ProposalRequest };
import { eventJobId } from "./event_model.ts";
import { isLiveFor } from "./keyed_id.ts";
import type { ReplicationOutbox } from "./repl_outbox.ts";
import type { SeqTracker } from "./seq_tracker.ts";
import type { RefusalCode } from "./service.ts";
import type { VoterSet } from "./voter_set.ts";

/** The timer key of a request's own deadline in proposal `proposalKey` (`answerByExpired`). */
function answerByKey(requestId: number, proposalKey: string): string {
  return `${requestId} ${proposalKey}`;
}

/** What the driver needs of the core: each a narrow door, none the whole core. */
export interface ProposalDriverHost {
  /** The next stamp of this node's own origin (a seq is never reused). */
  ownStamp(): Stamp;
  /** The wall clock as of the latest input. */
  wallMs(): number;
  /** Puts a record of ours on the WAL and the wire (see `SubmitPathHost.originate`). */
  originate(record: ReplicatedRecord, voteKey?: string, lazyAtMs?: number): void;
  /** Adds a record to the append being built. */
  addToBatch(bytes: Uint8Array, record: JobRecord): AppendBatch;
  /** Applies a record to the table and reacts (schedules, cancels). */
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  /** Decides again whether this node delivers or confirms the job (job_duties.ts). */
  reconsider(nowMs: number, entry: JobEntry): void;
  /** Drops this node's uncommitted copy of a job that lost to another incarnation. */
  dropUncommittedCopy(jobId: string, stamp: Stamp | undefined): void;
  /** As `dropUncommittedCopy`, for a keyed event and all its jobs. */
  dropUncommittedEvent(nowMs: number, eventId: string, stamp: Stamp | undefined): void;
  /** `proposal`: a proposal's deadline; `answer-by`: one moved request's (`attach`). */
  timer(atMs: number, kind: "proposal" | "answer-by", key: string): void;
  /** Answers a submit: accepted as job `jobId` (submit_path.ts). */
  answer(requestId: number, jobId: string, existing: boolean): void;
  /** Answers a submit: refused (submit_path.ts). */
  refuse(requestId: number, code: RefusalCode, message: string, retryAfterS?: number): void;
  /** Submits `spec` for a request again: a keyed submit moving over to another incarnation. */
  resubmit(nowMs: number, wallMs: number, request: ProposalRequest, spec: JobSpec): void;
  /** As `resubmit`, for a keyed event (submit_path.ts). */
  resubmitEvent(nowMs: number, wallMs: number, request: ProposalRequest, body: EventBody): void;
  output(output: ReplicationOutput): void;
}

export interface ProposalDriverOptions extends VoterSet {
  readonly config: Pick<JobsConfig, "submitTimeoutMs" | "idempotencyWindowMs">;
  readonly metrics: Pick<CoreMetrics, "quorumWaitMs" | "confirmRounds">;
  readonly table: Pick<JobTable, "get" | "event">;
  readonly tracker: Pick<SeqTracker, "has">;
  readonly catchupLog: Pick<CatchupLog, "get">;
  readonly appends: Pick<AppendBatcher, "notDurableToken" | "batchFor">;
  readonly ownership: Pick<OwnershipView, "isDown" | "reachableVoters">;
  readonly outbox: Pick<ReplicationOutbox, "queue">;
  readonly host: ProposalDriverHost;
}

export class ProposalDriver {
  readonly #self: string;
  readonly #voters: readonly string[];
  readonly #peers: readonly string[];
  readonly #quorum: number;
  readonly #config: ProposalDriverOptions["config"];
  readonly #metrics: ProposalDriverOptions["metrics"];
  readonly #table: ProposalDriverOptions["table"];
  readonly #tracker: ProposalDriverOptions["tracker"];
  readonly #log: ProposalDriverOptions["catchupLog"];
  readonly #appends: ProposalDriverOptions["appends"];
  readonly #ownership: ProposalDriverOptions["ownership"];
  readonly #outbox: ProposalDriverOptions["outbox"];
  readonly #host: ProposalDriverHost;
  /** Submits, confirm rounds and revives waiting for their majority (proposals.ts). */
  readonly #proposals: Proposals;

  constructor(options: ProposalDriverOptions) {
    this.#self = options.self;
    this.#voters = options.voters;
    this.#peers = options.peers;
    this.#quorum = options.quorum;
    this.#config = options.config;
    this.#metrics = options.metrics;
    this.#table = options.table;
    this.#tracker = options.tracker;
    this.#log = options.catchupLog;
    this.#appends = options.appends;
    this.#ownership = options.ownership;
    this.#outbox = options.outbox;
    this.#host = options.host;
    this.#proposals = new Proposals(options.voters, options.quorum, options.config.submitTimeoutMs);
  }

  /** Proposals waiting for their majority. */
  get size(): number {
    return this.#proposals.size;
  }

  oldestSubmitStartedAtMs(): number | undefined {
    return this.#proposals.oldestSubmitStartedAtMs();
  }

  /** The proposal in flight for job `jobId`, if any. */
  forJob(jobId: string): Proposal | undefined {
    return this.#proposals.forJob(jobId);
  }

  /** Whether the proposal of the record stamped `key` is still open (not yet decided). */
  isOpen(key: string): boolean {
    return this.#proposals.get(key) !== undefined;
  }

  hasJob(jobId: string): boolean {
    return this.#proposals.hasJob(jobId);
  }

  /** Opens a proposal (its deadline is a timer); our vote counts once our copy is durable. */
  propose(
    nowMs: number,
    kind: ProposalKind,
    stamp: Stamp,
    jobId: string,
    bodyHash: string,
    localStored: boolean,
    spec?: JobSpec,
    endpoint?: EndpointState,
    event?: EventBody,
  ): Proposal {
    const proposal = this.#proposals.propose(
      nowMs,
      kind,
      stamp,
      jobId,
      bodyHash,
      localStored,
      spec,
      endpoint,
      event,
    );
    const key = proposal.key;
    this.#host.timer(proposal.deadlineMs, "proposal", key);
    // Already durable here (a confirm of a record we hold): our vote counts at once.
    if (localStored && this.#tracker.has(stamp.origin, stamp.seq)) proposal.votes.add(this.#self);
    else if (localStored) {
      const token = this.#appends.notDurableToken(stamp);
      if (token !== undefined) this.#appends.batchFor(token)?.votes.push(key);
    }
    return proposal;
  }

  /**
   * Adds a client's request to `p`, which answers it. A moved request (`answerByMs`) that `p`
   * might answer later than that gets a timer of its own, which refuses it alone: sim seed
   * 30702's keyed retry was moved over to its key's first try 992 ms after it came, and then
   * waited a whole second round, 1,992 ms in all. The proposal's own deadline stays: moving it
   * forward cut short the round of any other client on it (the review of 934ca03).
   */
  attach(p: Proposal, request: ProposalRequest, to: "requests" | "eventRequests"): void {
    p[to].push(request);
    const byMs = request.answerByMs;
    if (byMs !== undefined && byMs < p.deadlineMs) {
      this.#host.timer(byMs, "answer-by", answerByKey(request.requestId, p.key));
    }
  }

  /** A moved request's own deadline (`attach`): refused alone if its proposal is still open. */
  answerByExpired(nowMs: number, key: string): void {
    const space = key.indexOf(" ");
    const requestId = Number(key.slice(0, space));
    const p = this.#proposals.get(key.slice(space + 1));
    if (p === undefined) return;
    const message = "no majority of the voters stored it in time: it was moved over to an " +
      "earlier submit of its idempotency key, whose round did not end within " +
      `${this.#config.submitTimeoutMs} ms of this request; it was not acknowledged`;
    const due = (r: ProposalRequest) =>
      r.requestId === requestId && r.answerByMs !== undefined && r.answerByMs <= nowMs;
    const i = p.requests.findIndex(due);
    if (i >= 0) {
      p.requests.splice(i, 1);
      this.#host.refuse(requestId, "no_quorum", message, 1);
    }
    const j = p.eventRequests.findIndex(due);
    if (j >= 0) {
      p.eventRequests.splice(j, 1);
      this.#eventRefused(requestId, "no_quorum", message, 1);
    }
  }

  /** Resolves a proposal once its outcome is certain (proposals.ts), or leaves it waiting. */
  evaluate(nowMs: number, p: Proposal): void {
    const verdict = this.#proposals.evaluate(p);
    switch (verdict.kind) {
      case "closed":
      case "pending":
        return;
      case "settled-other": {
        // The other incarnation stands, and a copy of this one held here is dropped (a
        // confirm round of it ends here).
        const other = verdict.other;
        if (isEventKind(p.kind)) this.#host.dropUncommittedEvent(nowMs, p.jobId, undefined);
        else this.#host.dropUncommittedCopy(p.jobId, undefined);
        if (
          !isLiveFor(other.submittedAtMs, this.#host.wallMs(), this.#config.idempotencyWindowMs)
        ) {
          // The replicas judged the other incarnation live at this proposal's first-submit
          // time, which a retry takes over from an earlier try (a copy of one that lost, held
          // or handed over here: sim seed 512, bench/results/session36/). Live then is not live
          // now: answered with it, a client would get a job whose window had closed. A retry
          // once the earlier try's window is over makes a new incarnation.
          const message = "another submit of this idempotency key is being settled; retry";
          for (const r of p.requests) this.#host.refuse(r.requestId, "not_ready", message, 1);
          for (const r of p.eventRequests) this.#eventRefused(r.requestId, "not_ready", message, 1);
          return;
        }
        for (const r of p.eventRequests) {
          if (other.bodyHash !== p.bodyHash) {
            this.#eventRefused(
              r.requestId,
              "idempotency_conflict",
              "idempotency key was used with another body",
            );
            continue;
          }
          // The replica that answered holds the event, this node may not: its fan-out count
          // is known only if it is held here (0 otherwise, as for an event compacted to its key).
          const held = this.#table.event(other.jobId)?.body;
          this.#host.output({
            type: "event-done",
            requestId: r.requestId,
            outcome: {
              ok: true,
              id: other.jobId,
              type: held?.event.type ?? p.event!.event.type,
              jobs: held?.jobs.length ?? 0,
              existing: true,
            },
          });
        }
        for (const r of p.requests) {
          if (other.bodyHash === p.bodyHash) this.#host.answer(r.requestId, other.jobId, true);
          else {
            this.#host.refuse(
              r.requestId,
              "idempotency_conflict",
              "idempotency key was used with another body",
            );
          }
        }
        return;
      }
      case "moved":
        // A first try that saw no majority, in the previous epoch: the submit moves over to
        // it, under its id and first submit time, instead of racing it with a second job for
        // one window. This node's own copy of the abandoned id goes (it was only ever
        // proposed here).
        this.#host.dropUncommittedCopy(p.jobId, p.stamp);
        for (const r of p.requests) {
          this.#host.resubmit(
            nowMs,
            this.#host.wallMs(),
            { ...r, answerByMs: Math.min(r.answerByMs ?? Infinity, p.deadlineMs) },
            verdict.spec,
          );
        }
        return;
      case "moved-event":
        // As `moved`, for a keyed event: its first try in the previous epoch stands for it.
        this.#host.dropUncommittedEvent(nowMs, p.jobId, p.stamp);
        for (const r of p.eventRequests) {
          this.#host.resubmitEvent(
            nowMs,
            this.#host.wallMs(),
            { ...r, answerByMs: Math.min(r.answerByMs ?? Infinity, p.deadlineMs) },
            verdict.body,
          );
        }
        return;
      case "finished":
        for (const r of p.requests) this.#host.answer(r.requestId, p.jobId, true);
        for (const r of p.eventRequests) this.#eventDone(r.requestId, p, true);
        return;
      case "blocked": {
        // Whichever incarnation a majority confirms stands, and a retry then finds it.
        for (const r of p.requests) {
          this.#host.refuse(
            r.requestId,
            "no_quorum",
            "another submit of this idempotency key is being replicated; it was not acknowledged",
            1,
          );
        }
        for (const r of p.eventRequests) {
          this.#eventRefused(
            r.requestId,
            "no_quorum",
            "another submit of this idempotency key is being replicated; it was not acknowledged",
            1,
          );
        }
        this.#reconsiderJobs(nowMs, p);
        return;
      }
      case "conflict":
        for (const r of p.requests) {
          this.#host.refuse(
            r.requestId,
            "idempotency_conflict",
            "idempotency key was used with another body",
          );
        }
        for (const r of p.eventRequests) {
          this.#eventRefused(
            r.requestId,
            "idempotency_conflict",
            "idempotency key was used with another body",
          );
        }
        return;
      case "stale":
        // The client retried a dead letter this node holds a generation behind: refused, as
        // this node learns the job's newer state within seconds (anti-entropy), and a retry
        // then starts the generation after it, or finds the job delivered. (Applied here, it
        // may start an attempt if this node owns the job until that news comes: a duplicate at
        // worst, which is why the message does not say nothing happened.)
        for (const requestId of p.reviveRequests) {
          this.#host.output(reviveRefused(
            requestId,
            "not_ready",
            "other nodes hold a newer state of this job (retried again or delivered since " +
              "this node's copy); this retry was not acknowledged, try again shortly",
            1,
          ));
        }
        return;
      case "committed":
        this.#commit(nowMs, p);
        return;
      default:
        unreachable(verdict, "proposal verdict");
    }
  }

  /** A majority of the voters holds `p` durably: answers its requests, commits a submit. */
  #commit(nowMs: number, p: Proposal): void {
    this.#metrics.quorumWaitMs.record(nowMs - p.startedAtMs);
    if (p.kind === "revive") {
      for (const requestId of p.reviveRequests) {
        this.#host.output({ type: "revive-done", requestId, outcome: { ok: true } });
      }
      return;
    }
    if (p.kind === "endpoint") {
      // Majority durable (invariant 1, for endpoint writes): only now does the client hear 201.
      assert(p.endpoint !== undefined, "an endpoint write carries its value");
      for (const requestId of p.endpointRequests) {
        this.#host.output({
          type: "endpoint-done",
          requestId,
          outcome: { ok: true, endpoint: p.endpoint },
        });
      }
      return;
    }
    if (isEventKind(p.kind)) {
      // Majority durable (invariant 1, for the event and every job of it, in one record): one
      // EVENT-COMMIT commits them all. A keyed event's carries the body, as a keyed job's
      // COMMIT carries its spec; an unkeyed one's only marks them committed and may ride along.
      assert(p.event !== undefined, "an event proposal carries its event");
      const keyed = p.bodyHash !== "";
      const commit: ReplicatedRecord = {
        type: "event-commit",
        stamp: this.#host.ownStamp(),
        eventId: p.jobId,
        bodyHash: p.bodyHash,
        ...(keyed ? { body: p.event } : {}),
      };
      this.#host.applyAndReact(nowMs, commit, this.#host.wallMs());
      this.#host.originate(commit, undefined, keyed ? undefined : nowMs);
      for (const r of p.eventRequests) this.#eventDone(r.requestId, p, r.existing);
      return;
    }
    // Majority durable: commit. A keyed job's COMMIT always carries the committed body: a
    // replica (the proposer itself, or one whose "conflict" came after the majority) may hold
    // another body for the same id, and without the spec it never learns the committed one
    // (its tracker holds both seqs, so anti-entropy never repairs it). As its owner it then
    // never delivered an acknowledged job. Unkeyed ids are random: no other body exists.
    const spec = p.bodyHash !== "" ? p.spec : undefined;
    const commit: ReplicatedRecord = {
      type: "commit",
      stamp: this.#host.ownStamp(),
      jobId: p.jobId,
      bodyHash: p.bodyHash,
      ...(spec !== undefined ? { spec } : {}),
    };
    this.#host.applyAndReact(nowMs, commit, this.#host.wallMs());
    // An unkeyed job's COMMIT only marks it committed where it is held (its random id has no
    // other body anywhere): it can wait to ride along. A keyed one may carry the body that
    // settles a conflict, so it goes at once.
    this.#host.originate(commit, undefined, p.bodyHash === "" ? nowMs : undefined);
    for (const r of p.requests) this.#host.answer(r.requestId, p.jobId, r.existing);
  }

  expire(nowMs: number, key: string): void {
    const p = this.#proposals.expire(key, nowMs);
    if (p === undefined) return;
    const reachable = this.#ownership.reachableVoters();
    const message = `no majority of the ${this.#voters.length} voters stored it within ` +
      `${this.#config.submitTimeoutMs} ms (${p.votes.size} of ${this.#quorum} needed; ` +
      `${reachable} reachable); it was not acknowledged`;
    for (const r of p.requests) this.#host.refuse(r.requestId, "no_quorum", message, 1);
    for (const requestId of p.reviveRequests) {
      this.#host.output(reviveRefused(requestId, "no_quorum", message, 1));
    }
    for (const requestId of p.endpointRequests) {
      this.#host.output({
        type: "endpoint-done",
        requestId,
        outcome: { ok: false, code: "no_quorum", message, retryAfterS: 1 },
      });
    }
    for (const r of p.eventRequests) this.#eventRefused(r.requestId, "no_quorum", message, 1);
    this.#reconsiderJobs(nowMs, p);
  }

  /** A job (or an event's jobs) whose proposal did not get through is tried again later. */
  #reconsiderJobs(nowMs: number, p: Proposal): void {
    if (p.kind === "submit" || p.kind === "confirm") {
      const entry = this.#table.get(p.jobId);
      if (entry !== undefined) this.#host.reconsider(nowMs, entry);
    }
    if (isEventKind(p.kind) && p.event !== undefined) {
      for (const job of p.event.jobs) {
        const entry = this.#table.get(eventJobId(p.jobId, job.endpointId));
        if (entry !== undefined) this.#host.reconsider(nowMs, entry);
      }
    }
  }

  #eventDone(requestId: number, p: Proposal, existing: boolean): void {
    assert(p.event !== undefined, "an event proposal carries its event");
    this.#host.output({
      type: "event-done",
      requestId,
      outcome: {
        ok: true,
        id: p.jobId,
        type: p.event.event.type,
        jobs: p.event.jobs.length,
        existing,
      },
    });
  }

  #eventRefused(
    requestId: number,
    code: RefusalCode,
    message: string,
    retryAfterS?: number,
  ): void {
    this.#host.output({
      type: "event-done",
      requestId,
      outcome: {
        ok: false,
        code,
        message,
        ...(retryAfterS !== undefined ? { retryAfterS } : {}),
      },
    });
  }

  /**
   * Asks every voter to store (again) an event this node holds uncommitted, the whole `event`
   * record (never one job of it: no replica may hold part of an event); its majority commits
   * the event and all its jobs. `request`: an event submit answered by it.
   */
  startEventConfirm(
    nowMs: number,
    event: EventEntry,
    request: ProposalRequest | undefined,
  ): void {
    const { body, stamp } = event;
    assert(body !== undefined && stamp !== undefined, "a confirm needs the event's record");
    this.#metrics.confirmRounds.inc();
    const proposal = this.propose(
      nowMs,
      "event-confirm",
      stamp,
      event.id,
      event.bodyHash,
      false,
      undefined,
      undefined,
      body,
    );
    if (request !== undefined) this.attach(proposal, request, "eventRequests");
    this.#storeEverywhere(nowMs, proposal, { type: "event", stamp, body });
  }

  /** Asks every voter to store (again) a SUBMIT this node holds; commits on a majority. */
  startConfirm(
    nowMs: number,
    entry: JobEntry,
    request: ProposalRequest | undefined,
  ): void {
    const stamp = entry.submitStamp;
    assert(entry.spec !== undefined && stamp !== undefined, "a confirm needs the job's SUBMIT");
    this.#metrics.confirmRounds.inc();
    const proposal = this.propose(
      nowMs,
      "confirm",
      stamp,
      entry.jobId,
      entry.bodyHash,
      false,
      entry.spec,
    );
    if (request !== undefined) this.attach(proposal, request, "requests");
    this.#storeEverywhere(nowMs, proposal, { type: "submit", stamp, spec: entry.spec });
  }

  /**
   * A confirm round's record (a SUBMIT, an EVENT) stored again here and sent to every voter
   * not held down. Our own vote is the record written again, counted once that append is
   * durable: a seq the tracker counts does not prove the job is on this disk (a restart's SKIP
   * voids seqs a minority holds), and the job itself may have come by a handoff still being
   * written.
   */
  #storeEverywhere(
    nowMs: number,
    proposal: Proposal,
    record: Extract<ReplicatedRecord, { type: "submit" | "event" }>,
  ): void {
    const { stamp } = record;
    const bytes = this.#log.get(stamp.origin, stamp.seq) ?? encodeRecord(record);
    this.#host.addToBatch(bytes, record).votes.push(proposal.key);
    for (const peer of this.#peers) {
      if (!this.#ownership.isDown(peer)) this.#outbox.queue(peer, bytes);
    }
    this.evaluate(nowMs, proposal);
  }

  ack(nowMs: number, from: string, entries: readonly AckEntry[]): void {
    for (const e of entries) {
      const p = this.#proposals.ack(from, e);
      if (p !== undefined) this.evaluate(nowMs, p);
    }
  }

  /** This node's own append holding proposal `key`'s record is durable: its vote counts. */
  voted(nowMs: number, key: string): void {
    const p = this.#proposals.vote(key, this.#self);
    if (p !== undefined) this.evaluate(nowMs, p);
  }

  /** The WAL failed (fail-stop): every proposal in flight is answered `storage_failed`. */
  storageFailed(reason: string): void {
    for (const p of this.#proposals.inFlight()) {
      this.#proposals.close(p);
      for (const r of p.requests) {
        this.#host.refuse(
          r.requestId,
          "storage_failed",
          `this node's write-ahead log failed: ${reason}`,
          1,
        );
      }
      for (const requestId of p.reviveRequests) {
        this.#host.output(reviveRefused(requestId, "storage_failed", reason, 1));
      }
      for (const requestId of p.endpointRequests) {
        this.#host.output({
          type: "endpoint-done",
          requestId,
          outcome: { ok: false, code: "storage_failed", message: reason, retryAfterS: 1 },
        });
      }
      for (const r of p.eventRequests) {
        this.#eventRefused(r.requestId, "storage_failed", `this node's WAL failed: ${reason}`, 1);
      }
    }
  }
}
