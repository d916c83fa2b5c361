/**
 * What a job's owner does about its endpoint's health (docs/endpoints.md, "Disabling,
 * recovering"): a 410 disables the endpoint (`gone`), a failure past the failing window
 * disables it (`failing`), a delivery raises its `lastSuccessAtMs` (an `endpoint-health`
 * record, at most once per `endpointHealthWriteMs` as this node's table sees it), and the
 * jobs this node delivers of a disabled endpoint go dead with the endpoint's reason instead of
 * being attempted.
 *
 * Owns: the disables asked and not yet seen applied (a burst of 410s asks once; asked again
 * while they do not show here, so a write that found no majority is not lost), the
 * endpoints whose disable was applied since the last flush, and the jobs held back from the
 * engine because their endpoint is disabled. Must not: originate records other than the
 * health record, decide ownership or scheduling (job_duties.ts), or read a clock. It reaches
 * the core through the narrow host the core (replication_core.ts) passes: the disable is an
 * ordinary endpoint write (majority read, then a majority-durable proposal, submit_path.ts),
 * and a job's death an ordinary `dead` report (delivery_reports.ts).
 *
 * Why the kills wait for `flush`: they are noticed while a record is applied or a schedule
 * is emitted, deep inside another record's reaction; a dead report made there would apply a
 * record inside that one. At flush nothing else is under way, and the dead records still go
 * out in the same turn's append.
 */

import { ENDPOINT_LIMITS, type EndpointHealthConfig } from "../config/endpoints.ts";
import type { DeliveryReport } from "../delivery/types.ts";
import { type EndpointState, type EndpointWrite, failingWindowStartMs } from "./endpoint_model.ts";
import { endpointOfJob } from "./event_model.ts";
import type { ApplyEffect, JobEntry, JobRecord, ReplicatedRecord, Stamp } from "./job_model.ts";
import type { JobTable } from "./job_table.ts";

/** What the health rules need of the core: each a narrow door, none the whole core. */
export interface EndpointHealthHost {
  /** An endpoint write of this node's own (no client waits for it). */
  writeEndpoint(nowMs: number, wallMs: number, write: EndpointWrite): void;
  /** Reports a job dead, as the delivery engine would (a `dead` record). */
  reportDead(
    nowMs: number,
    wallMs: number,
    report: Extract<DeliveryReport, { kind: "dead" }>,
  ): void;
  /** Jobs this node has handed to the delivery engine. */
  scheduledIds(): Iterable<string>;
  /** Whether `jobId` is handed to the delivery engine (without copying the whole set). */
  isScheduled(jobId: string): boolean;
  /** Forgets that `jobId` was handed to the engine and decides about it again. */
  reschedule(nowMs: number, jobId: string): void;
  ownStamp(): Stamp;
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  originate(record: ReplicatedRecord, voteKey: undefined, lazyAtMs: number): void;
  log(event: string, fields: Record<string, unknown>): void;
}

export interface EndpointHealthOptions {
  readonly config: EndpointHealthConfig & {
    readonly queryTimeoutMs: number;
    submitTimeoutMs: number;
  };
  readonly table: Pick<JobTable, "endpoints" | "get">;
  readonly host: EndpointHealthHost;
}

/** The dead reason a job of a disabled endpoint gets. */
export function disabledReasonText(endpoint: EndpointState): string {
  return `endpoint ${endpoint.id} disabled: ${endpoint.disabledReason}`;
}

export class EndpointHealth {
  readonly #config: EndpointHealthOptions["config"];
  readonly #table: EndpointHealthOptions["table"];
  readonly #host: EndpointHealthHost;
  /** Disables asked and not yet seen applied here (endpoint id → why, when last asked). */
  readonly #disableAsked = new Map<string, { reason: "gone" | "failing"; atMs: number }>();
  /** Endpoints whose disable was applied here since the last flush: their jobs go dead. */
  readonly #disabledSince = new Set<string>();
  /** Jobs held back from the engine (their endpoint is disabled): they go dead at flush. */
  readonly #held = new Set<string>();

  constructor(options: EndpointHealthOptions) {
    this.#config = options.config;
    this.#table = options.table;
    this.#host = options.host;
  }

  /**
   * An attempt's outcome was reported (after its record was made). A 410 disables the
   * endpoint; a failure past the window too; a delivery raises its last success.
   */
  reported(nowMs: number, wallMs: number, report: DeliveryReport): void {
    const endpointId = endpointOfJob(report.jobId);
    if (endpointId === undefined) return;
    const endpoint = this.#table.endpoints.get(endpointId);
    if (endpoint === undefined) return;
    const outcome = report.attempt?.outcome;
    if (outcome === undefined) return;
    if (outcome === "success") {
      this.#raiseLastSuccess(nowMs, wallMs, endpoint);
      return;
    }
    if (endpoint.disabled) return;
    if (outcome === "gone") {
      this.#disable(nowMs, wallMs, endpoint, "gone");
    } else if (wallMs - failingWindowStartMs(endpoint) > this.#config.endpointFailingWindowMs) {
      this.#disable(nowMs, wallMs, endpoint, "failing");
    }
  }

  /** An endpoint record changed the value held here: a disable kills its jobs at flush. */
  endpointChanged(endpointId: string): void {
    const endpoint = this.#table.endpoints.get(endpointId);
    if (endpoint === undefined || !endpoint.disabled) return;
    this.#disableAsked.delete(endpointId);
    this.#disabledSince.add(endpointId);
  }

