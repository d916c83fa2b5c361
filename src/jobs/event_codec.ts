/**
 * The byte layout of an event's body (event_model.ts), as the job codec's `event`,
 * `event-commit` and `event-state` records carry it (job_codec.ts).
 *
 * Owns this layout only. It starts with its own format version byte, so a later slice can
 * append fields under version 2 (append-only). The writer asserts our own values are within
 * `JOB_LIMITS`/`ENDPOINT_LIMITS`; the reader throws `DecodeError` on anything else, which the
 * record decoders turn into an error value. Integrity comes from the layers below (CRC32C on
 * the WAL, the transport's authenticated datagrams).
 */

import { type ByteReader, type ByteWriter, DecodeError } from "../lib/bytes.ts";
import { assert } from "../lib/assert.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";
import { readHeaders, writeHeaders } from "./header_fields.ts";
import { type EventBody, eventJobId, type FanoutJob } from "./event_model.ts";
import { URL_STRINGS } from "./shared_strings.ts";

/** The layout's version: 1 is this file's. */
const EVENT_FORMAT_VERSION = 1;

/**
 * Set on a fan-out job's secret count when its endpoint was ordered. An unordered job keeps the
 * bytes it had before the field existed (`secretsMax` is far below it).
 */
const FANOUT_ORDERED_FLAG = 0x80;

export function writeEventBody(w: ByteWriter, body: EventBody): void {
  const e = body.event;
  assert(body.jobs.length <= ENDPOINT_LIMITS.endpointsMax, "an event fans out to too many jobs");
  w.u8(EVENT_FORMAT_VERSION);
  w.str(e.id, JOB_LIMITS.idBytesMax).str(e.type, ENDPOINT_LIMITS.eventTypeCharsMax);
  w.str(e.payload, JOB_LIMITS.payloadBytesMax).f64(e.submittedAtMs);
  w.optStr(e.idempotencyKey, JOB_LIMITS.idempotencyKeyBytesMax).str(e.bodyHash, 128);
  w.u32(body.jobs.length);
  for (const j of body.jobs) {
    assert(j.secrets.length <= JOB_LIMITS.secretsMax, "too many secrets");
    w.str(j.endpointId, ENDPOINT_LIMITS.idBytesMax).str(j.url, JOB_LIMITS.urlBytesMax);
    writeHeaders(w, j.headers);
    w.u8(j.secrets.length | (j.ordered === true ? FANOUT_ORDERED_FLAG : 0));
    for (const s of j.secrets) w.str(s, JOB_LIMITS.secretBytesMax);
    w.u32(j.timeoutMs).u16(j.maxAttempts);
  }
}

export function readEventBody(r: ByteReader): EventBody {
  const version = r.u8();
  if (version !== EVENT_FORMAT_VERSION) throw new DecodeError(`unknown event format ${version}`);
  const id = r.str(JOB_LIMITS.idBytesMax);
  const type = r.str(ENDPOINT_LIMITS.eventTypeCharsMax);
  const payload = r.str(JOB_LIMITS.payloadBytesMax);
  const submittedAtMs = r.f64();
  const idempotencyKey = r.optStr(JOB_LIMITS.idempotencyKeyBytesMax);
  const bodyHash = r.str(128);
  if (id.length === 0 || type.length === 0) throw new DecodeError("empty event id or type");
  const count = r.u32();
  if (count > ENDPOINT_LIMITS.endpointsMax) throw new DecodeError("an event with too many jobs");
  const jobs: FanoutJob[] = [];
  let last = "";
  for (let i = 0; i < count; i++) {
    const endpointId = r.str(ENDPOINT_LIMITS.idBytesMax);
    // Strictly ascending: every replica makes the same jobs, and no job twice.
    if (endpointId.length === 0 || (i > 0 && endpointId <= last)) {
      throw new DecodeError("an event's endpoints must ascend");
    }
    last = endpointId;
    if (new TextEncoder().encode(eventJobId(id, endpointId)).length > JOB_LIMITS.idBytesMax) {
      throw new DecodeError("an event's job id is too long");
    }
    const url = r.strCached(JOB_LIMITS.urlBytesMax, URL_STRINGS);
    const headers = readHeaders(r);
    const countByte = r.u8();
    const ordered = (countByte & FANOUT_ORDERED_FLAG) !== 0;
    const secretCount = countByte & ~FANOUT_ORDERED_FLAG;
    if (secretCount > JOB_LIMITS.secretsMax) throw new DecodeError("too many secrets");
    const secrets: string[] = [];
    for (let s = 0; s < secretCount; s++) secrets.push(r.str(JOB_LIMITS.secretBytesMax));
    const timeoutMs = r.u32();
    const maxAttempts = r.u16();
    if (maxAttempts < 1) throw new DecodeError("maxAttempts must be >= 1");
    jobs.push({
      endpointId,
      url,
      headers,
      secrets,
      timeoutMs,
      maxAttempts,
      ...(ordered ? { ordered: true as const } : {}),
    });
  }
  return {
    event: {
      id,
      type,
      payload,
      submittedAtMs,
      ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      bodyHash,
    },
    jobs,
  };
}
