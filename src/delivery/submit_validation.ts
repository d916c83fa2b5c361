/**
 * The one set of rules a submitted job must meet (issue 18): `validateSubmit` takes a
 * `SubmitRequest` and either returns it or names the field a client must fix. Every path that
 * takes a job runs it: the HTTP API (src/api/validate.ts, after decoding the JSON body), the
 * UDP client path (replication_core.ts, `client-submit`), and the delivery engine at schedule
 * time (job_check.ts, with the bounds a stored job can carry). So a job one path accepts, the
 * others accept, with the same message when they refuse.
 *
 * The rules: an http(s) URL without credentials, spaces or control characters, within the
 * codec's bytes, and (with `allowPrivateTargets` false) not naming a special IP literal; a
 * payload within `payloadBytesMax`; headers `fetch` sends as given that do not collide with
 * hookd's own; a `whsec_` secret of the size the Standard Webhooks spec asks for; maxAttempts
 * and timeoutMs integers within their maxima; a printable idempotency key; and what the job
 * codec can carry (job_limits.ts). Lives in the delivery layer because the engine is its
 * lowest user (imports only go down). Pure: no I/O, no clock; never throws on hostile input.
 */

import { err, ok, type Result } from "../lib/result.ts";
import { checkJobLimits, fitsUtf8, utf8Bytes } from "./job_limits.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";
import { decodeSecret } from "./signing.ts";
import { checkScheme, specialAddressReason } from "./ssrf_guard.ts";
import type { SubmitRequest } from "./types.ts";

/** The per-node bounds a submit is checked against. */
export interface SubmitLimits {
  /** Largest payload, UTF-8 bytes (`delivery.payloadBytesMax`). */
  readonly payloadBytesMax: number;
  /** Largest total of the job's own header names and values (`delivery.jobHeadersBytesMax`). */
  readonly jobHeadersBytesMax: number;
  /** Largest `maxAttempts` (`jobs.maxAttemptsMax`). */
  readonly maxAttemptsMax: number;
  /** Largest `timeoutMs` (`delivery.attemptTimeoutMaxMs`). */
  readonly attemptTimeoutMaxMs: number;
  /** Longest idempotency key, characters (`api.idempotencyKeyCharsMax`). */
  readonly idempotencyKeyCharsMax: number;
  /**
   * false: a URL naming a loopback, private, link-local or other special IP literal (or
   * `localhost`) is refused, as the SSRF guard would refuse every attempt. Names are not
   * resolved here (no I/O): the guard checks what they resolve to at delivery.
   * @default true (no check)
   */
  readonly allowPrivateTargets?: boolean;
}

/** Why a submit is refused: the field a client must fix, and a sentence saying how. */
export interface SubmitProblem {
  readonly field:
    | "url"
    | "payload"
    | "headers"
    | "secret"
    | "maxAttempts"
    | "timeoutMs"
    | "idempotencyKey";
  readonly message: string;
}

/** Standard Webhooks: a symmetric secret is random, at least 24 bytes, at most 512 bits. */
export const SECRET_BYTES_MIN = 24;
export const SECRET_BYTES_MAX = 64;
const SECRET_PREFIX = "whsec_";

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
/** Printable ASCII, the space included (RFC 9110 field values, minus obs-text). */
const PRINTABLE = /^[\x20-\x7e]+$/;
/** Space, C0 and C1 controls and DEL: not in a URL as written (RFC 3986), only encoded. */
// deno-lint-ignore no-control-regex
const URL_FORBIDDEN = /[\x00-\x20\x7f-\x9f]/;

const encoder = new TextEncoder();

/** The refusal of a text field holding an unpaired UTF-16 surrogate, which UTF-8 cannot carry. */
export function loneSurrogateRefusal(field: string): string {
  return `${field} has an unpaired UTF-16 surrogate (\\ud800-\\udfff alone), which is not text`;
}

function problem(field: SubmitProblem["field"], message: string): Result<never, SubmitProblem> {
  return err({ field, message });
}

/** `request` if it meets every rule, or the first field that does not. */
/** Why a payload is refused (not text, or past `payloadMax` UTF-8 bytes), or undefined. */
export function payloadRefusal(payload: unknown, payloadMax: number): string | undefined {
  // UTF-8 needs at most 3 bytes per UTF-16 unit: most payloads skip the encode.
  if (
    typeof payload !== "string" ||
    (payload.length * 3 > payloadMax && encoder.encode(payload).length > payloadMax)
  ) {
    return `payload is larger than ${payloadMax} bytes as JSON text`;
  }
  return undefined;
}

