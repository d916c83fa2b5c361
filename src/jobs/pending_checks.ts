/**
 * Pending checks: the repair of a replica that missed a job's end and can no longer be sent
 * it. A record that reached some replicas and not others is normally fetched by its seq
 * (anti-entropy), or sent again under a new stamp when its origin's restart voids the seq
 * (incoming_records.ts); both need a holder whose catch-up log still has the record. When
 * none has (`hookd sim --events --seed 1802`: a DONE on two of four replicas, evicted from
 * their 16-KiB logs before the restarted owner's SKIP voided it), the third replica holds the
 * job pending for ever, and delivers it again the next time it owns it.
 *
 * So each node walks on, every `pendingCheckIntervalMs`, through the pending jobs it holds
 * (at most `pendingCheckScanMax` a walk, each walk from where the last stopped). A job whose
 * attempt is due (its own timeout on top) is watched from then, with the progress it has; one
 * that keeps it (no RETRY, DONE or DEAD moved it) for `pendingCheckAfterMs` is asked about of
 * its owner, if that is another node not held down (a failover hands the job on instead); an
 * ordered job only as its endpoint's head (the others wait for it, rightly). Uncommitted
 * copies too: an owner holding the job finished runs no confirm round, and a lazy COMMIT
 * rides with the DONE, so a copy that missed one may miss both. The owners are asked in
 * `pending-check` messages, thousands of ids to one; an owner answers each job it holds
 * finished with its `state`, or its tombstone (`gone`, or a kept `key`) if it compacted it,
 * and says nothing of one still pending. The answer is applied and written like a snapshot's
 * records (the merge takes the finished state; a tombstone ends a copy of its generation or
 * an earlier one), and a job left pending is asked again after twice the wait, up to
 * `pendingCheckBackoffMaxMs`. An owner that answers an earlier generation than the one
 * pending here missed a retry by hand: it is handed the job.
 *
 * What it costs: a look at each pending job every walk (a few comparisons; the owner is
 * computed only for a job watched long enough), a Set entry per pending job in the table's
 * index (21 bytes), and 94 bytes per pending job seen overdue (bench/results/session42/
 * memory/): in a backlog queued behind a busy owner's engine, all of them (a receiver that
 * fails moves its jobs by their RETRYs).
 *
 * Owns: which jobs are watched, with what progress, and when each may be asked about; where
 * the walks are; the jobs asked about lately; when the next walk is due; the owner's answer
 * to a check. Must not: decide ownership (it reads the view), apply an answer it did not ask
 * for, or answer with a pending state (a pending copy is the asker's own business, and its
 * payload would ride along for nothing).
 */

import type { JobsConfig } from "../config/jobs.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { encodeRecord } from "./job_codec.ts";
import type { OutgoingMessage } from "./job_messages.ts";
import {
  ALL_GENERATIONS,
  type ApplyEffect,
  type JobEntry,
  type JobRecord,
  type JobSpec,
  ownerKeyOf,
  snapshotOf,
} from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import type { OwnershipView } from "./ownership_view.ts";
import type { CorePhase } from "./submit_admission.ts";

/** What the checks need of the core: each a narrow door, none the whole core. */
export interface PendingChecksHost {
  phase(): CorePhase;
  send(to: string, message: OutgoingMessage): void;
  sendChunked(
    to: string,
    records: readonly Uint8Array[],
    build: (chunk: Uint8Array[]) => OutgoingMessage,
  ): void;
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  addToBatch(bytes: Uint8Array, record: JobRecord): void;
  /** The head of an ordered endpoint's queue here (job_duties.ts). */
  orderedHead(endpointId: string): string | undefined;
  /** Sends `to` the encoded `state` records of jobs it should hold (job_duties.ts). */
  handOff(to: string, states: readonly Uint8Array[]): void;
  log(event: string, fields: Record<string, unknown>): void;
}

export interface PendingChecksOptions {
  readonly self: string;
  readonly config: Pick<
    JobsConfig,
    | "pendingCheckAfterMs"
    | "pendingCheckIntervalMs"
    | "pendingCheckBackoffMaxMs"
    | "pendingChecksPerWalkMax"
    | "pendingCheckScanMax"
    | "messageBytesMax"
  >;
  readonly metrics: Pick<CoreMetrics, "pendingChecksSent" | "pendingChecksSettled">;
  readonly table: Pick<JobTable, "pendingEntries" | "get" | "goneTombstone" | "keyTombstone">;
  readonly ownership: Pick<OwnershipView, "ownerOf" | "isDown">;
  readonly host: PendingChecksHost;
}

