/**
 * The job limits (config.ts `JOB_LIMITS`) as checks: whether a submit request fits what the
 * job codec can carry, field by field, in the units the codec counts (UTF-8 bytes, item
 * counts), and the largest SUBMIT record a job within them encodes to.
 *
 * Owns the check only; the one submit validator (submit_validation.ts, run by the API, the
 * UDP client path and the delivery engine) calls it, the UDP client checks its own requests
 * with it before sending, and the codec decodes by the same `JOB_LIMITS`, so what is accepted
 * and what can be stored cannot drift apart again. Pure, never throws.
 */

import { JOB_LIMITS } from "../config/job_limits.ts";
import type { SubmitRequest } from "./types.ts";

/** Why a request does not fit: the field a client must fix, and a sentence naming the limit. */
export interface LimitProblem {
  readonly field: "url" | "payload" | "headers" | "secret" | "idempotencyKey";
  readonly message: string;
}

/**
 * UTF-8 bytes of `text`, counted without encoding it, stopping early once past `stopAbove`
 * (the caller only needs to know it is too big). Lone surrogates count 3, as TextEncoder
 * writes them (U+FFFD).
 */
export function utf8Bytes(text: string, stopAbove = Infinity): number {
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= stopAbove; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Whether `text` is at most `bytesMax` UTF-8 bytes; most strings are decided by length. */
export function fitsUtf8(text: string, bytesMax: number): boolean {
  if (text.length * 3 <= bytesMax) return true;
  if (text.length > bytesMax) return false;
  return utf8Bytes(text, bytesMax) <= bytesMax;
}

/** The first field of `request` past a `JOB_LIMITS` bound, or undefined when all fit. */
export function checkJobLimits(request: SubmitRequest): LimitProblem | undefined {
  const L = JOB_LIMITS;
  if (!fitsUtf8(request.url, L.urlBytesMax)) {
    return {
      field: "url",
      message: `url is ${utf8Bytes(request.url)} bytes as UTF-8; at most ${L.urlBytesMax} bytes`,
    };
  }
  if (!fitsUtf8(request.payload, L.payloadBytesMax)) {
    return {
      field: "payload",
      message: `payload is larger than ${L.payloadBytesMax} bytes as UTF-8`,
    };
  }
  const headers = Object.entries(request.headers ?? {});
  if (headers.length > L.headersMax) {
    return {
      field: "headers",
      message: `a job carries at most ${L.headersMax} headers, got ${headers.length}`,
    };
  }
  let total = 0;
  for (const [name, value] of headers) {
    const nameBytes = utf8Bytes(name, L.headerBytesMax);
    const valueBytes = utf8Bytes(value, L.headerBytesMax);
    const shown = JSON.stringify(name.slice(0, 64));
    if (nameBytes > L.headerBytesMax || valueBytes > L.headerBytesMax) {
      return {
        field: "headers",
        message: `header ${shown}: a name or value is at most ${L.headerBytesMax} bytes as UTF-8`,
      };
    }
    total += nameBytes + valueBytes;
    if (total > L.headersBytesMax) {
      return {
        field: "headers",
        message: `headers are larger than ${L.headersBytesMax} bytes as UTF-8 (names and values)`,
      };
    }
  }
  if (request.secret !== undefined && !fitsUtf8(request.secret, L.secretBytesMax)) {
    return { field: "secret", message: `secret is at most ${L.secretBytesMax} bytes` };
  }
  const key = request.idempotencyKey;
  if (key !== undefined && !fitsUtf8(key, L.idempotencyKeyBytesMax)) {
    return {
      field: "idempotencyKey",
      message: `idempotency key is at most ${L.idempotencyKeyBytesMax} bytes`,
    };
  }
  return undefined;
}
