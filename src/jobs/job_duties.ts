/**
 * What this node does about each job it holds, given who owns it: deliver it (owned,
 * committed, pending, caught up), stop delivering it, confirm it (owned but uncommitted), and
 * hand it over when its owner died (handoffs sent and received). An ordered endpoint's job is
 * owned by its endpoint's owner and delivered only as the head of the endpoint's queue, once
 * settled (docs/replication.md, "Ordered endpoints").
 *
 * Owns: the jobs scheduled with the delivery engine (and at which generation), those the
 * engine refused and when they are offered again, the confirm rounds due (when to start one),
 * the handoffs, the ordered endpoints' queues and how far this node's order barriers settled
 * them. Must not: own the phase, the ownership view (it reads it), the proposals
 * or the WAL batch, originate records or read a clock: it reaches them through the narrow host
 * the core (replication_core.ts) passes, and the core routes handoffs, confirm timers and the
 * engine's refusals here.
 */

import type { JobsConfig } from "../config/jobs.ts";
import type { DeliveryJob } from "../delivery/types.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import type { ReplicationOutput } from "./core_output.ts";
import { encodeRecord } from "./job_codec.ts";
import type { OutgoingMessage } from "./job_messages.ts";
import {
  type ApplyEffect,
  type JobEntry,
  type JobRecord,
  type JobSpec,
  type JobStateSnapshot,
  ownerKeyOf,
  sameStamp,
  snapshotOf,
  type Stamp,
} from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import { OrderedQueues, orderOf } from "./ordered_queues.ts";
import type { OwnershipView } from "./ownership_view.ts";
import { ownerOf } from "./preference.ts";
import type { SeqTracker } from "./seq_tracker.ts";
import type { CorePhase } from "./submit_admission.ts";
import type { VoterSet } from "./voter_set.ts";
import { assert } from "../lib/assert.ts";

/** What the duties need of the core: each a narrow door, none the whole core. */
export interface JobDutiesHost {
  phase(): CorePhase;
  /** Whether a proposal (a submit, confirm or revive) for the job is in flight. */
  hasProposal(jobId: string): boolean;
  proposalCount(): number;
  /**
   * Starts a confirm round of a job this node holds uncommitted (proposal_driver.ts): of its
   * event, for an event's job. False: it cannot start now (asked again after a retry delay).
   */
  startConfirm(nowMs: number, entry: JobEntry): boolean;
  /** Applies a record to the table and reacts (schedules, cancels). */
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  /** Adds a record to the append being built. */
  addToBatch(bytes: Uint8Array, record: JobRecord): void;
  /** Sends `records` to `to` over as many messages as their size needs. */
  sendChunked(
    to: string,
    records: readonly Uint8Array[],
    build: (chunk: Uint8Array[]) => OutgoingMessage,
  ): void;
  timer(atMs: number, kind: "confirm" | "ordered", key: string): void;
  /** The wall clock as of the latest input: ordered heads settle by it. */
  wallMs(): number;
  /**
   * Asks for an order barrier (catchup_client.ts) that starts at a wall time of at least
   * `sinceWallMs`: `orderSettled` is called once a majority answered one.
   */
  orderBarrier(nowMs: number, sinceWallMs: number): void;
  output(output: ReplicationOutput): void;
  log(event: string, fields: Record<string, unknown>): void;
}

export interface JobDutiesOptions extends VoterSet {
  readonly config: Pick<
    JobsConfig,
    | "confirmDelayMs"
    | "confirmRetryMs"
    | "proposalsMax"
    | "scheduleRetryMs"
    | "submitTimeoutMs"
    | "orderedClockSkewMs"
    | "deliverWithoutMajority"
  >;
  readonly metrics: Pick<CoreMetrics, "handoffsSent" | "handoffsReceived" | "staleHandoffs">;
  readonly table: Pick<JobTable, "activeEntries" | "get" | "dropUncommitted">;
  readonly tracker: Pick<SeqTracker, "has">;
  readonly ownership: Pick<OwnershipView, "ownerOf" | "isDown" | "isGone" | "reachableVoters">;
  readonly host: JobDutiesHost;
}

