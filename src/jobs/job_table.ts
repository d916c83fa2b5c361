/**
 * A node's job table: every job it holds (as owner or replica), the idempotency keys of jobs
 * already compacted away, counts by state, the dead-letter order, and retention.
 *
 * Owns in-memory job state only. It applies records through the merge rule of job_model.ts,
 * so the order records arrive in does not matter; it never decides ownership, never does I/O
 * and never reads a clock (callers pass wall-clock times in).
 *
 * Memory: a delivered job keeps its metadata and history but drops its payload, headers and
 * secrets; delivered jobs leave the table `finishedRetentionMs` after they finished (or when
 * `finishedJobsMax` is passed, oldest first) and dead letters `deadRetentionMs` after (or when
 * `deadLettersMax` is passed, oldest first);
 * idempotency keys outlive their jobs until `idempotencyWindowMs` after the submit, and
 * `idempotencyClockSkewMs` more (each node expires them on its own clock); an unkeyed finished
 * job leaves a tombstone (its id, about 110 bytes) for `finishedTombstoneMs`, at most
 * `finishedTombstonesMax` of them.
 *
 * Incarnations: the jobs one idempotency key makes, one per window (keyed_id.ts). A node
 * stores a keyed SUBMIT only if it holds no other incarnation of the key live for it
 * (`liveIncarnation`): the put-if-absent that lets at most one incarnation per window gather
 * a majority. Records of another incarnation never touch this one: they carry another id.
 *
 * The guard against zombies: a job this node finished and compacted never comes back pending
 * from a late record. Every record reaches the table through `apply`, whatever path brought it
 * (live replication, anti-entropy, catch-up, a confirm round's SUBMIT, a handoff or snapshot
 * `state`, WAL replay), and `apply` drops a record of a job it does not hold when the job's
 * tombstone (kept key or gone tombstone) says that generation is over. So the rule holds on
 * every path at once, for as long as the tombstone is kept (docs/replication.md, Compaction).
 */

import { assert } from "../lib/assert.ts";
import { SlabStore } from "../lib/slab_store.ts";
import { jobsDefaults } from "../config/jobs.ts";
import { decodeRecord, writeRecord } from "./job_codec.ts";
import { ByteWriter } from "../lib/bytes.ts";
import { sameBytesAt } from "../lib/same_bytes.ts";
import { candidateIds, isLiveFor, keyedJobId } from "./keyed_id.ts";
import { EndpointTable } from "./endpoint_table.ts";
import { type EventEntry, eventJobIds, eventJobSpec, EventTable } from "./event_table.ts";
import { type EventBody, keyedEventId } from "./event_model.ts";
import {
  ALL_GENERATIONS,
  type ApplyEffect,
  applyRecord,
  entryOfSnapshot,
  type EventRecord,
  type GoneTombstone,
  isStub,
  type JobEntry,
  type JobOnlyRecord,
  type JobPhase,
  type JobRecord,
  type KeyTombstone,
  newEntry,
  snapshotOf,
  type Stamp,
} from "./job_model.ts";

export interface JobTableOptions {
  historyMax: number;
  finishedRetentionMs: number;
  /** Most delivered jobs kept (the oldest go first, before their retention ends). */
  finishedJobsMax: number;
  deadRetentionMs: number;
  deadLettersMax: number;
  /**
   * Most memory dead letters hold (`payloadBytesOf` and `specBytesOf`); the oldest go first
   * past it.
   * @default jobsDefaults.deadLetterBytesMax
   */
  deadLetterBytesMax?: number;
  idempotencyWindowMs: number;
  /** How long a key is kept past its window, for the skew between nodes' wall clocks. */
  idempotencyClockSkewMs: number;
  /** Stubs (state without a SUBMIT) older than this are dropped. */
  stubRetentionMs: number;
  /** Uncommitted jobs come up for `dueUncommitted` this long after their submit. */
  uncommittedRetentionMs: number;
  /** An unkeyed finished job's tombstone is kept this long after it was compacted. */
  finishedTombstoneMs: number;
  /** Most tombstones of finished jobs kept (the oldest go first). */
  finishedTombstonesMax: number;
  /**
   * A deleted endpoint's tombstone is kept this long after its delete (endpoint_table.ts).
   * @default jobsDefaults.endpointTombstoneMs
   */
  endpointTombstoneMs?: number;
  /**
   * A delivered job is archived this long after this node learned of its delivery or last
   * changed it (JobTable, Archive).
   * @default jobsDefaults.deliveredArchiveAfterMs
   */
  archiveAfterMs?: number;
  /**
   * Most jobs one `expire` pass archives.
   * @default jobsDefaults.archiveBatchMax
   */
  archiveBatchMax?: number;
}

export interface ApplyResult {
  readonly effect: ApplyEffect;
  /** The entry after the change (undefined for skip/key/meta records). */
  readonly entry: JobEntry | undefined;
  /** Phase before the change (for entries that existed). */
  readonly previousPhase: JobPhase | undefined;
  readonly previousCommitted: boolean;
  /** A kept key ended the job this replica still held: the entry was dropped. */
  readonly removed?: JobEntry;
  /** An event record: the jobs it made or committed (changed), for the caller to react to. */
  readonly fanout?: readonly JobEntry[];
  /** An event record: jobs of a losing body it dropped (uncommitted copies). */
  readonly fanoutRemoved?: readonly string[];
}

const NOTHING: ApplyResult = Object.freeze({
  effect: "unchanged",
  entry: undefined,
  previousPhase: undefined,
  previousCommitted: false,
});

/**
 * Job ids with the wall time they become due, in push order; a job is in a queue once, at
 * its latest push. Pushes come in (roughly) due order, so `due` stops at the first item not
 * yet due; wall clocks of different nodes differ, so an item may wait behind a slightly later
 * one, never longer than that skew. A job that leaves the state a queue is for is deleted
 * from it at once: items left to wait for their time held every job of the window (the
 * uncommitted one is 24 h: 86 million items at 1,000 jobs/s, long after the jobs left).
 */
class ExpiryQueue {
  readonly #due = new Map<string, number>();

  get size(): number {
    return this.#due.size;
  }

  push(jobId: string, atMs: number): void {
    this.#due.delete(jobId);
    this.#due.set(jobId, atMs);
  }

  delete(jobId: string): void {
    this.#due.delete(jobId);
  }

  /**
   * The items in push order, oldest first, for eviction by count: one iterator for the whole
   * pass (see `trimOldest`). Deleting items meanwhile is safe.
   */
  oldestFirst(): IterableIterator<string> {
    return this.#due.keys();
  }

  *due(nowMs: number): Generator<string> {
    for (const [jobId, atMs] of this.#due) {
      if (atMs > nowMs) break;
      this.#due.delete(jobId);
      yield jobId;
    }
  }
}

/**
 * A keyed job held here whose body is not known to be the committed one: finished (a DONE or
 * DEAD of its id) but never committed here, so what it holds may be a losing submit's body.
 */
function isUnsettledKeyed(entry: JobEntry): boolean {
  return !entry.committed && entry.spec?.idempotencyKey !== undefined;
}

/** An incarnation of an idempotency key held here (a job, or the key its compacted job left). */
export interface Incarnation {
  readonly jobId: string;
  readonly bodyHash: string;
  /** Its first submit's wall time (the start of its window). */
  readonly submittedAtMs: number;
  /** Committed, or finished and compacted: acknowledged, so it stands. */
  readonly settled: boolean;
}

