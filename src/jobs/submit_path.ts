/**
 * The client side of the replication core: submits, manual retries (revives) and status
 * queries, from the request to its answer. It builds SUBMIT and REVIVE records, drives their
 * proposals (and the confirm rounds of jobs held uncommitted) to an outcome, commits what a
 * majority holds, and answers with `submit-done`, `revive-done`, `query-done`, or a UDP
 * client's batch result.
 *
 * Owns: the proposals in flight and what their verdicts mean (answers, the COMMIT, a keyed
 * submit moved over to the incarnation that stands: proposals.ts decides, this acts), whether
 * a submit may start (submit_admission.ts), the minting of job ids (its random draws), the
 * bounds a UDP client's submit is checked against and its batches (client_batches.ts), the
 * status queries forwarded to peers (pending_queries.ts), the majority reads an endpoint PATCH
 * or DELETE makes before it is built (endpoint_reads.ts) and the submit result counters.
 * Must not: own the phase, the own seqs, the WAL batch, the send queues or delivery
 * scheduling, nor read a clock or do I/O: it reaches them only through the narrow host the
 * core (replication_core.ts) passes, and the core routes ACKs, durable votes and the proposal
 * and query timers here (endpoint reads' too).
 */

import { createHash } from "node:crypto";
import { apiDefaults } from "../config/api.ts";
import { deliveryDefaults } from "../config/delivery.ts";
import type { JobsConfig } from "../config/jobs.ts";
import type { Rng } from "../lib/rng.ts";
import { fail } from "../lib/assert.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import {
  applyWrite,
  ENDPOINT_ID_PREFIX,
  type EndpointState,
  type EndpointWrite,
  nextVersion,
} from "./endpoint_model.ts";
import {
  type EndpointChange,
  type EndpointLookup,
  type EndpointRead,
  EndpointReads,
} from "./endpoint_reads.ts";
import { endpointBytes } from "./endpoint_codec.ts";
import { keyedCreateAnswer } from "./endpoint_keyed.ts";
import {
  EVENT_ID_PREFIX,
  type EventBody,
  eventBodyHash,
  type FanoutJob,
  fanoutOf,
  keyedEventId,
} from "./event_model.ts";
import type { Counter, MetricsRegistry } from "../metrics/registry.ts";
import { type SubmitLimits, validateSubmit } from "../delivery/submit_validation.ts";
import { ClientBatches } from "./client_batches.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { type Refusal, type ReplicationOutput, reviveRefused } from "./core_output.ts";
import { type AppendBatcher, WAL_BATCH_SLACK_BYTES } from "./append_batcher.ts";
import { encodeRecord } from "./job_codec.ts";
import type { JobsMessage, OutgoingMessage } from "./job_messages.ts";
import {
  type JobEntry,
  type JobSpec,
  type JobStateSnapshot,
  type ReplicatedRecord,
  snapshotOf,
  type Stamp,
} from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import { keyedJobId, keyEpoch } from "./keyed_id.ts";
import type { OwnershipView } from "./ownership_view.ts";
import { PendingQueries } from "./pending_queries.ts";
import { ownerOf } from "./preference.ts";
import type { ProposalDriver, ProposalRequest } from "./proposal_driver.ts";
import { admissionRefusal, type CorePhase } from "./submit_admission.ts";
import type {
  EventOutcome,
  EventRequest,
  RefusalCode,
  SubmitOutcome,
  SubmitRequest,
} from "./service.ts";
import type { VoterSet } from "./voter_set.ts";

/**
 * The rest of the bounds a UDP client's submit is checked against (`validateSubmit`, the API's
 * rules): each absent one is its default; `allowPrivateTargets` absent: no check.
 */
export type SubmitLimitOptions = Partial<
  Pick<
    SubmitLimits,
    "jobHeadersBytesMax" | "attemptTimeoutMaxMs" | "idempotencyKeyCharsMax" | "allowPrivateTargets"
  >
>;

