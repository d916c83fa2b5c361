/**
 * Decoders from untrusted JSON to the endpoint fields the store takes (docs/endpoints.md):
 * `POST /v1/endpoints` (a create) and `PATCH /v1/endpoints/{id}` (the fields given), each
 * failure naming the field a client must fix, in the API's snake_case names.
 *
 * Owns the endpoint request vocabulary. An endpoint's URL, headers and secret go into every job
 * made from it, so they are checked by the job validator itself (`validateSubmit`, with an
 * empty payload): an endpoint is refused exactly what a job to that URL would be. Pure: no
 * I/O, no clock (a create's generated secret comes from the caller); never throws on hostile
 * input.
 */

import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import {
  loneSurrogateRefusal,
  type SubmitLimits,
  validateSubmit,
} from "../delivery/submit_validation.ts";
import type { EndpointFields } from "../jobs/service.ts";
import { ok, type Result } from "../lib/result.ts";
import { describe, type FieldError, invalid, isPlainObject } from "./validate.ts";

/** The fields of an endpoint's JSON body; any other is a 400. */
export const ENDPOINT_FIELDS = [
  "url",
  "event_types",
  "secret",
  "description",
  "headers",
  "rate_limit_per_s",
  "ordered",
  "disabled",
] as const;

type Decoded<T> = Result<T, FieldError>;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** An event type: printable ASCII without spaces (`invoice.paid`). */
const EVENT_TYPE = /^[\x21-\x7e]+$/;

/** Whether `t` is an event type: 1 to `eventTypeCharsMax` printable ASCII without spaces. */
export function isEventType(t: unknown): t is string {
  return typeof t === "string" && t.length <= ENDPOINT_LIMITS.eventTypeCharsMax &&
    EVENT_TYPE.test(t);
}
const encoder = new TextEncoder();

/** A create: `url` required; the rest default (every type, no limit, enabled, unordered). */
export function decodeEndpointCreate(
  value: unknown,
  limits: SubmitLimits,
  generatedSecret: string,
): Decoded<EndpointFields> {
  const given = decodeFields(value, limits, true);
  if (!given.ok) return given;
  const f = given.value;
  return ok({
    url: f.url!,
    eventTypes: f.eventTypes ?? [],
    secret: f.secret ?? generatedSecret,
    description: f.description ?? "",
    headers: f.headers ?? {},
    rateLimitPerS: f.rateLimitPerS ?? 0,
    ordered: f.ordered ?? false,
    disabled: f.disabled ?? false,
    disabledReason: "",
  });
}

/** A PATCH: the fields given (at least one), each checked as in a create. */
export function decodeEndpointPatch(
  value: unknown,
  limits: SubmitLimits,
): Decoded<Partial<EndpointFields>> {
  return decodeFields(value, limits, false);
}

function decodeFields(
  value: unknown,
  limits: SubmitLimits,
  create: boolean,
): Decoded<Partial<EndpointFields>> {
  if (!isPlainObject(value)) {
    return invalid(undefined, `an endpoint must be a JSON object, not ${describe(value)}`);
  }
  const known: readonly string[] = ENDPOINT_FIELDS;
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      return invalid(
        key,
        `unknown field ${JSON.stringify(key.slice(0, 64))}; an endpoint has ${known.join(", ")}`,
      );
    }
  }
  if (create && !Object.hasOwn(value, "url")) {
    return invalid("url", "url is required (the http(s) URL events are POSTed to)");
  }
  if (!create && Object.keys(value).length === 0) {
    return invalid(undefined, `a PATCH names at least one of ${known.join(", ")}`);
  }
  const out: Mutable<Partial<EndpointFields>> = {};
  const has = (field: string) => Object.hasOwn(value, field);

  // URL, headers and secret: the job validator's rules, since the endpoint's jobs carry them.
  const job: { url: string; payload: string; headers?: Record<string, string>; secret?: string } = {
    url: "https://endpoint.invalid/",
    payload: "",
  };
  if (has("url")) {
    if (typeof value.url !== "string") {
      return invalid("url", `url must be a string, not ${describe(value.url)}`);
    }
    job.url = out.url = value.url;
  }
  if (has("headers")) {
    const raw = value.headers;
    if (!isPlainObject(raw) || Object.values(raw).some((v) => typeof v !== "string")) {
      return invalid("headers", "headers must be an object of header name to string value");
    }
    // fromEntries defines properties, so a "__proto__" name stays an ordinary key.
    job.headers = out.headers = Object.fromEntries(Object.entries(raw)) as Record<string, string>;
  }
  if (has("secret")) {
    if (typeof value.secret !== "string") {
      return invalid("secret", `secret must be a string, not ${describe(value.secret)}`);
    }
    job.secret = out.secret = value.secret;
  }
  const checked = validateSubmit(job, limits);
  if (!checked.ok) return invalid(checked.reason.field, checked.reason.message);

  if (has("event_types")) {
    const types = decodeEventTypes(value.event_types);
    if (!types.ok) return types;
    out.eventTypes = types.value;
  }
  if (has("description")) {
    const d = value.description;
    if (typeof d !== "string") {
      return invalid("description", `description must be a string, not ${describe(d)}`);
    }
    if (!d.isWellFormed()) return invalid("description", loneSurrogateRefusal("description"));
    if (encoder.encode(d).length > ENDPOINT_LIMITS.descriptionBytesMax) {
      return invalid(
        "description",
        `description is longer than ${ENDPOINT_LIMITS.descriptionBytesMax} bytes as UTF-8`,
      );
    }
    out.description = d;
  }
  if (has("rate_limit_per_s")) {
    const r = value.rate_limit_per_s;
    const max = ENDPOINT_LIMITS.rateLimitPerSMax;
    if (typeof r !== "number" || !Number.isInteger(r) || r < 0 || r > max) {
      return invalid(
        "rate_limit_per_s",
        `rate_limit_per_s must be an integer in [0, ${max}] (0: no limit), got ${
          typeof r === "number" ? r : describe(r)
        }`,
      );
    }
    out.rateLimitPerS = r;
  }
  for (const field of ["ordered", "disabled"] as const) {
    if (!has(field)) continue;
    const b = value[field];
    if (typeof b !== "boolean") {
      return invalid(field, `${field} must be true or false, not ${describe(b)}`);
    }
    out[field] = b;
  }
  return ok(out);
}

