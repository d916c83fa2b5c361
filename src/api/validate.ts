/**
 * Decoders from untrusted JSON (and headers, and query strings) to the job store's
 * `SubmitRequest`: every check a submit must pass before the store sees it, each failure
 * naming the field a client must fix.
 *
 * Owns the request vocabulary (which fields exist, their types and bounds). The rules a job
 * must meet to be deliverable at all (URL scheme and credentials, header names and values,
 * secret sizes) are the delivery engine's `checkJob`, run here field by field so that a job
 * the API accepts is one the engine will not dead-letter at once. Pure: no I/O, no clock;
 * never throws on hostile input.
 */

import { JOB_LIMITS } from "../config/job_limits.ts";
import { checkJob } from "../delivery/job_check.ts";
import { checkJobLimits, fitsUtf8, utf8Bytes } from "../jobs/job_limits.ts";
import type { DeliveryJob } from "../delivery/types.ts";
import type { SubmitRequest } from "../jobs/service.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { type NumberTexts, stringifyKept } from "./json_text.ts";

export interface SubmitLimits {
  /** UTF-8 bytes of the payload's JSON text. */
  readonly payloadBytesMax: number;
  readonly jobHeadersBytesMax: number;
  readonly jobAttemptsMax: number;
  readonly attemptTimeoutMaxMs: number;
  readonly idempotencyKeyCharsMax: number;
  /** false: refuse URLs naming special IP literals at once (see JobLimits). @default true */
  readonly allowPrivateTargets?: boolean;
}

export interface FieldError {
  readonly code: "invalid" | "payload_too_large";
  readonly message: string;
  readonly field?: string;
}

/** The fields of `POST /v1/jobs`'s body; any other is a 400. */
export const SUBMIT_FIELDS = [
  "url",
  "payload",
  "headers",
  "secret",
  "maxAttempts",
  "timeoutMs",
] as const;
/** A batch item's fields: a batch has no single Idempotency-Key header, so each job may. */
export const BATCH_JOB_FIELDS = [...SUBMIT_FIELDS, "idempotencyKey"] as const;
/** The fields of `POST /v1/jobs/batch`'s body. */
export const BATCH_FIELDS = ["jobs"] as const;

const SECRET_PREFIX = "whsec_";
/** Printable ASCII, the space included (RFC 9110 field values, minus obs-text). */
const PRINTABLE = /^[\x20-\x7e]+$/;
/** Space, C0 and C1 controls and DEL: not in a URL as written (RFC 3986), only encoded. */
// deno-lint-ignore no-control-regex
const URL_FORBIDDEN = /[\x00-\x20\x7f-\x9f]/;
/** Longest dead-letter cursor accepted; the store's cursors are short opaque strings. */
export const CURSOR_CHARS_MAX = 1024;

/**
 * A well-formed job the per-field checks graft one field onto: every other part of it passes
 * `checkJob`, so a failure names the field under test.
 */
const CHECK_BASE: DeliveryJob = Object.freeze({
  id: "submit-check",
  url: "https://example.invalid/",
  payload: "",
  secrets: Object.freeze([]),
});

const encoder = new TextEncoder();

type Decoded<T> = Result<T, FieldError>;

