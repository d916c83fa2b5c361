/**
 * Decoders from untrusted JSON (and headers, and query strings) to the job store's
 * `SubmitRequest`: every check a submit must pass before the store sees it, each failure
 * naming the field a client must fix.
 *
 * Owns the request vocabulary (which fields exist, their JSON types). The rules a job must
 * meet (URL, payload size, headers, secret, attempt and timeout bounds, idempotency key, what
 * the codec carries) are `validateSubmit` (delivery/submit_validation.ts), the one validator
 * the UDP client path and the delivery engine run too. Pure: no I/O, no clock; never throws
 * on hostile input.
 */

import {
  checkIdempotencyKey as keyRefusal,
  type SubmitLimits,
  validateSubmit,
} from "../delivery/submit_validation.ts";
import type { SubmitRequest } from "../jobs/service.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { type NumberTexts, stringifyKept } from "./json_text.ts";

export type { SubmitLimits };

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

/** Printable ASCII, the space included (RFC 9110 field values, minus obs-text). */
const PRINTABLE = /^[\x20-\x7e]+$/;
/** Longest dead-letter cursor accepted; the store's cursors are short opaque strings. */
export const CURSOR_CHARS_MAX = 1024;

type Decoded<T> = Result<T, FieldError>;

export function invalid(
  field: string | undefined,
  message: string,
): { ok: false; reason: FieldError } {
  return err(
    field === undefined ? { code: "invalid", message } : { code: "invalid", message, field },
  );
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function describe(value: unknown): string {
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

  if (!Object.hasOwn(value, "url")) {
    return invalid("url", "url is required (the http(s) URL the job is POSTed to)");
  }
  if (typeof value.url !== "string") {
    return invalid("url", `url must be a string, not ${describe(value.url)}`);
  }
  if (!Object.hasOwn(value, "payload")) return invalid("payload", "payload is required (any JSON)");
  const payload = encodePayload(value, numberTexts);
  if (!payload.ok) return payload;

  const request: {
    url: string;
    payload: string;
    headers?: Record<string, string>;
    secret?: string;
    maxAttempts?: number;
    timeoutMs?: number;
    idempotencyKey?: string;
  } = { url: value.url, payload: payload.value };

  if (Object.hasOwn(value, "headers")) {
    const headers = decodeHeaders(value.headers);
    if (!headers.ok) return headers;
    request.headers = headers.value;
  }
  if (Object.hasOwn(value, "secret")) {
    if (typeof value.secret !== "string") {
      return invalid("secret", `secret must be a string, not ${describe(value.secret)}`);
    }
    request.secret = value.secret;
  }
  for (
    const [field, max] of [["maxAttempts", limits.maxAttemptsMax], [
      "timeoutMs",
      limits.attemptTimeoutMaxMs,
    ]] as const
  ) {
    if (!Object.hasOwn(value, field)) continue;
    const raw = value[field];
    if (typeof raw !== "number") {
      return invalid(field, `${field} must be an integer in [1, ${max}], got ${describe(raw)}`);
    }
    request[field] = raw;
  }
  if (keyField && Object.hasOwn(value, "idempotencyKey")) {
    const raw = value.idempotencyKey;
    if (typeof raw !== "string") {
      return invalid("idempotencyKey", `idempotencyKey must be a string, not ${describe(raw)}`);
    }
    request.idempotencyKey = raw;
  }
  // The rules themselves, the same on every path a job comes in by (submit_validation.ts).
  const checked = validateSubmit(request, limits);
  if (!checked.ok) {
    const { field, message } = checked.reason;
    // The payload's only rule is its size: 413, as a body over the limit.
    return field === "payload"
      ? err({ code: "payload_too_large", message, field })
      : invalid(field, message);
  }
  return ok(checked.value);
}

/** The job's (or event's) payload as the JSON text the store keeps and the receiver gets. */
export function encodePayload(
  job: Readonly<Record<string, unknown>>,
  numberTexts: NumberTexts | undefined,
): Decoded<string> {
  try {
    // Re-serialised from the parsed value: the receiver gets compact JSON whatever the
    // client's spacing, with its numbers as the client wrote them (json_text.ts). A nesting
    // deep enough to overflow the stack lands in the catch.
    return ok(stringifyKept(job, "payload", numberTexts));
  } catch {
    return invalid("payload", "payload is nested too deeply to serialise");
  }
}

function decodeHeaders(raw: unknown): Decoded<Record<string, string>> {
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
  return ok(Object.fromEntries(Object.entries(raw)) as Record<string, string>);
}

/** An idempotency key from the header (`field` "Idempotency-Key") or a batch item. */
export function checkIdempotencyKey(
  key: string,
  { field, charsMax }: { readonly field: string; readonly charsMax: number },
): Decoded<string> {
  const refused = keyRefusal(key, { field, charsMax });
  return refused === undefined ? ok(key) : invalid(field, refused);
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
