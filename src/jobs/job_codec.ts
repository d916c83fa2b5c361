/**
 * Record and WAL layout of the job store: records (on the WAL and inside replication
 * messages), record lists, and WAL batches. The messages nodes and UDP clients exchange are
 * job_messages.ts's; it builds on the record lists and field layouts exported here.
 *
 * Owns these byte layouts only; must not know message kinds, channels or peers. Every format starts with a magic byte and a version byte; every
 * variable field is length-prefixed and bounded. Encoders assert on programmer errors (our own
 * values are valid); decoders never throw on hostile bytes: they return `{ ok: false }`, and
 * the caller counts it. Integrity and authenticity come from the layers below (CRC32C frames
 * on the WAL, the transport's authenticated datagrams).
 */

import { ByteReader, ByteWriter, DecodeError } from "../lib/bytes.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { ADDRESS_STRINGS, URL_STRINGS } from "./shared_strings.ts";
import { assert, fail, unreachable } from "../lib/assert.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";
import { ATTEMPT_OUTCOMES } from "../delivery/types.ts";
import { readHeaders, writeHeaders } from "./header_fields.ts";
import { readEndpointState, writeEndpointState } from "./endpoint_codec.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import { readEventBody, writeEventBody } from "./event_codec.ts";
import {
  type AttemptEntry,
  type HeldRanges,
  type JobPhase,
  type JobRecord,
  type JobSpec,
  type JobStateSnapshot,
  type KeyTombstone,
  sameStamp,
  type Stamp,
} from "./job_model.ts";

export { readHeaders, writeHeaders };

const WAL_BATCH_MAGIC = 0x4a; // "J"
const WAL_BATCH_VERSION = 1;

/**
 * Decode bounds, which the encoders assert too. A job's fields are `JOB_LIMITS` (config.ts),
 * the one source the API and the UDP client path validate by; the rest bound what only nodes
 * write (addresses, hashes, reasons) tightly enough to stop a hostile size.
 */
export const CODEC_LIMITS = Object.freeze({
  idBytesMax: JOB_LIMITS.idBytesMax,
  urlBytesMax: JOB_LIMITS.urlBytesMax,
  payloadBytesMax: JOB_LIMITS.payloadBytesMax,
  headerBytesMax: JOB_LIMITS.headerBytesMax,
  headersBytesMax: JOB_LIMITS.headersBytesMax,
  headersMax: JOB_LIMITS.headersMax,
  secretsMax: JOB_LIMITS.secretsMax,
  secretBytesMax: JOB_LIMITS.secretBytesMax,
  keyBytesMax: JOB_LIMITS.idempotencyKeyBytesMax,
  hashBytesMax: 128,
  addressBytesMax: 300,
  detailBytesMax: 8192,
  reasonBytesMax: 8192,
  historyMax: 1024,
  rangesMax: 65536,
  recordsMax: 1_000_000,
  recordBytesMax: 32 * 1024 * 1024,
  messageCodeBytesMax: 64,
});

const RECORD_CODES = {
  submit: 1,
  commit: 2,
  retry: 3,
  done: 4,
  dead: 5,
  revive: 6,
  skip: 7,
  endpoint: 8,
  event: 9,
  "event-commit": 10,
  "endpoint-health": 11,
  state: 20,
  key: 21,
  meta: 22,
  gone: 23,
  "endpoint-state": 24,
  "event-state": 25,
} as const satisfies Record<JobRecord["type"], number>;

const PHASES: readonly JobPhase[] = ["pending", "dead", "delivered"];

// ---------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------

export function writeStamp(w: ByteWriter, s: Stamp): void {
  w.str(s.origin, CODEC_LIMITS.addressBytesMax).u53(s.seq);
}

export function readStamp(r: ByteReader): Stamp {
  const origin = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
  const seq = r.u53();
  if (seq < 1) throw new DecodeError("seq must be >= 1");
  return { origin, seq };
}

/**
 * Set on a spec's secret count when a `webhookId` follows the secrets (an event's job). A job
 * without one is written as before the field existed, so older logs and peers read the same
 * bytes (as `ATTEMPT_RETRY_FLAG` does for attempts).
 */