/**
 * Calls `evict` on the first `excess` items of `oldestFirst`; each call must take its item out
 * of the collection. One iterator for the whole pass: V8 leaves a deleted Map entry in place
 * until it rebuilds the table, and a fresh iterator walks every such entry from the front, so
 * a `keys().next()` per eviction at a million entries cost tens of µs each, growing
 * (bench/results/session28/micro/map_fifo.ts: 47 µs an eviction over 300,000, against 1.2).
 */
function trimOldest(
  oldestFirst: IterableIterator<string>,
  excess: number,
  evict: (key: string) => void,
): void {
  if (excess <= 0) return;
  for (const key of oldestFirst) {
    evict(key);
    if (--excess <= 0) return;
  }
}

/**
 * The memory a job's payload claims, as V8 holds strings (2 bytes a UTF-16 unit at most), until
 * its delivery drops it. An event's pending jobs all share the event's one payload string: the
 * table counts it once an event (`JobTable.backlogBytes`).
 */
export function payloadBytesOf(entry: JobEntry): number {
  const spec = entry.spec;
  if (spec === undefined || entry.payloadDropped) return 0;
  return 2 * spec.payload.length;
}

/**
 * The memory a job's other strings claim, counted as `payloadBytesOf` counts: its URL, header
 * names and values, and secrets (8 KiB of headers a job are allowed: a backlog of `{}` payloads
 * could otherwise hold gigabytes the payload count never saw). Its own, an event's job's too.
 */
export function specBytesOf(entry: JobEntry): number {
  const spec = entry.spec;
  if (spec === undefined || entry.payloadDropped) return 0;
  let units = spec.url.length;
  for (const name in spec.headers) units += name.length + spec.headers[name]!.length;
  for (const secret of spec.secrets) units += secret.length;
  return 2 * units;
}

/** An event's pending jobs held here, and the payload bytes counted for them (once). */
interface PendingEvent {
  jobs: number;
  readonly payloadBytes: number;
}

/** Most ids kept for "recent jobs" (the dashboard's list). */
const RECENT_MAX = 1_000;

/**
 * Whether a job may be archived: delivered in every generation (no record of any generation
 * changes its phase, `ALL_GENERATIONS`), committed (its body is the acknowledged one), and
 * whole (not a stub waiting for its SUBMIT). Nothing waits on it but its retention.
 */
function isArchivable(entry: JobEntry): boolean {
  return entry.phase === "delivered" && entry.committed && !isStub(entry);
}

export class JobTable {
  readonly #options: JobTableOptions;
  /**
   * Every job held, by id: its entry, or, once archived, its slot in `#archive`. One Map for
   * both, so archiving or thawing a job changes the value under its key and never its place in
   * the iteration order: a snapshot drawn over several turns (a checkpoint, a peer's catch-up)
   * meets each job once, whichever way it moved meanwhile.
   */
  readonly #entries = new Map<string, JobEntry | number>();
  /**
   * Archive: delivered jobs `archiveAfterMs` after this node learned of their delivery (or last
   * changed them), kept as the bytes of their `state` record (what a checkpoint writes for
   * them) in slabs, not as objects. A delivered job stays an hour, so an old node holds
   * hundreds of thousands of them: as objects they were most of its heap and of every full GC's
   * work (bench/results/session44/memory/: 707 bytes of heap a job as objects, 154 archived; a
   * full GC over 720,000 jobs 547 ms, 132 archived). Reading one decodes a fresh entry (`get`),
   * which the caller must only read; a record that changes one thaws it back into an object
   * (`#keepChanges`), archived again later.
   */
  readonly #archive = new SlabStore();
  /** One writer for every job archived: a fresh buffer each cost 3.4 µs more a job (same). */
  readonly #archiveWriter = new ByteWriter(1024);
  readonly #archiveAfterMs: number;
  readonly #archiveBatchMax: number;
  /** Delivered entries, by when they are archived. */
  readonly #archiveQueue = new ExpiryQueue();
  /** The pending entries' ids: what a pending check walks (pending_checks.ts), not the table. */
  readonly #pending = new Set<string>();
  /** Idempotency keys whose job was compacted, by job id (a keyed job's id derives from its key). */
  readonly #keys = new Map<string, KeyTombstone>();
  /**
   * Unkeyed jobs finished and compacted: job id → when the tombstone goes (wall ms). In the
   * order they were set, which is (roughly) due order, so it is its own expiry queue and its
   * own eviction order. A plain number value keeps an entry near 110 bytes; the generation is
   * in `#goneGens`, only when not 0 (a dead letter retried by hand).
   */
  readonly #gone = new Map<string, number>();
  readonly #goneGens = new Map<string, number>();
  /** Dead letters in the order they died (Map keeps insertion order). */
  /**
   * Dead letters in the order they died, each with its place in that order: a page cursor is
   * a place, so it stays valid when the job it named is retried or expires meanwhile.
   */
  readonly #dead = new Map<string, number>();
  #deadSeq = 0;
  readonly #counts: Record<JobPhase, number> = { pending: 0, dead: 0, delivered: 0 };
  /**
   * `payloadBytesOf` and `specBytesOf` summed over the pending jobs (an event's payload once,
   * `#pendingEvents`), and over the dead letters (an event's payload once a dead letter: it
   * over-counts a fan-out's, which share one string, and so bounds it).
   */
  #backlogBytes = 0;
  #deadLetterBytes = 0;
  /** Events with a pending job held here, by id (their jobs' `webhookId`). */
  readonly #pendingEvents = new Map<string, PendingEvent>();
  readonly #deadLetterBytesMax: number;
  #uncommitted = 0;
  #stubs = 0;
  /**
   * Retention queues, one per window so each stays in (roughly) due order: delivered jobs,
   * dead letters, stubs whose SUBMIT never came, and kept keys. Stale items are skipped.
   */
  readonly #deliveredExpiry = new ExpiryQueue();
  readonly #deadExpiry = new ExpiryQueue();
  readonly #stubExpiry = new ExpiryQueue();
  readonly #keyExpiry = new ExpiryQueue();
  readonly #uncommittedExpiry = new ExpiryQueue();
  readonly #recent: string[] = [];
  #recentHead = 0;
  /** Two committed bodies met for one id (a broken invariant, counted, never silent). */
  commitConflicts = 0;
  compacted = 0;
  /** The latest wall time seen (dates tombstones set outside `expire`). */
  #nowWallMs = 0;
  /** Records dropped because their job finished and was compacted here (see `apply`). */
  lateRecords = 0;

  /** Every endpoint of the cluster: `endpoint` and `endpoint-state` records go here. */
  readonly endpoints: EndpointTable;
  /** The events this node holds: `event`, `event-commit` and `event-state` records go here. */
  readonly events = new EventTable();

  constructor(options: JobTableOptions) {
    this.#options = options;
    this.#deadLetterBytesMax = options.deadLetterBytesMax ??
      jobsDefaults.deadLetterBytesMax;
    this.#archiveAfterMs = options.archiveAfterMs ?? jobsDefaults.deliveredArchiveAfterMs;
    this.#archiveBatchMax = options.archiveBatchMax ?? jobsDefaults.archiveBatchMax;
    this.endpoints = new EndpointTable({
      endpointTombstoneMs: options.endpointTombstoneMs ?? jobsDefaults.endpointTombstoneMs,
    });
  }

  get size(): number {
    return this.#entries.size;
  }

  get counts(): Readonly<Record<JobPhase, number>> {
    return this.#counts;
  }

  get uncommitted(): number {
    return this.#uncommitted;
  }

  /**
   * The memory the backlog claims: the pending jobs' payloads, URLs, headers and secrets, an
   * event's payload once however many of its jobs are pending. What submit admission bounds
   * (`backlogBytesMax`).
   */
  get backlogBytes(): number {
    return this.#backlogBytes;
  }