export function validateSubmit(
  request: SubmitRequest,
  limits: SubmitLimits,
): Result<SubmitRequest, SubmitProblem> {
  const url = checkUrl(request.url, limits.allowPrivateTargets);
  if (url !== undefined) return problem("url", url);
  const payload = payloadRefusal(request.payload, limits.payloadBytesMax);
  if (payload !== undefined) return problem("payload", payload);
  if (request.headers !== undefined) {
    const headers = checkHeaders(request.headers, limits.jobHeadersBytesMax);
    if (headers !== undefined) return problem("headers", headers);
  }
  if (request.secret !== undefined) {
    if (typeof request.secret !== "string" || !request.secret.startsWith(SECRET_PREFIX)) {
      return problem("secret", "secret must be whsec_<base64>");
    }
    const secret = checkSecret(request.secret, "signing secret 1");
    if (secret !== undefined) return problem("secret", secret);
  }
  if (request.maxAttempts !== undefined) {
    const n = boundedInteger("maxAttempts", request.maxAttempts, limits.maxAttemptsMax);
    if (n !== undefined) return problem("maxAttempts", n);
  }
  if (request.timeoutMs !== undefined) {
    const n = boundedInteger("timeoutMs", request.timeoutMs, limits.attemptTimeoutMaxMs);
    if (n !== undefined) return problem("timeoutMs", n);
  }
  if (request.idempotencyKey !== undefined) {
    const key = checkIdempotencyKey(request.idempotencyKey, {
      field: "idempotencyKey",
      charsMax: limits.idempotencyKeyCharsMax,
    });
    if (key !== undefined) return problem("idempotencyKey", key);
  }
  // What the job codec can carry (JOB_LIMITS). Most bounds above are stricter; the header
  // count is only bounded here.
  const limited = checkJobLimits(request);
  if (limited !== undefined) return problem(limited.field, limited.message);
  return ok(request);
}

/** Why `url` can never be a target, or undefined. */
function checkUrl(raw: string, allowPrivateTargets: boolean | undefined): string | undefined {
  if (typeof raw !== "string") return "url must be a string";
  // Bytes, as the job codec counts them: a URL of 5,000 "é" is 5,016 characters but 10,016
  // bytes, and accepted by characters it was a job no peer could decode.
  if (!fitsUtf8(raw, JOB_LIMITS.urlBytesMax)) {
    return `url is ${utf8Bytes(raw)} bytes as UTF-8; at most ${JOB_LIMITS.urlBytesMax} bytes`;
  }
  // A URL parser percent-encodes these, but the raw text is what the node keeps and shows
  // (hookd status, the dashboard), where an ESC or a C1 CSI would drive a terminal.
  if (URL_FORBIDDEN.test(raw)) {
    return "url must not contain spaces or control characters; percent-encode them";
  }
  // An unpaired UTF-16 surrogate (JSON's "\ud800") has no UTF-8 form: the job codec would
  // write U+FFFD, so every replica, the WAL and a checkpoint would hold a URL other than the
  // one this node kept and showed. Refused rather than changed behind the client's back.
  if (!raw.isWellFormed()) return loneSurrogateRefusal("url");
  const url = checkScheme(raw);
  if (!url.ok) return url.reason;
  if (url.value.username !== "" || url.value.password !== "") {
    return "target URL must not carry credentials (user:password@); " +
      "send an authorization header instead";
  }
  if (allowPrivateTargets === false) return literalTargetRefusal(url.value);
  return undefined;
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

function checkHeaders(
  headers: Readonly<Record<string, string>>,
  bytesMax: number,
): string | undefined {
  let bytes = 0;
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const shown = JSON.stringify(name.slice(0, 64));
    if (!TOKEN.test(name)) return `header name ${shown} is not a valid HTTP token`;
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) return `header ${shown} is set by hookd, not by a job`;
    // Two spellings of one name would be sent as one header with both values joined.
    if (seen.has(lower)) return `header ${shown} is given twice (names ignore case)`;
    seen.add(lower);
    if (typeof value !== "string" || !HEADER_VALUE.test(value)) {
      return `header ${shown} has a value with CR, LF, NUL or a non-Latin-1 character`;
    }
    bytes += name.length + value.length;
    if (bytes > bytesMax) return `headers are larger than jobHeadersBytesMax (${bytesMax} bytes)`;
  }
  return undefined;
}

/** Why `secret` (named `name` in the message) cannot sign, or undefined. */
export function checkSecret(secret: string, name: string): string | undefined {
  let bytes: number;
  try {
    bytes = decodeSecret(secret).length;
  } catch {
    return `${name} is not whsec_<base64>`;
  }
  if (bytes < SECRET_BYTES_MIN || bytes > SECRET_BYTES_MAX) {
    return `${name} decodes to ${bytes} bytes; ` +
      `Standard Webhooks secrets are ${SECRET_BYTES_MIN}-${SECRET_BYTES_MAX} bytes`;
  }
  return undefined;
}

function boundedInteger(field: string, raw: unknown, max: number): string | undefined {
  if (typeof raw !== "number" || !Number.isInteger(raw) || raw < 1 || raw > max) {
    const got = typeof raw === "number" ? String(raw) : raw === null ? "null" : `a ${typeof raw}`;
    return `${field} must be an integer in [1, ${max}], got ${got}`;
  }
  return undefined;
}

/**
 * Why an idempotency key is refused, or undefined: `field` names it in the message (the API's
 * `Idempotency-Key` header, or a request's `idempotencyKey`).
 */
export function checkIdempotencyKey(
  key: string,
  { field, charsMax }: { readonly field: string; readonly charsMax: number },
): string | undefined {
  if (key.length === 0 || key.length > charsMax || !PRINTABLE.test(key)) {
    return `${field} must be 1-${charsMax} printable ASCII characters`;
  }
  return undefined;
}
