/**
 * The retry policy: from one attempt's result, decide delivered, retry at T, or dead.
 *
 * Owns the pure decision only (no clock, no timers, no I/O): time and randomness come in as
 * arguments so the schedule and its jitter are testable under an injected clock and a seeded
 * Rng. Must not touch the job store or the network.
 */

import type { DeliveryConfig } from "../config/delivery.ts";
import { unreachable } from "../lib/assert.ts";
import type { Rng } from "../lib/rng.ts";
import type { AttemptOutcome, AttemptResult } from "./types.ts";

export type RetryPolicyConfig =
  & Pick<
    DeliveryConfig,
    "retryScheduleMs" | "retryJitterRatio" | "retryAfterMinMs" | "retryAfterMaxMs"
  >
  & {
    /**
     * Attempts in total (the first one included) before the job becomes a dead letter: the
     * job's own `maxAttempts`, else `jobs.maxAttemptsDefault`.
     */
    readonly attemptsMax: number;
  };

export type RetryDecision =
  | { readonly kind: "delivered" }
  | { readonly kind: "retry"; readonly delayMs: number; readonly fromRetryAfter: boolean }
  | { readonly kind: "dead"; readonly reason: string };

/** The outcome label of a result. */
export function classifyAttempt(result: AttemptResult): AttemptOutcome {
  switch (result.kind) {
    case "response":
      if (result.status >= 200 && result.status <= 299) return "success";
      return result.status === 410 ? "gone" : "http_error";
    case "timeout":
      return "timeout";
    case "network_error":
      return "network_error";
    case "refused":
      return "refused";
    default:
      return unreachable(result, "attempt result");
  }
}

/**
 * Whether a result counts against the origin's health (circuit breaker): the receiver is down
 * or overloaded. A 4xx other than 429 means it is up and answering, so it does not.
 */
export function isOriginFailure(result: AttemptResult): boolean {
  switch (result.kind) {
    case "response":
      return result.status >= 500 || result.status === 429;
    case "timeout":
    case "network_error":
      return true;
    case "refused":
      return false;
    default:
      return unreachable(result, "attempt result");
  }
}

/** The scheduled delay before the retry that follows attempt `attemptsMade` (1-based), jittered. */
export function retryDelayMs(policy: RetryPolicyConfig, attemptsMade: number, rng: Rng): number {
  const schedule = policy.retryScheduleMs;
  const base = schedule[Math.min(Math.max(attemptsMade, 1), schedule.length) - 1]!;
  const factor = 1 + policy.retryJitterRatio * (2 * rng.next() - 1);
  return Math.max(0, Math.round(base * factor));
}

/**
 * Parses `Retry-After` (delay-seconds or HTTP-date) into a delay from `nowMs`, clamped to the
 * policy's bounds; undefined when absent or unparseable.
 */
export function parseRetryAfterMs(
  header: string | undefined,
  nowMs: number,
  policy: Pick<RetryPolicyConfig, "retryAfterMinMs" | "retryAfterMaxMs">,
): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  let delayMs: number;
  if (/^\d+$/.test(text)) {
    delayMs = Number(text) * 1000;
  } else {
    const dateMs = Date.parse(text);
    if (!Number.isFinite(dateMs) || !/[a-z]/i.test(text)) return undefined;
    delayMs = dateMs - nowMs;
  }
  if (!Number.isFinite(delayMs)) return undefined;
  return Math.min(policy.retryAfterMaxMs, Math.max(policy.retryAfterMinMs, delayMs));
}

/** Decides what follows attempt number `attemptsMade` (1-based) that ended with `result`. */
export function decideRetry(
  policy: RetryPolicyConfig,
  result: AttemptResult,
  attemptsMade: number,
  nowMs: number,
  rng: Rng,
): RetryDecision {
  const outcome = classifyAttempt(result);
  switch (outcome) {
    case "success":
      return { kind: "delivered" };
    case "gone":
      return { kind: "dead", reason: "receiver answered 410 Gone" };
    case "refused":
      return { kind: "dead", reason: `refused: ${(result as { message: string }).message}` };
    case "http_error":
    case "timeout":
    case "network_error":
      break;
    default:
      return unreachable(outcome, "attempt outcome");
  }
  if (attemptsMade >= policy.attemptsMax) {
    return { kind: "dead", reason: `${attemptsMade} attempts failed, last: ${describe(result)}` };
  }
  const scheduledMs = retryDelayMs(policy, attemptsMade, rng);
  const retryAfterMs = result.kind === "response"
    ? parseRetryAfterMs(result.retryAfter, nowMs, policy)
    : undefined;
  // Retry-After says "not before", so it can only lengthen the schedule. Taken as a
  // replacement, a receiver in an outage answering "503, Retry-After: 1" used up all of a
  // job's attempts in seconds, where the schedule gives it hours to recover.
  if (retryAfterMs !== undefined && retryAfterMs > scheduledMs) {
    return { kind: "retry", delayMs: retryAfterMs, fromRetryAfter: true };
  }
  return { kind: "retry", delayMs: scheduledMs, fromRetryAfter: false };
}

function describe(result: AttemptResult): string {
  switch (result.kind) {
    case "response":
      return `HTTP ${result.status}`;
    case "timeout":
      return `timeout after ${Math.round(result.latencyMs)} ms`;
    case "network_error":
    case "refused":
      return result.message;
    default:
      return unreachable(result, "attempt result");
  }
}