/**
 * A pending job seen overdue here, and the progress it had then: while it keeps that progress,
 * it is asked about once `waitMs` has passed since `sinceWallMs` (since it was first seen so,
 * or last asked about).
 */
interface Watched {
  readonly gen: number;
  readonly attemptsMade: number;
  readonly nextAttemptAtMs: number;
  sinceWallMs: number;
  waitMs: number;
}

/** An id's bytes in a check beyond the id itself (its length prefix). */
const ID_OVERHEAD_BYTES = 4;
/** Room a check message keeps for its header (magic, kind, sender, count). */
const MESSAGE_HEADER_BYTES = 128;

export class PendingChecks {
  readonly #self: string;
  readonly #config: PendingChecksOptions["config"];
  readonly #metrics: PendingChecksOptions["metrics"];
  readonly #table: PendingChecksOptions["table"];
  readonly #ownership: PendingChecksOptions["ownership"];
  readonly #host: PendingChecksHost;
  /** Pending jobs seen overdue, by id: the only per-job state kept, 94 bytes each. */
  readonly #watched = new Map<string, Watched>();
  /**
   * Where the walks are in the pending index: each walk goes on from where the last stopped,
   * so with more pending jobs than a walk scans every one is still reached in turn (a Set's
   * iterator survives adds and deletes).
   */
  #cursor: Iterator<JobEntry> | undefined;
  /** Jobs asked about in this walk and the one before: the answers taken (see `onReply`). */
  #askedNow = new Set<string>();
  #askedBefore = new Set<string>();
  #walkAtMs = 0;

  constructor(options: PendingChecksOptions) {
    this.#self = options.self;
    this.#config = options.config;
    this.#metrics = options.metrics;
    this.#table = options.table;
    this.#ownership = options.ownership;
    this.#host = options.host;
  }

  /** When the next walk is due (the core's wake-up; walks happen only while ready). */
  get walkDueMs(): number {
    return this.#walkAtMs;
  }

  /** Pending jobs seen overdue and watched (tests read it). */
  get watching(): number {
    return this.#watched.size;
  }

  /** Whether a round through the pending index is under way (tests read it). */
  get walking(): boolean {
    return this.#cursor !== undefined;
  }

  /**
   * Walks on through the pending jobs when it is time (at most `pendingCheckScanMax` of them),
   * and asks the owners about the ones overdue and unmoved long enough.
   */
  tick(nowMs: number, wallMs: number): void {
    if (nowMs < this.#walkAtMs) return;
    this.#walkAtMs = nowMs + this.#config.pendingCheckIntervalMs;
    if (this.#host.phase() !== "ready") {
      // A live iterator keeps every outgrown copy of the Set's storage it has not moved past
      // (second review: 78 MB over 2M adds and deletes), and a walk may be long in coming.
      this.#cursor = undefined;
      return;
    }
    [this.#askedBefore, this.#askedNow] = [this.#askedNow, this.#askedBefore];
    this.#askedNow.clear();
    const byOwner = new Map<string, string[]>();
    let asked = 0;
    for (let scanned = 0; scanned < this.#config.pendingCheckScanMax; scanned++) {
      if (asked >= this.#config.pendingChecksPerWalkMax) break;
      if (this.#cursor === undefined) {
        // A new round of the index: forget what was watched of jobs no longer pending.
        this.#forgetEnded();
        this.#cursor = this.#table.pendingEntries();
      }
      const next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = undefined;
        // One round a walk at most: a short index is not walked over and over.
        break;
      }
      const owner = this.#ownerToAsk(next.value, wallMs);
      if (owner === undefined) continue;
      this.#ask(byOwner, owner, next.value.jobId);
      asked++;
    }
    if (asked === 0) return;
    this.#sendChecks(byOwner);
    this.#host.log("pending-check", { jobs: asked, owners: [...byOwner.keys()].join(",") });
  }

  /**
   * The owner to ask about `entry` now, if any. The job must be overdue (its attempt was due,
   * its own timeout on top, and not in the future) and have stayed so, with the same progress
   * (generation, attempts, next attempt), for `pendingCheckAfterMs` since this node first saw
   * it so: a retry by hand moves no due time (a REVIVE clears it), so the time it has been
   * seen unmoved is what says nothing happened. Then its owner, if it is not this node and
   * not held down (a failover hands the job on instead); an ordered job only as its
   * endpoint's head. Asked, it waits twice as long before the next asking, up to
   * `pendingCheckBackoffMaxMs`. Cheap tests first: most jobs a walk meets are not due.
   */
  #ownerToAsk(entry: JobEntry, wallMs: number): string | undefined {
    const spec = entry.spec;
    if (spec === undefined) return undefined;
    if (wallMs < dueWallMs(entry, spec)) {
      this.#watched.delete(entry.jobId);
      return undefined;
    }
    const watched = this.#watched.get(entry.jobId);
    if (
      watched === undefined || watched.gen !== entry.gen ||
      watched.attemptsMade !== entry.attemptsMade ||
      watched.nextAttemptAtMs !== entry.nextAttemptAtMs
    ) {
      this.#watched.set(entry.jobId, {
        gen: entry.gen,
        attemptsMade: entry.attemptsMade,
        nextAttemptAtMs: entry.nextAttemptAtMs,
        sinceWallMs: wallMs,
        waitMs: this.#config.pendingCheckAfterMs,
      });
      return undefined;
    }
    if (wallMs < watched.sinceWallMs + watched.waitMs) return undefined;
    const key = ownerKeyOf(entry.jobId, spec);
    if (spec.ordered === true && this.#host.orderedHead(key) !== entry.jobId) return undefined;
    const owner = this.#askableOwner(key);
    if (owner === undefined) return undefined;
    watched.sinceWallMs = wallMs;
    watched.waitMs = Math.min(2 * watched.waitMs, this.#config.pendingCheckBackoffMaxMs);
    return owner;
  }

  /** Drops what was watched of jobs no longer pending here. */
  #forgetEnded(): void {
    for (const jobId of this.#watched.keys()) {
      if (this.#table.get(jobId)?.phase !== "pending") this.#watched.delete(jobId);
    }
  }

  /** The owner of `key` if it is another node, not held down: one to ask. */
  #askableOwner(key: string): string | undefined {
    const owner = this.#ownership.ownerOf(key);
    return owner === undefined || owner === this.#self || this.#ownership.isDown(owner)
      ? undefined
      : owner;
  }