  /** The bound on `deadLetterBytes` (JobTableOptions.deadLetterBytesMax). */
  get deadLetterBytesMax(): number {
    return this.#deadLetterBytesMax;
  }

  /**
   * The memory dead letters hold, counted as the backlog's (`deadLetterBytesMax`); an event's
   * payload once a dead letter of it (over-counted: they share one string).
   */
  get deadLetterBytes(): number {
    return this.#deadLetterBytes;
  }

  get stubs(): number {
    return this.#stubs;
  }

  get keyTombstones(): number {
    return this.#keys.size;
  }

  get goneTombstones(): number {
    return this.#gone.size;
  }

  /** The tombstone of an unkeyed job finished and compacted here, if it is still kept. */
  goneTombstone(jobId: string): GoneTombstone | undefined {
    const expiresAtMs = this.#gone.get(jobId);
    if (expiresAtMs === undefined) return undefined;
    return { jobId, gen: this.#goneGens.get(jobId) ?? 0, expiresAtMs };
  }

  /** Items the retention queues hold (memory that must follow the table, not the job rate). */
  get retentionItems(): number {
    return this.#deliveredExpiry.size + this.#deadExpiry.size + this.#stubExpiry.size +
      this.#keyExpiry.size + this.#uncommittedExpiry.size + this.#archiveQueue.size;
  }

  /** The last archive slice `expire` ran stopped at its bound: more may be due. */
  #archiveBacklogged = false;

  /** Whether the archive slice of the last `expire` stopped at `archiveBatchMax`. */
  get archiveBacklogged(): boolean {
    return this.#archiveBacklogged;
  }

  /** Jobs archived (held as bytes, not objects). */
  get archivedJobs(): number {
    return this.#archive.size;
  }

  /** Bytes of the archive's slabs (outside the object graph, but memory all the same). */
  get archiveBytes(): number {
    return this.#archive.allocatedBytes;
  }

  /**
   * Job `jobId` if held. An archived job comes back as a fresh entry decoded from its bytes:
   * read it, never change it (a change would be lost; records change jobs, through `apply`).
   */
  get(jobId: string): JobEntry | undefined {
    return this.#held(jobId);
  }

  #held(jobId: string): JobEntry | undefined {
    const held = this.#entries.get(jobId);
    return typeof held === "number" ? this.#decodeArchived(jobId, held) : held;
  }

  /**
   * The archived job in `slot` as an entry: the fields of its `state` record as they are. They
   * were a delivered entry's (its spec's payload, headers and secrets dropped, its history
   * merged), which applying the record to a new entry would rebuild field by field, at about
   * 1.4 times the cost of a read (session 44's memory/); the property test of
   * job_archive_test.ts holds the two equal.
   */
  #decodeArchived(jobId: string, slot: number): JobEntry {
    const decoded = decodeRecord(this.#archive.bytes(slot));
    assert(
      decoded.ok && decoded.value.type === "state" && decoded.value.state.jobId === jobId,
      "an archived job decodes to its own state",
    );
    const s = decoded.value.state;
    assert(s.phase === "delivered" && s.spec !== undefined, "only delivered jobs are archived");
    return entryOfSnapshot(s);
  }