const SPEC_WEBHOOK_ID_FLAG = 0x80;
/** Set on a spec's secret count for an ordered endpoint's job; others keep their bytes. */
const SPEC_ORDERED_FLAG = 0x40;

function writeSpec(w: ByteWriter, s: JobSpec): void {
  w.str(s.id, CODEC_LIMITS.idBytesMax).str(s.url, CODEC_LIMITS.urlBytesMax);
  w.str(s.payload, CODEC_LIMITS.payloadBytesMax);
  writeHeaders(w, s.headers);
  if (!(s.secrets.length <= CODEC_LIMITS.secretsMax)) {
    fail(`${s.secrets.length} secrets exceed secretsMax`);
  }
  w.u8(
    s.secrets.length | (s.webhookId !== undefined ? SPEC_WEBHOOK_ID_FLAG : 0) |
      (s.ordered === true ? SPEC_ORDERED_FLAG : 0),
  );
  for (const secret of s.secrets) w.str(secret, CODEC_LIMITS.secretBytesMax);
  if (s.webhookId !== undefined) w.str(s.webhookId, CODEC_LIMITS.idBytesMax);
  w.u32(s.timeoutMs).u16(s.maxAttempts).f64(s.submittedAtMs);
  w.optStr(s.idempotencyKey, CODEC_LIMITS.keyBytesMax).str(s.bodyHash, CODEC_LIMITS.hashBytesMax);
}

function readSpec(r: ByteReader): JobSpec {
  const id = r.str(CODEC_LIMITS.idBytesMax);
  const url = r.strCached(CODEC_LIMITS.urlBytesMax, URL_STRINGS);
  const payload = r.str(CODEC_LIMITS.payloadBytesMax);
  const headers = readHeaders(r);
  const countByte = r.u8();
  const secretCount = countByte & ~(SPEC_WEBHOOK_ID_FLAG | SPEC_ORDERED_FLAG);
  if (secretCount > CODEC_LIMITS.secretsMax) throw new DecodeError("too many secrets");
  const secrets: string[] = [];
  for (let i = 0; i < secretCount; i++) secrets.push(r.str(CODEC_LIMITS.secretBytesMax));
  const webhookId = (countByte & SPEC_WEBHOOK_ID_FLAG) !== 0
    ? r.str(CODEC_LIMITS.idBytesMax)
    : undefined;
  if (webhookId !== undefined && webhookId.length === 0) throw new DecodeError("empty webhook id");
  const ordered = (countByte & SPEC_ORDERED_FLAG) !== 0;
  if (ordered && webhookId === undefined) throw new DecodeError("an ordered job without its event");
  const timeoutMs = r.u32();
  const maxAttempts = r.u16();
  const submittedAtMs = r.f64();
  const idempotencyKey = r.optStr(CODEC_LIMITS.keyBytesMax);
  const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
  if (id.length === 0) throw new DecodeError("empty job id");
  if (maxAttempts < 1) throw new DecodeError("maxAttempts must be >= 1");
  // The optional fields are set only when present (no spreads: each made a throwaway object
  // per record decoded), in the order a spec is written elsewhere.
  const spec: { -readonly [K in keyof JobSpec]: JobSpec[K] } = idempotencyKey !== undefined
    ? {
      id,
      url,
      payload,
      headers,
      secrets,
      timeoutMs,
      maxAttempts,
      submittedAtMs,
      idempotencyKey,
      bodyHash,
    }
    : { id, url, payload, headers, secrets, timeoutMs, maxAttempts, submittedAtMs, bodyHash };
  if (webhookId !== undefined) spec.webhookId = webhookId;
  if (ordered) spec.ordered = true;
  return spec;
}

/**
 * Set on an attempt's outcome byte when a u32 retry round follows it. Attempts of the first
 * round (retry 0) are written as before the field existed, so older logs and peers read the
 * same bytes and a node reads what older nodes wrote.
 */
const ATTEMPT_RETRY_FLAG = 0x80;

function writeAttempt(w: ByteWriter, a: AttemptEntry): void {
  const retry = a.retry ?? 0;
  const outcome = ATTEMPT_OUTCOMES.indexOf(a.outcome);
  w.u16(a.attempt).f64(a.startedAtMs).f64(a.latencyMs);
  if (retry > 0) w.u8(outcome | ATTEMPT_RETRY_FLAG).u32(retry);
  else w.u8(outcome);
  w.u16(a.status).str(a.detail, CODEC_LIMITS.detailBytesMax).str(
    a.node,
    CODEC_LIMITS.addressBytesMax,
  );
}

