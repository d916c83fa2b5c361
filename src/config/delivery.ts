/**
 * Webhook delivery engine (src/delivery/)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { nonNegative, positiveInteger, probability, relation } from "./checks.ts";
import { JOB_LIMITS } from "./job_limits.ts";

export interface DeliveryConfig {
  /**
   * Delay before retry n (after the n-th failed attempt), ms. Modelled on what webhook services
   * use (Svix, Stripe): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h. Past the end the last entry repeats.
   * Tests and the bench pass a short schedule.
   * @default [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]
   */
  retryScheduleMs: readonly number[];
  /**
   * Each retry delay is multiplied by a uniform factor in [1 - ratio, 1 + ratio], so that jobs
   * failing together (one receiver outage) do not come back as one burst.
   * @default 0.2
   */
  retryJitterRatio: number;
  /**
   * A receiver's `Retry-After`, clamped to [retryAfterMinMs, retryAfterMaxMs], replaces the
   * scheduled delay when it is longer ("not before": it never shortens the schedule, or a
   * receiver in an outage could burn a job's attempts in seconds). The ceiling stops it parking
   * a job for a year; the floor is what a past HTTP-date or "0" becomes. @default 1_000
   */
  retryAfterMinMs: number;
  /** See `retryAfterMinMs`. @default 7_200_000 (2 h) */
  retryAfterMaxMs: number;
  /** Per-attempt timeout when the job sets none, ms (headers and body). @default 15_000 */
  attemptTimeoutMs: number;
  /** Largest per-job timeout a job may ask for, ms. @default 60_000 */
  attemptTimeoutMaxMs: number;
  /**
   * How long past its timeout an attempt's request stays open to hear a late answer, ms (0:
   * abort at the timeout). A receiver slower than the timeout usually still handles the
   * request; the attempt counts as a timeout, but the job's next attempt waits for that answer
   * (up to this long), and a late 2xx ends the job instead of a retry delivering it twice
   * (issue 17: most duplicates with no ownership change were such retries). 5 s is the first
   * delay of the default retry schedule, so by default it delays no retry; it also bounds the
   * requests held open past their timeout (they no longer count against the concurrency
   * limits). @default 5_000
   */
  lateAnswerWaitMs: number;
  /**
   * Attempts in flight on this node at once. Bounds sockets, memory and the event loop's work;
   * 256 is several times the ~64 concurrent requests at which fetch saturates this machine.
   * @default 256
   */
  concurrentDeliveriesMax: number;
  /**
   * Attempts in flight to one origin (scheme://host:port) at once: one slow receiver can hold at
   * most this many of the node's slots, so the others keep flowing. @default 64
   */
  originConcurrencyMax: number;
  /**
   * An endpoint's `rate_limit_per_s` as a token bucket on each owner of its jobs
   * (docs/endpoints.md, "Rate limits across the cluster"): the bucket holds this much time's
   * worth of the node's share, at least one attempt. 0 paces attempts evenly, one every 1/share
   * seconds, but at high rates then needs a timer wake per attempt; 100 ms lets a wake start
   * a tenth of a second's attempts and over-shoots a receiver's one-second count by at most
   * that tenth per node. @default 100
   */
  rateLimitBurstMs: number;
  /**
   * Jobs the engine holds in memory (waiting, queued or in flight). `schedule` says no past it;
   * the job store offers the job again later. @default 100_000
   */
  jobsMax: number;
  /**
   * Payload memory the engine may hold across all its jobs, bytes, counted as V8 holds strings
   * (at most 2 bytes per UTF-16 unit). `jobsMax` alone let 100,000 jobs of 256 KiB claim 25-50
   * GiB; past this `schedule` says no like it does past `jobsMax`. Must fit one largest
   * payload. @default 268_435_456 (256 MiB)
   */
  heldPayloadBytesMax: number;
  /**
   * Largest payload accepted, bytes (UTF-8): the job store, the API (413 past it) and the
   * engine all use this one limit. Svix and Convoy accept payloads around 1 MB.
   * @default 1 MiB
   */
  payloadBytesMax: number;
  /**
   * Largest total of a job's own header names and values, bytes; a job past it is refused (a
   * dead letter at once). 8 KiB leaves room for hookd's own headers under the 16 KiB request
   * header limit common in servers (Node's default). @default 8_192
   */
  jobHeadersBytesMax: number;
  /** Response body kept in an attempt record, bytes; the rest is discarded unread. @default 1_024 */
  responseBodyBytesMax: number;
  /**
   * Consecutive failed attempts (timeout, connection error, 5xx, 429) to one origin that open
   * its circuit breaker; an open breaker starts no attempt to that origin. A timeout counts
   * only when the job's timeout was at least `attemptTimeoutMs` (a job's own shorter timeout
   * is no evidence against the receiver). @default 5
   */
  breakerFailureThreshold: number;
  /** First time a breaker stays open before it lets one trial attempt through, ms. @default 5_000 */
  breakerOpenMs: number;
  /** Each failed trial doubles the open time, up to this, ms. @default 300_000 */
  breakerOpenMaxMs: number;
  /**
   * Deliver to loopback, private, link-local and other special addresses. Off in production
   * (SSRF guard); the node flag `--allow-private-targets`, tests and benchmarks turn it on.
   * @default false
   */
  allowPrivateTargets: boolean;
}