/** The hash of everything a client sent in a submit: a keyed retry must match it. */
export function submitBodyHash(request: SubmitRequest): string {
  const h = createHash("sha256");
  const headers = Object.entries(request.headers ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  h.update(
    JSON.stringify([
      request.url,
      request.payload,
      headers,
      request.secret ?? null,
      request.maxAttempts ?? null,
      request.timeoutMs ?? null,
    ]),
  );
  return h.digest("hex").slice(0, 32);
}

/** What the submit path needs of the core: each a narrow door, none the whole core. */
export interface SubmitPathHost {
  phase(): CorePhase;
  /** Records this node originated that are not durable here yet. */
  ownPending(): number;
  /** The next stamp of this node's own origin (a seq is never reused). */
  ownStamp(): Stamp;
  /**
   * Puts a record of ours on the WAL and the wire; the proposal `voteKey` gets our vote once
   * the append is durable; `lazyAtMs`: the sends may wait to ride along until then.
   */
  originate(record: ReplicatedRecord, voteKey?: string, lazyAtMs?: number): void;
  /** Decides again whether this node delivers or confirms the job (job_duties.ts). */
  reconsider(nowMs: number, entry: JobEntry): void;
  /** An endpoint's value held here changed (a disable kills its jobs: endpoint_health.ts). */
  endpointChanged(endpointId: string): void;
  timer(atMs: number, kind: "query" | "endpoint-read", key: string): void;
  send(to: string, message: OutgoingMessage): void;
  output(output: ReplicationOutput): void;
}

export interface SubmitPathOptions extends VoterSet {
  readonly config: Readonly<JobsConfig>;
  readonly rng: Rng;
  readonly registry: MetricsRegistry;
  readonly metrics: CoreMetrics;
  /** Largest WAL append the shell's WAL takes (`wal.recordBytesMax`). */
  readonly walRecordBytesMax: number;
  /** Largest payload a UDP client may submit (`delivery.payloadBytesMax`). */
  readonly payloadBytesMax: number;
  readonly submitLimits: SubmitLimitOptions | undefined;
  readonly table: Pick<
    JobTable,
    | "get"
    | "keyTombstone"
    | "liveIncarnation"
    | "liveEventIncarnation"
    | "apply"
    | "endpoints"
    | "event"
    | "counts"
    | "backlogBytes"
  >;
  readonly appends: Pick<AppendBatcher, "deadNotDurable">;
  readonly ownership: Pick<OwnershipView, "isDown" | "isGone" | "reachableVoters" | "remember">;
  readonly proposals: Pick<
    ProposalDriver,
    | "size"
    | "oldestSubmitStartedAtMs"
    | "forJob"
    | "propose"
    | "attach"
    | "evaluate"
    | "startConfirm"
    | "startEventConfirm"
  >;
  readonly host: SubmitPathHost;
}

export class SubmitPath {
  readonly #self: string;
  readonly #voters: readonly string[];
  readonly #quorum: number;
  readonly #config: Readonly<JobsConfig>;
  readonly #table: SubmitPathOptions["table"];
  readonly #peers: readonly string[];
  readonly #rng: Rng;
  readonly #registry: MetricsRegistry;
  readonly #metrics: CoreMetrics;
  readonly #walRecordBytesMax: number;
  readonly #submitLimits: SubmitLimits;
  readonly #appends: SubmitPathOptions["appends"];
  readonly #ownership: SubmitPathOptions["ownership"];
  readonly #host: SubmitPathHost;
  /** Submits, confirm rounds and revives waiting for their majority (proposal_driver.ts). */
  readonly #proposals: SubmitPathOptions["proposals"];
  /** Status queries forwarded to peers (pending_queries.ts). */
  readonly #queries = new PendingQueries<JobStateSnapshot>();
  /** Submits from UDP clients, answered per batch (client_batches.ts). */
  readonly #clientBatches = new ClientBatches();
  /** PATCHes and DELETEs reading their endpoint from a majority (endpoint_reads.ts). */
  readonly #endpointReads: EndpointReads;

  constructor(options: SubmitPathOptions) {
    this.#self = options.self;
    this.#voters = options.voters;
    this.#quorum = options.quorum;
    this.#endpointReads = new EndpointReads(options.quorum);
    this.#config = options.config;
    this.#table = options.table;
    this.#peers = options.peers;
    this.#rng = options.rng;
    this.#registry = options.registry;
    this.#metrics = options.metrics;
    this.#walRecordBytesMax = options.walRecordBytesMax;
    const limits = options.submitLimits ?? {};
    this.#submitLimits = {
      payloadBytesMax: options.payloadBytesMax,
      jobHeadersBytesMax: limits.jobHeadersBytesMax ?? deliveryDefaults.jobHeadersBytesMax,
      maxAttemptsMax: this.#config.maxAttemptsMax,
      attemptTimeoutMaxMs: limits.attemptTimeoutMaxMs ?? deliveryDefaults.attemptTimeoutMaxMs,
      idempotencyKeyCharsMax: limits.idempotencyKeyCharsMax ??
        apiDefaults.idempotencyKeyCharsMax,
      ...(limits.allowPrivateTargets !== undefined
        ? { allowPrivateTargets: limits.allowPrivateTargets }
        : {}),
    };
    this.#appends = options.appends;
    this.#ownership = options.ownership;
    this.#host = options.host;
    this.#proposals = options.proposals;
  }

  /** A client submit (already validated). Answered by a `submit-done` output, never hangs. */
  submit(nowMs: number, wallMs: number, requestId: number, request: SubmitRequest): void {
    const keyed = request.idempotencyKey !== undefined;
    // The key's incarnation live for this submit, if this node holds one. A keyed retry of it
    // makes no new job: answered with it, however large the backlog (its first answer may have
    // been lost; refusing the retry would hide the job).
    const live = keyed ? this.#table.liveIncarnation(request.idempotencyKey!, wallMs) : undefined;
    const refusal = this.#admission(nowMs, live === undefined);
    if (refusal !== undefined) {
      this.refuse(requestId, refusal.code, refusal.message, refusal.retryAfterS);
      return;
    }
    const bodyHash = keyed ? submitBodyHash(request) : "";
    let jobId: string;
    let submittedAtMs = wallMs;
    if (keyed) {
      // The live incarnation's id, otherwise the id of a first submit now. A replica that holds
      // a live one answers with it (incoming_records.ts).
      jobId = live?.jobId ??
        keyedJobId(request.idempotencyKey!, keyEpoch(wallMs, this.#config.idempotencyWindowMs));
      submittedAtMs = live?.submittedAtMs ?? wallMs;
    } else {
      jobId = this.#mintOwnedId();
    }
    const spec: JobSpec = {
      id: jobId,
      url: request.url,
      payload: request.payload,
      headers: request.headers ?? {},
      secrets: request.secret !== undefined ? [request.secret] : [],
      timeoutMs: request.timeoutMs ?? 0,
      maxAttempts: request.maxAttempts ?? this.#config.maxAttemptsDefault,
      submittedAtMs,
      ...(keyed ? { idempotencyKey: request.idempotencyKey! } : {}),
      bodyHash,
    };
    this.submitSpec(nowMs, wallMs, { requestId, existing: false }, spec);
  }

  /**
   * Submits `spec`, its id chosen, for one client request: answers at once from what this
   * node holds under a keyed id, joins a proposal in flight, confirms a copy held, or
   * proposes the SUBMIT.
   */
  submitSpec(
    nowMs: number,
    wallMs: number,
    request: ProposalRequest,
    spec: JobSpec,
  ): void {
    const { requestId } = request;
    const jobId = spec.id;
    const bodyHash = spec.bodyHash;
    const key = spec.idempotencyKey;
    if (key !== undefined) {
      const held = this.#table.get(jobId);
      const tombstone = this.#table.keyTombstone(jobId);
      if (held?.spec !== undefined && held.committed) {
        if (held.bodyHash === bodyHash) return this.answer(requestId, jobId, true);
        return this.refuse(
          requestId,
          "idempotency_conflict",
          `idempotency key ${JSON.stringify(key)} was used with another body`,
        );
      }
      if (held === undefined && tombstone !== undefined) {
        if (tombstone.bodyHash === bodyHash) return this.answer(requestId, jobId, true);
        return this.refuse(
          requestId,
          "idempotency_conflict",
          `idempotency key ${JSON.stringify(key)} was used with another body`,
        );
      }
      const p = this.#proposals.forJob(jobId);
      if (p !== undefined) {
        if (p.bodyHash === bodyHash) {
          this.#proposals.attach(p, { ...request, existing: true }, "requests");
          return;
        }
        return this.refuse(
          requestId,
          "idempotency_conflict",
          `idempotency key ${JSON.stringify(key)} is being submitted with another body`,
        );
      }
      if (held?.spec !== undefined && held.payloadDropped) {
        // Its DONE came here before its COMMIT: our copy lost its payload as delivered, so a
        // confirm round from it would store its SUBMIT again under the same stamp with an empty
        // payload (sim seed 319, bench/results/session36/). Nor can it answer: a DONE does not
        // say which body won the key, only the COMMIT (a keyed one carries its body) does.
        return this.refuse(
          requestId,
          "not_ready",
          `job ${jobId} was delivered but this node has not learned its commit yet; retry`,
          1,
        );
      }
      if (
        held?.spec !== undefined && held.bodyHash === bodyHash && held.submitStamp !== undefined
      ) {
        // Our copy of an earlier submit that never saw its majority: confirm it for this client.
        this.#proposals.startConfirm(nowMs, held, { ...request, existing: true });
        return;
      }
    }
    // A job must fit one WAL append alone, here and at every peer (same wal.recordBytesMax),
    // or no replica can ever store it: refuse it for good now, not "retry" after a timeout.
    const recordBytes = this.#submitBytesBound(spec);
    if (recordBytes + WAL_BATCH_SLACK_BYTES > this.#walRecordBytesMax) {
      return this.refuse(
        requestId,
        "invalid",
        `the job is ${recordBytes} bytes as a record; a WAL record holds at most ` +
          `${this.#walRecordBytesMax - WAL_BATCH_SLACK_BYTES} (wal.recordBytesMax): send a ` +
          "smaller payload",
      );
    }
    const stamp = this.#host.ownStamp();
    const record: ReplicatedRecord = { type: "submit", stamp, spec };
    const result = this.#table.apply(record, wallMs);
    const proposal = this.#proposals.propose(
      nowMs,
      "submit",
      stamp,
      jobId,
      bodyHash,
      result.effect === "changed",
      spec,
    );
    this.#proposals.attach(proposal, request, "requests");
    this.#host.originate(record, proposal.localStored ? proposal.key : undefined);
    this.#proposals.evaluate(nowMs, proposal);
  }

  /**
   * The size of `spec`'s SUBMIT record: a bound from string lengths (3 UTF-8 bytes per UTF-16
   * unit at most) when that is clearly small enough, the exact encoding only when not, so the
   * usual small job is not encoded twice.
   */
  #submitBytesBound(spec: JobSpec): number {
    let units = spec.url.length + spec.payload.length + (spec.idempotencyKey?.length ?? 0);
    for (const [name, value] of Object.entries(spec.headers)) units += name.length + value.length;
    for (const secret of spec.secrets) units += secret.length;
    const headersCount = Object.keys(spec.headers).length;
    const bound = 3 * units + 8 * headersCount + 4 * spec.secrets.length + 1024;
    if (bound + WAL_BATCH_SLACK_BYTES <= this.#walRecordBytesMax) return bound;
    return encodeRecord({ type: "submit", stamp: { origin: this.#self, seq: 1 }, spec }).length;
  }

  /** Retries a dead letter by hand: a REVIVE record durable on a majority. */
  revive(nowMs: number, wallMs: number, requestId: number, jobId: string): void {
    const refusal = this.#admission(nowMs);
    if (refusal !== undefined) {
      this.#host.output({ type: "revive-done", requestId, outcome: refusal });
      return;
    }
    const entry = this.#table.get(jobId);
    if (entry === undefined || entry.spec === undefined) {
      this.#host.output(
        reviveRefused(requestId, "not_found", `no dead letter ${JSON.stringify(jobId)}`),
      );
      return;
    }
    if (entry.phase !== "dead") {
      // A second click on Retry, or a retry of a job another node retried or delivered
      // since: the job is there, so not a 404; the message says what it is instead.
      const what = entry.phase === "delivered"
        ? "was delivered"
        : `is pending, still being delivered (attempts made so far: ${entry.attemptsMade})`;
      this.#host.output(
        reviveRefused(
          requestId,
          "not_dead_letter",
          `job ${JSON.stringify(jobId)} ${what}; only a dead letter can be retried`,
        ),
      );
      return;
    }
    if (this.#appends.deadNotDurable(jobId)) {
      // Its DEAD is still on its way to this node's disk: a dead letter in a moment.
      this.#host.output(reviveRefused(
        requestId,
        "not_ready",
        `job ${JSON.stringify(jobId)} is becoming a dead letter on this node; try again shortly`,
        1,
      ));
      return;
    }
    if (!entry.committed) {
      // Its COMMIT has not reached this node yet (it rides lazily; or this copy is a keyed
      // id's losing body, which the COMMIT replaces): the body this node would send with the
      // REVIVE may not be the acknowledged one, and a REVIVE without it leaves a stub, never
      // delivered, on every node that compacted the dead letter (session 39's review).
      this.#host.output(reviveRefused(
        requestId,
        "not_ready",
        `this node has not yet learned that job ${JSON.stringify(jobId)} was acknowledged; ` +
          "try again shortly",
        1,
      ));
      return;
    }
    const stamp = this.#host.ownStamp();
    const record = this.#reviveRecord(stamp, entry, entry.spec);
    this.#table.apply(record, wallMs);
    const proposal = this.#proposals.propose(nowMs, "revive", stamp, jobId, entry.bodyHash, true);
    proposal.reviveRequests.push(requestId);
    this.#host.originate(record, proposal.key);
    this.#host.reconsider(nowMs, entry);
    this.#proposals.evaluate(nowMs, proposal);
  }

  /**
   * A REVIVE of dead letter `entry`, carrying its committed spec (and the SUBMIT's stamp) for
   * the replicas that compacted the dead letter already: their retention may end first (a
   * clock ahead, `deadLettersMax` reached at another job), and the SUBMIT never comes to
   * them again, so a bare REVIVE left them a stub, pending for ever and never delivered when
   * it was the owner's. Only a committed copy is retried (`revive`). Revives are rare (a
   * manual retry, an endpoint's recover), so the record is encoded once more to check that it
   * fits a WAL record; one that does not goes bare, as before.
   */
  #reviveRecord(stamp: Stamp, entry: JobEntry, spec: JobSpec): ReplicatedRecord {
    const bare = { type: "revive", stamp, jobId: entry.jobId, gen: entry.gen + 1 } as const;
    const full: ReplicatedRecord = {
      ...bare,
      spec,
      ...(entry.submitStamp !== undefined ? { submitStamp: entry.submitStamp } : {}),
    };
    const bytes = encodeRecord(full).length;
    return bytes + WAL_BATCH_SLACK_BYTES <= this.#walRecordBytesMax ? full : bare;
  }

  /**
   * An endpoint write (docs/endpoints.md): the endpoint's whole next value, in one `endpoint`
   * record durable on a majority before `endpoint-done` answers it. A PATCH or DELETE first
   * reads the endpoint from a majority of the voters and builds on the newest value seen
   * (endpoint_reads.ts), so it never undoes a write acknowledged through another node; no
   * majority answering within `queryTimeoutMs` is `no_quorum`. The value is applied here at
   * once (the merge rule makes the replicas' order irrelevant); a write that finds no majority
   * in time is answered `no_quorum` and may still take effect, as a submit may. A write
   * this node makes itself (a disable after a 410 or a failing window, endpoint_health.ts)
   * has no `requestId`: it takes the same path and nobody hears its outcome.
   */
  writeEndpoint(
    nowMs: number,
    wallMs: number,
    requestId: number | undefined,
    write: EndpointWrite,
  ): void {
    const refusal = this.#admission(nowMs, false);
    if (refusal !== undefined) {
      this.#endpointAnswer(requestId, refusal);
      return;
    }
    if (write.kind === "create") {
      this.#proposeEndpoint(nowMs, wallMs, requestId, write);
      return;
    }
    this.#readEndpointFromMajority(nowMs, wallMs, requestId, write);
  }

  /**
   * A client's read of an endpoint (GET): the node reads it from a majority, adopts the
   * newest value, then answers `endpoint-read-done`, and the shell answers from its table. A
   * GET through a node that missed a write acknowledged elsewhere then sees it, instead of a
   * 404 or the older value until anti-entropy. Not refused for load (reads are rare and
   * small) but bounded like the writes' reads.
   */
  lookupEndpoint(nowMs: number, wallMs: number, requestId: number, id: string): void {
    this.#readEndpointFromMajority(nowMs, wallMs, requestId, { kind: "lookup", id });
  }

  /** Starts a majority read of an endpoint for a write or a lookup (endpoint_reads.ts). */
  #readEndpointFromMajority(
    nowMs: number,
    wallMs: number,
    requestId: number | undefined,
    purpose: EndpointChange | EndpointLookup,
  ): void {
    // Bounded like proposals: a read round becomes one.
    if (this.#endpointReads.size >= this.#config.proposalsMax) {
      this.#endpointReadRefused(
        requestId,
        purpose,
        "overloaded",
        `${this.#endpointReads.size} endpoint reads are in flight ` +
          `(jobs.proposalsMax ${this.#config.proposalsMax})`,
      );
      return;
    }
    const peers = new Set(this.#peers.filter((p) => !this.#ownership.isDown(p)));
    const deadlineMs = nowMs + this.#config.queryTimeoutMs;
    const { roundId, settled } = this.#endpointReads.open(
      requestId,
      purpose,
      { address: this.#self, local: this.#table.endpoints.value(purpose.id) },
      peers,
      deadlineMs,
    );
    if (settled !== undefined) {
      this.#endpointReadDone(nowMs, wallMs, settled);
      return;
    }
    this.#host.timer(deadlineMs, "endpoint-read", String(roundId));
    for (const peer of peers) {
      this.#host.send(peer, {
        kind: "endpoint-read",
        from: this.#self,
        roundId,
        endpointId: purpose.id,
      });
    }
  }

  /** A read that could not be made: a write is refused; so is a lookup. */
  #endpointReadRefused(
    requestId: number | undefined,
    purpose: EndpointChange | EndpointLookup,
    code: RefusalCode,
    message: string,
  ): void {
    if (purpose.kind === "lookup") {
      if (requestId === undefined) return;
      this.#host.output({
        type: "endpoint-read-done",
        requestId,
        outcome: { ok: false, code, message, retryAfterS: 1 },
      });
      return;
    }
    this.#endpointRefused(requestId, code, message, 1);
  }

  /** A peer asks for the value this node holds of an endpoint (a write's majority read). */
  answerEndpointRead(from: string, roundId: number, endpointId: string): void {
    this.#host.send(from, {
      kind: "endpoint-read-reply",
      from: this.#self,
      roundId,
      state: this.#table.endpoints.value(endpointId),
    });
  }

  /** A peer's answer to one of our endpoint reads: the write goes on once a majority answered. */
  endpointReadReply(
    nowMs: number,
    wallMs: number,
    from: string,
    roundId: number,
    state: EndpointState | undefined,
  ): void {
    const settled = this.#endpointReads.reply(from, roundId, state);
    if (settled !== undefined) this.#endpointReadDone(nowMs, wallMs, settled);
  }

  /**
   * An endpoint read's time is up: without a majority of answers, the write is not made, and
   * a lookup is refused (a 404 would claim what no majority said).
   */
  endpointReadExpired(nowMs: number, roundId: number): void {
    const round = this.#endpointReads.expire(roundId, nowMs);
    if (round === undefined) return;
    this.#endpointReadRefused(
      round.requestId,
      round.purpose,
      "no_quorum",
      `only ${round.answered.size} of ${this.#voters.length} voters answered a read of endpoint ` +
        `${round.purpose.id} within ${this.#config.queryTimeoutMs} ms (a majority is ` +
        `${this.#quorum})` + (round.purpose.kind === "lookup" ? "" : "; nothing was written"),
    );
  }

  /**
   * A majority answered: this node adopts the newest value seen (so its reads and the write
   * build on it), then the write is proposed on it, stamped past it.
   */
  #endpointReadDone(nowMs: number, wallMs: number, round: EndpointRead): void {
    if (round.newest !== undefined) {
      const adopted = this.#table.apply({ type: "endpoint-state", state: round.newest }, wallMs);
      if (adopted.effect === "changed") this.#host.endpointChanged(round.newest.id);
    }
    const purpose = round.purpose;
    if (purpose.kind === "lookup") {
      // The table now holds the newest value a majority has: the shell answers from it.
      if (round.requestId !== undefined) {
        this.#host.output({
          type: "endpoint-read-done",
          requestId: round.requestId,
          outcome: { ok: true },
        });
      }
      return;
    }
    // The node may have stopped or failed while it read.
    const refusal = this.#admission(nowMs, false);
    if (refusal !== undefined) {
      this.#endpointAnswer(round.requestId, refusal);
      return;
    }
    this.#proposeEndpoint(nowMs, wallMs, round.requestId, purpose);
  }

  /** Answers a client's endpoint write; a write of this node's own has nobody to answer. */
  #endpointAnswer(requestId: number | undefined, outcome: Refusal): void {
    if (requestId !== undefined) this.#host.output({ type: "endpoint-done", requestId, outcome });
  }

  #endpointRefused(
    requestId: number | undefined,
    code: RefusalCode,
    message: string,
    retryAfterS?: number,
  ): void {
    this.#endpointAnswer(requestId, {
      ok: false,
      code,
      message,
      ...(retryAfterS !== undefined ? { retryAfterS } : {}),
    });
  }

  /** Builds the endpoint's next value on the one held here and proposes its record. */
  #proposeEndpoint(
    nowMs: number,
    wallMs: number,
    requestId: number | undefined,
    asked: EndpointWrite,
  ): void {
    const refuse = (code: RefusalCode, message: string): void => {
      this.#endpointRefused(requestId, code, message);
    };
    const endpoints = this.#table.endpoints;
    const id = asked.kind === "create" ? this.#mintEndpointId() : asked.id;
    const current = endpoints.value(id);
    let write = asked;
    if (asked.kind === "create-keyed" && current !== undefined) {
      // The key made this endpoint before (docs/endpoints.md, "Idempotent creates"). The same
      // body gets it, written again so that the answer waits for a majority to hold it (the
      // value read may have been on this node alone, from a try answered 503).
      const answer = keyedCreateAnswer(current, asked.fields, asked.secretGiven);
      if (answer !== "same") {
        refuse(
          "idempotency_conflict",
          answer === "deleted"
            ? `the endpoint this Idempotency-Key created (${id}) was deleted`
            : `this Idempotency-Key created endpoint ${id} with another body`,
        );
        return;
      }
      write = { kind: "update", id, patch: {} };
    }
    const creates = write.kind === "create" || write.kind === "create-keyed";
    if (creates && endpoints.size >= ENDPOINT_LIMITS.endpointsMax) {
      refuse("invalid", `the cluster holds ${endpoints.size} endpoints, the most it takes`);
      return;
    }
    // Checked before a stamp is taken: a seq taken and never written would be a gap in this
    // node's stream that every peer waits for.
    const probeStamp: Stamp = { origin: this.#self, seq: 1 };
    const probe = applyWrite(current, write, nextVersion(current, probeStamp, wallMs), id);
    if (!probe.ok) {
      // "unchanged": a disable of an endpoint disabled already; nothing to write.
      if (probe.reason === "not_found") refuse("not_found", `no endpoint ${JSON.stringify(id)}`);
      return;
    }
    // A delete is never refused for size: it only marks the value it finds.
    const valueBytes = write.kind === "delete" ? 0 : endpointBytes(probe.value);
    if (valueBytes > ENDPOINT_LIMITS.endpointBytesMax) {
      refuse(
        "invalid",
        `the endpoint would be ${valueBytes} bytes encoded; an endpoint holds at most ` +
          `${ENDPOINT_LIMITS.endpointBytesMax} (endpointBytesMax: url, event_types, secret, ` +
          "description and headers together): make them smaller",
      );
      return;
    }
    const probeBytes = encodeRecord({ type: "endpoint", stamp: probeStamp, state: probe.value });
    if (probeBytes.length + WAL_BATCH_SLACK_BYTES > this.#walRecordBytesMax) {
      refuse("invalid", "the endpoint is larger than this node's WAL record bound");
      return;
    }
    const stamp = this.#host.ownStamp();
    const next = applyWrite(current, write, nextVersion(current, stamp, wallMs), id);
    if (!next.ok) fail(`endpoint ${id}: a write the probe allowed was refused`);
    const record: ReplicatedRecord = { type: "endpoint", stamp, state: next.value };
    this.#table.apply(record, wallMs);
    this.#host.endpointChanged(id);
    const proposal = this.#proposals.propose(
      nowMs,
      "endpoint",
      stamp,
      id,
      "",
      true,
      undefined,
      next.value,
    );
    if (requestId !== undefined) proposal.endpointRequests.push(requestId);
    this.#host.originate(record, proposal.key);
    this.#proposals.evaluate(nowMs, proposal);
  }

  /**
   * An event (docs/endpoints.md): fanned out from this node's endpoint table to one job per
   * endpoint that takes its type, all in one `event` record, proposed like a SUBMIT and
   * answered by `event-done` only once a majority holds it durably (so all its jobs, or none).
   * A keyed event's id is a hash of its key and the window-sized epoch of its first submit, as
   * a keyed job's (keyed_id.ts); a retry within the window finds it here (held, or in flight),
   * or is put-if-absent at the replicas.
   */
  submitEvent(nowMs: number, wallMs: number, requestId: number, request: EventRequest): void {
    const key = request.idempotencyKey;
    const jobs: FanoutJob[] = fanoutOf(this.#table.endpoints.values(), request.type).map((e) => ({
      endpointId: e.id,
      url: e.url,
      headers: e.headers,
      secrets: e.secret !== "" ? [e.secret] : [],
      timeoutMs: 0,
      maxAttempts: this.#config.maxAttemptsDefault,
      // Taken now, with the rest of the endpoint: every replica agrees on it byte for byte.
      ...(e.ordered ? { ordered: true as const } : {}),
    }));
    // An event no endpoint takes, or a keyed retry of one held here, makes no job: the backlog
    // does not refuse it.
    const live = key !== undefined ? this.#table.liveEventIncarnation(key, wallMs) : undefined;
    const refusal = this.#admission(nowMs, jobs.length > 0 && live === undefined);
    if (refusal !== undefined) {
      this.#host.output({ type: "event-done", requestId, outcome: refusal });
      return;
    }
    const bodyHash = key !== undefined ? eventBodyHash(request.type, request.payload) : "";
    let id: string;
    let submittedAtMs = wallMs;
    if (key !== undefined) {
      // The key's incarnation live for this event, if this node holds one (or its key); else
      // the id of a first submit now. A replica that holds a live one answers with it
      // (incoming_records.ts), as for a keyed job.
      id = live?.jobId ?? keyedEventId(key, keyEpoch(wallMs, this.#config.idempotencyWindowMs));
      submittedAtMs = live?.submittedAtMs ?? wallMs;
    } else {
      id = randomId(EVENT_ID_PREFIX, this.#rng, 16);
    }
    const body: EventBody = {
      event: {
        id,
        type: request.type,
        payload: request.payload,
        submittedAtMs,
        ...(key !== undefined ? { idempotencyKey: key } : {}),
        bodyHash,
      },
      jobs,
    };
    this.submitEventBody(nowMs, wallMs, { requestId, existing: false }, body);
  }

  /**
   * Submits event `body`, its id chosen, for one client request (as `submitSpec` a job):
   * answers at once from what this node holds under a keyed id, joins a proposal in flight,
   * confirms a copy held, or proposes the `event` record.
   */
  submitEventBody(
    nowMs: number,
    wallMs: number,
    request: ProposalRequest,
    body: EventBody,
  ): void {
    const { requestId } = request;
    const done = (outcome: EventOutcome): void => {
      this.#host.output({ type: "event-done", requestId, outcome });
    };
    const { id, bodyHash, idempotencyKey: key } = body.event;
    if (key !== undefined) {
      const conflict = (): void =>
        done({
          ok: false,
          code: "idempotency_conflict",
          message: `idempotency key ${JSON.stringify(key)} was used with another body`,
        });
      const held = this.#table.event(id);
      if (held !== undefined && held.committed) {
        if (held.bodyHash !== bodyHash) return conflict();
        return done({
          ok: true,
          id,
          type: held.body!.event.type,
          jobs: held.body!.jobs.length,
          existing: true,
        });
      }
      const tombstone = this.#table.keyTombstone(id);
      if (held === undefined && tombstone !== undefined) {
        if (tombstone.bodyHash !== bodyHash) return conflict();
        return done({ ok: true, id, type: body.event.type, jobs: 0, existing: true });
      }
      const p = this.#proposals.forJob(id);
      if (p !== undefined) {
        if (p.bodyHash !== bodyHash) return conflict();
        this.#proposals.attach(p, { ...request, existing: true }, "eventRequests");
        return;
      }
      if (held !== undefined) {
        if (held.bodyHash !== bodyHash) return conflict();
        // Our copy of an earlier submit that never saw its majority: confirm it for this client.
        this.#proposals.startEventConfirm(nowMs, held, { ...request, existing: true });
        return;
      }
    }
    // One record must fit one WAL append, here and at every peer: refused for good now
    // (checked before a stamp is taken: a seq taken and never written is a gap peers wait for).
    const probe = encodeRecord({ type: "event", stamp: { origin: this.#self, seq: 1 }, body });
    if (probe.length + WAL_BATCH_SLACK_BYTES > this.#walRecordBytesMax) {
      return done({
        ok: false,
        code: "invalid",
        message: `the event and its ${body.jobs.length} jobs are ${probe.length} bytes as a ` +
          `record; a WAL record holds at most ${this.#walRecordBytesMax - WAL_BATCH_SLACK_BYTES} ` +
          "(wal.recordBytesMax): send a smaller payload",
      });
    }
    const stamp = this.#host.ownStamp();
    const record: ReplicatedRecord = { type: "event", stamp, body };
    const result = this.#table.apply(record, wallMs);
    const proposal = this.#proposals.propose(
      nowMs,
      "event",
      stamp,
      id,
      bodyHash,
      result.effect === "changed",
      undefined,
      undefined,
      body,
    );
    this.#proposals.attach(proposal, request, "eventRequests");
    this.#host.originate(record, proposal.localStored ? proposal.key : undefined);
    this.#proposals.evaluate(nowMs, proposal);
  }

  /** A random endpoint id, redrawn in the (astronomically unlikely) case it is taken. */
  #mintEndpointId(): string {
    for (;;) {
      const id = randomId(ENDPOINT_ID_PREFIX, this.#rng, 12);
      if (this.#table.endpoints.value(id) === undefined) return id;
    }
  }

  /** Looks a job up here, or asks the peers when this node does not hold it. */
  query(nowMs: number, requestId: number, jobId: string): void {
    const entry = this.#table.get(jobId);
    if (entry !== undefined && entry.spec !== undefined) {
      this.#host.output({ type: "query-done", requestId, state: snapshotOf(entry) });
      return;
    }
    const waiting = new Set(this.#peers.filter((p) => !this.#ownership.isDown(p)));
    if (waiting.size === 0) {
      this.#host.output({ type: "query-done", requestId, state: undefined });
      return;
    }
    this.#queries.open(requestId, jobId, waiting, nowMs + this.#config.queryTimeoutMs);
    this.#host.timer(nowMs + this.#config.queryTimeoutMs, "query", String(requestId));
    for (const peer of waiting) {
      this.#host.send(peer, { kind: "query", from: this.#self, requestId, jobId });
    }
  }

  /**
   * Whether a submit, event, revive (`makesJobs`) or endpoint write may start now
   * (submit_admission.ts); counts queue-age and backlog refusals.
   */
  #admission(nowMs: number, makesJobs = true): Refusal | undefined {
    const refused = admissionRefusal({
      phase: this.#host.phase(),
      reachableVoters: this.#ownership.reachableVoters(),
      voterCount: this.#voters.length,
      quorum: this.#quorum,
      oldestSubmitStartedAtMs: this.#proposals.oldestSubmitStartedAtMs(),
      proposals: this.#proposals.size,
      ownPending: this.#host.ownPending(),
      makesJobs,
      pendingJobs: this.#table.counts.pending,
      backlogBytes: this.#table.backlogBytes,
      config: this.#config,
    }, nowMs);
    if (refused === undefined) return undefined;
    if (refused.rule === "queue_age") this.#metrics.queueAgeRefusals.inc();
    if (refused.rule === "backlog") this.#metrics.backlogRefusals.inc();
    return refused.refusal;
  }

  refuse(requestId: number, code: RefusalCode, message: string, retryAfterS?: number): void {
    this.#rejectedCounter(code).inc();
    this.#submitDone(requestId, {
      ok: false,
      code,
      message,
      ...(retryAfterS !== undefined ? { retryAfterS } : {}),
    });
  }

  answer(requestId: number, id: string, existing: boolean): void {
    (existing ? this.#metrics.submitsExisting : this.#metrics.submitsAccepted).inc();
    this.#submitDone(requestId, { ok: true, id, existing });
  }

  #submitDone(requestId: number, outcome: SubmitOutcome): void {
    const result = this.#clientBatches.settle(requestId, outcome);
    if (result === "not-client") {
      this.#host.output({ type: "submit-done", requestId, outcome });
      return;
    }
    if (result === undefined) return;
    this.#host.send(result.address, {
      kind: "client-result",
      requestId: result.requestId,
      outcomes: result.outcomes,
    });
  }

  #rejectedCounter(code: string): Counter {
    let c = this.#metrics.rejected.get(code);
    if (c === undefined) {
      c = this.#registry.counter("hookd_jobs_submits_total", "Submits answered, by result", {
        result: code,
      });
      this.#metrics.rejected.set(code, c);
    }
    return c;
  }

  /** A random id that ranks this node first, so the node that took the submit owns it. */
  #mintOwnedId(): string {
    let id = "";
    for (let i = 0; i < 64; i++) {
      id = randomId("job_", this.#rng, 16);
      // Not through the owner cache: the ids this node does not keep would crowd it.
      if (ownerOf(id, this.#voters, (v) => this.#ownership.isGone(v)) === this.#self) {
        this.#ownership.remember(id, this.#self);
        return id;
      }
    }
    return id;
  }

  clientSubmit(
    nowMs: number,
    wallMs: number,
    address: string,
    m: Extract<JobsMessage, { kind: "client-submit" }>,
  ): void {
    if (m.submits.length === 0) {
      this.#host.send(address, { kind: "client-result", requestId: m.requestId, outcomes: [] });
      return;
    }
    const batchId = this.#clientBatches.open(address, m.requestId, m.submits.length);
    m.submits.forEach((s, index) => {
      const requestId = this.#clientBatches.request(batchId, index);
      // The API's rules, with its messages (submit_validation.ts): a UDP client gets refused
      // exactly what an HTTP client would.
      const checked = validateSubmit(s.request, this.#submitLimits);
      if (!checked.ok) {
        this.refuse(requestId, "invalid", checked.reason.message);
        return;
      }
      this.submit(nowMs, wallMs, requestId, s.request);
    });
  }

  queryReply(from: string, requestId: number, state: JobStateSnapshot | undefined): void {
    const settled = this.#queries.reply(from, requestId, state);
    if (settled !== undefined) {
      this.#host.output({ type: "query-done", requestId, state: settled.state });
    }
  }

  /** A peer asks for a job it does not hold: answered with what this node holds of it. */
  answerQuery(from: string, requestId: number, jobId: string): void {
    const entry = this.#table.get(jobId);
    this.#host.send(from, {
      kind: "query-reply",
      from: this.#self,
      requestId,
      state: entry !== undefined && entry.spec !== undefined ? snapshotOf(entry) : undefined,
    });
  }

  /** A forwarded query's time is up: it is answered "not found" unless a peer answered. */
  queryExpired(nowMs: number, requestId: number): void {
    if (this.#queries.expire(requestId, nowMs)) {
      this.#host.output({ type: "query-done", requestId, state: undefined });
    }
  }
}