  /** Adds `jobId` to the asking being built, under its owner. */
  #ask(byOwner: Map<string, string[]>, owner: string, jobId: string): void {
    let jobIds = byOwner.get(owner);
    if (jobIds === undefined) byOwner.set(owner, jobIds = []);
    jobIds.push(jobId);
    this.#askedNow.add(jobId);
  }

  /** Sends each owner its ids, as many messages as their size needs. */
  #sendChecks(byOwner: ReadonlyMap<string, readonly string[]>): void {
    for (const [owner, jobIds] of byOwner) {
      this.#metrics.pendingChecksSent.inc(jobIds.length);
      this.#sendChecksTo(owner, jobIds);
    }
  }

  #sendChecksTo(owner: string, jobIds: readonly string[]): void {
    let chunk: string[] = [];
    let bytes = MESSAGE_HEADER_BYTES;
    for (const jobId of jobIds) {
      const idBytes = jobId.length + ID_OVERHEAD_BYTES;
      if (chunk.length > 0 && bytes + idBytes > this.#config.messageBytesMax) {
        this.#host.send(owner, { kind: "pending-check", from: this.#self, jobIds: chunk });
        chunk = [];
        bytes = MESSAGE_HEADER_BYTES;
      }
      chunk.push(jobId);
      bytes += idBytes;
    }
    this.#host.send(owner, { kind: "pending-check", from: this.#self, jobIds: chunk });
  }

  /**
   * A peer asks about jobs it holds pending: answered with those this node holds finished
   * (their state) or compacted (their tombstone). The asker's merge decides what that ends
   * there: delivered ends every generation, a dead letter or a tombstone only its own and the
   * earlier ones (a retry by hand the owner missed stays pending). Nothing is said of the
   * rest. A node still replaying its WAL does not know what it holds: silent.
   */
  answer(from: string, jobIds: readonly string[]): void {
    if (this.#host.phase() === "recovering") return;
    const records: Uint8Array[] = [];
    for (const jobId of jobIds) {
      const record = this.#endOf(jobId);
      if (record !== undefined) records.push(encodeRecord(record));
    }
    if (records.length === 0) return;
    this.#host.sendChunked(
      from,
      records,
      (chunk) => ({ kind: "pending-check-reply", from: this.#self, records: chunk }),
    );
  }

  #endOf(jobId: string): JobRecord | undefined {
    const entry = this.#table.get(jobId);
    if (entry !== undefined) {
      return entry.phase === "pending" ? undefined : { type: "state", state: snapshotOf(entry) };
    }
    // Both guards may be kept, of different lives (a finished stub's tombstone of generation
    // 0, then a retry by hand delivered and compacted inside its key's window: second
    // review). The later life's answers for the asker's copy; the earlier one's would have it
    // hand this node a retry it delivered, over and over, and after the key expires take it.
    const gone = this.#table.goneTombstone(jobId);
    const key = this.#table.keyTombstone(jobId);
    if (key !== undefined && (gone === undefined || (key.gen ?? 0) >= gone.gen)) {
      return { type: "key", key };
    }
    return gone !== undefined ? { type: "gone", gone } : undefined;
  }

  /**
   * The owner's answer: each record of a job asked about in this walk or the one before is
   * applied, and written when it changed something (a pending state is not applied, nor an
   * answer of a job not asked about lately: a peer must not end a job here that this node did
   * not ask it about). An owner that answers an earlier generation than the one pending here
   * (a dead letter, or the tombstone of one it compacted) missed the retry by hand that
   * started it (its REVIVE voided, and no holder's log had it to send again), and would never
   * deliver it: this node hands it the job, as a holder does to a new owner.
   */
  onReply(
    nowMs: number,
    wallMs: number,
    from: string,
    records: readonly { record: JobRecord; bytes: Uint8Array }[],
  ): void {
    let settled = 0;
    const handoffs: Uint8Array[] = [];
    const endpointsMoved = new Set<string>();
    for (const { record, bytes } of records) {
      const answered = answerOf(record);
      if (answered === undefined) continue;
      const { jobId, gen } = answered;
      if (!this.#askedNow.has(jobId) && !this.#askedBefore.has(jobId)) continue;
      if (record.type === "state" && record.state.phase === "pending") continue;
      const spec = this.#table.get(jobId)?.spec;
      const effect = this.#host.applyAndReact(nowMs, record, wallMs);
      if (effect === "changed") this.#host.addToBatch(bytes, record);
      const entry = this.#table.get(jobId);
      if (entry?.phase !== "pending") {
        this.#watched.delete(jobId);
        if (effect === "changed") settled++;
        if (spec?.ordered === true) endpointsMoved.add(ownerKeyOf(jobId, spec));
      } else if (gen < entry.gen && entry.spec !== undefined) {
        handoffs.push(encodeRecord({ type: "state", state: snapshotOf(entry) }));
      }
    }
    this.#askNextHeads(wallMs, endpointsMoved);
    if (handoffs.length > 0) {
      this.#host.handOff(from, handoffs);
      this.#host.log("pending-check-handoff", { to: from, jobs: handoffs.length });
    }
    if (settled === 0) return;
    this.#metrics.pendingChecksSettled.inc(settled);
    this.#host.log("pending-check-settled", { jobs: settled });
  }

  /**
   * An answer ended the head of an ordered endpoint here: the job behind it, now the head, is
   * asked about at once if it is due too. The owner delivered them in order, so a replica that
   * missed one DONE of a run likely missed the next ones alike; asked one head a walk, a
   * thousand of them took hours (second review), and this node, taking the endpoint over
   * meanwhile, would deliver them again. A head the owner holds pending is answered nothing
   * and goes on being watched.
   */
  #askNextHeads(wallMs: number, endpoints: ReadonlySet<string>): void {
    const byOwner = new Map<string, string[]>();
    for (const endpointId of endpoints) {
      const head = this.#host.orderedHead(endpointId);
      const entry = head !== undefined ? this.#table.get(head) : undefined;
      const spec = entry?.spec;
      if (entry === undefined || spec === undefined || entry.phase !== "pending") continue;
      if (wallMs < dueWallMs(entry, spec) || this.#askedNow.has(entry.jobId)) continue;
      const owner = this.#askableOwner(endpointId);
      if (owner !== undefined) this.#ask(byOwner, owner, entry.jobId);
    }
    this.#sendChecks(byOwner);
  }
}

/**
 * When a pending job's attempt is due to have ended: its next attempt (or its submit, before
 * any), plus its own timeout.
 */
function dueWallMs(entry: JobEntry, spec: JobSpec): number {
  return Math.max(entry.nextAttemptAtMs, spec.submittedAtMs) + spec.timeoutMs;
}

/** The job an answer's record is about, and the generation it ends (a delivered one: all). */
function answerOf(record: JobRecord): { jobId: string; gen: number } | undefined {
  switch (record.type) {
    case "state":
      return {
        jobId: record.state.jobId,
        gen: record.state.phase === "delivered" ? ALL_GENERATIONS : record.state.gen,
      };
    case "gone":
      return { jobId: record.gone.jobId, gen: record.gone.gen };
    case "key":
      return { jobId: record.key.jobId, gen: record.key.gen ?? 0 };
    default:
      return undefined;
  }
}
