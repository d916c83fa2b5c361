/**
 * Binary formats of the job store: records (on the WAL and inside replication messages),
 * WAL batches, and the messages nodes (and UDP clients) exchange on `JOBS_CHANNEL`.
 *
 * Owns byte layouts only. Every format starts with a magic byte and a version byte; every
 * variable field is length-prefixed and bounded. Encoders assert on programmer errors (our own
 * values are valid); decoders never throw on hostile bytes: they return `{ ok: false }`, and
 * the caller counts it. Integrity and authenticity come from the layers below (CRC32C frames
 * on the WAL, the transport's authenticated datagrams).
 */

import { ByteReader, ByteWriter, DecodeError } from "../lib/bytes.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { assert, unreachable } from "../lib/assert.ts";
import { JOB_LIMITS } from "../config.ts";
import {
  ATTEMPT_OUTCOMES,
  type AttemptEntry,
  type HeldRanges,
  type JobPhase,
  type JobRecord,
  type JobSpec,
  type JobStateSnapshot,
  type KeyTombstone,
  type ReplicatedRecord,
  type Stamp,
} from "./job_model.ts";
import type { RefusalCode, SubmitRequest } from "./service.ts";

/** Transport channel of job-store messages (membership uses 1). */
export const JOBS_CHANNEL = 2;

const WAL_BATCH_MAGIC = 0x4a; // "J"
const WAL_BATCH_VERSION = 1;
const MESSAGE_MAGIC = 0x6a; // "j"
const MESSAGE_VERSION = 1;

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
  state: 20,
  key: 21,
  meta: 22,
  gone: 23,
} as const satisfies Record<JobRecord["type"], number>;

const PHASES: readonly JobPhase[] = ["pending", "dead", "delivered"];

// ---------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------

function writeStamp(w: ByteWriter, s: Stamp): void {
  w.str(s.origin, CODEC_LIMITS.addressBytesMax).u53(s.seq);
}

/**
 * A job's headers: a count, then names and values. Asserts the count and the total, as
 * `readHeaders` checks them (each string's own bound is asserted by `str`).
 */
function writeHeaders(w: ByteWriter, headers: Readonly<Record<string, string>>): void {
  const names = Object.keys(headers);
  assert(names.length <= CODEC_LIMITS.headersMax, `${names.length} headers exceed headersMax`);
  w.u16(names.length);
  const start = w.length;
  for (const name of names) {
    w.str(name, CODEC_LIMITS.headerBytesMax).str(headers[name]!, CODEC_LIMITS.headerBytesMax);
  }
  // Each string's 4-byte length prefix is not part of the headers' bytes.
  const bytes = w.length - start - 8 * names.length;
  assert(bytes <= CODEC_LIMITS.headersBytesMax, `headers of ${bytes} bytes exceed headersBytesMax`);
}

function readHeaders(r: ByteReader): Record<string, string> {
  const count = r.u16();
  if (count > CODEC_LIMITS.headersMax) throw new DecodeError("too many headers");
  const headers: Record<string, string> = {};
  const start = r.offset;
  for (let i = 0; i < count; i++) {
    const name = r.str(CODEC_LIMITS.headerBytesMax);
    headers[name] = r.str(CODEC_LIMITS.headerBytesMax);
  }
  if (r.offset - start - 8 * count > CODEC_LIMITS.headersBytesMax) {
    throw new DecodeError("headers too large");
  }
  return headers;
}

function readStamp(r: ByteReader): Stamp {
  const origin = r.str(CODEC_LIMITS.addressBytesMax);
  const seq = r.u53();
  if (seq < 1) throw new DecodeError("seq must be >= 1");
  return { origin, seq };
}

function writeSpec(w: ByteWriter, s: JobSpec): void {
  w.str(s.id, CODEC_LIMITS.idBytesMax).str(s.url, CODEC_LIMITS.urlBytesMax);
  w.str(s.payload, CODEC_LIMITS.payloadBytesMax);
  writeHeaders(w, s.headers);
  assert(
    s.secrets.length <= CODEC_LIMITS.secretsMax,
    `${s.secrets.length} secrets exceed secretsMax`,
  );
  w.u8(s.secrets.length);
  for (const secret of s.secrets) w.str(secret, CODEC_LIMITS.secretBytesMax);
  w.u32(s.timeoutMs).u16(s.maxAttempts).f64(s.submittedAtMs);
  w.optStr(s.idempotencyKey, CODEC_LIMITS.keyBytesMax).str(s.bodyHash, CODEC_LIMITS.hashBytesMax);
}