function readAttempt(r: ByteReader): AttemptEntry {
  const attempt = r.u16();
  const startedAtMs = r.f64();
  const latencyMs = r.f64();
  const code = r.u8();
  const outcome = ATTEMPT_OUTCOMES[code & ~ATTEMPT_RETRY_FLAG];
  if (outcome === undefined) throw new DecodeError("unknown attempt outcome");
  const retry = (code & ATTEMPT_RETRY_FLAG) !== 0 ? r.u32() : 0;
  if ((code & ATTEMPT_RETRY_FLAG) !== 0 && retry === 0) {
    throw new DecodeError("a flagged retry round must be >= 1");
  }
  const status = r.u16();
  const detail = r.str(CODEC_LIMITS.detailBytesMax);
  const node = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
  // Two literals, not a spread of an optional field: a spread made a throwaway object per
  // attempt decoded.
  return retry > 0
    ? { attempt, startedAtMs, latencyMs, outcome, retry, status, detail, node }
    : { attempt, startedAtMs, latencyMs, outcome, status, detail, node };
}

function writeOptAttempt(w: ByteWriter, a: AttemptEntry | undefined): void {
  w.bool(a !== undefined);
  if (a !== undefined) writeAttempt(w, a);
}

function readOptAttempt(r: ByteReader): AttemptEntry | undefined {
  return r.bool() ? readAttempt(r) : undefined;
}

function writeRanges(w: ByteWriter, ranges: readonly (readonly [number, number])[]): void {
  w.u32(ranges.length);
  for (const [a, b] of ranges) w.u53(a).u53(b);
}

function readRanges(r: ByteReader): Array<[number, number]> {
  const n = r.u32();
  if (n > CODEC_LIMITS.rangesMax) throw new DecodeError("too many ranges");
  const out: Array<[number, number]> = [];
  let last = 0;
  for (let i = 0; i < n; i++) {
    const a = r.u53();
    const b = r.u53();
    if (a < 1 || b < a || a <= last) throw new DecodeError("ranges must ascend, disjoint, >= 1");
    out.push([a, b]);
    last = b;
  }
  return out;
}

export function writeHeld(w: ByteWriter, held: readonly HeldRanges[]): void {
  w.u32(held.length);
  for (const h of held) {
    w.str(h.origin, CODEC_LIMITS.addressBytesMax).u53(h.contiguous);
    writeRanges(w, h.above);
  }
}

export function readHeld(r: ByteReader): HeldRanges[] {
  const n = r.u32();
  if (n > CODEC_LIMITS.rangesMax) throw new DecodeError("too many origins");
  const out: HeldRanges[] = [];
  for (let i = 0; i < n; i++) {
    const origin = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
    const contiguous = r.u53();
    const above = readRanges(r);
    if (above.length > 0 && above[0]![0] <= contiguous + 1) {
      throw new DecodeError("held ranges must start above contiguous + 1");
    }
    out.push({ origin, contiguous, above });
  }
  return out;
}

export function writeState(w: ByteWriter, s: JobStateSnapshot): void {
  w.str(s.jobId, CODEC_LIMITS.idBytesMax);
  w.bool(s.spec !== undefined);
  if (s.spec !== undefined) writeSpec(w, s.spec);
  w.bool(s.submitStamp !== undefined);
  if (s.submitStamp !== undefined) writeStamp(w, s.submitStamp);
  w.str(s.bodyHash, CODEC_LIMITS.hashBytesMax).bool(s.committed).u32(s.gen)
    .u8(PHASES.indexOf(s.phase)).u16(s.attemptsMade).f64(s.nextAttemptAtMs).f64(s.finishedAtMs)
    .str(s.deadReason, CODEC_LIMITS.reasonBytesMax);
  assert(s.history.length <= CODEC_LIMITS.historyMax, "history exceeds historyMax");
  w.u16(s.history.length);
  for (const h of s.history) writeAttempt(w, h);
  // A trailer, last in the record (and in a query's reply): a state with none keeps the bytes
  // it had before the field. Only the stamp: the claim is of the state's own generation, so
  // bytes cannot name another (second review of session 42).
  if (s.reviveOf !== undefined) {
    assert(s.reviveOf.gen === s.gen && s.gen > 0, "a state names a REVIVE of its own generation");
    writeStamp(w, s.reviveOf.stamp);
  }
}

