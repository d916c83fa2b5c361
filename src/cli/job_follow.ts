/**
 * A job as the API shows it (`GET /v1/jobs/{id}`), read back defensively, and `followJob`:
 * reading it again and again, with pauses that double up to a bound, until it is delivered
 * or dead or the time allowed runs out. `hookd submit --wait` and `hookd status` use it.
 *
 * Owns the client's view of a job and the follow loop's pacing. Time comes from an injected
 * `Runtime` (the tests drive it by hand); the read itself is the caller's, so this module
 * does no I/O and never throws for what a node answers.
 */

import { assert } from "../lib/assert.ts";
import type { Runtime } from "../lib/runtime.ts";
import type { AttemptView } from "../jobs/service.ts";

/** An attempt as the API shows it (`AttemptView`), read back defensively. */
export type AttemptJson = AttemptView;

export interface JobJson {
  readonly id: string;
  /** pending | delivering | delivered | dead (a newer node may add states: kept as text). */
  readonly state: string;
  readonly url: string;
  readonly owner: string;
  readonly submittedAtMs: number;
  readonly finishedAtMs?: number;
  readonly attemptsMade: number;
  readonly maxAttempts: number;
  readonly nextAttemptAtMs?: number;
  readonly deadReason?: string;
  readonly idempotencyKey?: string;
  readonly attempts: readonly AttemptJson[];
}

/** Whether the job will not change any more (short of a retry by hand). */
export function isFinished(job: JobJson): boolean {
  return job.state === "delivered" || job.state === "dead";
}

/** A job view from JSON, or undefined when the body is not one. */
export function decodeJobJson(value: unknown): JobJson | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.id !== "string" || typeof v.state !== "string") return undefined;
  const attempts: AttemptJson[] = [];
  if (Array.isArray(v.attempts)) {
    for (const raw of v.attempts) {
      if (typeof raw !== "object" || raw === null) continue;
      const a = raw as Record<string, unknown>;
      attempts.push({
        attempt: num(a.attempt) ?? attempts.length + 1,
        retry: num(a.retry) ?? 0,
        startedAtMs: num(a.startedAtMs) ?? NaN,
        latencyMs: num(a.latencyMs) ?? NaN,
        outcome: str(a.outcome) ?? "?",
        ...(num(a.status) !== undefined ? { status: num(a.status)! } : {}),
        detail: str(a.detail) ?? "",
        node: str(a.node) ?? "?",
      });
    }
  }
  const optional = {
    ...(num(v.finishedAtMs) !== undefined ? { finishedAtMs: num(v.finishedAtMs)! } : {}),
    ...(num(v.nextAttemptAtMs) !== undefined ? { nextAttemptAtMs: num(v.nextAttemptAtMs)! } : {}),
    ...(str(v.deadReason) !== undefined ? { deadReason: str(v.deadReason)! } : {}),
    ...(str(v.idempotencyKey) !== undefined ? { idempotencyKey: str(v.idempotencyKey)! } : {}),
  };
  return {
    id: v.id,
    state: v.state,
    url: str(v.url) ?? "?",
    owner: str(v.owner) ?? "?",
    submittedAtMs: num(v.submittedAtMs) ?? NaN,
    attemptsMade: num(v.attemptsMade) ?? attempts.length,
    maxAttempts: num(v.maxAttempts) ?? NaN,
    ...optional,
    attempts,
  };
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** One read of the job: the job, or why there is none this time (it may come next time). */
export type JobRead =
  | { readonly ok: true; readonly job: JobJson }
  | { readonly ok: false; readonly reason: string };

export type FollowOutcome =
  /** Delivered or dead. */
  | { readonly kind: "finished"; readonly job: JobJson }
  /** Time ran out first; `last` is the newest state read, `problem` the newest failed read. */
  | { readonly kind: "timed_out"; readonly last?: JobJson; readonly problem?: string };

export interface FollowOptions {
  readonly read: () => Promise<JobRead>;
  readonly runtime: Runtime;
  readonly timeoutMs: number;
  readonly pollFirstMs: number;
  readonly pollMaxMs: number;
  /** Each read that shows a job different from the previous one (attempts, state). */
  readonly onChange?: (job: JobJson, previous: JobJson | undefined) => void;
}

/** Reads until the job is finished or `timeoutMs` has passed; one read at least. */
export async function followJob(options: FollowOptions): Promise<FollowOutcome> {
  const { runtime, timeoutMs, pollFirstMs, pollMaxMs } = options;
  assert(pollFirstMs > 0 && pollFirstMs <= pollMaxMs, "followJob: 0 < pollFirstMs <= pollMaxMs");
  assert(timeoutMs >= 0, "followJob: timeoutMs >= 0");
  const deadlineMs = runtime.nowMs() + timeoutMs;
  // Every pause is at least pollFirstMs, so this bounds the loop even if a read returns at
  // once forever; +2 for the first read and the last one at the deadline.
  const readsMax = Math.ceil(timeoutMs / pollFirstMs) + 2;
  let pauseMs = pollFirstMs;
  let last: JobJson | undefined;
  let problem: string | undefined;
  for (let reads = 0; reads < readsMax; reads++) {
    const read = await options.read();
    if (read.ok) {
      problem = undefined;
      if (last === undefined || changed(last, read.job)) options.onChange?.(read.job, last);
      last = read.job;
      if (isFinished(read.job)) return { kind: "finished", job: read.job };
    } else {
      problem = read.reason;
    }
    const leftMs = deadlineMs - runtime.nowMs();
    if (leftMs <= 0) break;
    await sleep(runtime, Math.min(pauseMs, leftMs));
    pauseMs = Math.min(pauseMs * 2, pollMaxMs);
  }
  return {
    kind: "timed_out",
    ...(last !== undefined ? { last } : {}),
    ...(problem !== undefined ? { problem } : {}),
  };
}

function changed(before: JobJson, after: JobJson): boolean {
  return before.state !== after.state || before.attemptsMade !== after.attemptsMade ||
    before.attempts.length !== after.attempts.length;
}

function sleep(runtime: Runtime, ms: number): Promise<void> {
  return new Promise((resolve) => runtime.setTimer(ms, resolve));
}
