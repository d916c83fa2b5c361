/**
 * The delivery engine's reports (the DeliveryStore side of the core): each attempt's outcome
 * becomes a replicated record (RETRY, DEAD, DONE) this node originates. Nobody waits for its
 * majority: losing one costs at most a repeated attempt.
 *
 * Owns: how a report becomes a record (its generation, its bounded reason and detail, the
 * attempt entry). Must not: own the phase, the own seqs, the WAL batch or what is scheduled,
 * nor read a clock: it reaches them through the narrow host the core (replication_core.ts)
 * passes, and the core's `report*` methods route here.
 */

import type { AttemptRecord, DeliveryReport } from "../delivery/types.ts";
import type { AppendBatcher } from "./append_batcher.ts";
import type { ApplyEffect, AttemptEntry, JobRecord, ReplicatedRecord, Stamp } from "./job_model.ts";
import type { JobTable } from "./job_table.ts";

/** What the reports need of the core: each a narrow door, none the whole core. */
export interface DeliveryReportsHost {
  /** The WAL failed (fail-stop): nothing more is recorded. */
  failed(): boolean;
  /** The generation job `jobId` was scheduled at, if it is scheduled. */
  scheduledGen(jobId: string): number | undefined;
  /** The next stamp of this node's own origin (a seq is never reused). */
  ownStamp(): Stamp;
  /** Applies a record to the table and reacts (schedules, cancels). */
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  /** Puts a record of ours on the WAL and the wire; the sends may wait until `lazyAtMs`. */
  originate(record: ReplicatedRecord, voteKey: undefined, lazyAtMs: number): void;
  log(event: string, fields: Record<string, unknown>): void;
}

export interface DeliveryReportsOptions {
  readonly self: string;
  readonly table: Pick<JobTable, "get">;
  readonly appends: Pick<AppendBatcher, "nextToken">;
  readonly host: DeliveryReportsHost;
}

export class DeliveryReports {
  readonly #self: string;
  readonly #table: DeliveryReportsOptions["table"];
  readonly #appends: DeliveryReportsOptions["appends"];
  readonly #host: DeliveryReportsHost;

  constructor(options: DeliveryReportsOptions) {
    this.#self = options.self;
    this.#table = options.table;
    this.#appends = options.appends;
    this.#host = options.host;
  }

  /** A failed attempt with a retry due: returns the token whose persistence the engine awaits. */
  retry(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "retry" }>,
  ): number | undefined {
    return this.#report(nowMs, wallMs, report.jobId, (stamp, gen) => ({
      type: "retry",
      stamp,
      jobId: report.jobId,
      gen,
      attemptsMade: report.attemptsMade,
      nextAttemptAtMs: report.nextAttemptAtMs,
      attempt: this.#attempt(report.attempt, gen),
    }));
  }

  dead(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "dead" }>,
  ): number | undefined {
    return this.#report(nowMs, wallMs, report.jobId, (stamp, gen) => {
      // One line per dead letter recorded (an endpoint's disable too), none when nothing is:
      // an operator sees each, and the simulator's checker takes it for the job's death.
      this.#host.log("dead-letter", {
        job: report.jobId,
        gen,
        attempts: report.attemptsMade,
        reason: report.reason.slice(0, 200),
      });
      return this.#deadRecord(stamp, gen, wallMs, report);
    });
  }

  #deadRecord(
    stamp: Stamp,
    gen: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "dead" }>,
  ): ReplicatedRecord {
    return {
      type: "dead",
      stamp,
      jobId: report.jobId,
      gen,
      attemptsMade: report.attemptsMade,
      finishedAtMs: wallMs,
      // Bounded like an attempt's detail: the codec refuses a reason past reasonBytesMax.
      reason: report.reason.length > 2048 ? report.reason.slice(0, 2048) : report.reason,
      ...(report.attempt !== undefined ? { attempt: this.#attempt(report.attempt, gen) } : {}),
    };
  }

  delivered(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "delivered" }>,
  ): void {
    this.#report(nowMs, wallMs, report.jobId, (stamp, gen) => ({
      type: "done",
      stamp,
      jobId: report.jobId,
      gen,
      finishedAtMs: wallMs,
      attempt: this.#attempt(report.attempt, gen),
    }));
  }

  /**
   * Records a delivery outcome as a replicated record (nobody waits for its majority: losing
   * one costs at most a repeated attempt). Returns the token of the append that makes it
   * durable here, or undefined when there is nothing to record (failed WAL, job compacted).
   */
  #report(
    nowMs: number,
    wallMs: number,
    jobId: string,
    build: (stamp: Stamp, gen: number) => ReplicatedRecord,
  ): number | undefined {
    if (this.#host.failed()) return undefined;
    const entry = this.#table.get(jobId);
    if (entry === undefined) return undefined;
    const gen = this.#host.scheduledGen(jobId) ?? entry.gen;
    const record = build(this.#host.ownStamp(), gen);
    this.#host.applyAndReact(nowMs, record, wallMs);
    this.#host.originate(record, undefined, nowMs);
    return this.#appends.nextToken;
  }

  #attempt(
    a: AttemptRecord,
    /** The job's generation: the manual-retry round the attempt belongs to. */
    gen: number,
  ): AttemptEntry {
    return {
      attempt: a.attempt,
      ...(gen > 0 ? { retry: gen } : {}),
      startedAtMs: a.startedAtMs,
      latencyMs: a.latencyMs,
      outcome: a.outcome,
      status: a.status ?? 0,
      detail: a.detail.length > 1024 ? a.detail.slice(0, 1024) : a.detail,
      node: this.#self,
    };
  }
}