/** The character codes of the hex digits, 0-9 then a-f. */
const HEX_CODES: readonly number[] = Array.from("0123456789abcdef", (c) => c.charCodeAt(0));
/** Reused character codes, one array per id length (one per prefix: a handful). */
const ID_CODES = new Map<number, number[]>();

/**
 * `prefix`, then `bytes` random bytes in lowercase hex, two digits a byte, drawn from `rng` a
 * 32-bit word at a time (each word's high byte first). Built as one flat string from reused
 * character codes: minting tries about as many ids as there are voters before one is this
 * node's, and concatenating hex pairs made each try some 600 bytes of garbage
 * (bench/results/session30/micro/).
 */
export function randomId(prefix: string, rng: Rng, bytes: number): string {
  const length = prefix.length + bytes * 2;
  let codes = ID_CODES.get(length);
  if (codes === undefined) {
    codes = new Array<number>(length).fill(0);
    ID_CODES.set(length, codes);
  }
  for (let i = 0; i < prefix.length; i++) codes[i] = prefix.charCodeAt(i);
  let at = prefix.length;
  for (let i = 0; i < bytes; i += 4) {
    const word = Math.floor(rng.next() * 0x1_0000_0000);
    for (let shift = 28; shift >= 0 && at < length; shift -= 4) {
      codes[at++] = HEX_CODES[(word >>> shift) & 0xf]!;
    }
  }
  return String.fromCharCode.apply(null, codes);
}