function readSpec(r: ByteReader): JobSpec {
  const id = r.str(CODEC_LIMITS.idBytesMax);
  const url = r.str(CODEC_LIMITS.urlBytesMax);
  const payload = r.str(CODEC_LIMITS.payloadBytesMax);
  const headers = readHeaders(r);
  const secretCount = r.u8();
  if (secretCount > CODEC_LIMITS.secretsMax) throw new DecodeError("too many secrets");
  const secrets: string[] = [];
  for (let i = 0; i < secretCount; i++) secrets.push(r.str(CODEC_LIMITS.secretBytesMax));
  const timeoutMs = r.u32();
  const maxAttempts = r.u16();
  const submittedAtMs = r.f64();
  const idempotencyKey = r.optStr(CODEC_LIMITS.keyBytesMax);
  const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
  if (id.length === 0) throw new DecodeError("empty job id");
  if (maxAttempts < 1) throw new DecodeError("maxAttempts must be >= 1");
  return {
    id,
    url,
    payload,
    headers,
    secrets,
    timeoutMs,
    maxAttempts,
    submittedAtMs,
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
    bodyHash,
  };
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
  const node = r.str(CODEC_LIMITS.addressBytesMax);
  return {
    attempt,
    startedAtMs,
    latencyMs,
    outcome,
    ...(retry > 0 ? { retry } : {}),
    status,
    detail,
    node,
  };
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

function writeHeld(w: ByteWriter, held: readonly HeldRanges[]): void {
  w.u32(held.length);
  for (const h of held) {
    w.str(h.origin, CODEC_LIMITS.addressBytesMax).u53(h.contiguous);
    writeRanges(w, h.above);
  }
}

function readHeld(r: ByteReader): HeldRanges[] {
  const n = r.u32();
  if (n > CODEC_LIMITS.rangesMax) throw new DecodeError("too many origins");
  const out: HeldRanges[] = [];
  for (let i = 0; i < n; i++) {
    const origin = r.str(CODEC_LIMITS.addressBytesMax);
    const contiguous = r.u53();
    const above = readRanges(r);
    if (above.length > 0 && above[0]![0] <= contiguous + 1) {
      throw new DecodeError("held ranges must start above contiguous + 1");
    }
    out.push({ origin, contiguous, above });
  }
  return out;
}

function writeState(w: ByteWriter, s: JobStateSnapshot): void {
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
}

function readState(r: ByteReader): JobStateSnapshot {
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
      return;
    case "skip":
      writeStamp(w, record.stamp);
      writeRanges(w, record.ranges);
      return;
    case "state":
      writeState(w, record.state);
      return;
    case "key":
      w.str(record.key.key, CODEC_LIMITS.keyBytesMax).str(record.key.jobId, CODEC_LIMITS.idBytesMax)
        .str(record.key.bodyHash, CODEC_LIMITS.hashBytesMax).f64(record.key.expiresAtMs);
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
      return { type: "commit", stamp, jobId, bodyHash, ...(spec !== undefined ? { spec } : {}) };
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
      return {
        type: "done",
        stamp,
        jobId,
        gen,
        finishedAtMs,
        ...(attempt !== undefined ? { attempt } : {}),
      };
    }
    case RECORD_CODES.dead: {
      const stamp = readStamp(r);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const gen = r.u32();
      const attemptsMade = r.u16();
      const finishedAtMs = r.f64();
      const reason = r.str(CODEC_LIMITS.reasonBytesMax);
      const attempt = readOptAttempt(r);
      return {
        type: "dead",
        stamp,
        jobId,
        gen,
        attemptsMade,
        finishedAtMs,
        reason,
        ...(attempt !== undefined ? { attempt } : {}),
      };
    }
    case RECORD_CODES.revive: {
      const stamp = readStamp(r);
      return { type: "revive", stamp, jobId: r.str(CODEC_LIMITS.idBytesMax), gen: r.u32() };
    }
    case RECORD_CODES.skip: {
      const stamp = readStamp(r);
      return { type: "skip", stamp, ranges: readRanges(r) };
    }
    case RECORD_CODES.state:
      return { type: "state", state: readState(r) };
    case RECORD_CODES.key: {
      const key = r.str(CODEC_LIMITS.keyBytesMax);
      const jobId = r.str(CODEC_LIMITS.idBytesMax);
      const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
      const expiresAtMs = r.f64();
      const tombstone: KeyTombstone = { key, jobId, bodyHash, expiresAtMs };
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
  const w = new ByteWriter(record.type === "submit" ? 320 + record.spec.payload.length : 128);
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
function writeRecordList(w: ByteWriter, records: readonly Uint8Array[]): void {
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
function readRecordList(
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
    const inner = new ByteReader(bytes);
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

export function encodeWalBatch(records: readonly Uint8Array[]): Uint8Array {
  let size = 6;
  for (const r of records) size += 4 + r.length;
  const w = new ByteWriter(size);
  w.u8(WAL_BATCH_MAGIC).u8(WAL_BATCH_VERSION);
  writeRecordList(w, records);
  return w.finish();
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

// ---------------------------------------------------------------------------------------------
// Messages between nodes, and between clients and nodes, on JOBS_CHANNEL.
// ---------------------------------------------------------------------------------------------

/** A replica's answer for one SUBMIT (or REVIVE) it was asked to make durable. */
export type AckStatus =
  /** Durable here (now, or already). */
  | "ok"
  /** This id is held here, uncommitted, with another body (keyed submits). */
  | "conflict"
  /** This id is held here committed with another body: the submit can never win. */
  | "conflict_committed"
  /** The key's job finished and was compacted; the key is still remembered. */
  | "finished"
  /**
   * Another incarnation of the key (another id) is live here for this submit, uncommitted:
   * not stored. `incarnation` names it.
   */
  | "other_live"
  /** Another incarnation of the key is live here, committed or finished: it stands. */
  | "other_settled";

const ACK_STATUSES: readonly AckStatus[] = [
  "ok",
  "conflict",
  "conflict_committed",
  "finished",
  "other_live",
  "other_settled",
];

export interface AckEntry {
  readonly stamp: Stamp;
  readonly status: AckStatus;
  /** For `conflict`/`finished`/`other_*`: the body hash held here. */
  readonly bodyHash: string;
  /** For `other_*` (and only then): the other incarnation's id and first submit time. */
  readonly incarnation?: { readonly jobId: string; readonly submittedAtMs: number };
}

function isOtherIncarnation(status: AckStatus): boolean {
  return status === "other_live" || status === "other_settled";
}

/** A submit as a UDP client sends it (the generator's `--submit-via udp`, bench replication). */
export interface ClientSubmit {
  readonly request: SubmitRequest;
}

export type ClientOutcome =
  | { readonly ok: true; readonly id: string; readonly existing: boolean }
  | { readonly ok: false; readonly code: RefusalCode | "bad_request"; readonly message: string };

/**
 * Where the next page of a sync reply starts: the server's record walk (origins in its order,
 * seqs ascending) resumes after a record, or its snapshot session goes on. Replies are paged
 * so that one never outgrows the transport's per-peer send queue, whatever the table size.
 */
export type SyncCursor =
  | { readonly kind: "start" }
  | { readonly kind: "records"; readonly origin: string; readonly seq: number }
  | { readonly kind: "snapshot"; readonly session: number };

const CURSOR_CODES = { start: 0, records: 1, snapshot: 2 } as const;

function writeCursor(w: ByteWriter, c: SyncCursor): void {
  w.u8(CURSOR_CODES[c.kind]);
  if (c.kind === "records") w.str(c.origin, CODEC_LIMITS.addressBytesMax).u53(c.seq);
  else if (c.kind === "snapshot") w.u32(c.session);
}

function readCursor(r: ByteReader): SyncCursor {
  const code = r.u8();
  switch (code) {
    case CURSOR_CODES.start:
      return { kind: "start" };
    case CURSOR_CODES.records: {
      const origin = r.str(CODEC_LIMITS.addressBytesMax);
      return { kind: "records", origin, seq: r.u53() };
    }
    case CURSOR_CODES.snapshot:
      return { kind: "snapshot", session: r.u32() };
    default:
      throw new DecodeError(`unknown sync cursor ${code}`);
  }
}

export type JobsMessage =
  | {
    readonly kind: "repl";
    readonly from: string;
    /** Replicas answer SUBMIT/REVIVE records with an ACK once durable. */
    readonly records: readonly { record: ReplicatedRecord; bytes: Uint8Array }[];
    /** Records left out because they did not decode (decoded messages only). */
    readonly undecodable?: Skipped;
  }
  | { readonly kind: "ack"; readonly from: string; readonly entries: readonly AckEntry[] }
  | {
    readonly kind: "sync-req";
    readonly from: string;
    readonly requestId: number;
    /** A restart catch-up (counts towards readiness) rather than periodic anti-entropy. */
    readonly catchup: boolean;
    /** Which page of the exchange `requestId` this asks for (0: a new exchange). */
    readonly page: number;
    /** Where that page starts: the `cursor` of the previous page's reply. */
    readonly cursor: SyncCursor;
    /**
     * Numbers this asking of the page (a page not answered is asked again); the reply echoes
     * it, so parts of two answers, which may be cut differently, are never mixed.
     */
    readonly ask: number;
    readonly held: readonly HeldRanges[];
  }
  | {
    readonly kind: "sync-reply";
    readonly from: string;
    readonly requestId: number;
    /** The page of the exchange this answers (the request's `page`). */
    readonly page: number;
    /** The request's `ask`: which asking of the page this part answers. */
    readonly ask: number;
    /**
     * This message's index among the `parts` the server sent for the page. Parts may arrive
     * in any order (no head-of-line blocking): the page is answered once all have.
     */
    readonly part: number;
    readonly parts: number;
    /** Records are `state`/`key` snapshot records, and `held` is the server's coverage. */
    readonly snapshot: boolean;
    /** Another page follows: ask for it with `cursor`. The exchange is complete without. */
    readonly more: boolean;
    readonly cursor: SyncCursor;
    /** Highest seq the server holds from the requester's own origin (0: none). */
    readonly yourSeqMax: number;
    readonly held: readonly HeldRanges[];
    readonly records: readonly { record: JobRecord; bytes: Uint8Array }[];
    readonly undecodable?: Skipped;
  }
  | {
    readonly kind: "handoff";
    readonly from: string;
    readonly records: readonly { record: JobRecord; bytes: Uint8Array }[];
    readonly undecodable?: Skipped;
  }
  | {
    readonly kind: "query";
    readonly from: string;
    readonly requestId: number;
    readonly jobId: string;
  }
  | {
    readonly kind: "query-reply";
    readonly from: string;
    readonly requestId: number;
    readonly state: JobStateSnapshot | undefined;
  }
  | {
    readonly kind: "client-submit";
    readonly requestId: number;
    readonly submits: readonly ClientSubmit[];
  }
  | {
    readonly kind: "client-result";
    readonly requestId: number;
    readonly outcomes: readonly ClientOutcome[];
  };

const CLIENT_CODES: ReadonlySet<string> = new Set<RefusalCode | "bad_request">([
  "no_quorum",
  "overloaded",
  "not_ready",
  "storage_failed",
  "shutting_down",
  "idempotency_conflict",
  "invalid",
  "not_found",
  "bad_request",
]);

const MESSAGE_CODES = {
  repl: 1,
  ack: 2,
  "sync-req": 3,
  "sync-reply": 4,
  handoff: 5,
  query: 6,
  "query-reply": 7,
  "client-submit": 8,
  "client-result": 9,
} as const satisfies Record<JobsMessage["kind"], number>;

/** Record lists inside messages are given as encoded bytes (the catch-up log's form). */
export type OutgoingMessage =
  | { readonly kind: "repl"; readonly from: string; readonly records: readonly Uint8Array[] }
  | Exclude<JobsMessage, { kind: "repl" | "sync-reply" | "handoff" }>
  | (Omit<Extract<JobsMessage, { kind: "sync-reply" }>, "records"> & {
    readonly records: readonly Uint8Array[];
  })
  | { readonly kind: "handoff"; readonly from: string; readonly records: readonly Uint8Array[] };

function writeSubmitRequest(w: ByteWriter, q: SubmitRequest): void {
  w.str(q.url, CODEC_LIMITS.urlBytesMax).str(q.payload, CODEC_LIMITS.payloadBytesMax);
  writeHeaders(w, q.headers ?? {});
  w.optStr(q.secret, CODEC_LIMITS.secretBytesMax).u16(q.maxAttempts ?? 0).u32(q.timeoutMs ?? 0);
  w.optStr(q.idempotencyKey, CODEC_LIMITS.keyBytesMax);
}

function readSubmitRequest(r: ByteReader): SubmitRequest {
  const url = r.str(CODEC_LIMITS.urlBytesMax);
  const payload = r.str(CODEC_LIMITS.payloadBytesMax);
  const headers = readHeaders(r);
  const n = Object.keys(headers).length;
  const secret = r.optStr(CODEC_LIMITS.secretBytesMax);
  const maxAttempts = r.u16();
  const timeoutMs = r.u32();
  const idempotencyKey = r.optStr(CODEC_LIMITS.keyBytesMax);
  return {
    url,
    payload,
    ...(n > 0 ? { headers } : {}),
    ...(secret !== undefined ? { secret } : {}),
    ...(maxAttempts > 0 ? { maxAttempts } : {}),
    ...(timeoutMs > 0 ? { timeoutMs } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  };
}

export function encodeMessage(m: OutgoingMessage): Uint8Array {
  let size = 256;
  if ("records" in m) { for (const r of m.records) size += r.length + 4; }
  const w = new ByteWriter(size);
  w.u8(MESSAGE_MAGIC).u8(MESSAGE_VERSION).u8(MESSAGE_CODES[m.kind]);
  switch (m.kind) {
    case "repl":
      w.str(m.from, CODEC_LIMITS.addressBytesMax);
      writeRecordList(w, m.records);
      break;
    case "ack":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.entries.length);
      for (const e of m.entries) {
        writeStamp(w, e.stamp);
        w.u8(ACK_STATUSES.indexOf(e.status)).str(e.bodyHash, CODEC_LIMITS.hashBytesMax);
        if (isOtherIncarnation(e.status)) {
          w.str(e.incarnation?.jobId ?? "", CODEC_LIMITS.idBytesMax).f64(
            e.incarnation?.submittedAtMs ?? 0,
          );
        }
      }
      break;
    case "sync-req":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.requestId).bool(m.catchup).u32(m.page);
      writeCursor(w, m.cursor);
      w.u53(m.ask);
      writeHeld(w, m.held);
      break;
    case "sync-reply":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.requestId).u32(m.page).u53(m.ask).u32(
        m.part,
      ).u32(m.parts);
      w.bool(m.snapshot);
      w.bool(m.more);
      writeCursor(w, m.cursor);
      w.u53(m.yourSeqMax);
      writeHeld(w, m.held);
      writeRecordList(w, m.records);
      break;
    case "handoff":
      w.str(m.from, CODEC_LIMITS.addressBytesMax);
      writeRecordList(w, m.records);
      break;
    case "query":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.requestId).str(
        m.jobId,
        CODEC_LIMITS.idBytesMax,
      );
      break;
    case "query-reply":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.requestId).bool(m.state !== undefined);
      if (m.state !== undefined) writeState(w, m.state);
      break;
    case "client-submit":
      w.u32(m.requestId).u32(m.submits.length);
      for (const s of m.submits) writeSubmitRequest(w, s.request);
      break;
    case "client-result":
      w.u32(m.requestId).u32(m.outcomes.length);
      for (const o of m.outcomes) {
        w.bool(o.ok);
        if (o.ok) w.str(o.id, CODEC_LIMITS.idBytesMax).bool(o.existing);
        else {
          w.str(o.code, CODEC_LIMITS.messageCodeBytesMax).str(
            o.message,
            CODEC_LIMITS.reasonBytesMax,
          );
        }
      }
      break;
    default:
      unreachable(m, "message");
  }
  return w.finish();
}

function onlyReplicated(
  list: Array<{ record: JobRecord; bytes: Uint8Array }>,
): Array<{ record: ReplicatedRecord; bytes: Uint8Array }> {
  for (const item of list) {
    if (!("stamp" in item.record)) {
      throw new DecodeError(`a ${item.record.type} record cannot be replicated`);
    }
  }
  return list as Array<{ record: ReplicatedRecord; bytes: Uint8Array }>;
}

export function decodeMessage(bytes: Uint8Array): Result<JobsMessage> {
  try {
    const r = new ByteReader(bytes);
    if (r.u8() !== MESSAGE_MAGIC) return err("not a job-store message (bad magic)");
    const version = r.u8();
    if (version !== MESSAGE_VERSION) return err(`unsupported job-store message version ${version}`);
    const code = r.u8();
    let m: JobsMessage;
    switch (code) {
      case MESSAGE_CODES.repl: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const undecodable: Skipped = { count: 0, reason: undefined };
        const records = onlyReplicated(readRecordList(r, false, undecodable));
        m = { kind: "repl", from, records, ...(undecodable.count > 0 ? { undecodable } : {}) };
        break;
      }
      case MESSAGE_CODES.ack: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const n = r.u32();
        if (n > CODEC_LIMITS.recordsMax) throw new DecodeError("too many ack entries");
        const entries: AckEntry[] = [];
        for (let i = 0; i < n; i++) {
          const stamp = readStamp(r);
          const status = ACK_STATUSES[r.u8()];
          if (status === undefined) throw new DecodeError("unknown ack status");
          const bodyHash = r.str(CODEC_LIMITS.hashBytesMax);
          if (!isOtherIncarnation(status)) {
            entries.push({ stamp, status, bodyHash });
            continue;
          }
          const jobId = r.str(CODEC_LIMITS.idBytesMax);
          const submittedAtMs = r.f64();
          if (!Number.isFinite(submittedAtMs)) throw new DecodeError("bad incarnation time");
          entries.push({ stamp, status, bodyHash, incarnation: { jobId, submittedAtMs } });
        }
        m = { kind: "ack", from, entries };
        break;
      }
      case MESSAGE_CODES["sync-req"]: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const requestId = r.u32();
        const catchup = r.bool();
        const page = r.u32();
        const cursor = readCursor(r);
        const ask = r.u53();
        m = { kind: "sync-req", from, requestId, catchup, page, cursor, ask, held: readHeld(r) };
        break;
      }
      case MESSAGE_CODES["sync-reply"]: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const requestId = r.u32();
        const page = r.u32();
        const ask = r.u53();
        const part = r.u32();
        const parts = r.u32();
        if (parts < 1 || part >= parts) throw new DecodeError("sync reply part out of range");
        const snapshot = r.bool();
        const more = r.bool();
        const cursor = readCursor(r);
        const yourSeqMax = r.u53();
        const held = readHeld(r);
        const undecodable: Skipped = { count: 0, reason: undefined };
        const records = readRecordList(r, false, undecodable);
        if (!snapshot) onlyReplicated(records);
        m = {
          kind: "sync-reply",
          from,
          requestId,
          page,
          ask,
          part,
          parts,
          snapshot,
          more,
          cursor,
          yourSeqMax,
          held,
          records,
          ...(undecodable.count > 0 ? { undecodable } : {}),
        };
        break;
      }
      case MESSAGE_CODES.handoff: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const undecodable: Skipped = { count: 0, reason: undefined };
        const records = readRecordList(r, false, undecodable);
        for (const item of records) {
          if (item.record.type !== "state") throw new DecodeError("handoff carries state records");
        }
        m = { kind: "handoff", from, records, ...(undecodable.count > 0 ? { undecodable } : {}) };
        break;
      }
      case MESSAGE_CODES.query: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const requestId = r.u32();
        m = { kind: "query", from, requestId, jobId: r.str(CODEC_LIMITS.idBytesMax) };
        break;
      }
      case MESSAGE_CODES["query-reply"]: {
        const from = r.str(CODEC_LIMITS.addressBytesMax);
        const requestId = r.u32();
        const state = r.bool() ? readState(r) : undefined;
        m = { kind: "query-reply", from, requestId, state };
        break;
      }
      case MESSAGE_CODES["client-submit"]: {
        const requestId = r.u32();
        const n = r.u32();
        if (n > CODEC_LIMITS.recordsMax) throw new DecodeError("too many submits");
        const submits: ClientSubmit[] = [];
        for (let i = 0; i < n; i++) submits.push({ request: readSubmitRequest(r) });
        m = { kind: "client-submit", requestId, submits };
        break;
      }
      case MESSAGE_CODES["client-result"]: {
        const requestId = r.u32();
        const n = r.u32();
        if (n > CODEC_LIMITS.recordsMax) throw new DecodeError("too many outcomes");
        const outcomes: ClientOutcome[] = [];
        for (let i = 0; i < n; i++) {
          if (r.bool()) {
            const id = r.str(CODEC_LIMITS.idBytesMax);
            outcomes.push({ ok: true, id, existing: r.bool() });
          } else {
            const code = r.str(CODEC_LIMITS.messageCodeBytesMax);
            if (!CLIENT_CODES.has(code)) throw new DecodeError(`unknown refusal code ${code}`);
            outcomes.push({
              ok: false,
              code: code as ClientOutcome & { ok: false } extends { code: infer C } ? C : never,
              message: r.str(CODEC_LIMITS.reasonBytesMax),
            });
          }
        }
        m = { kind: "client-result", requestId, outcomes };
        break;
      }
      default:
        return err(`unknown job-store message type ${code}`);
    }
    r.end();
    return ok(m);
  } catch (e) {
    if (e instanceof DecodeError) return err(`bad job-store message: ${e.message}`);
    throw e;
  }
}