export function readState(r: ByteReader): JobStateSnapshot {
  const jobId = r.str(CODEC_LIMITS.idBytesMax);
  const spec = r.bool() ? readSpec(r) : undefined;
  const submitStamp = r.bool() ? readStamp(r) : undefined;
  const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
  const committed = r.bool();
  const gen = r.u32();
  const phase = PHASES[r.u8()];
  if (phase === undefined) throw new DecodeError("unknown job phase");
  const attemptsMade = r.u16();
  const nextAttemptAtMs = r.f64();
  const finishedAtMs = r.f64();
  const deadReason = r.str(CODEC_LIMITS.reasonBytesMax);
  const historyCount = r.u16();
  if (historyCount > CODEC_LIMITS.historyMax) throw new DecodeError("history too long");
  const history: AttemptEntry[] = [];
  for (let i = 0; i < historyCount; i++) history.push(readAttempt(r));
  if (spec !== undefined && spec.id !== jobId) throw new DecodeError("state spec id mismatch");
  let reviveOf: { gen: number; stamp: Stamp } | undefined;
  if (r.remaining > 0) {
    if (gen === 0) throw new DecodeError("a state of generation 0 names no REVIVE");
    reviveOf = { gen, stamp: readStamp(r) };
  }
  return {
    jobId,
    ...(spec !== undefined ? { spec } : {}),
    ...(submitStamp !== undefined ? { submitStamp } : {}),
    bodyHash,
    committed,
    gen,
    phase,
    attemptsMade,
    nextAttemptAtMs,
    finishedAtMs,
    deadReason,
    history,
    ...(reviveOf !== undefined ? { reviveOf } : {}),
  };
}

/** Appends one record (type byte, then its fields) to `w`. */
export function writeRecord(w: ByteWriter, record: JobRecord): void {
  w.u8(RECORD_CODES[record.type]);
  switch (record.type) {
    case "submit":
      writeStamp(w, record.stamp);
      writeSpec(w, record.spec);
      return;
    case "commit":
      writeStamp(w, record.stamp);
      w.str(record.jobId, CODEC_LIMITS.idBytesMax).str(record.bodyHash, CODEC_LIMITS.hashBytesMax);
      w.bool(record.spec !== undefined);
      if (record.spec !== undefined) writeSpec(w, record.spec);
      return;
    case "retry":
      writeStamp(w, record.stamp);
      w.str(record.jobId, CODEC_LIMITS.idBytesMax).u32(record.gen).u16(record.attemptsMade);
      w.f64(record.nextAttemptAtMs);
      writeAttempt(w, record.attempt);
      return;
    case "done":
      writeStamp(w, record.stamp);
      w.str(record.jobId, CODEC_LIMITS.idBytesMax).u32(record.gen).f64(record.finishedAtMs);
      writeOptAttempt(w, record.attempt);
      return;
    case "dead":
      writeStamp(w, record.stamp);
      w.str(record.jobId, CODEC_LIMITS.idBytesMax).u32(record.gen).u16(record.attemptsMade)
        .f64(record.finishedAtMs).str(record.reason, CODEC_LIMITS.reasonBytesMax);
      writeOptAttempt(w, record.attempt);
      return;
    case "revive":
      writeStamp(w, record.stamp);
      w.str(record.jobId, CODEC_LIMITS.idBytesMax).u32(record.gen);
      // Optional trailer, so a revive written before it existed reads the same.
      if (record.spec !== undefined) {
        assert(record.spec.id === record.jobId, "a revive's spec is its job's");
        writeSpec(w, record.spec);
        w.bool(record.submitStamp !== undefined);
        if (record.submitStamp !== undefined) writeStamp(w, record.submitStamp);
      }
      return;
    case "skip":
      writeStamp(w, record.stamp);
      writeRanges(w, record.ranges);
      return;
    case "endpoint":
      assert(
        sameStamp(record.state.version, record.stamp),
        "an endpoint record's version is its stamp",
      );
      writeStamp(w, record.stamp);
      writeEndpointState(w, record.state);
      return;
    case "endpoint-state":
      writeEndpointState(w, record.state);
      return;
    case "endpoint-health":
      assert(Number.isFinite(record.lastSuccessAtMs), "a success time is finite");
      writeStamp(w, record.stamp);
      w.str(record.endpointId, ENDPOINT_LIMITS.idBytesMax).f64(record.lastSuccessAtMs);
      return;
    case "event":
      writeStamp(w, record.stamp);
      writeEventBody(w, record.body);
      return;
    case "event-commit":
      writeStamp(w, record.stamp);
      w.str(record.eventId, CODEC_LIMITS.idBytesMax).str(
        record.bodyHash,
        CODEC_LIMITS.hashBytesMax,
      );
      w.bool(record.body !== undefined);
      if (record.body !== undefined) {
        assert(record.body.event.id === record.eventId, "an event-commit's body is its event's");
        writeEventBody(w, record.body);
      }
      return;
    case "event-state":
      writeEventBody(w, record.state.body);
      writeStamp(w, record.state.stamp);
      w.bool(record.state.committed);
      return;
    case "state":
      writeState(w, record.state);
      return;
    case "key":
      w.str(record.key.key, CODEC_LIMITS.keyBytesMax).str(record.key.jobId, CODEC_LIMITS.idBytesMax)
        .str(record.key.bodyHash, CODEC_LIMITS.hashBytesMax).f64(record.key.expiresAtMs);
      // Optional trailer, so a key written before it existed (generation 0) reads the same.
      if ((record.key.gen ?? 0) > 0) w.u32(record.key.gen!);
      return;
    case "gone":
      w.str(record.gone.jobId).u32(record.gone.gen).f64(record.gone.expiresAtMs);
      return;
    case "meta":
      w.u53(record.nextOwnSeq);
      writeHeld(w, record.held);
      return;
    default:
      unreachable(record, "record");
  }
}

