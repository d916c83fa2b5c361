/**
 * The API's error vocabulary: every code a client can see, the HTTP status each one maps to,
 * and the `{"error": {code, message, field?, retryAfterS?}}` body they all share.
 *
 * Owns the code→status table (one exhaustive switch, so a new code cannot ship without a
 * status) and the mapping of the job store's refusals. Must not touch requests or the store.
 */

import { fail, unreachable } from "../lib/assert.ts";
import type { Refusal, RefusalCode } from "../jobs/service.ts";

/** The store's refusal codes plus the ones the HTTP edge raises itself. */
export type ApiErrorCode =
  | RefusalCode
  /** The body is not JSON (or not UTF-8, or ended early): 400. */
  | "malformed_json"
  /** An API token is configured and the request does not carry it: 401. */
  | "unauthorized"
  /** No route has this path: 404 (a missing job is `not_found` too). */
  | "route_not_found"
  /** The path exists, the method does not: 405 with `Allow`. */
  | "method_not_allowed"
  /** The body did not arrive within `api.bodyReadTimeoutMs`: 408. */
  | "body_timeout"
  /** The body, or a job's payload, is over its bound: 413. */
  | "payload_too_large"
  /** A body that is not declared `application/json`: 415. */
  | "unsupported_media_type"
  /** A bug, or a store that threw instead of refusing: 500 (the cause is logged, not sent). */
  | "internal";

/**
 * Every code once. A record keyed by the union, so a code added to the type and not here is a
 * type error (the OpenAPI document's enum is built from this list).
 */
const ALL_CODES: Readonly<Record<ApiErrorCode, true>> = {
  invalid: true,
  malformed_json: true,
  unauthorized: true,
  not_found: true,
  route_not_found: true,
  method_not_allowed: true,
  body_timeout: true,
  idempotency_conflict: true,
  not_dead_letter: true,
  payload_too_large: true,
  unsupported_media_type: true,
  internal: true,
  no_quorum: true,
  overloaded: true,
  not_ready: true,
  shutting_down: true,
  storage_failed: true,
};
export const API_ERROR_CODES: readonly ApiErrorCode[] = Object.freeze(
  Object.keys(ALL_CODES) as ApiErrorCode[],
);

export interface ApiError {
  readonly code: ApiErrorCode;
  readonly message: string;
  /** The offending request field, header or query parameter. */
  readonly field?: string;
  /** For 503s: seconds to wait before trying again (also sent as `Retry-After`). */
  readonly retryAfterS?: number;
}

export function statusOf(code: ApiErrorCode): number {
  switch (code) {
    case "invalid":
    case "malformed_json":
      return 400;
    case "unauthorized":
      return 401;
    case "not_found":
    case "route_not_found":
      return 404;
    case "method_not_allowed":
      return 405;
    case "body_timeout":
      return 408;
    case "idempotency_conflict":
    case "not_dead_letter":
      return 409;
    case "payload_too_large":
      return 413;
    case "unsupported_media_type":
      return 415;
    case "internal":
      return 500;
    case "no_quorum":
    case "overloaded":
    case "not_ready":
    case "shutting_down":
    case "storage_failed":
      return 503;
    default:
      return unreachable(code, "API error code");
  }
}

/**
 * A store refusal as an API error. Every 503 carries a whole number of seconds (>= 1): a
 * client told "0" would retry in a tight loop against a node that just said it is full.
 */
export function refusalError(refusal: Refusal, defaultRetryAfterS: number): ApiError {
  const base = { code: refusal.code, message: refusal.message };
  const withField = refusal.field !== undefined ? { ...base, field: refusal.field } : base;
  if (statusOf(refusal.code) !== 503) return withField;
  return { ...withField, retryAfterS: retryAfterSeconds(refusal.retryAfterS, defaultRetryAfterS) };
}

export function retryAfterSeconds(asked: number | undefined, defaultS: number): number {
  if (asked === undefined || !Number.isFinite(asked)) return defaultS;
  return Math.max(1, Math.ceil(asked));
}

/** The error's JSON object (also a batch item's `error`). */
export function errorBody(error: ApiError): Record<string, unknown> {
  const body: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.field !== undefined) body.field = error.field;
  if (error.retryAfterS !== undefined) body.retryAfterS = error.retryAfterS;
  return body;
}

export function errorResponse(error: ApiError, headers: Record<string, string> = {}): Response {
  const status = statusOf(error.code);
  const extra: Record<string, string> = { ...headers };
  if (status === 503) {
    if (error.retryAfterS === undefined) fail(`503 error ${error.code} without retryAfterS`);
    extra["retry-after"] = String(error.retryAfterS);
  }
  return jsonResponse(status, { error: errorBody(error) }, extra);
}

export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      // Job states and cluster views change by the millisecond; a cached copy only misleads.
      "cache-control": "no-store",
      ...headers,
    },
  });
}