function invalid(field: string | undefined, message: string): { ok: false; reason: FieldError } {
  return err(
    field === undefined ? { code: "invalid", message } : { code: "invalid", message, field },
  );
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function shown(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

export interface DecodeOptions {
  /** From `parseJson` of the body: the payload is written with the client's number texts. */
  readonly numberTexts?: NumberTexts;
}

/** The job of a `POST /v1/jobs` body (its idempotency key comes from the header). */
export function decodeSubmit(
  value: unknown,
  limits: SubmitLimits,
  options: DecodeOptions = {},
): Decoded<SubmitRequest> {
  return decodeJob(value, limits, false, options.numberTexts);
}

/** One item of a batch's `jobs`, which may carry its own `idempotencyKey`. */
export function decodeBatchJob(
  value: unknown,
  limits: SubmitLimits,
  options: DecodeOptions = {},
): Decoded<SubmitRequest> {
  return decodeJob(value, limits, true, options.numberTexts);
}

function decodeJob(
  value: unknown,
  limits: SubmitLimits,
  keyField: boolean,
  numberTexts: NumberTexts | undefined,
): Decoded<SubmitRequest> {
  if (!isPlainObject(value)) {
    return invalid(undefined, `a job must be a JSON object, not ${describe(value)}`);
  }
  const known: readonly string[] = keyField ? BATCH_JOB_FIELDS : SUBMIT_FIELDS;
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      return invalid(key, `unknown field ${shown(key)}; a job has ${known.join(", ")}`);
    }
  }

  const url = decodeUrl(value.url, Object.hasOwn(value, "url"), limits);
  if (!url.ok) return url;
  if (!Object.hasOwn(value, "payload")) return invalid("payload", "payload is required (any JSON)");
  const payload = encodePayload(value, numberTexts, limits.payloadBytesMax);
  if (!payload.ok) return payload;

  const request: {
    url: string;
    payload: string;
    headers?: Record<string, string>;
    secret?: string;
    maxAttempts?: number;
    timeoutMs?: number;
    idempotencyKey?: string;
  } = { url: url.value, payload: payload.value };

  if (Object.hasOwn(value, "headers")) {
    const headers = decodeHeaders(value.headers, limits.jobHeadersBytesMax);
    if (!headers.ok) return headers;
    request.headers = headers.value;
  }
  if (Object.hasOwn(value, "secret")) {
    const secret = decodeSecret(value.secret);
    if (!secret.ok) return secret;
    request.secret = secret.value;
  }
  if (Object.hasOwn(value, "maxAttempts")) {
    const n = boundedInteger("maxAttempts", value.maxAttempts, 1, limits.jobAttemptsMax);
    if (!n.ok) return n;
    request.maxAttempts = n.value;
  }
  if (Object.hasOwn(value, "timeoutMs")) {
    const n = boundedInteger("timeoutMs", value.timeoutMs, 1, limits.attemptTimeoutMaxMs);
    if (!n.ok) return n;
    request.timeoutMs = n.value;
  }
  if (keyField && Object.hasOwn(value, "idempotencyKey")) {
    const raw = value.idempotencyKey;
    if (typeof raw !== "string") {
      return invalid("idempotencyKey", `idempotencyKey must be a string, not ${describe(raw)}`);
    }
    const key = checkIdempotencyKey(raw, {
      field: "idempotencyKey",
      charsMax: limits.idempotencyKeyCharsMax,
    });
    if (!key.ok) return key;
    request.idempotencyKey = key.value;
  }
  // What the job codec can carry (JOB_LIMITS), the check the UDP client path makes too. Most
  // bounds above are stricter; the header count is only bounded here.
  const limited = checkJobLimits(request);
  if (limited !== undefined) return invalid(limited.field, limited.message);
  return ok(request);
}

function decodeUrl(raw: unknown, present: boolean, limits: SubmitLimits): Decoded<string> {
  if (!present) return invalid("url", "url is required (the http(s) URL the job is POSTed to)");
  if (typeof raw !== "string") return invalid("url", `url must be a string, not ${describe(raw)}`);
  // Bytes, as the job codec counts them: a URL of 5,000 "é" is 5,016 characters but 10,016
  // bytes, and accepted by characters it was a job no peer could decode.
  if (!fitsUtf8(raw, JOB_LIMITS.urlBytesMax)) {
    return invalid(
      "url",
      `url is ${utf8Bytes(raw)} bytes as UTF-8; at most ${JOB_LIMITS.urlBytesMax} bytes`,
    );
  }
  // A URL parser percent-encodes these, but the raw text is what the node keeps and shows
  // (hookd status, the dashboard), where an ESC or a C1 CSI would drive a terminal.
  if (URL_FORBIDDEN.test(raw)) {
    return invalid("url", "url must not contain spaces or control characters; percent-encode them");
  }
  const checked = checkJob({ ...CHECK_BASE, url: raw }, limits);
  if (!checked.ok) return invalid("url", checked.reason);
  return ok(raw);
}

/** The job's payload as the JSON text the store keeps and the receiver gets. */
function encodePayload(
  job: Readonly<Record<string, unknown>>,
  numberTexts: NumberTexts | undefined,
  bytesMax: number,
): Decoded<string> {
  let text: string;
  try {
    // Re-serialised from the parsed value: the receiver gets compact JSON whatever the
    // client's spacing, with its numbers as the client wrote them (json_text.ts). A nesting
    // deep enough to overflow the stack lands in the catch.
    text = stringifyKept(job, "payload", numberTexts);
  } catch {
    return invalid("payload", "payload is nested too deeply to serialise");
  }
  // UTF-8 needs at most 3 bytes per UTF-16 unit: most payloads skip the encode.
  if (text.length * 3 > bytesMax && encoder.encode(text).length > bytesMax) {
    return err({
      code: "payload_too_large",
      message: `payload is larger than ${bytesMax} bytes as JSON text`,
      field: "payload",
    });
  }
  return ok(text);
}