function readRecord(r: ByteReader): JobRecord {
  const code = r.u8();
  switch (code) {
    case RECORD_CODES.submit: {
      const stamp = readStamp(r);
      return { type: "submit", stamp, spec: readSpec(r) };
    }
    case RECORD_CODES.commit: {
      const stamp = readStamp(r);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
      const spec = r.bool() ? readSpec(r) : undefined;
      return spec !== undefined
        ? { type: "commit", stamp, jobId, bodyHash, spec }
        : { type: "commit", stamp, jobId, bodyHash };
    }
    case RECORD_CODES.retry: {
      const stamp = readStamp(r);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const gen = r.u32();
      const attemptsMade = r.u16();
      const nextAttemptAtMs = r.f64();
      return {
        type: "retry",
        stamp,
        jobId,
        gen,
        attemptsMade,
        nextAttemptAtMs,
        attempt: readAttempt(r),
      };
    }
    case RECORD_CODES.done: {
      const stamp = readStamp(r);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const gen = r.u32();
      const finishedAtMs = r.f64();
      const attempt = readOptAttempt(r);
      return attempt !== undefined
        ? { type: "done", stamp, jobId, gen, finishedAtMs, attempt }
        : { type: "done", stamp, jobId, gen, finishedAtMs };
    }
    case RECORD_CODES.dead: {
      const stamp = readStamp(r);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const gen = r.u32();
      const attemptsMade = r.u16();
      const finishedAtMs = r.f64();
      const reason = r.str(CODEC_LIMITS.reasonBytesMax);
      const attempt = readOptAttempt(r);
      return attempt !== undefined
        ? { type: "dead", stamp, jobId, gen, attemptsMade, finishedAtMs, reason, attempt }
        : { type: "dead", stamp, jobId, gen, attemptsMade, finishedAtMs, reason };
    }
    case RECORD_CODES.revive: {
      const stamp = readStamp(r);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const gen = r.u32();
      if (r.remaining === 0) return { type: "revive", stamp, jobId, gen };
      const spec = readSpec(r);
      if (spec.id !== jobId) throw new DecodeError("a revive's spec must be its job's");
      const submitStamp = r.bool() ? readStamp(r) : undefined;
      return submitStamp !== undefined
        ? { type: "revive", stamp, jobId, gen, spec, submitStamp }
        : { type: "revive", stamp, jobId, gen, spec };
    }
    case RECORD_CODES.skip: {
      const stamp = readStamp(r);
      return { type: "skip", stamp, ranges: readRanges(r) };
    }
    case RECORD_CODES.endpoint: {
      const stamp = readStamp(r);
      const state = readEndpointState(r);
      if (!sameStamp(state.version, stamp)) {
        throw new DecodeError("an endpoint record's version must be its stamp");
      }
      return { type: "endpoint", stamp, state };
    }
    case RECORD_CODES["endpoint-state"]:
      return { type: "endpoint-state", state: readEndpointState(r) };
    case RECORD_CODES["endpoint-health"]: {
      const stamp = readStamp(r);
      const endpointId = r.str(ENDPOINT_LIMITS.idBytesMax);
      if (endpointId.length === 0) throw new DecodeError("empty endpoint id");
      return { type: "endpoint-health", stamp, endpointId, lastSuccessAtMs: r.f64() };
    }
    case RECORD_CODES.event: {
      const stamp = readStamp(r);
      return { type: "event", stamp, body: readEventBody(r) };
    }
    case RECORD_CODES["event-commit"]: {
      const stamp = readStamp(r);
      const eventId = r.str(CODEC_LIMITS.idBytesMax);
      const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
      const body = r.bool() ? readEventBody(r) : undefined;
      if (body !== undefined && body.event.id !== eventId) {
        throw new DecodeError("an event-commit's body must be its event's");
      }
      return {
        type: "event-commit",
        stamp,
        eventId,
        bodyHash,
        ...(body !== undefined ? { body } : {}),
      };
    }
    case RECORD_CODES["event-state"]: {
      const body = readEventBody(r);
      const stamp = readStamp(r);
      return { type: "event-state", state: { body, stamp, committed: r.bool() } };
    }
    case RECORD_CODES.state:
      return { type: "state", state: readState(r) };
    case RECORD_CODES.key: {
      const key = r.str(CODEC_LIMITS.keyBytesMax);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
      const expiresAtMs = r.f64();
      const trailer = r.remaining > 0;
      const gen = trailer ? r.u32() : 0;
      if (trailer && gen === 0) throw new DecodeError("a key's generation 0 is written as none");
      const tombstone: KeyTombstone = gen > 0
        ? { key, jobId, bodyHash, expiresAtMs, gen }
        : { key, jobId, bodyHash, expiresAtMs };
      return { type: "key", key: tombstone };
    }
    case RECORD_CODES.gone: {
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const gen = r.u32();
      const expiresAtMs = r.f64();
      return { type: "gone", gone: { jobId, gen, expiresAtMs } };
    }
    case RECORD_CODES.meta: {
      const nextOwnSeq = r.u53();
      return { type: "meta", nextOwnSeq, held: readHeld(r) };
    }
    default:
      throw new DecodeError(`unknown record type ${code}`);
  }
}

