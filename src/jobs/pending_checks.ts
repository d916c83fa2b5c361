/**
 * Pending checks: the repair of a replica that missed a job's end and can no longer be sent
 * it. A record that reached some replicas and not others is normally fetched by its seq
 * (anti-entropy), or sent again under a new stamp when its origin's restart voids the seq
 * (incoming_records.ts); both need a holder whose catch-up log still has the record. When
 * none has (`hookd sim --events --seed 1802`: a DONE on two of four replicas, evicted from
 * their 16-KiB logs before the restarted owner's SKIP voided it), the third replica holds the
 * job pending for ever, and delivers it again the next time it owns it.
 *
 * So each node walks, every `pendingCheckIntervalMs`, the pending jobs it holds but does not
 * own (committed or not) whose attempt was due `pendingCheckAfterMs` ago, an attempt's own
 * timeout on top, with no word since: no RETRY moved the due time, no DONE or DEAD ended
 * them. An ordered job counts only as its endpoint's head (the others wait for it, rightly).
 * Their owners are asked (`pending-check`), thousands of ids to a message; an owner answers
 * each job it holds finished with its `state`, or its tombstone (`gone`, or a kept `key`) if
 * it compacted it, and says nothing of one still pending. The answer is applied and written
 * like a snapshot's records (the merge takes the finished state; a tombstone ends a copy of
 * its generation or an earlier one), and a job left pending is asked again after twice the
 * wait, up to `pendingCheckBackoffMaxMs`. An owner that answers an earlier generation than
 * the one pending here missed a retry by hand: it is handed the job. A node's pending jobs
 * are few beside its table (the finished ones are the bulk), and the table keeps them
 * indexed, so a walk costs little.
 *
 * Owns: which jobs were asked about, in which generation, and when each may be asked again;
 * when the next walk is due; the owner's answer to a check. Must not: decide ownership (it
 * reads the view), apply an answer it did not ask for, or answer with a pending state (a
 * pending copy is the asker's own business, and its payload would ride along for nothing).
 */

import type { JobsConfig } from "../config/jobs.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { encodeRecord } from "./job_codec.ts";
import type { OutgoingMessage } from "./job_messages.ts";
import {
  type ApplyEffect,
  type JobEntry,
  type JobRecord,
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
    | "messageBytesMax"
  >;
  readonly metrics: Pick<
    CoreMetrics,
    "pendingChecksSent" | "pendingChecksSettled" | "handoffsSent"
  >;
  readonly table: Pick<JobTable, "pendingEntries" | "get" | "goneTombstone" | "keyTombstone">;
  readonly ownership: Pick<OwnershipView, "ownerOf" | "isDown">;
  readonly host: PendingChecksHost;
}

/** A job asked about: in which generation, and when it may be asked again. */
interface Asked {
  readonly gen: number;
  readonly againAtWallMs: number;
  readonly waitMs: number;
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
  readonly #asked = new Map<string, Asked>();
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

  /** Jobs asked about and not yet seen to end (tests and metrics read it). */
  get asking(): number {
    return this.#asked.size;
  }