function decodeHeaders(raw: unknown, bytesMax: number): Decoded<Record<string, string>> {
  if (!isPlainObject(raw)) {
    return invalid("headers", `headers must be an object of name to value, not ${describe(raw)}`);
  }
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value !== "string") {
      return invalid(
        "headers",
        `header ${shown(name)} must have a string value, not ${describe(value)}`,
      );
    }
  }
  // fromEntries defines properties rather than assigning them, so a "__proto__" header name
  // stays an ordinary key instead of replacing the record's prototype.
  const headers = Object.fromEntries(Object.entries(raw)) as Record<string, string>;
  const checked = checkJob({ ...CHECK_BASE, headers }, {
    payloadBytesMax: 0,
    jobHeadersBytesMax: bytesMax,
  });
  if (!checked.ok) return invalid("headers", checked.reason);
  return ok(headers);
}

function decodeSecret(raw: unknown): Decoded<string> {
  if (typeof raw !== "string") {
    return invalid("secret", `secret must be a string, not ${describe(raw)}`);
  }
  if (!raw.startsWith(SECRET_PREFIX)) return invalid("secret", "secret must be whsec_<base64>");
  const checked = checkJob({ ...CHECK_BASE, secrets: [raw] }, {
    payloadBytesMax: 0,
    jobHeadersBytesMax: 0,
  });
  if (!checked.ok) return invalid("secret", checked.reason);
  return ok(raw);
}

function boundedInteger(field: string, raw: unknown, min: number, max: number): Decoded<number> {
  if (typeof raw !== "number" || !Number.isInteger(raw) || raw < min || raw > max) {
    const got = typeof raw === "number" ? String(raw) : describe(raw);
    return invalid(field, `${field} must be an integer in [${min}, ${max}], got ${got}`);
  }
  return ok(raw);
}

/** An idempotency key from the header (`field` "Idempotency-Key") or a batch item. */
export function checkIdempotencyKey(
  key: string,
  { field, charsMax }: { readonly field: string; readonly charsMax: number },
): Decoded<string> {
  if (key.length === 0 || key.length > charsMax || !PRINTABLE.test(key)) {
    return invalid(field, `${field} must be 1-${charsMax} printable ASCII characters`);
  }
  return ok(key);
}

/** The `jobs` array of a batch body, each item still undecoded. */
export function decodeBatch(value: unknown, jobsMax: number): Decoded<readonly unknown[]> {
  if (!isPlainObject(value)) {
    return invalid(
      undefined,
      `the body must be a JSON object {"jobs": [...]}, not ${describe(value)}`,
    );
  }
  for (const key of Object.keys(value)) {
    if (!(BATCH_FIELDS as readonly string[]).includes(key)) {
      return invalid(key, `unknown field ${shown(key)}; a batch has only "jobs"`);
    }
  }
  const jobs = value.jobs;
  if (!Object.hasOwn(value, "jobs")) return invalid("jobs", "jobs is required (an array of jobs)");
  if (!Array.isArray(jobs)) return invalid("jobs", `jobs must be an array, not ${describe(jobs)}`);
  if (jobs.length > jobsMax) {
    return invalid("jobs", `a batch carries at most ${jobsMax} jobs, got ${jobs.length}`);
  }
  return ok(jobs);
}

/** `?limit=`: absent gives the default; otherwise an integer in [1, max]. */
export function decodeLimit(
  raw: string | null,
  { defaultLimit, max }: { readonly defaultLimit: number; readonly max: number },
): Decoded<number> {
  if (raw === null) return ok(defaultLimit);
  if (!/^[0-9]{1,9}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    return invalid("limit", `limit must be an integer in [1, ${max}], got ${shown(raw)}`);
  }
  return ok(Number(raw));
}

/** `?cursor=`: absent, or an opaque printable string the store handed out. */
export function decodeCursor(raw: string | null): Decoded<string | undefined> {
  if (raw === null) return ok(undefined);
  if (raw.length === 0 || raw.length > CURSOR_CHARS_MAX || !PRINTABLE.test(raw)) {
    return invalid("cursor", `cursor must be a nextCursor value from an earlier page`);
  }
  return ok(raw);
}
