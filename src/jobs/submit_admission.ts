/**
 * Submit admission: whether the replication core may start a submit (or a retry by hand) now,
 * or must refuse it at once with a retryable 503. The checks, in order: the core's phase (it
 * takes submits only when ready), a reachable majority of the configured voters, the age of
 * the oldest submit still waiting for its majority (load shedding past the knee), the
 * proposals in flight, this node's own records not yet on disk, and, for a request that makes
 * jobs, the backlog of pending jobs held in memory (their count and their payloads).
 *
 * Owns: the order of those checks, their comparisons, and the refusals' codes, messages and
 * Retry-After. Must not read the phase, the voter view, the proposals or a clock itself, nor
 * count anything: it is a pure function of an `AdmissionState` the core (replication_core.ts)
 * gathers, and the core increments the queue-age metric when `rule` says so.
 */

import type { JobsConfig } from "../config/jobs.ts";
import type { RefusalCode } from "./service.ts";

/** The replication core's phase; it takes submits only when `ready`. */
export type CorePhase = "recovering" | "catching_up" | "ready" | "stopping" | "failed";

/** What admission reads: a snapshot of the core at the moment a submit arrives. */
export interface AdmissionState {
  readonly phase: CorePhase;
  /** Voters not held dead or left, this node included. */
  readonly reachableVoters: number;
  /** The configured voters, this node included. */
  readonly voterCount: number;
  /** floor(voterCount/2)+1. */
  readonly quorum: number;
  /** When the oldest submit still waiting for its majority started; undefined: none waits. */
  readonly oldestSubmitStartedAtMs: number | undefined;
  /** Open proposals: submits, confirm rounds and revives waiting for their majority. */
  readonly proposals: number;
  /** This node's own records handed to the WAL and not yet durable. */
  readonly ownPending: number;
  /**
   * Whether the request makes jobs (a submit, an event, a retry by hand): only those are held
   * to the backlog bound. An endpoint write makes none, and disabling a failing endpoint is how
   * an operator drains a backlog, so it is never refused for one.
   */
  readonly makesJobs: boolean;
  /** Pending jobs this node holds (every node holds every job). */
  readonly pendingJobs: number;
  /** The memory their bodies hold, an event's payload once (JobTable.backlogBytes). */
  readonly backlogBytes: number;
  readonly config: Readonly<
    Pick<
      JobsConfig,
      | "submitQueueAgeMaxMs"
      | "proposalsMax"
      | "originPendingMax"
      | "backlogJobsMax"
      | "backlogBytesMax"
    >
  >;
}

/** The rule that refused, in the order they are checked. */
export type AdmissionRule =
  | "phase"
  | "quorum"
  | "queue_age"
  | "proposals"
  | "own_pending"
  | "backlog";

/** A refusal as the core answers it (a `submit-done` or `revive-done` outcome). */
export interface AdmissionRefusal {
  readonly ok: false;
  readonly code: RefusalCode;
  readonly message: string;
  readonly retryAfterS?: number;
}

export interface Refused {
  readonly rule: AdmissionRule;
  readonly refusal: AdmissionRefusal;
}

/** Why a submit arriving at `nowMs` may not start now, or undefined: it may. */
export function admissionRefusal(state: AdmissionState, nowMs: number): Refused | undefined {
  switch (state.phase) {
    case "recovering":
    case "catching_up":
      return refused(
        "phase",
        "not_ready",
        "this node is recovering its log and catching up with its peers",
      );
    case "stopping":
      return refused("phase", "shutting_down", "this node is shutting down");
    case "failed":
      return refused(
        "phase",
        "storage_failed",
        "this node's write-ahead log failed; it acknowledges nothing (fail-stop)",
      );
    case "ready":
      break;
  }
  if (state.reachableVoters < state.quorum) {
    return refused(
      "quorum",
      "no_quorum",
      `only ${state.reachableVoters} of ${state.voterCount} voters are reachable; ` +
        `a submit needs ${state.quorum}`,
    );
  }
  // The oldest submit still waiting for its majority says how far behind this node is. Past
  // the knee a submit taken now would only wait behind the others and time out (the
  // write-up's collapse): say no at once instead, and keep what is accepted fast.
  const oldestMs = state.oldestSubmitStartedAtMs;
  const { submitQueueAgeMaxMs, proposalsMax, originPendingMax } = state.config;
  if (oldestMs !== undefined && nowMs - oldestMs >= submitQueueAgeMaxMs) {
    return refused(
      "queue_age",
      "overloaded",
      `this node's oldest submit has waited ${Math.round(nowMs - oldestMs)} ms for ` +
        `its majority (submitQueueAgeMaxMs ${submitQueueAgeMaxMs})`,
    );
  }
  if (state.proposals >= proposalsMax) {
    return refused(
      "proposals",
      "overloaded",
      `${state.proposals} submits are already being replicated (proposalsMax)`,
    );
  }
  if (state.ownPending >= originPendingMax) {
    return refused(
      "own_pending",
      "overloaded",
      "this node's log is behind (originPendingMax records not yet on disk)",
    );
  }
  // Every node holds every pending job, payload and all, until it is delivered: past the bound
  // a receiver down for hours would take the heap. Refused at once, a submit waits in the
  // client, not in five nodes' memory. A backlog drains at the receivers' pace, so the client
  // is told to come back in seconds, not at once.
  if (state.makesJobs) {
    const { backlogJobsMax, backlogBytesMax } = state.config;
    if (state.pendingJobs >= backlogJobsMax) {
      return refused(
        "backlog",
        "overloaded",
        `${state.pendingJobs} jobs are pending delivery on this node (backlogJobsMax ` +
          `${backlogJobsMax}); it takes more once deliveries drain them`,
        BACKLOG_RETRY_AFTER_S,
      );
    }
    if (state.backlogBytes >= backlogBytesMax) {
      return refused(
        "backlog",
        "overloaded",
        `the jobs pending delivery on this node hold ${state.backlogBytes} bytes ` +
          `(backlogBytesMax ${backlogBytesMax}); it takes more once deliveries ` +
          `drain them`,
        BACKLOG_RETRY_AFTER_S,
      );
    }
  }
  return undefined;
}

/** Retry-After of a backlog refusal, s: a backlog drains at the receivers' pace. */
export const BACKLOG_RETRY_AFTER_S = 5;

/** An admission refusal is a 503 worth retrying in a second (a backlog's, in a few). */
function refused(
  rule: AdmissionRule,
  code: RefusalCode,
  message: string,
  retryAfterS = 1,
): Refused {
  return { rule, refusal: { ok: false, code, message, retryAfterS } };
}