/** One record as bytes (what the catch-up log keeps and ships). */
export function encodeRecord(record: JobRecord): Uint8Array {
  // Sized for ASCII payloads (the usual JSON); a larger UTF-8 payload grows the buffer once.
  const w = new ByteWriter(
    record.type === "submit"
      ? 320 + record.spec.payload.length
      : record.type === "revive" && record.spec !== undefined
      ? 400 + record.spec.payload.length
      : record.type === "event"
      ? 320 + record.body.event.payload.length + 256 * record.body.jobs.length
      : 128,
  );
  writeRecord(w, record);
  return w.finish();
}

export function decodeRecord(bytes: Uint8Array): Result<JobRecord> {
  try {
    const r = new ByteReader(bytes);
    const record = readRecord(r);
    r.end();
    return ok(record);
  } catch (e) {
    if (e instanceof DecodeError) return err(`bad job record: ${e.message}`);
    throw e;
  }
}

/** A list of already-encoded records, length-prefixed. */
export function writeRecordList(w: ByteWriter, records: readonly Uint8Array[]): void {
  assert(records.length <= CODEC_LIMITS.recordsMax, "record list exceeds recordsMax");
  w.u32(records.length);
  for (const bytes of records) {
    assert(bytes.length <= CODEC_LIMITS.recordBytesMax, "record exceeds recordBytesMax");
    w.bytes(bytes);
  }
}