export class JobDuties {
  readonly #self: string;
  readonly #voters: readonly string[];
  readonly #peers: readonly string[];
  readonly #quorum: number;
  readonly #config: JobDutiesOptions["config"];
  readonly #metrics: JobDutiesOptions["metrics"];
  readonly #table: JobDutiesOptions["table"];
  readonly #tracker: JobDutiesOptions["tracker"];
  readonly #ownership: JobDutiesOptions["ownership"];
  readonly #host: JobDutiesHost;
  /** Jobs handed to the delivery engine, with the generation they were scheduled at. */
  readonly #scheduled = new Map<string, number>();
  /** Jobs the engine refused (full), offered again on the next schedule retry. */
  readonly #deferred = new Set<string>();
  #deferredAtMs = Infinity;
  readonly #confirmDue = new Map<string, number>();
  /** Ordered endpoints' pending jobs held here, by order key (ordered_queues.ts). */
  readonly #queues = new OrderedQueues();
  /**
   * The start (wall ms) of the latest order barrier a majority answered: every event
   * acknowledged before then is held here. -Infinity: none yet.
   */
  #settledWallMs = -Infinity;
  /** Endpoints whose head waits for the wall clock to pass its settle time (its timer's key). */
  readonly #settleDue = new Map<string, number>();

  constructor(options: JobDutiesOptions) {
    this.#self = options.self;
    this.#voters = options.voters;
    this.#peers = options.peers;
    this.#quorum = options.quorum;
    this.#config = options.config;
    this.#metrics = options.metrics;
    this.#table = options.table;
    this.#tracker = options.tracker;
    this.#ownership = options.ownership;
    this.#host = options.host;
  }

  get scheduledCount(): number {
    return this.#scheduled.size;
  }

  /** When the jobs the engine refused are offered again (Infinity: none waits). */
  get deferredAtMs(): number {
    return this.#deferredAtMs;
  }

  /** The jobs handed to the delivery engine. */
  scheduledIds(): IterableIterator<string> {
    return this.#scheduled.keys();
  }

  isScheduled(jobId: string): boolean {
    return this.#scheduled.has(jobId);
  }

  /** Pending ordered jobs of `endpointId` held here, queued by order key (the dashboard's). */
  orderedBacklog(endpointId: string): number {
    return this.#queues.queued(endpointId);
  }

  /** The first pending job of an ordered endpoint held here: the only one of it attempted. */
  orderedHead(endpointId: string): string | undefined {
    return this.#queues.head(endpointId);
  }

  /** The generation job `jobId` was scheduled at, if it is scheduled. */
  scheduledGen(jobId: string): number | undefined {
    return this.#scheduled.get(jobId);
  }

