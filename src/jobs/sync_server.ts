/**
 * The serving side of catch-up and anti-entropy: answers a peer's sync request page by page,
 * from the catch-up log when it still covers what the peer lacks, else from a snapshot of the
 * live table served through a session the peer's later pages name.
 *
 * Owns: snapshot sessions (their bound, least-recently-used eviction and idle expiry) and
 * page cutting by `syncReplyBytesMax`. Reads the seq tracker, the catch-up log and the table
 * and must not write them, send anything or touch the asking side (the core's exchanges): it
 * returns the page, and the core (replication_core.ts) sends it.
 */

import type { CatchupLog } from "./catchup_log.ts";
import { encodeRecord } from "./job_codec.ts";
import type { JobsMessage, SyncCursor } from "./job_messages.ts";
import type { HeldRanges, JobRecord } from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import { missingRanges, type SeqTracker } from "./seq_tracker.ts";

/** Snapshot sessions served at once (the least recently used goes past it). */
const SNAPSHOT_SESSIONS_MAX = 16;

const KEY_SEP = "\u0000";

type SyncRequest = Extract<JobsMessage, { kind: "sync-req" }>;

/**
 * A snapshot this node serves page by page: a live walk of its table (entries removed before
 * the walk reaches them are skipped, entries added are visited), with the coverage it had at
 * the start, which every state visited later reflects.
 */
interface SnapshotSession {
  readonly id: number;
  readonly walk: Iterator<JobRecord | Uint8Array>;
  readonly held: readonly HeldRanges[];
  /** The page sent last, sent again if it is asked for again (a part was lost). */
  last: { readonly page: number; readonly records: Uint8Array[]; readonly more: boolean };
  usedAtMs: number;
}

/** One page of an answer to a sync request, as the core sends it. */
export interface SyncPage {
  readonly snapshot: boolean;
  readonly more: boolean;
  readonly cursor: SyncCursor;
  /** The coverage the records reflect (on a snapshot's last page; else none). */
  readonly held: readonly HeldRanges[];
  readonly records: readonly Uint8Array[];
}

export interface SyncServerOptions {
  readonly tracker: Pick<SeqTracker, "origins" | "max" | "summary">;
  readonly log: Pick<CatchupLog, "floor" | "collectSorted" | "max" | "origins">;
  readonly table: Pick<JobTable, "snapshotRecordsOrBytes">;
  readonly syncReplyBytesMax: number;
  readonly syncSessionIdleMs: number;
}

export class SyncServer {
  readonly #tracker: SyncServerOptions["tracker"];
  readonly #log: SyncServerOptions["log"];
  readonly #table: SyncServerOptions["table"];
  readonly #replyBytesMax: number;
  readonly #sessionIdleMs: number;
  readonly #sessions = new Map<string, SnapshotSession>();
  #nextSessionId = 1;

  constructor(options: SyncServerOptions) {
    this.#tracker = options.tracker;
    this.#log = options.log;
    this.#table = options.table;
    this.#replyBytesMax = options.syncReplyBytesMax;
    this.#sessionIdleMs = options.syncSessionIdleMs;
  }

