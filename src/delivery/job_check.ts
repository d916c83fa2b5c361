/**
 * What makes a job deliverable at all, checked once when it is scheduled: an http(s) URL
 * without credentials, an id fit for `webhook-id` and for the signed content, a payload within
 * its bound, headers that `fetch` accepts and that do not collide with the ones hookd sets,
 * `whsec_` secrets of the size the Standard Webhooks spec asks for, and a sane per-job timeout.
 *
 * Why at schedule time: a job that fails one of these can never succeed, so every attempt would
 * fail the same way (fetch throws on a bad header, signing throws on a bad secret). Seen as
 * connection errors those attempts were retried for hours and counted against the receiver's
 * circuit breaker, stalling every other job to that origin. Refused here, the job becomes a
 * dead letter at once with a reason a person can act on.
 *
 * The submit rules (URL, payload, headers, secrets, timeout, attempts) are `validateSubmit`'s
 * (submit_validation.ts), the same the API and the UDP path run at submit; this adds only what
 * a stored job has and a request has not: its id and its rotated secrets. Attempt and timeout
 * bounds are checked against what a stored job can carry, not the node's current maxima: a job
 * accepted before a maximum was lowered is capped at attempt time, not dead-lettered.
 * Owns the checks only (pure, no I/O, no clock); the SSRF guard resolves names at delivery.
 */

import { JOB_LIMITS } from "../config/job_limits.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { checkSecret, validateSubmit } from "./submit_validation.ts";
import { type DeliveryJob, webhookIdOf } from "./types.ts";

export { SECRET_BYTES_MAX, SECRET_BYTES_MIN } from "./submit_validation.ts";

export interface JobLimits {
  /** Largest payload, UTF-8 bytes. */
  readonly payloadBytesMax: number;
  /** Largest total of the job's own header names and values, bytes. */
  readonly jobHeadersBytesMax: number;
  /**
   * false: a URL naming a loopback, private, link-local or other special IP literal (or
   * `localhost`) is refused here, at once, as the SSRF guard would refuse every attempt.
   * @default true (no check)
   */
  readonly allowPrivateTargets?: boolean;
}

/** Longest `webhook-id`, characters (ids are minted by hookd; this only stops abuse). */
export const JOB_ID_CHARS_MAX = 256;
/** Secrets signed with at once: current plus old ones during rotation (each costs an HMAC). */
export const JOB_SECRETS_MAX = 8;
/** Visible ASCII except "." (the spec's separator in "id.timestamp.body"). */
const JOB_ID = /^[\x21-\x2d\x2f-\x7e]+$/;

/** What a stored job can carry (the codec's u16 attempts, u32 timeout): see the header. */
const STORED_ATTEMPTS_MAX = 0xffff;
const STORED_TIMEOUT_MS_MAX = 0xffff_ffff;

/** Why `job` can never be delivered, or ok. The reason is a sentence for the dead letter. */
export function checkJob(job: DeliveryJob, limits: JobLimits): Result<void> {
  // The id that is signed ("id.timestamp.body") is the `webhook-id`: an event's jobs sign
  // their event's id, and their own ids ("event.endpoint") are never signed.
  const signedId = webhookIdOf(job);
  if (
    signedId.length === 0 || signedId.length > JOB_ID_CHARS_MAX || !JOB_ID.test(signedId) ||
    job.id.length === 0 || job.id.length > JOB_ID_CHARS_MAX
  ) {
    return err(
      `job id ${JSON.stringify(signedId.slice(0, 64))} must be 1-${JOB_ID_CHARS_MAX} ` +
        'visible ASCII characters without "." (it is signed as "id.timestamp.body")',
    );
  }
  if (job.secrets.length > JOB_SECRETS_MAX) {
    return err(`a job may carry at most ${JOB_SECRETS_MAX} signing secrets`);
  }
  const checked = validateSubmit({
    url: job.url,
    payload: job.payload,
    ...(job.headers !== undefined ? { headers: job.headers } : {}),
    ...(job.timeoutMs !== undefined ? { timeoutMs: job.timeoutMs } : {}),
    ...(job.maxAttempts !== undefined ? { maxAttempts: job.maxAttempts } : {}),
  }, {
    payloadBytesMax: limits.payloadBytesMax,
    jobHeadersBytesMax: limits.jobHeadersBytesMax,
    maxAttemptsMax: STORED_ATTEMPTS_MAX,
    attemptTimeoutMaxMs: STORED_TIMEOUT_MS_MAX,
    idempotencyKeyCharsMax: JOB_LIMITS.idempotencyKeyBytesMax,
    ...(limits.allowPrivateTargets !== undefined
      ? { allowPrivateTargets: limits.allowPrivateTargets }
      : {}),
  });
  if (!checked.ok) return err(checked.reason.message);
  for (const [i, secret] of job.secrets.entries()) {
    const refused = checkSecret(secret, `signing secret ${i + 1}`);
    if (refused !== undefined) return err(refused);
  }
  return ok(undefined);
}