  /** Stops delivering every job (the node froze, or its WAL failed). */
  cancelAll(): void {
    for (const jobId of [...this.#scheduled.keys()]) this.cancel(jobId);
  }

  /** A kept key ended a job held here: stop delivering or confirming it. */
  removed(nowMs: number, jobId: string): void {
    this.cancel(jobId);
    this.#confirmDue.delete(jobId);
    this.#forgetOrdered(nowMs, jobId);
  }

  /** A job left the table: out of its ordered queue, and the endpoint's next head goes. */
  #forgetOrdered(nowMs: number, jobId: string): void {
    const endpointId = this.#queues.forget(jobId);
    if (endpointId !== undefined) this.#reconsiderHead(nowMs, endpointId);
  }

  /** The schedule retry is due: the jobs the engine refused are offered again. */
  retryDeferred(nowMs: number): void {
    if (nowMs < this.#deferredAtMs) return;
    this.#deferredAtMs = Infinity;
    const ids = [...this.#deferred];
    this.#deferred.clear();
    for (const id of ids) {
      const entry = this.#table.get(id);
      if (entry !== undefined) this.reconsider(nowMs, entry);
    }
  }

  /**
   * Which voters are down changed (`wasGone`: which were gone before): every holder hands the
   * jobs whose owner died to their new owner (idempotent), so a new owner that missed the
   * submit still learns of it, and each job is reconsidered.
   */
  ownersChanged(nowMs: number, wasGone: (voter: string) => boolean): void {
    const handoffs = new Map<string, Uint8Array[]>();
    for (const entry of this.#table.activeEntries()) {
      if (entry.phase !== "pending" || entry.spec === undefined) continue;
      const key = ownerKeyOf(entry.jobId, entry.spec);
      const oldOwner = ownerOf(key, this.#voters, wasGone);
      const newOwner = this.#ownership.ownerOf(key);
      if (
        newOwner !== oldOwner && oldOwner !== undefined && this.#ownership.isGone(oldOwner) &&
        newOwner !== undefined && newOwner !== this.#self
      ) {
        let list = handoffs.get(newOwner);
        if (list === undefined) {
          list = [];
          handoffs.set(newOwner, list);
        }
        list.push(encodeRecord({ type: "state", state: snapshotOf(entry) }));
      }
      this.reconsider(nowMs, entry);
    }
    for (const [to, records] of handoffs) this.handOff(to, records);
    this.#host.log("view", {
      reachable: this.#ownership.reachableVoters(),
      down: this.#peers.filter((p) => this.#ownership.isDown(p)).join(","),
      handoffs: [...handoffs.values()].reduce((n, l) => n + l.length, 0),
    });
  }

  /**
   * Sends `to` the encoded `state` records of jobs it should hold as this node does: to a new
   * owner after a failover, or to an owner a pending check found a generation behind
   * (pending_checks.ts).
   */
  handOff(to: string, states: readonly Uint8Array[]): void {
    this.#metrics.handoffsSent.inc(states.length);
    this.#host.sendChunked(
      to,
      states,
      (chunk) => ({ kind: "handoff", from: this.#self, records: chunk }),
    );
  }

  onHandoff(
    nowMs: number,
    wallMs: number,
    records: readonly { record: JobRecord; bytes: Uint8Array }[],
  ): void {
    this.#metrics.handoffsReceived.inc(records.length);
    for (const { record, bytes } of records) {
      if (record.type !== "state") continue;
      if (this.#finishedHere(record.state)) {
        this.#metrics.staleHandoffs.inc();
        continue;
      }
      const effect = this.#host.applyAndReact(nowMs, record, wallMs);
      if (effect === "changed") this.#host.addToBatch(bytes, record);
    }
  }

  /**
   * Decides what this node does about one job now: deliver it (owned, committed, pending,
   * caught up), stop delivering it, or confirm it (owned but uncommitted).
   */
  reconsider(nowMs: number, entry: JobEntry): void {
    const endpointId = entry.spec?.ordered === true
      ? ownerKeyOf(entry.jobId, entry.spec)
      : undefined;
    const headBefore = endpointId !== undefined ? this.#queues.head(endpointId) : undefined;
    if (endpointId !== undefined) this.#queues.note(entry);
    // `ownerKeyOf`: the endpoint of an ordered job (just computed), else the job itself.
    const owned = this.#host.phase() === "ready" &&
      this.#ownership.ownerOf(endpointId ?? entry.jobId) === this.#self;
    // Without a reachable majority this node may be the cut-off side of a partition, whose
    // jobs the other side takes over: delivering them too sends each twice (config).
    const deliverable = owned &&
      (this.#config.deliverWithoutMajority ||
        this.#ownership.reachableVoters() >= this.#quorum) &&
      entry.phase === "pending" && entry.spec !== undefined &&
      entry.committed && (endpointId === undefined || this.#isSettledHead(nowMs, entry));
    const scheduledGen = this.#scheduled.get(entry.jobId);
    if (scheduledGen !== undefined && (!deliverable || scheduledGen !== entry.gen)) {
      this.cancel(entry.jobId);
    }
    if (deliverable && !this.#scheduled.has(entry.jobId)) {
      this.#scheduled.set(entry.jobId, entry.gen);
      this.#deferred.delete(entry.jobId);
      this.#host.output({
        type: "schedule",
        job: toDeliveryJob(entry.spec!),
        resume: { attemptsMade: entry.attemptsMade, nextAttemptAtMs: entry.nextAttemptAtMs },
      });
    }
    if (
      owned && entry.phase === "pending" && entry.spec !== undefined && !entry.committed &&
      !this.#host.hasProposal(proposalId(entry.spec)) && !this.#confirmDue.has(entry.jobId)
    ) {
      const atMs = nowMs + this.#config.confirmDelayMs;
      this.#confirmDue.set(entry.jobId, atMs);
      this.#host.timer(atMs, "confirm", entry.jobId);
    }
    if (endpointId !== undefined) this.#headMoved(nowMs, endpointId, headBefore, entry.jobId);
  }

  /**
   * Whether an ordered job may be attempted now: it is its endpoint's head (every job of the
   * endpoint held here with an earlier key is delivered or dead; one left uncommitted holds
   * its place until its confirm round commits it), and it is settled: an order barrier that
   * started once the wall clock had passed the head's key by `submitTimeoutMs +
   * orderedClockSkewMs` was answered by a majority. By then no node stamps a key as early
   * (within that skew), every proposal of one has ended, and the barrier brought every
   * acknowledged one here: nothing acknowledged can still come in ahead of it. Not settled:
   * a barrier is asked for, or a timer set for when the wall clock gets there.
   */
  #isSettledHead(nowMs: number, entry: JobEntry): boolean {
    const order = orderOf(entry);
    if (order === undefined) return false;
    let head = this.#queues.head(order.endpointId);
    // A head that left the table unseen (a snapshot's inference, say) holds nothing up.
    while (head !== undefined && head !== entry.jobId && this.#table.get(head) === undefined) {
      this.#queues.forget(head);
      head = this.#queues.head(order.endpointId);
    }
    if (head !== entry.jobId) return false;
    const settleWallMs = order.key.atMs + this.#config.submitTimeoutMs +
      this.#config.orderedClockSkewMs;
    if (this.#settledWallMs >= settleWallMs) return true;
    const wallMs = this.#host.wallMs();
    if (wallMs >= settleWallMs) {
      this.#host.orderBarrier(nowMs, settleWallMs);
      return false;
    }
    const atMs = nowMs + (settleWallMs - wallMs);
    const due = this.#settleDue.get(order.endpointId);
    if (due === undefined || due > atMs) {
      this.#settleDue.set(order.endpointId, atMs);
      this.#host.timer(atMs, "ordered", order.endpointId);
    }
    return false;
  }

  /**
   * An ordered endpoint's head may have changed while `jobId` was reconsidered: the new head
   * may be attempted, the old one (if another) no longer.
   */
  #headMoved(
    nowMs: number,
    endpointId: string,
    headBefore: string | undefined,
    jobId: string,
  ): void {
    const headAfter = this.#queues.head(endpointId);
    if (headAfter === headBefore) return;
    for (const id of [headBefore, headAfter]) {
      if (id === undefined || id === jobId) continue;
      const other = this.#table.get(id);
      if (other !== undefined) this.reconsider(nowMs, other);
      else {
        this.#queues.forget(id);
        this.cancel(id);
      }
    }
  }

  /** An endpoint's settle timer fired: its head is looked at again. */
  orderedTimer(nowMs: number, endpointId: string): void {
    const due = this.#settleDue.get(endpointId);
    if (due === undefined || due > nowMs) return;
    this.#settleDue.delete(endpointId);
    this.#reconsiderHead(nowMs, endpointId);
  }

  /**
   * A majority answered an order barrier that started at `startedWallMs`: every event
   * acknowledged before then is held here, so heads keyed early enough are settled.
   */
  orderSettled(nowMs: number, startedWallMs: number): void {
    if (startedWallMs <= this.#settledWallMs) return;
    this.#settledWallMs = startedWallMs;
    for (const endpointId of [...this.#queues.endpoints()]) this.#reconsiderHead(nowMs, endpointId);
  }

  #reconsiderHead(nowMs: number, endpointId: string): void {
    const head = this.#queues.head(endpointId);
    if (head === undefined) return;
    const entry = this.#table.get(head);
    if (entry !== undefined) {
      this.reconsider(nowMs, entry);
      return;
    }
    // Left the table without being reconsidered: out of the queue, and the next one goes.
    this.#queues.forget(head);
    this.cancel(head);
    this.#reconsiderHead(nowMs, endpointId);
  }

  cancel(jobId: string): void {
    if (this.#scheduled.delete(jobId)) this.#host.output({ type: "cancel", jobId });
    this.#deferred.delete(jobId);
  }

  confirmTimer(nowMs: number, jobId: string): void {
    const due = this.#confirmDue.get(jobId);
    if (due === undefined || due > nowMs) return;
    this.#confirmDue.delete(jobId);
    const entry = this.#table.get(jobId);
    if (
      entry === undefined || entry.committed || entry.phase !== "pending" ||
      entry.spec === undefined ||
      this.#host.phase() !== "ready" ||
      this.#ownership.ownerOf(ownerKeyOf(jobId, entry.spec)) !== this.#self ||
      this.#host.hasProposal(proposalId(entry.spec))
    ) return;
    if (
      this.#ownership.reachableVoters() < this.#quorum ||
      this.#host.proposalCount() >= this.#config.proposalsMax ||
      !this.#host.startConfirm(nowMs, entry)
    ) {
      const atMs = nowMs + this.#config.confirmRetryMs;
      this.#confirmDue.set(jobId, atMs);
      this.#host.timer(atMs, "confirm", jobId);
    }
  }

  /**
   * Drops this node's uncommitted copy of `jobId`, one that lost to another incarnation of its
   * key: when `stamp` is given, only the copy that SUBMIT made (a proposal's own).
   */
  dropUncommittedCopy(jobId: string, stamp: Stamp | undefined): void {
    const entry = this.#table.get(jobId);
    if (entry === undefined || entry.committed) return;
    if (
      stamp !== undefined &&
      (entry.submitStamp === undefined || !sameStamp(entry.submitStamp, stamp))
    ) return;
    this.#table.dropUncommitted(jobId);
    this.cancel(jobId);
    this.#confirmDue.delete(jobId);
    // Only a keyed job's own copy comes here, never an event's job: no ordered queue moves.
    assert(this.#queues.forget(jobId) === undefined, "an ordered job dropped as a keyed copy");
  }

  /**
   * Whether a pending state handed to us is of a job that finished here and was compacted: its
   * SUBMIT is on our disk, the job is not in our table, and no manual retry started it again.
   * The sender missed the DONE (a partition) and took the old owner for dead; applied, the
   * state would revive the job here, pending for ever (the DONE is held, so anti-entropy never
   * brings it again) and delivered again on the next failover. The same inference as the
   * catch-up client's after a snapshot (catchup_client.ts).
   */
  #finishedHere(state: JobStateSnapshot): boolean {
    const stamp = state.submitStamp;
    return state.phase === "pending" && state.gen === 0 && stamp !== undefined &&
      this.#table.get(state.jobId) === undefined && this.#tracker.has(stamp.origin, stamp.seq);
  }

  /** The engine refused a job (full): offer it again later. */
  scheduleRefused(nowMs: number, jobId: string): void {
    this.#scheduled.delete(jobId);
    this.#deferred.add(jobId);
    if (this.#deferredAtMs === Infinity) this.#deferredAtMs = nowMs + this.#config.scheduleRetryMs;
  }
}

/** What a job's confirm round proposes: its event, for an event's job; else the job itself. */
function proposalId(spec: JobSpec): string {
  return spec.webhookId ?? spec.id;
}

function toDeliveryJob(spec: JobSpec): DeliveryJob {
  return {
    id: spec.id,
    ...(spec.webhookId !== undefined ? { webhookId: spec.webhookId } : {}),
    url: spec.url,
    payload: spec.payload,
    headers: spec.headers,
    secrets: spec.secrets,
    ...(spec.timeoutMs > 0 ? { timeoutMs: spec.timeoutMs } : {}),
    submittedAtMs: spec.submittedAtMs,
    maxAttempts: spec.maxAttempts,
  };
}
