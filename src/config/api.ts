/**
 * HTTP API (src/api/)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { positiveInteger, relation } from "./checks.ts";
import { JOB_LIMITS } from "./job_limits.ts";

export interface ApiConfig {
  /**
   * Largest request body, bytes; a larger one is answered 413 (by its Content-Length before a
   * byte is read, or as soon as the streamed body passes it). 1 MiB holds a batch of 1,000
   * small jobs; a single job's payload has its own, smaller bound (delivery.payloadBytesMax).
   * @default 2 MiB
   */
  bodyBytesMax: number;
  /**
   * Longest a request body may take to arrive once its headers are in, ms; then 408. While it
   * arrives a body holds only the bytes it has sent (bodyBytesHeldMax), never a submit slot,
   * so a client that trickles one costs a connection and a timer. 10 s is far beyond what
   * 2 MiB needs on any link a node serves.
   * @default 10_000
   */
  bodyReadTimeoutMs: number;
  /**
   * Bytes of request bodies the API holds at once, counted as they arrive (not as declared)
   * and given back when the request is answered. A chunk that would pass it gets 503 +
   * Retry-After at once. It, not the slot count, bounds the bodies in memory, so the body can
   * be read before a submit slot is taken: a client trickling its body (with the token or
   * without) holds the few bytes it sent, not one of submitsInFlightMax's slots. 256 MiB is
   * what the slots bounded before (128 full-size bodies; thousands of ordinary submits).
   * @default 256 MiB
   */
  bodyBytesHeldMax: number;
  /**
   * Submit requests (a job, a batch, a retry by hand) inside the node at once, from the end
   * of the body read to the store's answer; the next one is answered 503 + Retry-After. When
   * every slot is taken a submit is refused before its body is read, so an overloaded node
   * spends almost nothing on it. Bounds the promises parked on the store, which has its own
   * queue bounds behind this one. 256 is far above the ~64 concurrent requests at which
   * Deno.serve saturates this 2-core machine.
   * @default 256
   */
  submitsInFlightMax: number;
  /** Jobs one `POST /v1/jobs/batch` may carry; more is a 400 naming `jobs`. @default 1000 */
  batchJobsMax: number;
  /**
   * Longest `Idempotency-Key`, characters (printable ASCII). Keys are hashed into ids, so this
   * only bounds what a node stores per job; 256 holds any UUID, ULID or composite key.
   * @default 256
   */
  idempotencyKeyCharsMax: number;
  /** Jobs listed when a list request gives no `limit`. @default 50 */
  listLimitDefault: number;
  /** Largest `limit` of a list request (lists carry no payloads). @default 1000 */
  listLimitMax: number;
  /**
   * Retry-After, seconds, for a 503 whose refusal names no delay (the admission gate's among
   * them). One second: submits in flight finish in milliseconds, so a slot frees quickly.
   * @default 1
   */
  retryAfterS: number;
}

export const apiDefaults: Readonly<ApiConfig> = Object.freeze({
  bodyBytesMax: 2 * 1024 * 1024,
  bodyReadTimeoutMs: 10_000,
  bodyBytesHeldMax: 256 * 1024 * 1024,
  submitsInFlightMax: 256,
  batchJobsMax: 1000,
  idempotencyKeyCharsMax: 256,
  listLimitDefault: 50,
  listLimitMax: 1000,
  retryAfterS: 1,
});

export function validateApiConfig(config: ApiConfig): ApiConfig {
  for (
    const name of [
      "bodyBytesMax",
      "bodyReadTimeoutMs",
      "bodyBytesHeldMax",
      "submitsInFlightMax",
      "batchJobsMax",
      "idempotencyKeyCharsMax",
      "listLimitDefault",
      "listLimitMax",
      "retryAfterS",
    ] as const
  ) positiveInteger(`api.${name}`, config[name]);
  relation(
    "api.bodyBytesMax",
    config.bodyBytesMax,
    "<=",
    "api.bodyBytesHeldMax",
    config.bodyBytesHeldMax,
  );
  // A key the API takes must fit the job codec, or every peer would refuse its record.
  relation(
    "api.idempotencyKeyCharsMax",
    config.idempotencyKeyCharsMax,
    "<=",
    "JOB_LIMITS.idempotencyKeyBytesMax",
    JOB_LIMITS.idempotencyKeyBytesMax,
  );
  relation(
    "api.listLimitDefault",
    config.listLimitDefault,
    "<=",
    "api.listLimitMax",
    config.listLimitMax,
  );
  return config;
}