/**
 * Decodes a record list. With `copy`, each record's bytes are copied so they outlive the input
 * buffer and do not keep it alive (WAL replay reads whole segments); without, they are views
 * (a transport message is already this node's own copy, and copying every record was a tenth
 * of the replication path's garbage).
 */
export function readRecordList(
  r: ByteReader,
  copy: boolean,
  skipped?: Skipped,
): Array<{ record: JobRecord; bytes: Uint8Array }> {
  const n = r.u32();
  if (n > CODEC_LIMITS.recordsMax) throw new DecodeError("too many records");
  const out: Array<{ record: JobRecord; bytes: Uint8Array }> = [];
  for (let i = 0; i < n; i++) {
    // The list's framing (each record's length) is checked whatever happens: past a bad
    // length nothing can be trusted, so the whole list fails.
    const view = r.bytes(CODEC_LIMITS.recordBytesMax);
    const bytes = copy ? view.slice() : view;
    const inner = r.lastRead(view.length);
    try {
      const record = readRecord(inner);
      inner.end();
      out.push({ record, bytes });
    } catch (e) {
      // In a message, one record a peer cannot decode costs that record, not the votes,
      // COMMITs and DONEs riding with it (issue 17); the caller counts and logs it.
      if (skipped === undefined || !(e instanceof DecodeError)) throw e;
      skipped.count++;
      skipped.reason ??= e.message;
    }
  }
  return out;
}

/** Records of a message that did not decode and were left out (see `readRecordList`). */
export interface Skipped {
  count: number;
  /** Why the first one did not decode. */
  reason: string | undefined;
}

// ---------------------------------------------------------------------------------------------
// WAL batches: what one `Wal.append` holds (the records one flush of the job store made).
// ---------------------------------------------------------------------------------------------

/** A WAL batch's bytes before its records: magic u8, version u8, record count u32. */
export const WAL_BATCH_HEADER_BYTES = 6;

/** A WAL batch: its header, then each record prefixed by its u32 length. */
export function encodeWalBatch(records: readonly Uint8Array[]): Uint8Array {
  let size = WAL_BATCH_HEADER_BYTES;
  for (const r of records) size += 4 + r.length;
  const w = new ByteWriter(size);
  w.u8(WAL_BATCH_MAGIC).u8(WAL_BATCH_VERSION);
  writeRecordList(w, records);
  return w.finish();
}

/**
 * `encodeWalBatch([encodeRecord(record)])`, byte for byte, written into `w` from its start (it
 * is reset) and returned as a view of it: valid until `w` is written again. A checkpoint draws
 * one such batch per job and copies it into its segment before drawing the next, so a node
 * holding 700,000 jobs allocates no buffer per job (a checkpoint of 143,000 took 2.0 s against
 * 2.8 with a buffer or more each: bench/results/session34/micro/).
 */
export function encodeWalSingleInto(w: ByteWriter, record: JobRecord | Uint8Array): Uint8Array {
  w.reset().u8(WAL_BATCH_MAGIC).u8(WAL_BATCH_VERSION).u32(1).u32(0);
  const start = w.length;
  // A record already encoded (an archived job's, job_table.ts) is copied as it is.
  if (record instanceof Uint8Array) w.raw(record);
  else writeRecord(w, record);
  const recordBytes = w.length - start;
  assert(recordBytes <= CODEC_LIMITS.recordBytesMax, "record exceeds recordBytesMax");
  w.setU32(start - 4, recordBytes);
  return w.view();
}

export function decodeWalBatch(
  bytes: Uint8Array,
): Result<Array<{ record: JobRecord; bytes: Uint8Array }>> {
  try {
    const r = new ByteReader(bytes);
    if (r.u8() !== WAL_BATCH_MAGIC) return err("not a job-store WAL batch (bad magic)");
    const version = r.u8();
    if (version !== WAL_BATCH_VERSION) return err(`unsupported WAL batch version ${version}`);
    const records = readRecordList(r, true);
    r.end();
    return ok(records);
  } catch (e) {
    if (e instanceof DecodeError) return err(`bad WAL batch: ${e.message}`);
    throw e;
  }
}