  /**
   * Whether a job about to be handed to the engine must not be: its endpoint is disabled.
   * It then goes dead at the next flush.
   */
  holdBack(jobId: string): boolean {
    const endpointId = endpointOfJob(jobId);
    if (endpointId === undefined) return false;
    if (this.#table.endpoints.get(endpointId)?.disabled !== true) return false;
    this.#held.add(jobId);
    return true;
  }

  /**
   * Kills what was noticed since the last flush: the scheduled jobs of endpoints disabled
   * since, and the jobs held back. Each goes dead through the ordinary `dead` report, with the
   * endpoint's reason, if it is still pending and scheduled here (this node is its owner).
   */
  flush(nowMs: number, wallMs: number): void {
    if (this.#disableAsked.size > 0) this.#askAgain(nowMs, wallMs);
    if (this.#disabledSince.size === 0 && this.#held.size === 0) return;
    const held = [...this.#held];
    this.#held.clear();
    const doomed = new Set(held);
    if (this.#disabledSince.size > 0) {
      for (const jobId of this.#host.scheduledIds()) {
        const endpointId = endpointOfJob(jobId);
        if (endpointId !== undefined && this.#disabledSince.has(endpointId)) doomed.add(jobId);
      }
      this.#disabledSince.clear();
    }
    let killed = 0;
    for (const jobId of doomed) {
      const entry: JobEntry | undefined = this.#table.get(jobId);
      const endpoint = this.#table.endpoints.get(endpointOfJob(jobId)!);
      if (
        entry === undefined || entry.phase !== "pending" || !this.#host.isScheduled(jobId) ||
        endpoint === undefined || !endpoint.disabled
      ) continue;
      this.#host.reportDead(nowMs, wallMs, {
        kind: "dead",
        jobId,
        attemptsMade: entry.attemptsMade,
        reason: disabledReasonText(endpoint),
      });
      killed++;
    }
    // A job held back whose endpoint came back (or went) meanwhile was never handed to the
    // engine: the duties schedule it afresh.
    for (const jobId of held) {
      if (this.#table.get(jobId)?.phase === "pending" && this.#host.isScheduled(jobId)) {
        this.#host.reschedule(nowMs, jobId);
      }
    }
    if (killed > 0) this.#host.log("endpoint-jobs-dead", { jobs: killed });
  }

  #raiseLastSuccess(nowMs: number, wallMs: number, endpoint: EndpointState): void {
    if (wallMs - endpoint.lastSuccessAtMs < this.#config.endpointHealthWriteMs) return;
    const record: ReplicatedRecord = {
      type: "endpoint-health",
      stamp: this.#host.ownStamp(),
      endpointId: endpoint.id,
      lastSuccessAtMs: wallMs,
    };
    this.#host.applyAndReact(nowMs, record, wallMs);
    this.#host.originate(record, undefined, nowMs);
  }

  #disable(
    nowMs: number,
    wallMs: number,
    endpoint: EndpointState,
    reason: "gone" | "failing",
  ): void {
    // One write per endpoint at a time: a burst of 410s from one receiver asks once. Asked
    // again from `flush` while this node's table does not show it disabled (the write found
    // no majority, or this node lost the race with a client's write).
    if (this.#disableAsked.has(endpoint.id)) return;
    // Bounded: one entry per endpoint at most (a deleted endpoint's is dropped at flush).
    if (this.#disableAsked.size >= ENDPOINT_LIMITS.endpointsMax) this.#disableAsked.clear();
    this.#disableAsked.set(endpoint.id, { reason, atMs: nowMs });
    this.#host.log("endpoint-disable", { endpoint: endpoint.id, reason });
    this.#host.writeEndpoint(nowMs, wallMs, { kind: "disable", id: endpoint.id, reason });
  }

  /** Disables asked a write's longest answer ago and not seen applied: asked again. */
  #askAgain(nowMs: number, wallMs: number): void {
    const answerMs = this.#config.queryTimeoutMs + this.#config.submitTimeoutMs;
    for (const [id, asked] of this.#disableAsked) {
      if (nowMs - asked.atMs < answerMs) continue;
      const endpoint = this.#table.endpoints.get(id);
      if (endpoint === undefined || endpoint.disabled) {
        this.#disableAsked.delete(id);
        continue;
      }
      asked.atMs = nowMs;
      this.#host.writeEndpoint(nowMs, wallMs, { kind: "disable", id, reason: asked.reason });
    }
  }
}

/**
 * The dead jobs of endpoint `endpointId` whose event was submitted at or after `sinceMs`, in
 * event order (submit time, then event id: the order every node derives alike), for
 * `POST /v1/endpoints/{id}/recover`. Jobs whose DEAD is not yet durable here are left to the
 * revive path, which refuses them (`not_found`) as it refuses a manual retry of one.
 */
export function recoverableJobs(
  entries: Iterable<JobEntry>,
  endpointId: string,
  sinceMs: number,
): string[] {
  const found: { jobId: string; atMs: number; eventId: string }[] = [];
  for (const e of entries) {
    if (e.phase !== "dead" || e.spec === undefined || e.spec.submittedAtMs < sinceMs) continue;
    if (endpointOfJob(e.jobId) !== endpointId) continue;
    found.push({ jobId: e.jobId, atMs: e.spec.submittedAtMs, eventId: e.spec.webhookId ?? "" });
  }
  found.sort((a, b) =>
    a.atMs !== b.atMs ? a.atMs - b.atMs : a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0
  );
  return found.map((f) => f.jobId);
}
