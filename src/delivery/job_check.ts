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
 * Owns the checks only (pure, no I/O, no clock). The API can run the same function at submit.
 */

import { err, ok, type Result } from "../lib/result.ts";
import { checkScheme, specialAddressReason } from "./ssrf_guard.ts";
import { decodeSecret } from "./signing.ts";
import type { DeliveryJob } from "./types.ts";

export interface JobLimits {
  /** Largest payload, UTF-8 bytes. */
  readonly payloadBytesMax: number;
  /** Largest total of the job's own header names and values, bytes. */
  readonly jobHeadersBytesMax: number;
  /**
   * false: a URL naming a loopback, private, link-local or other special IP literal (or
   * `localhost`) is refused here, at once, as the SSRF guard would refuse every attempt.
   * Names are not resolved here (no I/O): the guard checks what they resolve to at delivery.
   * @default true (no check)
   */
  readonly allowPrivateTargets?: boolean;
}

/** Longest `webhook-id`, characters (ids are minted by hookd; this only stops abuse). */
export const JOB_ID_CHARS_MAX = 256;
/** Secrets signed with at once: current plus old ones during rotation (each costs an HMAC). */
export const JOB_SECRETS_MAX = 8;
/** Standard Webhooks: a symmetric secret is random, at least 24 bytes, at most 512 bits. */
export const SECRET_BYTES_MIN = 24;
export const SECRET_BYTES_MAX = 64;

/**
 * Headers hookd sets itself (a job's copy would be merged into ours by `fetch`, corrupting the
 * signature), and connection-level headers that are the HTTP client's business.
 */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "hookd-submitted-at",
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "proxy-connection",
  "proxy-authorization",
]);

/** RFC 9110 token characters: what a header name may contain. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value `fetch` sends as given: Latin-1 without NUL, CR or LF. */
// deno-lint-ignore no-control-regex
const HEADER_VALUE = /^[^\x00\r\n\u0100-\uffff]*$/;
/** Visible ASCII except "." (the spec's separator in "id.timestamp.body"). */
const JOB_ID = /^[\x21-\x2d\x2f-\x7e]+$/;

const encoder = new TextEncoder();

/** Why `job` can never be delivered, or ok. The reason is a sentence for the dead letter. */
export function checkJob(job: DeliveryJob, limits: JobLimits): Result<void> {
  if (job.id.length === 0 || job.id.length > JOB_ID_CHARS_MAX || !JOB_ID.test(job.id)) {
    return err(
      `job id ${JSON.stringify(job.id.slice(0, 64))} must be 1-${JOB_ID_CHARS_MAX} ` +
        'visible ASCII characters without "." (it is signed as "id.timestamp.body")',
    );
  }
  const url = checkScheme(job.url);
  if (!url.ok) return url;
  if (url.value.username !== "" || url.value.password !== "") {
    return err(
      "target URL must not carry credentials (user:password@); " +
        "send an authorization header instead",
    );
  }
  if (limits.allowPrivateTargets === false) {
    const refusal = literalTargetRefusal(url.value);
    if (refusal !== undefined) return err(refusal);
  }
  const payloadMax = limits.payloadBytesMax;
  // UTF-8 needs at most 3 bytes per UTF-16 unit: most payloads skip the encode.
  if (job.payload.length * 3 > payloadMax && encoder.encode(job.payload).length > payloadMax) {
    return err(`payload is larger than payloadBytesMax (${payloadMax} bytes)`);
  }
  const headers = checkHeaders(job.headers ?? {}, limits.jobHeadersBytesMax);
  if (!headers.ok) return headers;
  const secrets = checkSecrets(job.secrets);
  if (!secrets.ok) return secrets;
  if (job.timeoutMs !== undefined && !(Number.isFinite(job.timeoutMs) && job.timeoutMs > 0)) {
    return err(`job timeoutMs must be a positive number of ms, got ${job.timeoutMs}`);
  }
  return ok(undefined);
}

/** Why a URL's host is a special address by its text alone (an IP literal, localhost). */
function literalTargetRefusal(url: URL): string | undefined {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const name = host.toLowerCase().replace(/\.$/, "");
  const why = name === "localhost" || name.endsWith(".localhost")
    ? "loopback"
    : /^[\d.]+$/.test(host) || host.includes(":")
    ? specialAddressReason(host)
    : undefined;
  return why === undefined
    ? undefined
    : `target ${url.origin} is a ${why} address; private targets are refused unless the ` +
      "node runs with --allow-private-targets";
}

function checkHeaders(headers: Readonly<Record<string, string>>, bytesMax: number): Result<void> {
  let bytes = 0;
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const shown = JSON.stringify(name.slice(0, 64));
    if (!TOKEN.test(name)) return err(`header name ${shown} is not a valid HTTP token`);
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) return err(`header ${shown} is set by hookd, not by a job`);
    // Two spellings of one name would be sent as one header with both values joined.
    if (seen.has(lower)) return err(`header ${shown} is given twice (names ignore case)`);
    seen.add(lower);
    if (typeof value !== "string" || !HEADER_VALUE.test(value)) {
      return err(`header ${shown} has a value with CR, LF, NUL or a non-Latin-1 character`);
    }
    bytes += name.length + value.length;
    if (bytes > bytesMax) {
      return err(`headers are larger than jobHeadersBytesMax (${bytesMax} bytes)`);
    }
  }
  return ok(undefined);
}

function checkSecrets(secrets: readonly string[]): Result<void> {
  if (secrets.length > JOB_SECRETS_MAX) {
    return err(`a job may carry at most ${JOB_SECRETS_MAX} signing secrets`);
  }
  for (const [i, secret] of secrets.entries()) {
    let bytes: number;
    try {
      bytes = decodeSecret(secret).length;
    } catch {
      return err(`signing secret ${i + 1} is not whsec_<base64>`);
    }
    if (bytes < SECRET_BYTES_MIN || bytes > SECRET_BYTES_MAX) {
      return err(
        `signing secret ${i + 1} decodes to ${bytes} bytes; ` +
          `Standard Webhooks secrets are ${SECRET_BYTES_MIN}-${SECRET_BYTES_MAX} bytes`,
      );
    }
  }
  return ok(undefined);
}
