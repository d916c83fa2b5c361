/**
 * Message protocol of the job store: the messages nodes (and UDP clients) exchange on
 * `JOBS_CHANNEL`: replication (append, ack), catch-up and sync pages, queries, and client
 * submits with their outcomes.
 *
 * Owns the message kinds and their byte layout only; records inside messages are laid out by
 * job_codec.ts (record lists, stamps, states), which this file must not redefine. Encoders
 * assert on programmer errors; the decoder never throws on hostile bytes: it returns
 * `{ ok: false }`, and the caller counts it.
 */

import { ByteReader, ByteWriter, DecodeError } from "../lib/bytes.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { unreachable } from "../lib/assert.ts";
import { ADDRESS_STRINGS } from "./shared_strings.ts";
import {
  CODEC_LIMITS,
  readHeaders,
  readHeld,
  readRecordList,
  readStamp,
  readState,
  type Skipped,
  writeHeaders,
  writeHeld,
  writeRecordList,
  writeStamp,
  writeState,
} from "./job_codec.ts";
import type {
  HeldRanges,
  JobRecord,
  JobStateSnapshot,
  ReplicatedRecord,
  Stamp,
} from "./job_model.ts";
import type { RefusalCode, SubmitRequest } from "./service.ts";
import type { EndpointState } from "./endpoint_model.ts";
import { readEndpointState, writeEndpointState } from "./endpoint_codec.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";

/** Transport channel of job-store messages (membership uses 1). */
export const JOBS_CHANNEL = 2;

const MESSAGE_MAGIC = 0x6a; // "j"
const MESSAGE_VERSION = 1;

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
      const origin = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
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
    /**
     * Jobs pending here that the receiver owns, due long ago and not heard of since
     * (pending_checks.ts): it answers those it holds finished.
     */
    readonly kind: "pending-check";
    readonly from: string;
    readonly jobIds: readonly string[];
  }
  | {
    /** The asked jobs the owner holds finished: `state`, `gone` or `key` records. */
    readonly kind: "pending-check-reply";
    readonly from: string;
    readonly records: readonly { record: JobRecord; bytes: Uint8Array }[];
    readonly undecodable?: Skipped;
  }
  | {
    /** Before a PATCH or DELETE: the value this peer holds of an endpoint (endpoint_reads.ts). */
    readonly kind: "endpoint-read";
    readonly from: string;
    /** The asking node's round id. */
    readonly roundId: number;
    readonly endpointId: string;
  }
  | {
    readonly kind: "endpoint-read-reply";
    readonly from: string;
    readonly roundId: number;
    /** The value held, tombstone included; undefined when this peer holds none. */
    readonly state: EndpointState | undefined;
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
  "endpoint-read": 10,
  "endpoint-read-reply": 11,
  "pending-check": 12,
  "pending-check-reply": 13,
} as const satisfies Record<JobsMessage["kind"], number>;

/** Record lists inside messages are given as encoded bytes (the catch-up log's form). */
export type OutgoingMessage =
  | { readonly kind: "repl"; readonly from: string; readonly records: readonly Uint8Array[] }
  | Exclude<JobsMessage, { kind: "repl" | "sync-reply" | "handoff" | "pending-check-reply" }>
  | (Omit<Extract<JobsMessage, { kind: "sync-reply" }>, "records"> & {
    readonly records: readonly Uint8Array[];
  })
  | { readonly kind: "handoff"; readonly from: string; readonly records: readonly Uint8Array[] }
  | {
    readonly kind: "pending-check-reply";
    readonly from: string;
    readonly records: readonly Uint8Array[];
  };

/** The record types a pending check's answer carries: a finished job's state, or its guard. */
const PENDING_CHECK_ANSWERS: ReadonlySet<JobRecord["type"]> = new Set(["state", "gone", "key"]);

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
    case "pending-check":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.jobIds.length);
      for (const jobId of m.jobIds) w.str(jobId, CODEC_LIMITS.idBytesMax);
      break;
    case "pending-check-reply":
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
    case "endpoint-read":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.roundId).str(
        m.endpointId,
        ENDPOINT_LIMITS.idBytesMax,
      );
      break;
    case "endpoint-read-reply":
      w.str(m.from, CODEC_LIMITS.addressBytesMax).u32(m.roundId).bool(m.state !== undefined);
      if (m.state !== undefined) writeEndpointState(w, m.state);
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
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const undecodable: Skipped = { count: 0, reason: undefined };
        const records = onlyReplicated(readRecordList(r, false, undecodable));
        m = undecodable.count > 0
          ? { kind: "repl", from, records, undecodable }
          : { kind: "repl", from, records };
        break;
      }
      case MESSAGE_CODES.ack: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
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
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const requestId = r.u32();
        const catchup = r.bool();
        const page = r.u32();
        const cursor = readCursor(r);
        const ask = r.u53();
        m = { kind: "sync-req", from, requestId, catchup, page, cursor, ask, held: readHeld(r) };
        break;
      }
      case MESSAGE_CODES["sync-reply"]: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
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
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const undecodable: Skipped = { count: 0, reason: undefined };
        const records = readRecordList(r, false, undecodable);
        for (const item of records) {
          if (item.record.type !== "state") throw new DecodeError("handoff carries state records");
        }
        m = { kind: "handoff", from, records, ...(undecodable.count > 0 ? { undecodable } : {}) };
        break;
      }
      case MESSAGE_CODES["pending-check"]: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const n = r.u32();
        if (n > CODEC_LIMITS.recordsMax) throw new DecodeError("too many pending-check jobs");
        const jobIds: string[] = [];
        for (let i = 0; i < n; i++) jobIds.push(r.str(CODEC_LIMITS.idBytesMax));
        m = { kind: "pending-check", from, jobIds };
        break;
      }
      case MESSAGE_CODES["pending-check-reply"]: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const undecodable: Skipped = { count: 0, reason: undefined };
        const records = readRecordList(r, false, undecodable);
        for (const item of records) {
          if (!PENDING_CHECK_ANSWERS.has(item.record.type)) {
            throw new DecodeError(`a pending check is not answered with a ${item.record.type}`);
          }
        }
        m = {
          kind: "pending-check-reply",
          from,
          records,
          ...(undecodable.count > 0 ? { undecodable } : {}),
        };
        break;
      }
      case MESSAGE_CODES.query: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const requestId = r.u32();
        m = { kind: "query", from, requestId, jobId: r.str(CODEC_LIMITS.idBytesMax) };
        break;
      }
      case MESSAGE_CODES["query-reply"]: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const requestId = r.u32();
        const state = r.bool() ? readState(r) : undefined;
        m = { kind: "query-reply", from, requestId, state };
        break;
      }
      case MESSAGE_CODES["endpoint-read"]: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const roundId = r.u32();
        const endpointId = r.str(ENDPOINT_LIMITS.idBytesMax);
        m = { kind: "endpoint-read", from, roundId, endpointId };
        break;
      }
      case MESSAGE_CODES["endpoint-read-reply"]: {
        const from = r.strCached(CODEC_LIMITS.addressBytesMax, ADDRESS_STRINGS);
        const roundId = r.u32();
        const state = r.bool() ? readEndpointState(r) : undefined;
        m = { kind: "endpoint-read-reply", from, roundId, state };
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