function decodeEventTypes(raw: unknown): Decoded<string[]> {
  const max = ENDPOINT_LIMITS.eventTypesMax;
  const charsMax = ENDPOINT_LIMITS.eventTypeCharsMax;
  if (!Array.isArray(raw)) {
    return invalid("event_types", `event_types must be an array of strings, not ${describe(raw)}`);
  }
  if (raw.length > max) {
    return invalid("event_types", `event_types holds at most ${max} types, got ${raw.length}`);
  }
  const types: string[] = [];
  for (const t of raw) {
    if (!isEventType(t)) {
      return invalid(
        "event_types",
        `each event type is 1-${charsMax} printable ASCII characters without spaces ` +
          `(e.g. "invoice.paid"), not ${
            typeof t === "string" ? JSON.stringify(t.slice(0, 64)) : describe(t)
          }`,
      );
    }
    if (!types.includes(t)) types.push(t);
  }
  return ok(types);
}

/** The fields of `POST /v1/endpoints/{id}/secret/rotate`'s (optional) body. */
export const ROTATE_FIELDS = ["secret"] as const;

/**
 * A rotation's body: `{secret?}`, the new secret checked as a create's (`generatedSecret`
 * when none is given).
 */
export function decodeEndpointRotate(
  value: unknown,
  limits: SubmitLimits,
  generatedSecret: string,
): Decoded<string> {
  if (!isPlainObject(value)) {
    return invalid(undefined, `a rotation's body must be a JSON object, not ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (key !== "secret") {
      return invalid(
        key,
        `unknown field ${JSON.stringify(key.slice(0, 64))}; a rotation has secret`,
      );
    }
  }
  if (!Object.hasOwn(value, "secret")) return ok(generatedSecret);
  if (typeof value.secret !== "string") {
    return invalid("secret", `secret must be a string, not ${describe(value.secret)}`);
  }
  const checked = validateSubmit(
    { url: "https://endpoint.invalid/", payload: "", secret: value.secret },
    limits,
  );
  if (!checked.ok) return invalid(checked.reason.field, checked.reason.message);
  return ok(value.secret);
}

/** The fields of `POST /v1/endpoints/{id}/recover`'s body. */
export const RECOVER_FIELDS = ["since"] as const;

/** An ISO 8601 date-time (a date alone, or with a time and an optional zone). */
const ISO_TIME =
  /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A recover's body: `{since}`, an ISO 8601 time or epoch milliseconds (a non-negative
 * integer, or its digits as a string); returns epoch ms.
 */
export function decodeRecover(value: unknown): Decoded<number> {
  if (!isPlainObject(value)) {
    return invalid(undefined, `a recover's body must be a JSON object, not ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (key !== "since") {
      return invalid(key, `unknown field ${JSON.stringify(key.slice(0, 64))}; a recover has since`);
    }
  }
  const since = value.since;
  const bad = () =>
    invalid(
      "since",
      "since must be an ISO 8601 time (2025-01-31T12:00:00Z) or epoch milliseconds, not " +
        (typeof since === "string" ? JSON.stringify(since.slice(0, 64)) : describe(since)),
    );
  if (since === undefined) return invalid("since", "since is required (ISO 8601 or epoch ms)");
  if (typeof since === "number") {
    return Number.isSafeInteger(since) && since >= 0 ? ok(since) : bad();
  }
  if (typeof since !== "string") return bad();
  if (/^\d{1,15}$/.test(since)) return ok(Number(since));
  if (!ISO_TIME.test(since)) return bad();
  const ms = Date.parse(since);
  return Number.isFinite(ms) && ms >= 0 ? ok(ms) : bad();
}
