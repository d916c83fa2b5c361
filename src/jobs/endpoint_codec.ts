/**
 * The byte layout of one endpoint value (endpoint_model.ts), as the job codec's `endpoint` and
 * `endpoint-state` records carry it (job_codec.ts).
 *
 * Owns this layout only. It starts with its own format version byte. Version 2 appended the
 * rotation's previous secret and its end, and the last success time (docs/endpoints.md); a
 * version-2 reader still reads version 1 (append-only: the new fields read as none). The writer asserts our own
 * values are within `ENDPOINT_LIMITS`/`JOB_LIMITS`; the reader throws `DecodeError` on
 * anything else, which the record decoders turn into an error value (`decodeEndpointState`
 * does so for a value alone). Integrity comes from the layers below (CRC32C on the WAL, the
 * transport's authenticated datagrams).
 */

import { ByteReader, ByteWriter, DecodeError } from "../lib/bytes.ts";
import { assert, fail } from "../lib/assert.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";
import { DISABLED_REASONS, type EndpointState } from "./endpoint_model.ts";
import { readHeaders, writeHeaders } from "./header_fields.ts";

/** The layout's version written: 2 (1 lacks the rotation and health fields; still read). */
const ENDPOINT_FORMAT_VERSION = 2;
const ENDPOINT_FORMAT_VERSION_1 = 1;

const FLAG_ORDERED = 1;
const FLAG_DISABLED = 2;
const FLAG_DELETED = 4;
const FLAGS_KNOWN = FLAG_ORDERED | FLAG_DISABLED | FLAG_DELETED;

/** Longest voter address in a version (the job codec's bound on an origin). */
const ORIGIN_BYTES_MAX = 300;

export function writeEndpointState(w: ByteWriter, s: EndpointState): void {
  assert(s.eventTypes.length <= ENDPOINT_LIMITS.eventTypesMax, "too many event types");
  if (
    !(Number.isInteger(s.rateLimitPerS) && s.rateLimitPerS >= 0 &&
      s.rateLimitPerS <= ENDPOINT_LIMITS.rateLimitPerSMax)
  ) fail(`rateLimitPerS ${s.rateLimitPerS} out of range`);
  assert((s.disabledReason !== "") === s.disabled, "a reason exactly when disabled");
  // The reader refuses a non-finite f64 (NaN would break the merge's total order): a value of
  // ours written so could never be read back, from the WAL or by a peer.
  if (
    !(Number.isFinite(s.createdAtMs) && Number.isFinite(s.version.atMs) &&
      Number.isFinite(s.previousSecretUntilMs) && Number.isFinite(s.lastSuccessAtMs))
  ) fail(`endpoint ${s.id}: times must be finite`);
  w.u8(ENDPOINT_FORMAT_VERSION);
  w.str(s.id, ENDPOINT_LIMITS.idBytesMax).str(s.url, JOB_LIMITS.urlBytesMax);
  w.u16(s.eventTypes.length);
  for (const t of s.eventTypes) w.str(t, ENDPOINT_LIMITS.eventTypeCharsMax);
  w.str(s.secret, JOB_LIMITS.secretBytesMax).str(
    s.description,
    ENDPOINT_LIMITS.descriptionBytesMax,
  );
  writeHeaders(w, s.headers);
  w.u32(s.rateLimitPerS);
  w.u8(
    (s.ordered ? FLAG_ORDERED : 0) | (s.disabled ? FLAG_DISABLED : 0) |
      (s.deleted ? FLAG_DELETED : 0),
  );
  w.u8(DISABLED_REASONS.indexOf(s.disabledReason));
  w.f64(s.createdAtMs).f64(s.version.atMs).str(s.version.origin, ORIGIN_BYTES_MAX);
  w.u53(s.version.seq);
  w.str(s.previousSecret, JOB_LIMITS.secretBytesMax);
  w.f64(s.previousSecretUntilMs).f64(s.lastSuccessAtMs);
}

export function readEndpointState(r: ByteReader): EndpointState {
  const format = r.u8();
  if (format !== ENDPOINT_FORMAT_VERSION && format !== ENDPOINT_FORMAT_VERSION_1) {
    throw new DecodeError(`unknown endpoint format version ${format}`);
  }
  const id = r.str(ENDPOINT_LIMITS.idBytesMax);
  if (id.length === 0) throw new DecodeError("empty endpoint id");
  const url = r.str(JOB_LIMITS.urlBytesMax);
  const typeCount = r.u16();
  if (typeCount > ENDPOINT_LIMITS.eventTypesMax) throw new DecodeError("too many event types");
  const eventTypes: string[] = [];
  for (let i = 0; i < typeCount; i++) eventTypes.push(r.str(ENDPOINT_LIMITS.eventTypeCharsMax));
  const secret = r.str(JOB_LIMITS.secretBytesMax);
  const description = r.str(ENDPOINT_LIMITS.descriptionBytesMax);
  const headers = readHeaders(r);
  const rateLimitPerS = r.u32();
  if (rateLimitPerS > ENDPOINT_LIMITS.rateLimitPerSMax) {
    throw new DecodeError("rate limit out of range");
  }
  const flags = r.u8();
  if ((flags & ~FLAGS_KNOWN) !== 0) throw new DecodeError("unknown endpoint flags");
  const disabledReason = DISABLED_REASONS[r.u8()];
  if (disabledReason === undefined) throw new DecodeError("unknown disabled reason");
  const disabled = (flags & FLAG_DISABLED) !== 0;
  if ((disabledReason !== "") !== disabled) {
    throw new DecodeError("a disabled reason exactly when disabled");
  }
  const createdAtMs = r.f64();
  const atMs = r.f64();
  const origin = r.str(ORIGIN_BYTES_MAX);
  const seq = r.u53();
  if (seq < 1) throw new DecodeError("endpoint version seq must be >= 1");
  let previousSecret = "";
  let previousSecretUntilMs = 0;
  let lastSuccessAtMs = 0;
  if (format === ENDPOINT_FORMAT_VERSION) {
    previousSecret = r.str(JOB_LIMITS.secretBytesMax);
    previousSecretUntilMs = r.f64();
    lastSuccessAtMs = r.f64();
  }
  return {
    id,
    url,
    eventTypes,
    secret,
    description,
    headers,
    rateLimitPerS,
    ordered: (flags & FLAG_ORDERED) !== 0,
    disabled,
    disabledReason,
    createdAtMs,
    previousSecret,
    previousSecretUntilMs,
    lastSuccessAtMs,
    deleted: (flags & FLAG_DELETED) !== 0,
    version: { atMs, origin, seq },
  };
}

/** One endpoint value as bytes (tests, and sizing a write before it is proposed). */
export function encodeEndpointState(s: EndpointState): Uint8Array {
  const w = new ByteWriter(256 + s.url.length + s.description.length);
  writeEndpointState(w, s);
  return w.finish();
}

/**
 * The size `ENDPOINT_LIMITS.endpointBytesMax` bounds: the value encoded with an empty version
 * origin, so every node measures one value alike whatever its own address.
 */
export function endpointBytes(s: EndpointState): number {
  return encodeEndpointState({ ...s, version: { ...s.version, origin: "" } }).length;
}

/** Decodes one endpoint value; never throws on hostile bytes. */
export function decodeEndpointState(bytes: Uint8Array): Result<EndpointState> {
  try {
    const r = new ByteReader(bytes);
    const s = readEndpointState(r);
    r.end();
    return ok(s);
  } catch (e) {
    if (e instanceof DecodeError) return err(`bad endpoint: ${e.message}`);
    throw e;
  }
}