  /**
   * After `apply` applied a record to a copy decoded from archive slot `slot`: the copy takes
   * the job's place as an object (archived again `archiveAfterMs` later) if the record changed
   * it, else the slot stays. Whether it changed is told by its bytes, not only the effect: a
   * `state` merges history without calling it a change. Thawed on every record instead, a
   * peer's snapshot (a `state` for every job, nearly all changing nothing) turned a resyncing
   * node's whole archive back into objects for minutes (session 44's review).
   */
  #keepChanges(jobId: string, slot: number, entry: JobEntry, effect: ApplyEffect): void {
    if (effect !== "changed") {
      const w = this.#archiveWriter.reset();
      writeRecord(w, { type: "state", state: snapshotOf(entry) });
      const held = this.#archive.bytes(slot);
      if (w.length === held.length && sameBytesAt(held, w.view(), 0)) return;
    }
    this.#archive.free(slot);
    this.#entries.set(jobId, entry);
    this.#archiveQueue.push(jobId, this.#nowWallMs + this.#archiveAfterMs);
  }

  /**
   * One archive slice: the delivered jobs due, at most `archiveBatchMax` of them (see
   * `#archive`). True when it stopped at that bound, so more may be due (the caller runs
   * another slice soon: jobs.archiveSliceGapMs).
   */
  archiveDue(nowWallMs: number): boolean {
    this.#nowWallMs = Math.max(this.#nowWallMs, nowWallMs);
    let budget = this.#archiveBatchMax;
    for (const jobId of this.#archiveQueue.due(nowWallMs)) {
      const held = this.#entries.get(jobId);
      if (typeof held === "object" && isArchivable(held)) {
        const w = this.#archiveWriter.reset();
        writeRecord(w, { type: "state", state: snapshotOf(held) });
        this.#entries.set(jobId, this.#archive.put(w.view()));
      }
      if (--budget <= 0) break;
    }
    this.#archive.compact();
    return budget <= 0;
  }

  keyTombstone(jobId: string): KeyTombstone | undefined {
    return this.#keys.get(jobId);
  }

  /**
   * The incarnation of `key` held here that is live for a submit stamped `wallMs`, other than
   * `exceptId`: a settled one first, then the earliest. Stubs do not count (no submit time).
   */
  liveIncarnation(key: string, wallMs: number, exceptId?: string): Incarnation | undefined {
    return this.#liveAmong(key, wallMs, exceptId, keyedJobId, (jobId) => {
      const entry = this.#held(jobId);
      // A stub knows no key: the key an earlier generation left (kept beside a retry's stub)
      // answers for it.
      if (entry === undefined || entry.spec === undefined) return "absent";
      if (entry.spec.idempotencyKey !== key) return undefined;
      return {
        bodyHash: entry.bodyHash,
        submittedAtMs: entry.spec.submittedAtMs,
        settled: entry.committed,
      };
    });
  }

  /**
   * As `liveIncarnation`, for an event's key: the incarnations are events (`keyedEventId`), so
   * a keyed event is put-if-absent per key at the replicas exactly as a keyed job is.
   */
  liveEventIncarnation(key: string, wallMs: number, exceptId?: string): Incarnation | undefined {
    return this.#liveAmong(key, wallMs, exceptId, keyedEventId, (eventId) => {
      const event = this.events.get(eventId);
      if (event === undefined) return "absent";
      if (event.body === undefined || event.body.event.idempotencyKey !== key) return undefined;
      return {
        bodyHash: event.bodyHash,
        submittedAtMs: event.body.event.submittedAtMs,
        settled: event.committed,
      };
    });
  }

  /**
   * The live incarnation of `key` among its three candidate ids (`idOf`), by `heldAt`: what is
   * held under an id, or "absent" when nothing is, so the key its compacted incarnation left
   * (a settled one) is looked at instead.
   */
  #liveAmong(
    key: string,
    wallMs: number,
    exceptId: string | undefined,
    idOf: (key: string, epoch: number) => string,
    heldAt: (id: string) => Omit<Incarnation, "jobId"> | "absent" | undefined,
  ): Incarnation | undefined {
    const windowMs = this.#options.idempotencyWindowMs;
    let best: Incarnation | undefined;
    for (const jobId of candidateIds(key, wallMs, windowMs, idOf)) {
      if (jobId === exceptId) continue;
      const held = heldAt(jobId);
      const tombstone = this.#keys.get(jobId);
      let found: Incarnation | undefined;
      if (held !== undefined && held !== "absent") found = { jobId, ...held };
      else if (held === "absent" && tombstone !== undefined && tombstone.key === key) {
        found = {
          jobId,
          bodyHash: tombstone.bodyHash,
          submittedAtMs: tombstone.expiresAtMs - windowMs,
          settled: true,
        };
      }
      if (found === undefined || !isLiveFor(found.submittedAtMs, wallMs, windowMs)) continue;
      if (
        best === undefined || (found.settled && !best.settled) ||
        (found.settled === best.settled && found.submittedAtMs < best.submittedAtMs)
      ) best = found;
    }
    return best;
  }

  /** Every job held, archived ones decoded (`get`: read them only). */
  *entries(): Generator<JobEntry> {
    for (const [jobId, held] of this.#entries) {
      yield typeof held === "number" ? this.#decodeArchived(jobId, held) : held;
    }
  }

  /**
   * The jobs held as objects: all but the archived, which are delivered and settled, so a walk
   * for pending, dead or uncommitted jobs (ownership changes, catch-up) need not decode them.
   */
  *activeEntries(): Generator<JobEntry> {
    for (const held of this.#entries.values()) if (typeof held !== "number") yield held;
  }

  /** The pending entries, without walking the finished ones (the table's bulk). */
  *pendingEntries(): Generator<JobEntry> {
    for (const jobId of this.#pending) {
      const entry = this.#entries.get(jobId);
      assert(
        typeof entry === "object" && entry.phase === "pending",
        "the pending index names pending entries only",
      );
      yield entry;
    }
  }

  /**
   * Applies one record. `nowWallMs` dates new stubs (their retention). SUBMIT of a keyed job
   * whose key outlived its compacted job is not stored: `conflict` when the bodies differ,
   * `unchanged` when they match (the earlier job stands).
   */
  apply(record: JobRecord, nowWallMs: number): ApplyResult {
    this.#nowWallMs = Math.max(this.#nowWallMs, nowWallMs);
    if (record.type === "state" || record.type === "revive") {
      record = this.#sharingEventPayload(record);
    }
    switch (record.type) {
      case "endpoint":
      case "endpoint-state":
      case "endpoint-health":
        return {
          effect: record.type === "endpoint-health"
            ? this.endpoints.raiseLastSuccess(record.endpointId, record.lastSuccessAtMs)
            : this.endpoints.apply(record.state),
          entry: undefined,
          previousPhase: undefined,
          previousCommitted: false,
        };
      case "event":
      case "event-commit":
      case "event-state":
        return this.#applyEvent(record, nowWallMs);
      case "skip":
      case "meta":
        return {
          effect: "unchanged",
          entry: undefined,
          previousPhase: undefined,
          previousCommitted: false,
        };
      case "key": {
        // A kept key means its job finished and was compacted where the key came from. What
        // this replica still holds under the id is over too: a copy that missed the job's
        // DONE (it would be delivered again, or handed to an owner that would), or a losing
        // body no majority will ever confirm (its owner kept asking for a confirm forever).
        const jobId = record.key.jobId;
        const removed = this.#held(jobId);
        if (removed !== undefined && removed.gen > (record.key.gen ?? 0)) {
          // Retried by hand since the generation the key ended: not the life it speaks of.
          return {
            effect: "unchanged",
            entry: undefined,
            previousPhase: undefined,
            previousCommitted: false,
          };
        }
        if (removed !== undefined) this.#remove(removed);
        // (The key `#remove` kept names this replica's body, maybe the loser: the incoming wins.)
        const held = removed !== undefined ? undefined : this.#keys.get(jobId);
        const gen = Math.max(held?.gen ?? 0, record.key.gen ?? 0);
        if (
          held === undefined || held.expiresAtMs < record.key.expiresAtMs || (held.gen ?? 0) < gen
        ) {
          const expiresAtMs = Math.max(held?.expiresAtMs ?? 0, record.key.expiresAtMs);
          const { gen: _, ...key } = record.key;
          this.#keys.set(jobId, { ...key, expiresAtMs, ...(gen > 0 ? { gen } : {}) });
          this.#keyExpiry.push(jobId, this.#keyKeptUntil(expiresAtMs));
        }
        return {
          effect: "changed",
          entry: undefined,
          previousPhase: undefined,
          previousCommitted: false,
          ...(removed !== undefined ? { removed } : {}),
        };
      }
      case "gone": {
        // From a checkpoint, or a snapshot's server: the job finished there and was compacted.
        // A copy this replica still holds pending in that generation missed its DONE or DEAD:
        // it is over too. So is a dead letter of an earlier generation: it was retried by hand
        // since, and that life ended too (kept, it was retried again here, and that life was
        // pending for ever where the others' tombstones dropped it: `hookd sim --revives`, seed
        // 240). A copy held finished in that generation stays until its own retention (it
        // guards itself meanwhile), and one in a later generation is not this one.
        const { jobId, gen } = record.gone;
        const held = this.#held(jobId);
        const removed = held !== undefined &&
            (held.phase === "pending" ? held.gen <= gen : held.phase === "dead" && held.gen < gen)
          ? held
          : undefined;
        if (removed !== undefined) this.#remove(removed);
        if (held === undefined || removed !== undefined) {
          this.#setGone(jobId, gen, record.gone.expiresAtMs);
        }
        return {
          effect: held === undefined || removed !== undefined ? "changed" : "unchanged",
          entry: undefined,
          previousPhase: undefined,
          previousCommitted: false,
          ...(removed !== undefined ? { removed } : {}),
        };
      }
    }
    const jobId = record.type === "submit"
      ? record.spec.id
      : record.type === "state"
      ? record.state.jobId
      : record.jobId;
    const tombstone = this.#keys.get(jobId);
    if (
      tombstone !== undefined && !this.#entries.has(jobId) &&
      recordGen(record) <= (tombstone.gen ?? 0)
    ) {
      // The key's job finished: no record of that generation brings it back (a handoff or a
      // snapshot from a replica that missed its end would otherwise re-create it pending and
      // deliver it again). A later generation (the dead letter retried by hand through a node
      // that still held it) is a new life, as past a tombstone below: blocked, an owner that
      // compacted the dead letter first never delivered an acknowledged retry.
      return {
        effect: record.type === "submit" && tombstone.bodyHash !== record.spec.bodyHash
          ? "conflict"
          : "unchanged",
        entry: undefined,
        previousPhase: undefined,
        previousCommitted: false,
      };
    }
    const goneExpiresAtMs = this.#gone.get(jobId);
    if (goneExpiresAtMs !== undefined && !this.#entries.has(jobId)) {
      // The job finished here and was compacted: a record of that generation (or an older one)
      // arriving now is late, whatever path brought it, and would make the job anew, pending
      // for ever (its DONE is held, so nothing finishes it again): sim seed 383, a SUBMIT that
      // anti-entropy shipped to a node that had held the job only through a handoff's `state`.
      // A later generation (a manual retry of the dead letter elsewhere) is a new life: it
      // makes a stub, and the SUBMIT then merges into it.
      if (recordGen(record) <= (this.#goneGens.get(jobId) ?? 0)) {
        this.lateRecords++;
        return {
          effect: "unchanged",
          entry: undefined,
          previousPhase: undefined,
          previousCommitted: false,
        };
      }
    }
    if (
      record.type === "submit" && record.spec.idempotencyKey !== undefined &&
      !this.#entries.has(jobId) &&
      this.liveIncarnation(record.spec.idempotencyKey, record.spec.submittedAtMs, jobId) !==
        undefined
    ) {
      // Another incarnation of the key is live for this submit here: put-if-absent per key,
      // as per id, so no two incarnations of one window both gather a majority. If this one
      // is committed after all, its COMMIT carries the spec.
      return {
        effect: "conflict",
        entry: undefined,
        previousPhase: undefined,
        previousCommitted: false,
      };
    }
    const held = this.#entries.get(jobId);
    // An archived job: the record is applied to a copy, kept if it changed the job.
    let entry = typeof held === "number" ? this.#decodeArchived(jobId, held) : held;
    const existed = entry !== undefined;
    if (entry === undefined) {
      entry = newEntry(jobId);
    }
    const previousPhase = existed ? entry.phase : undefined;
    const previousCommitted = entry.committed;
    const wasStub = existed && isStub(entry);
    if (existed) this.#countPayload(entry, -1);
    const effect = applyRecord(entry, record, this.#options.historyMax);
    if (typeof held === "number") this.#keepChanges(jobId, held, entry, effect);
    if (record.type === "commit" && effect === "conflict" && entry.committed) {
      this.commitConflicts++;
    }
    if (!existed) {
      if (effect !== "changed") {
        return { effect, entry: undefined, previousPhase, previousCommitted };
      }
      this.#entries.set(jobId, entry);
      // The entry guards its id now; a key its earlier generation left is stale (the new one
      // leaves its own when it finishes). Not for a stub: its retention may drop it with no
      // guard left (it is pending, uncommitted), and meanwhile the key still answers for the
      // key's window, which a stub does not (session 39's review).
      if (tombstone !== undefined && !isStub(entry)) this.#keys.delete(jobId);
      this.#countPayload(entry, 1);
      this.#counts[entry.phase]++;
      if (!entry.committed) this.#uncommitted++;
      if (isStub(entry)) {
        this.#stubs++;
        this.#stubExpiry.push(jobId, nowWallMs + this.#options.stubRetentionMs);
      }
      this.#pushRecent(jobId);
      this.#afterPhase(entry, undefined);
      if (!entry.committed && entry.spec !== undefined) {
        this.#uncommittedExpiry.push(
          jobId,
          entry.spec.submittedAtMs + this.#options.uncommittedRetentionMs,
        );
      }
      return { effect, entry, previousPhase, previousCommitted };
    }
    this.#countPayload(entry, 1);
    if (effect === "changed") {
      if (previousPhase !== entry.phase) {
        this.#counts[previousPhase!]--;
        this.#counts[entry.phase]++;
        this.#afterPhase(entry, previousPhase);
      } else if (entry.phase !== "pending" && record.type !== "submit") {
        this.#afterPhase(entry, previousPhase);
      }
      if (!previousCommitted && entry.committed) {
        this.#uncommitted--;
        this.#uncommittedExpiry.delete(jobId);
      }
      if (wasStub && !isStub(entry)) {
        this.#stubs--;
        this.#stubExpiry.delete(jobId);
        // A finished stub skipped the finished-retention queue; it joins it now.
        if (entry.phase !== "pending") this.#afterPhase(entry, undefined);
        // A copy's uncommitted time runs from its submit, whichever record came first: a
        // SUBMIT after a DONE (sim seed 233's order) made a finished keyed copy that waits for
        // its COMMIT, and without this it would wait for ever if none came.
        if (!entry.committed) {
          this.#uncommittedExpiry.push(
            jobId,
            entry.spec!.submittedAtMs + this.#options.uncommittedRetentionMs,
          );
        }
      }
    }
    return { effect, entry, previousPhase, previousCommitted };
  }

  /**
   * Adds (`sign` 1) or takes away (-1) what `entry` holds in the count of its phase: called
   * with -1 on the state an entry leaves and 1 on the one it takes, so the counts follow every
   * change. An event's pending jobs count its payload once: with the first of them, and until
   * the last leaves, by the bytes counted then, so the count returns to 0 whatever its jobs
   * became. Delivered jobs hold none of it (`payloadDropped`).
   */
  #countPayload(entry: JobEntry, sign: 1 | -1): void {
    if (entry.phase === "delivered") return;
    const own = specBytesOf(entry);
    const bytes = payloadBytesOf(entry);
    if (own === 0 && bytes === 0) return;
    const eventId = entry.spec!.webhookId;
    if (entry.phase === "dead") this.#deadLetterBytes += sign * (own + bytes);
    else if (eventId === undefined) this.#backlogBytes += sign * (own + bytes);
    else {
      this.#backlogBytes += sign * own;
      const held = this.#pendingEvents.get(eventId);
      if (sign === 1) {
        if (held !== undefined) held.jobs++;
        else {
          this.#pendingEvents.set(eventId, { jobs: 1, payloadBytes: bytes });
          this.#backlogBytes += bytes;
        }
      } else {
        assert(held !== undefined && held.jobs > 0, "an event's pending job was counted");
        if (--held.jobs === 0) {
          this.#pendingEvents.delete(eventId);
          this.#backlogBytes -= held.payloadBytes;
        }
      }
    }
    assert(
      this.#backlogBytes >= 0 && this.#deadLetterBytes >= 0,
      "held body bytes never go negative",
    );
  }

  /**
   * A `state` record of an event's job (a checkpoint replayed, a snapshot, a handoff), or a
   * REVIVE carrying its spec, holds its own copy of the event's payload, decoded afresh: held
   * as it came, a restart from a checkpoint made one string per endpoint where the event's jobs
   * had shared one, past what the backlog count (an event's payload once) says. Its spec takes
   * the held event's string instead when the two are equal.
   */
  #sharingEventPayload(
    record: Extract<JobRecord, { type: "state" } | { type: "revive" }>,
  ): JobRecord {
    const spec = record.type === "state" ? record.state.spec : record.spec;
    if (spec?.webhookId === undefined || spec.payload === "") return record;
    const payload = this.events.get(spec.webhookId)?.body?.event.payload;
    if (payload === undefined || payload !== spec.payload) return record;
    const shared = { ...spec, payload };
    return record.type === "state"
      ? { ...record, state: { ...record.state, spec: shared } }
      : { ...record, spec: shared };
  }

  #afterPhase(entry: JobEntry, previous: JobPhase | undefined): void {
    if (entry.phase === "pending") this.#pending.add(entry.jobId);
    else this.#pending.delete(entry.jobId);
    if (previous === "dead" && entry.phase !== "dead") {
      this.#dead.delete(entry.jobId);
      this.#deadExpiry.delete(entry.jobId);
    }
    if (entry.phase === "dead") {
      if (!this.#dead.has(entry.jobId)) this.#dead.set(entry.jobId, ++this.#deadSeq);
      this.#deadExpiry.push(entry.jobId, entry.finishedAtMs + this.#options.deadRetentionMs);
    } else if (entry.phase === "delivered") {
      this.#deliveredExpiry.push(
        entry.jobId,
        entry.finishedAtMs + this.#options.finishedRetentionMs,
      );
      // From when this node learned of it or last changed it: records about a job come in
      // for a while after its delivery (a replica's DONE, a COMMIT that rode lazily), and
      // each would thaw it again.
      this.#archiveQueue.push(entry.jobId, this.#nowWallMs + this.#archiveAfterMs);
    }
  }

  #pushRecent(jobId: string): void {
    if (this.#recent.length < RECENT_MAX) this.#recent.push(jobId);
    else {
      this.#recent[this.#recentHead] = jobId;
      this.#recentHead = (this.#recentHead + 1) % RECENT_MAX;
    }
  }

  /** Up to `limit` of the most recently created entries still held, newest first. */
  recent(limit: number): JobEntry[] {
    const out: JobEntry[] = [];
    const n = this.#recent.length;
    for (let i = 1; i <= n && out.length < limit; i++) {
      const id = this.#recent[(this.#recentHead - i + n) % n]!;
      const entry = this.#held(id);
      if (entry !== undefined && !isStub(entry)) out.push(entry);
    }
    return out;
  }

  /**
   * Dead letters oldest first, after place `after` (the `next` a previous page returned).
   * `next` is the place of the last item of this page when more follow. `listed` leaves out
   * the jobs it says no to (the core's: dead letters whose DEAD is not durable yet).
   */
  deadLetters(
    limit: number,
    after?: number,
    listed: (jobId: string) => boolean = () => true,
  ): { items: JobEntry[]; more: boolean; next: number | undefined } {
    const items: JobEntry[] = [];
    let last: number | undefined;
    for (const [id, place] of this.#dead) {
      if (after !== undefined && place <= after) continue;
      if (!listed(id)) continue;
      if (items.length >= limit) return { items, more: true, next: last };
      const entry = this.#held(id);
      // A stub (its DEAD came before its SUBMIT) has nothing to show nor retry: listed, it
      // threw in the job view of every page that held it (`hookd sim --revives`, seed 16).
      if (entry !== undefined && !isStub(entry)) {
        items.push(entry);
        last = place;
      }
    }
    return { items, more: false, next: undefined };
  }

  /**
   * Drops what retention allows at wall time `nowWallMs`: delivered jobs and dead letters past
   * their windows (a keyed job leaves its key behind), stubs whose SUBMIT never came, expired
   * keys, and the oldest delivered jobs past `finishedJobsMax` and dead letters past
   * `deadLettersMax`. Returns the job ids dropped.
   */
  expire(nowWallMs: number): string[] {
    this.#nowWallMs = Math.max(this.#nowWallMs, nowWallMs);
    this.endpoints.expire(nowWallMs);
    const dropped: string[] = [];
    const finished = (queue: ExpiryQueue, phase: JobPhase, retentionMs: number) => {
      for (const jobId of queue.due(nowWallMs)) {
        const entry = this.#held(jobId);
        if (entry === undefined || entry.phase !== phase) continue;
        // A finished stub (its DONE or DEAD came before its SUBMIT, from another origin by
        // anti-entropy) waits for its SUBMIT under the stub retention instead: dropped now, the
        // SUBMIT arriving a moment later would bring the job back pending, for ever (sim seed
        // 101). Once the SUBMIT merges, the job is queued here again (`apply`).
        if (isStub(entry)) continue;
        // Likewise a keyed job finished but not committed here (its DONE or DEAD came before
        // its COMMIT): the body held may be a submit that lost to the committed one (progress
        // records name the id, not the body), and its kept key would answer for that body (sim
        // seed 233). It waits for the COMMIT, which carries the committed spec and queues the
        // job here again (`apply`); if none comes within `uncommittedRetentionMs` of its
        // submit, `dueUncommitted` hands it to the caller, which drops it with a tombstone and
        // no key.
        if (isUnsettledKeyed(entry)) continue;
        if (entry.finishedAtMs + retentionMs > nowWallMs) {
          // Its time moved later since it was queued: wait for that (at the back, where the
          // walk stops).
          queue.push(jobId, entry.finishedAtMs + retentionMs);
          continue;
        }
        this.#remove(entry);
        dropped.push(jobId);
      }
    };
    finished(this.#deliveredExpiry, "delivered", this.#options.finishedRetentionMs);
    // Past the count bound the delivered jobs pushed longest ago (finished, or changed, longest
    // ago) go now, as their retention would have taken them. The queue holds each delivered job
    // once, so its size is what the bound counts. A finished stub met here leaves the queue, not
    // the table: it waits for its SUBMIT, which puts it back (`apply`).
    trimOldest(
      this.#deliveredExpiry.oldestFirst(),
      this.#deliveredExpiry.size - this.#options.finishedJobsMax,
      (jobId) => {
        const entry = this.#held(jobId);
        if (
          entry === undefined || entry.phase !== "delivered" || isStub(entry) ||
          isUnsettledKeyed(entry)
        ) {
          this.#deliveredExpiry.delete(jobId);
          return;
        }
        this.#remove(entry);
        dropped.push(jobId);
      },
    );
    finished(this.#deadExpiry, "dead", this.#options.deadRetentionMs);
    const evictDead = (jobId: string) => {
      const entry = this.#held(jobId);
      if (entry === undefined) {
        this.#dead.delete(jobId);
        return;
      }
      this.#remove(entry);
      dropped.push(jobId);
    };
    trimOldest(this.#dead.keys(), this.#dead.size - this.#options.deadLettersMax, evictDead);
    // Past the byte bound too, the oldest dead letters that hold bytes go (one iterator, as
    // `trimOldest`); a dead stub holds none, and dropping it would free nothing.
    if (this.#deadLetterBytes > this.#deadLetterBytesMax) {
      for (const jobId of this.#dead.keys()) {
        const entry = this.#held(jobId);
        if (entry !== undefined && entry.spec === undefined) continue;
        evictDead(jobId);
        if (this.#deadLetterBytes <= this.#deadLetterBytesMax) break;
      }
    }
    for (const jobId of this.#stubExpiry.due(nowWallMs)) {
      const entry = this.#held(jobId);
      if (entry !== undefined && isStub(entry)) {
        this.#remove(entry);
        dropped.push(jobId);
      }
    }
    for (const jobId of this.#keyExpiry.due(nowWallMs)) {
      const key = this.#keys.get(jobId);
      // Kept past its window by the clock skew: a node whose clock runs ahead must still
      // answer for the key while a submit stamped by a slower clock is within the window.
      if (
        key !== undefined && this.#keyKeptUntil(key.expiresAtMs) <= nowWallMs
      ) this.#keys.delete(jobId);
    }
    this.#expireEvents(nowWallMs);
    // In (roughly) due order: stop at the first not due (one set on a skewed clock waits
    // behind it, never longer than the skew).
    for (const [jobId, expiresAtMs] of this.#gone) {
      if (expiresAtMs > nowWallMs) break;
      this.#gone.delete(jobId);
      this.#goneGens.delete(jobId);
    }
    this.#trimGone(this.#options.finishedTombstonesMax);
    this.#archiveBacklogged = this.archiveDue(nowWallMs);
    return dropped;
  }

  /**
   * When a key whose window ends at `expiresAtMs` is forgotten here: the clock skew later, so
   * a node whose clock runs ahead still answers for it while a submit stamped by a slower
   * clock is within the window.
   */
  #keyKeptUntil(expiresAtMs: number): number {
    return expiresAtMs + this.#options.idempotencyClockSkewMs;
  }

  /**
   * Removes a job; a keyed one leaves its key behind unless `keepKey` is false, an unkeyed
   * finished one its tombstone (a pending stub is not finished: its SUBMIT may still make it).
   */
  #remove(entry: JobEntry, keepKey = true): void {
    const spec = entry.spec;
    this.#countPayload(entry, -1);
    const held = this.#entries.get(entry.jobId);
    if (typeof held === "number") this.#archive.free(held);
    this.#entries.delete(entry.jobId);
    this.#pending.delete(entry.jobId);
    for (
      const queue of [
        this.#deliveredExpiry,
        this.#deadExpiry,
        this.#stubExpiry,
        this.#uncommittedExpiry,
        this.#archiveQueue,
      ]
    ) queue.delete(entry.jobId);
    this.#counts[entry.phase]--;
    if (!entry.committed) this.#uncommitted--;
    if (isStub(entry)) this.#stubs--;
    this.#dead.delete(entry.jobId);
    this.compacted++;
    assert(this.#counts[entry.phase] >= 0, "job counts never go negative");
    // A kept key says the key's job was acknowledged with this body (a retry is answered
    // with it, and so is a peer's SUBMIT): only a committed copy knows its body is the one.
    // A copy pending and uncommitted may be a submit the replicas refused (sim seed 319); one
    // finished but uncommitted only knows that some body of the id was (sim seed 233).
    let keyKept = false;
    const overGen = entry.phase === "delivered" ? ALL_GENERATIONS : entry.gen;
    if (keepKey && entry.committed && spec?.idempotencyKey !== undefined) {
      const expiresAtMs = spec.submittedAtMs + this.#options.idempotencyWindowMs;
      // Past the key's keeping time already (a dead letter compacted after its window), the
      // key would be forgotten in this same pass, leaving no guard: a tombstone instead.
      if (this.#keyKeptUntil(expiresAtMs) > Math.max(entry.finishedAtMs, this.#nowWallMs)) {
        this.#keys.set(entry.jobId, {
          key: spec.idempotencyKey,
          jobId: entry.jobId,
          bodyHash: entry.bodyHash,
          expiresAtMs,
          ...(overGen > 0 ? { gen: overGen } : {}),
        });
        this.#keyExpiry.push(entry.jobId, this.#keyKeptUntil(expiresAtMs));
        keyKept = true;
      }
    }
    // A finished job leaves a guard against its late records: its kept key, else a tombstone.
    // Keyed jobs too, when they leave no key (a finished stub, a job finished after its key's
    // window, a copy never committed here): with neither, a late SUBMIT, COMMIT or `state`
    // made the job anew, pending for ever (session 38's review). A tombstone cannot block a
    // later incarnation of the key: that one is first submitted a window later, so in another
    // epoch, under another id (keyed_id.ts). A pending job is not finished: its SUBMIT may
    // still make it, so it leaves nothing.
    if (entry.phase !== "pending" && !keyKept) {
      this.#setGone(entry.jobId, overGen, this.#nowWallMs + this.#options.finishedTombstoneMs);
    }
  }

  /**
   * Keeps (or extends) job `jobId`'s tombstone. `expire` keeps the count bound, in one pass;
   * here only a backstop at twice the bound stops a burst between two passes (a checkpoint's
   * tombstones, thousands of jobs compacted at once) from growing it without end.
   */
  #setGone(jobId: string, gen: number, expiresAtMs: number): void {
    const held = this.#gone.get(jobId);
    const heldGen = this.#goneGens.get(jobId) ?? 0;
    // Set last: the Map's order is the expiry order.
    this.#gone.delete(jobId);
    this.#gone.set(jobId, Math.max(held ?? 0, expiresAtMs));
    if (Math.max(gen, heldGen) > 0) this.#goneGens.set(jobId, Math.max(gen, heldGen));
    if (this.#gone.size > 2 * this.#options.finishedTombstonesMax) {
      this.#trimGone(this.#options.finishedTombstonesMax);
    }
  }

  /** Drops the oldest tombstones past `max`. */
  #trimGone(max: number): void {
    trimOldest(this.#gone.keys(), this.#gone.size - max, (jobId) => {
      this.#gone.delete(jobId);
      this.#goneGens.delete(jobId);
    });
    assert(this.#gone.size <= max, "tombstones stay bounded");
  }

  /**
   * An event record (docs/endpoints.md). `event` makes the event and all its jobs here in this
   * one call (each job as a SUBMIT stamped with the event's stamp, so a confirm round resends
   * the event); `event-commit` commits the event and every job of it held; `event-state` (a
   * checkpoint, a snapshot) holds the event and, if committed, commits its jobs held, but
   * makes no job: the jobs' own `state` records carry them (a job the sender finished and
   * compacted is not in them, and must not come back). A keyed event is put-if-absent by id:
   * another body is a `conflict`, unless a COMMIT carries the committed body, which replaces an
   * uncommitted loser and its jobs. An event compacted here leaves a tombstone (or its key),
   * and a late record of it is dropped, as a job's is.
   */
  #applyEvent(record: EventRecord, nowWallMs: number): ApplyResult {
    const body: EventBody | undefined = record.type === "event-commit"
      ? record.body
      : record.type === "event"
      ? record.body
      : record.state.body;
    const id = record.type === "event-commit" ? record.eventId : body!.event.id;
    const bodyHash = record.type === "event-commit" ? record.bodyHash : body!.event.bodyHash;
    const committed = record.type === "event-commit" ||
      (record.type === "event-state" && record.state.committed);
    let held = this.events.get(id);
    if (held === undefined) {
      const key = this.#keys.get(id);
      if (key !== undefined) {
        return { ...NOTHING, effect: key.bodyHash !== bodyHash ? "conflict" : "unchanged" };
      }
      if (this.#gone.has(id)) {
        this.lateRecords++;
        return NOTHING;
      }
      const eventKey = record.type === "event" ? body!.event.idempotencyKey : undefined;
      if (
        eventKey !== undefined &&
        this.liveEventIncarnation(eventKey, body!.event.submittedAtMs, id) !== undefined
      ) {
        // Another incarnation of the key is live for this event here: put-if-absent per key,
        // as for a keyed SUBMIT. If this one is committed after all, its EVENT-COMMIT carries
        // the body.
        return { ...NOTHING, effect: "conflict" };
      }
    }
    if (
      held !== undefined && held.body === undefined && held.committed &&
      held.bodyHash !== bodyHash && record.type === "event"
    ) {
      // A stub its EVENT-COMMIT made knows the committed body: any other is the loser.
      return { ...NOTHING, effect: "conflict" };
    }
    const fanout: JobEntry[] = [];
    const fanoutRemoved: string[] = [];
    let changed = false;
    if (held !== undefined && held.body !== undefined && held.bodyHash !== bodyHash) {
      // Another body under this (keyed) id: a loser, unless this is the committed one.
      if (held.committed || body === undefined || !committed) {
        if (committed && held.committed) this.commitConflicts++;
        return { ...NOTHING, effect: "conflict" };
      }
      for (const jobId of eventJobIds(held.body)) {
        if (this.dropUncommitted(jobId)) fanoutRemoved.push(jobId);
      }
      this.events.delete(id);
      held = undefined;
      changed = true;
    }
    if (held === undefined) {
      held = { id, body: undefined, stamp: undefined, bodyHash, committed: false };
      this.events.add(
        held,
        body !== undefined ? this.#eventDue(body) : nowWallMs + this.#options.stubRetentionMs,
      );
      changed = true;
    }
    if (held.body === undefined && body !== undefined) {
      held.body = body;
      held.stamp = record.type === "event"
        ? record.stamp
        : record.type === "event-state"
        ? record.state.stamp
        : undefined;
      held.bodyHash = bodyHash;
      this.events.recheck(id, this.#eventDue(body));
      changed = true;
      if (record.type === "event" || record.type === "event-commit") {
        // The jobs, all here at once. A job finished and compacted here stays so (its own
        // tombstone drops its SUBMIT).
        this.#makeEventJobs(held.stamp ?? record.stamp, body, fanout, () => true, nowWallMs);
      }
    } else {
      if (held.stamp === undefined && record.type === "event") held.stamp = record.stamp;
      if (
        (record.type === "event" || record.type === "event-commit") && body !== undefined &&
        held.body !== undefined && held.bodyHash === bodyHash
      ) {
        // The event came first from a snapshot's `event-state`, which makes no job, and the
        // snapshot broke off before its jobs' `state` records (sim seed 139 with --events: its
        // server crashed). The event's own record, here now, makes the jobs missing, as it does
        // on a node that never held the event: this node's log counts the record as held, and a
        // snapshot of it would otherwise tell its requester the jobs finished here (`#afterSnapshot`
        // in catchup_client.ts compacts them there, and the tombstones spread: the acknowledged
        // event was lost on every node).
        this.#makeEventJobs(
          held.stamp ?? record.stamp,
          body,
          fanout,
          (jobId) => this.#held(jobId)?.spec === undefined,
          nowWallMs,
        );
        // Jobs of an event committed here are committed with it (below).
        if (fanout.length > 0) changed = true;
      }
    }
    if (committed && !held.committed) {
      held.committed = true;
      changed = true;
    }
    if (held.committed && held.body !== undefined && (committed || changed)) {
      const stamp = record.type === "event-state" ? record.state.stamp : record.stamp;
      for (const jobId of eventJobIds(held.body)) {
        const entry = this.#held(jobId);
        if (entry === undefined || entry.committed) continue;
        const r = this.apply({ type: "commit", stamp, jobId, bodyHash: "" }, nowWallMs);
        if (r.entry !== undefined && r.effect === "changed" && !fanout.includes(r.entry)) {
          fanout.push(r.entry);
        }
      }
    }
    return {
      ...NOTHING,
      effect: changed || fanout.length > 0 ? "changed" : "unchanged",
      ...(fanout.length > 0 ? { fanout } : {}),
      ...(fanoutRemoved.length > 0 ? { fanoutRemoved } : {}),
    };
  }

  /**
   * Applies the SUBMIT of each job of `body` that `wanted` names (stamped `stamp`, the event's),
   * and adds the jobs that changed to `fanout`.
   */
  #makeEventJobs(
    stamp: Stamp,
    body: EventBody,
    fanout: JobEntry[],
    wanted: (jobId: string) => boolean,
    nowWallMs: number,
  ): void {
    for (const job of body.jobs) {
      const spec = eventJobSpec(body.event, job);
      if (!wanted(spec.id)) continue;
      const r = this.apply({ type: "submit", stamp, spec }, nowWallMs);
      if (r.entry !== undefined && r.effect === "changed") fanout.push(r.entry);
    }
  }

  /**
   * When an event first comes up for retention: `finishedRetentionMs` after its submit, a keyed
   * one not before its idempotency window ends (a retry is answered with its jobs meanwhile).
   */
  #eventDue(body: EventBody): number {
    const keyed = body.event.idempotencyKey !== undefined;
    return body.event.submittedAtMs +
      Math.max(
        this.#options.finishedRetentionMs,
        keyed ? this.#options.idempotencyWindowMs : 0,
      );
  }

  /**
   * Events past their retention whose jobs have all left: dropped, leaving a tombstone (an
   * acknowledged keyed event, its key for the rest of its window) so no late record makes one
   * anew. An event with a job still held waits for it.
   */
  #expireEvents(nowWallMs: number): void {
    const later: Array<[string, number]> = [];
    for (const event of this.events.due(nowWallMs)) {
      const body = event.body;
      if (body === undefined) {
        this.events.delete(event.id);
        continue;
      }
      if (eventJobIds(body).some((jobId) => this.#entries.has(jobId))) {
        later.push([event.id, nowWallMs + this.#options.finishedRetentionMs]);
        continue;
      }
      this.events.delete(event.id);
      if (!event.committed) continue;
      const key = body.event.idempotencyKey;
      if (key !== undefined) {
        const expiresAtMs = body.event.submittedAtMs + this.#options.idempotencyWindowMs;
        if (this.#keyKeptUntil(expiresAtMs) > nowWallMs) {
          this.#keys.set(event.id, { key, jobId: event.id, bodyHash: event.bodyHash, expiresAtMs });
          this.#keyExpiry.push(event.id, this.#keyKeptUntil(expiresAtMs));
        }
      } else {
        this.#setGone(event.id, 0, nowWallMs + this.#options.finishedTombstoneMs);
      }
    }
    for (const [id, atMs] of later) this.events.recheck(id, atMs);
  }

  /**
   * Drops an event that was never acknowledged here (uncommitted) with its uncommitted jobs,
   * leaving no key or tombstone behind; returns the jobs dropped.
   */
  dropUncommittedEvent(id: string): string[] {
    const event = this.events.get(id);
    if (event === undefined || event.committed) return [];
    const dropped = event.body === undefined
      ? []
      : eventJobIds(event.body).filter((jobId) => this.dropUncommitted(jobId));
    this.events.delete(id);
    return dropped;
  }

  /** The event `id` if held with its body. */
  event(id: string): EventEntry | undefined {
    const e = this.events.get(id);
    return e?.body !== undefined ? e : undefined;
  }

  /**
   * Jobs submitted more than `uncommittedRetentionMs` ago and still uncommitted here: pending
   * copies, and keyed copies finished here whose COMMIT never came (`expire` keeps those for
   * it). The caller decides which to `drop` (it keeps the pending ones it owns).
   */
  dueUncommitted(nowWallMs: number): JobEntry[] {
    const out: JobEntry[] = [];
    for (const jobId of this.#uncommittedExpiry.due(nowWallMs)) {
      const entry = this.#held(jobId);
      if (entry === undefined || entry.committed) continue;
      if (entry.phase === "pending" || isUnsettledKeyed(entry)) out.push(entry);
    }
    return out;
  }

  /** Asks again about an uncommitted job later (its owner keeps it). */
  recheckUncommitted(jobId: string, atWallMs: number): void {
    this.#uncommittedExpiry.push(jobId, atWallMs);
  }

  /** Drops a job that was never acknowledged, leaving no idempotency key behind. */
  dropUncommitted(jobId: string): boolean {
    const entry = this.#held(jobId);
    if (entry === undefined || entry.committed) return false;
    this.#remove(entry, false);
    return true;
  }

  /** Every job and kept key as records: what a checkpoint writes and a snapshot ships. */
  *snapshotRecords(): Generator<JobRecord> {
    for (const item of this.snapshotRecordsOrBytes()) {
      if (!(item instanceof Uint8Array)) yield item;
      else {
        const decoded = decodeRecord(item);
        assert(decoded.ok && decoded.value.type === "state", "an archived job's record decodes");
        yield decoded.value;
      }
    }
  }

  /**
   * `snapshotRecords`, with an archived job as the bytes of its record (a view of the archive,
   * valid until the next record is drawn: copy it before): a checkpoint or a snapshot page
   * copies them as they are, rather than decode each only to encode it again.
   */
  *snapshotRecordsOrBytes(): Generator<JobRecord | Uint8Array> {
    // Events before jobs: a replay or a snapshot's requester holds an event before its jobs.
    for (const event of this.events.values()) {
      const state = this.events.stateOf(event);
      if (state !== undefined) yield { type: "event-state", state };
    }
    for (const held of this.#entries.values()) {
      yield typeof held === "number"
        ? this.#archive.bytes(held)
        : { type: "state", state: snapshotOf(held) };
    }
    for (const state of this.endpoints.values()) yield { type: "endpoint-state", state };
    for (const key of this.#keys.values()) yield { type: "key", key };
    for (const jobId of this.#gone.keys()) {
      const gone = this.goneTombstone(jobId);
      if (gone !== undefined) yield { type: "gone", gone };
    }
  }
}

/**
 * The generation a record is about: a SUBMIT or COMMIT belongs to the job's first life (a
 * manual retry bumps the generation with a REVIVE and never writes a SUBMIT again).
 */
function recordGen(record: JobOnlyRecord): number {
  switch (record.type) {
    case "submit":
    case "commit":
      return 0;
    case "state":
      return record.state.gen;
    default:
      return record.gen;
  }
}