  /**
   * The page answering `m`, and whether a snapshot session started for it (the log no longer
   * covered the gap); undefined for a stale request (its answer went already).
   */
  answer(nowMs: number, m: SyncRequest): { page: SyncPage; snapshotStarted: boolean } | undefined {
    const key = m.from + KEY_SEP + m.requestId;
    if (m.cursor.kind === "snapshot") {
      const session = this.#sessions.get(key);
      if (session === undefined || session.id !== m.cursor.session) {
        // Gone (expired, evicted, this node restarted): the requester starts over.
        const page: SyncPage = {
          snapshot: false,
          more: true,
          cursor: { kind: "start" },
          held: [],
          records: [],
        };
        return { page, snapshotStarted: false };
      }
      session.usedAtMs = nowMs;
      if (m.page !== session.last.page) {
        if (m.page !== session.last.page + 1) return undefined; // a stale request
        session.last = { page: m.page, ...this.#snapshotPage(session) };
      }
      return { page: this.#sessionPage(key, session), snapshotStarted: false };
    }
    const walked = this.#walkRecords(m);
    if (walked === undefined) {
      const session: SnapshotSession = {
        id: this.#nextSessionId++,
        walk: this.#table.snapshotRecordsOrBytes(),
        held: this.#tracker.summary(4096),
        last: { page: m.page, records: [], more: true },
        usedAtMs: nowMs,
      };
      session.last = { page: m.page, ...this.#snapshotPage(session) };
      this.#sessions.delete(key);
      if (this.#sessions.size >= SNAPSHOT_SESSIONS_MAX) {
        let lru: string | undefined;
        let lruMs = Infinity;
        for (const [k, s] of this.#sessions) if (s.usedAtMs < lruMs) [lru, lruMs] = [k, s.usedAtMs];
        if (lru !== undefined) this.#sessions.delete(lru);
      }
      this.#sessions.set(key, session);
      return { page: this.#sessionPage(key, session), snapshotStarted: true };
    }
    const { records, more, cursor } = walked;
    return { page: { snapshot: false, more, cursor, held: [], records }, snapshotStarted: false };
  }

  /** Forgets sessions idle for `syncSessionIdleMs`. */
  expire(nowMs: number): void {
    for (const [key, session] of this.#sessions) {
      if (nowMs >= session.usedAtMs + this.#sessionIdleMs) this.#sessions.delete(key);
    }
  }

  /** When the next session goes idle (Infinity: none open). */
  nextWakeMs(): number {
    let t = Infinity;
    for (const session of this.#sessions.values()) {
      t = Math.min(t, session.usedAtMs + this.#sessionIdleMs);
    }
    return t;
  }

  /**
   * Up to `syncReplyBytesMax` of the records `m`'s requester lacks, from where its cursor
   * says; undefined when the log cannot serve them (the requester needs a snapshot).
   */
  #walkRecords(
    m: SyncRequest,
  ): { records: Uint8Array[]; more: boolean; cursor: SyncCursor } | undefined {
    // What the log holds, durable here or not: a record still on its way to this disk (a DONE
    // written lazily) is as good as one a peer sends us, and a node catching up after a freeze
    // must see the DONE its replacement made a moment ago, or it attempts that job again.
    // Sorted: a cursor resumes at its origin's place, which must not move between pages.
    const origins = [...new Set([...this.#tracker.origins(), ...this.#log.origins()])].sort();
    const resume = m.cursor.kind === "records" ? m.cursor : undefined;
    const first = resume !== undefined ? Math.max(0, origins.indexOf(resume.origin)) : 0;
    const spans: Array<{ origin: string; from: number; to: number; theirs?: HeldRanges }> = [];
    for (let i = first; i < origins.length; i++) {
      const origin = origins[i]!;
      const theirs = m.held.find((h) => h.origin === origin);
      let from = (theirs?.contiguous ?? 0) + 1;
      if (resume?.origin === origin) from = Math.max(from, resume.seq + 1);
      const to = Math.max(this.#tracker.max(origin), this.#log.max(origin));
      if (from > to) continue;
      if (from <= this.#log.floor(origin)) return undefined;
      spans.push({ origin, from, to, ...(theirs !== undefined ? { theirs } : {}) });
    }
    const records: Uint8Array[] = [];
    let bytes = 0;
    for (const { origin, from, to, theirs } of spans) {
      // Only the ranges the peer lacks, and in each only what the log holds: every restart's
      // SKIP voids up to originPendingMax seqs, so walking each seq up to `to` cost 65,536
      // lookups per restart ever made, on every anti-entropy round (found profiling the sim).
      for (const [a, b] of missingRanges(theirs, from, to)) {
        for (const [seq, r] of this.#log.collectSorted(origin, a, b)) {
          if (records.length > 0 && bytes + r.length > this.#replyBytesMax) {
            return { records, more: true, cursor: { kind: "records", origin, seq: seq - 1 } };
          }
          records.push(r);
          bytes += r.length;
        }
      }
    }
    return { records, more: false, cursor: { kind: "start" } };
  }

  /** The next page of a snapshot session: at least one record, about `syncReplyBytesMax`. */
  #snapshotPage(session: SnapshotSession): { records: Uint8Array[]; more: boolean } {
    const records: Uint8Array[] = [];
    let bytes = 0;
    while (bytes < this.#replyBytesMax) {
      const next = session.walk.next();
      if (next.done === true) return { records, more: false };
      // An archived job's record comes encoded, as a view of the archive: copied.
      const r = next.value instanceof Uint8Array ? next.value.slice() : encodeRecord(next.value);
      records.push(r);
      bytes += r.length;
    }
    return { records, more: true };
  }

  /** The session's current page; a session whose last page this is ends. */
  #sessionPage(key: string, session: SnapshotSession): SyncPage {
    const { records, more } = session.last;
    if (!more) this.#sessions.delete(key);
    return {
      snapshot: true,
      more,
      cursor: more ? { kind: "snapshot", session: session.id } : { kind: "start" },
      held: more ? [] : session.held,
      records,
    };
  }
}