  /** Walks the pending jobs when it is time, and asks their owners about the overdue ones. */
  tick(nowMs: number, wallMs: number): void {
    if (nowMs < this.#walkAtMs) return;
    this.#walkAtMs = nowMs + this.#config.pendingCheckIntervalMs;
    if (this.#host.phase() !== "ready") return;
    this.#forgetEnded();
    const byOwner = new Map<string, string[]>();
    let asked = 0;
    for (const entry of this.#table.pendingEntries()) {
      if (asked >= this.#config.pendingChecksPerWalkMax) break;
      const owner = this.#ownerToAsk(entry, wallMs);
      if (owner === undefined) continue;
      const before = this.#asked.get(entry.jobId);
      const waitMs = before === undefined || before.gen !== entry.gen
        ? this.#config.pendingCheckAfterMs
        : Math.min(2 * before.waitMs, this.#config.pendingCheckBackoffMaxMs);
      this.#asked.set(entry.jobId, { gen: entry.gen, againAtWallMs: wallMs + waitMs, waitMs });
      let jobIds = byOwner.get(owner);
      if (jobIds === undefined) byOwner.set(owner, jobIds = []);
      jobIds.push(entry.jobId);
      asked++;
    }
    if (asked === 0) return;
    this.#metrics.pendingChecksSent.inc(asked);
    for (const [owner, jobIds] of byOwner) this.#sendChecks(owner, jobIds);
    this.#host.log("pending-check", { jobs: asked, owners: [...byOwner.keys()].join(",") });
  }

  /**
   * The owner to ask about `entry`, if it is overdue here: not ours, its owner not held down
   * (a failover hands it on instead), its due time long past, and not asked about again too
   * soon. Uncommitted copies too: an owner holding the job finished runs no confirm round, so
   * a copy whose COMMIT was lost with the DONE (a lazy COMMIT rides with it) waited a day.
   */
  #ownerToAsk(entry: JobEntry, wallMs: number): string | undefined {
    const spec = entry.spec;
    if (spec === undefined) return undefined;
    const key = ownerKeyOf(entry.jobId, spec);
    if (spec.ordered === true && this.#host.orderedHead(key) !== entry.jobId) return undefined;
    const owner = this.#ownership.ownerOf(key);
    if (owner === undefined || owner === this.#self || this.#ownership.isDown(owner)) {
      return undefined;
    }
    const dueWallMs = Math.max(entry.nextAttemptAtMs, spec.submittedAtMs) + spec.timeoutMs;
    if (wallMs < dueWallMs + this.#config.pendingCheckAfterMs) return undefined;
    const before = this.#asked.get(entry.jobId);
    if (before !== undefined && before.gen === entry.gen && wallMs < before.againAtWallMs) {
      return undefined;
    }
    return owner;
  }

  /** Drops what was asked of jobs no longer pending here in the generation asked about. */
  #forgetEnded(): void {
    for (const [jobId, asked] of this.#asked) {
      const entry = this.#table.get(jobId);
      if (entry === undefined || entry.phase !== "pending" || entry.gen !== asked.gen) {
        this.#asked.delete(jobId);
      }
    }
  }

  #sendChecks(owner: string, jobIds: readonly string[]): void {
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
    const gone = this.#table.goneTombstone(jobId);
    if (gone !== undefined) return { type: "gone", gone };
    const key = this.#table.keyTombstone(jobId);
    return key !== undefined ? { type: "key", key } : undefined;
  }

  /**
   * The owner's answer: each record of a job asked about here is applied, and written when it
   * changed something (an answer of a job asked about no more, or a pending state, is not:
   * a peer must not end a job here that this node did not ask it about). An owner that
   * answers an earlier generation than the one pending here missed the retry by hand that
   * started it (its REVIVE voided, and no holder's log had it to send again), and would
   * never deliver it: this node hands it the job, as a holder does to a new owner.
   */
  onReply(
    nowMs: number,
    wallMs: number,
    from: string,
    records: readonly { record: JobRecord; bytes: Uint8Array }[],
  ): void {
    let settled = 0;
    const handoffs: Uint8Array[] = [];
    for (const { record, bytes } of records) {
      const jobId = record.type === "state"
        ? record.state.jobId
        : record.type === "gone"
        ? record.gone.jobId
        : record.type === "key"
        ? record.key.jobId
        : undefined;
      if (jobId === undefined || !this.#asked.has(jobId)) continue;
      if (record.type === "state" && record.state.phase === "pending") continue;
      const effect = this.#host.applyAndReact(nowMs, record, wallMs);
      if (effect === "changed") this.#host.addToBatch(bytes, record);
      const entry = this.#table.get(jobId);
      if (entry?.phase !== "pending") {
        this.#asked.delete(jobId);
        settled++;
      } else if (
        record.type === "state" && record.state.gen < entry.gen && entry.spec !== undefined
      ) {
        handoffs.push(encodeRecord({ type: "state", state: snapshotOf(entry) }));
      }
    }
    if (handoffs.length > 0) {
      this.#metrics.handoffsSent.inc(handoffs.length);
      this.#host.sendChunked(
        from,
        handoffs,
        (chunk) => ({ kind: "handoff", from: this.#self, records: chunk }),
      );
      this.#host.log("pending-check-handoff", { to: from, jobs: handoffs.length });
    }
    if (settled === 0) return;
    this.#metrics.pendingChecksSettled.inc(settled);
    this.#host.log("pending-check-settled", { jobs: settled });
  }
}