export const deliveryDefaults: Readonly<DeliveryConfig> = Object.freeze({
  retryScheduleMs: Object.freeze([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]),
  retryJitterRatio: 0.2,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 7_200_000,
  attemptTimeoutMs: 15_000,
  attemptTimeoutMaxMs: 60_000,
  lateAnswerWaitMs: 5_000,
  concurrentDeliveriesMax: 256,
  originConcurrencyMax: 64,
  rateLimitBurstMs: 100,
  jobsMax: 100_000,
  heldPayloadBytesMax: 256 * 1024 * 1024,
  payloadBytesMax: 1024 * 1024,
  jobHeadersBytesMax: 8_192,
  responseBodyBytesMax: 1_024,
  breakerFailureThreshold: 5,
  breakerOpenMs: 5_000,
  breakerOpenMaxMs: 300_000,
  allowPrivateTargets: false,
});

export function validateDeliveryConfig(config: DeliveryConfig): DeliveryConfig {
  if (config.retryScheduleMs.length === 0) {
    throw new RangeError("delivery.retryScheduleMs must not be empty, got []");
  }
  config.retryScheduleMs.forEach((ms, i) => nonNegative(`delivery.retryScheduleMs[${i}]`, ms));
  probability("delivery.retryJitterRatio", config.retryJitterRatio);
  nonNegative("delivery.retryAfterMinMs", config.retryAfterMinMs);
  nonNegative("delivery.retryAfterMaxMs", config.retryAfterMaxMs);
  relation(
    "delivery.retryAfterMinMs",
    config.retryAfterMinMs,
    "<=",
    "delivery.retryAfterMaxMs",
    config.retryAfterMaxMs,
  );
  positiveInteger("delivery.attemptTimeoutMs", config.attemptTimeoutMs);
  positiveInteger("delivery.attemptTimeoutMaxMs", config.attemptTimeoutMaxMs);
  nonNegative("delivery.lateAnswerWaitMs", config.lateAnswerWaitMs);
  relation(
    "delivery.attemptTimeoutMs",
    config.attemptTimeoutMs,
    "<=",
    "delivery.attemptTimeoutMaxMs",
    config.attemptTimeoutMaxMs,
  );
  positiveInteger("delivery.concurrentDeliveriesMax", config.concurrentDeliveriesMax);
  positiveInteger("delivery.originConcurrencyMax", config.originConcurrencyMax);
  // An origin limit above the node limit would let one receiver take every slot.
  relation(
    "delivery.originConcurrencyMax",
    config.originConcurrencyMax,
    "<=",
    "delivery.concurrentDeliveriesMax",
    config.concurrentDeliveriesMax,
  );
  nonNegative("delivery.rateLimitBurstMs", config.rateLimitBurstMs);
  positiveInteger("delivery.jobsMax", config.jobsMax);
  positiveInteger("delivery.heldPayloadBytesMax", config.heldPayloadBytesMax);
  relation(
    "2 * delivery.payloadBytesMax",
    2 * config.payloadBytesMax,
    "<=",
    "delivery.heldPayloadBytesMax",
    config.heldPayloadBytesMax,
  );
  positiveInteger("delivery.payloadBytesMax", config.payloadBytesMax);
  positiveInteger("delivery.jobHeadersBytesMax", config.jobHeadersBytesMax);
  // A job this node accepts must fit the job codec's bounds, which every node shares.
  relation(
    "delivery.payloadBytesMax",
    config.payloadBytesMax,
    "<=",
    "JOB_LIMITS.payloadBytesMax",
    JOB_LIMITS.payloadBytesMax,
  );
  // Header sizes are counted in characters here, Latin-1 values: at most 2 UTF-8 bytes each.
  relation(
    "2 * delivery.jobHeadersBytesMax",
    2 * config.jobHeadersBytesMax,
    "<=",
    "JOB_LIMITS.headersBytesMax",
    JOB_LIMITS.headersBytesMax,
  );
  nonNegative("delivery.responseBodyBytesMax", config.responseBodyBytesMax);
  positiveInteger("delivery.breakerFailureThreshold", config.breakerFailureThreshold);
  positiveInteger("delivery.breakerOpenMs", config.breakerOpenMs);
  relation(
    "delivery.breakerOpenMs",
    config.breakerOpenMs,
    "<=",
    "delivery.breakerOpenMaxMs",
    config.breakerOpenMaxMs,
  );
  return config;
}
