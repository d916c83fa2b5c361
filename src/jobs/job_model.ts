/**
 * The replicated job model: what a job is, the records that change it, and the merge rule
 * that makes every replica converge whatever order the records arrive in.
 *
 * Owns plain data and pure functions only (no I/O, no clocks, no randomness). The job table
 * (job_table.ts) holds `JobEntry` values and applies records through `applyRecord`; the codec
 * (job_codec.ts, job_messages.ts) moves them between nodes and onto the WAL.
 *
 * Why a merge rule rather than an order: records of one job come from different origins (the
 * node that took the submit writes SUBMIT and COMMIT, its owner writes RETRY/DONE/DEAD, any
 * node writes REVIVE), travel without head-of-line blocking and are replayed by anti-entropy
 * in any order. So each job's state is a join: `committed` only grows; `delivered` absorbs;
 * otherwise the higher generation (bumped by a manual retry of a dead letter) wins, then dead
 * over pending, then more attempts over fewer. Applying a record twice changes nothing.
 */

import type { AttemptRecord } from "../delivery/types.ts";
import type { EndpointState } from "./endpoint_model.ts";
import type { EventBody } from "./event_model.ts";

/** Where a replicated record comes from: its origin voter and that origin's sequence number. */
export interface Stamp {
  /** The origin's voter address (`host:port`, canonical). */
  readonly origin: string;
  /** 1-based, dense per origin: gaps are what anti-entropy fills. */
  readonly seq: number;
}

/** Whether two stamps name the same record. */
export function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.origin === b.origin && a.seq === b.seq;
}

/** A job as submitted: immutable once written. */
export interface JobSpec {
  readonly id: string;
  readonly url: string;
  readonly payload: string;
  readonly headers: Readonly<Record<string, string>>;
  /** `whsec_` secrets; empty: unsigned. */
  readonly secrets: readonly string[];
  /** Per-attempt timeout, ms; 0: the node's default. */
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  /** Wall-clock epoch ms at the node that took the submit. */
  readonly submittedAtMs: number;
  readonly idempotencyKey?: string;
  /**
   * Hash of everything the client sent (keyed submits only; "" otherwise): a retry with the
   * same key must carry the same body, or it is a conflict.
   */
  readonly bodyHash: string;
  /**
   * Sent as `webhook-id` instead of the job id: an event's jobs carry the event's id, the same
   * for every endpoint (docs/endpoints.md). Absent: the job id.
   */
  readonly webhookId?: string;
  /**
   * An ordered endpoint's job (an event's, `webhookId` set): owned by the endpoint's owner and
   * attempted only as the head of the endpoint's queue (ordered_queues.ts). Taken from the
   * event's fan-out entry, so every replica agrees. Absent: unordered.
   */
  readonly ordered?: true;
}

/**
 * The key a job's owner is ranked by: its ordered endpoint's id for an ordered endpoint's job
 * (one owner per endpoint, so the ordinary handoffs move its jobs together), else its own id.
 */
export function ownerKeyOf(jobId: string, spec: JobSpec | undefined): string {
  if (spec?.ordered !== true || spec.webhookId === undefined) return jobId;
  return jobId.slice(spec.webhookId.length + 1);
}

/**
 * One attempt in a job's history: the engine's record of it (`AttemptRecord`: its number within
 * its round, start, latency, outcome, detail) and what the job store adds.
 */
export interface AttemptEntry extends AttemptRecord {
  /**
   * The round it belongs to: 0 for the job's own, n for the n-th manual retry (the job's
   * generation). Absent: 0. `numberAttempts` numbers attempts across rounds for display.
   */
  readonly retry?: number;
  /** 0 when the receiver did not answer. */
  readonly status: number;
  /** Voter address of the node that made it. */
  readonly node: string;
}

export type JobPhase = "pending" | "dead" | "delivered";

/** Replicated records (each carries a stamp) and local-only ones (snapshots, handoffs). */
export type JobRecord =
  | { readonly type: "submit"; readonly stamp: Stamp; readonly spec: JobSpec }
  | {
    /** The proposer saw SUBMIT durable on a majority. Carries the spec to replicas that had
     * answered with another body for the same (keyed) id, so they take the committed one. */
    readonly type: "commit";
    readonly stamp: Stamp;
    readonly jobId: string;
    readonly bodyHash: string;
    readonly spec?: JobSpec;
  }
  | {
    readonly type: "retry";
    readonly stamp: Stamp;
    readonly jobId: string;
    readonly gen: number;
    readonly attemptsMade: number;
    readonly nextAttemptAtMs: number;
    readonly attempt: AttemptEntry;
  }
  | {
    readonly type: "done";
    readonly stamp: Stamp;
    readonly jobId: string;
    readonly gen: number;
    readonly finishedAtMs: number;
    readonly attempt?: AttemptEntry;
  }
  | {
    readonly type: "dead";
    readonly stamp: Stamp;
    readonly jobId: string;
    readonly gen: number;
    readonly attemptsMade: number;
    readonly finishedAtMs: number;
    readonly reason: string;
    readonly attempt?: AttemptEntry;
  }
  | {
    /** A dead letter retried by hand: generation `gen` starts from attempt 1. */
    readonly type: "revive";
    readonly stamp: Stamp;
    readonly jobId: string;
    readonly gen: number;
    /**
     * The job's committed spec, which the reviving node held: a replica that compacted the
     * dead letter (its retention ended first) holds nothing else of the job, and no SUBMIT
     * comes again (its seq is held), so without it the new generation would be a stub it
     * never delivers. Absent in records written before it was carried, and when the
     * reviver's copy is not committed.
     */
    readonly spec?: JobSpec;
    /** The SUBMIT's stamp, when the reviver knew it (with `spec`). */
    readonly submitStamp?: Stamp;
  }
  | {
    /**
     * An endpoint's whole new value (docs/endpoints.md): written by the node that took a
     * create, update or delete; `state.version`'s origin and seq are this record's stamp.
     */
    readonly type: "endpoint";
    readonly stamp: Stamp;
    readonly state: EndpointState;
  }
  | {
    /**
     * An owner delivered a job of the endpoint (docs/endpoints.md, "Disabling"): its
     * `lastSuccessAtMs` rises to at least this. A join by maximum beside the endpoint's
     * last-writer-wins value, so it never undoes a write; dropped where the endpoint is not
     * held (it only delays a failing endpoint's disable).
     */
    readonly type: "endpoint-health";
    readonly stamp: Stamp;
    readonly endpointId: string;
    readonly lastSuccessAtMs: number;
  }
  | {
    /**
     * An event and the jobs it fans out to (docs/endpoints.md): written by the node that took
     * the event; applying it makes the event and all its jobs at once, so no replica holds
     * part of one. Proposed like a SUBMIT, committed by one `event-commit`.
     */
    readonly type: "event";
    readonly stamp: Stamp;
    readonly body: EventBody;
  }
  | {
    /**
     * The proposer saw the `event` durable on a majority: the event and every one of its jobs
     * are committed. Carries the body for a keyed event (replicas that held another body for
     * the id take the committed one), as a keyed job's COMMIT carries its spec.
     */
    readonly type: "event-commit";
    readonly stamp: Stamp;
    readonly eventId: string;
    readonly bodyHash: string;
    readonly body?: EventBody;
  }
  | {
    /**
     * The origin declares these seqs of its own stream void (never written, or lost with its
     * unsynced tail before a restart), so nobody waits for them.
     */
    readonly type: "skip";
    readonly stamp: Stamp;
    readonly ranges: readonly (readonly [number, number])[];
  }
  /** A job's whole state: in checkpoints, handoffs and snapshot catch-up. */
  | { readonly type: "state"; readonly state: JobStateSnapshot }
  /** An idempotency key kept after its job was compacted away. */
  | { readonly type: "key"; readonly key: KeyTombstone }
  /** An unkeyed job that finished and was compacted away (see `GoneTombstone`). */
  | { readonly type: "gone"; readonly gone: GoneTombstone }
  /** An endpoint's value (tombstones too): in checkpoints and snapshots. */
  | { readonly type: "endpoint-state"; readonly state: EndpointState }
  /** An event (its body, its record's stamp, committed or not): in checkpoints and snapshots. */
  | { readonly type: "event-state"; readonly state: EventState }
  /** Replication bookkeeping in a checkpoint: the next own seq and what is held per origin. */
  | { readonly type: "meta"; readonly nextOwnSeq: number; readonly held: readonly HeldRanges[] };

export type ReplicatedRecord = Extract<JobRecord, { stamp: Stamp }>;

/** Records about endpoints, not jobs: the job table hands them to its endpoint table. */
export type EndpointRecord = Extract<
  JobRecord,
  { type: "endpoint" | "endpoint-state" | "endpoint-health" }
>;

/** Records about events: the job table hands them to its event table (and makes the jobs). */
export type EventRecord = Extract<JobRecord, { type: "event" | "event-commit" | "event-state" }>;

/** Records about one job (what `applyRecord` takes). */
export type JobOnlyRecord = Exclude<
  JobRecord,
  {
    type:
      | "skip"
      | "key"
      | "gone"
      | "meta"
      | "endpoint"
      | "endpoint-state"
      | "endpoint-health"
      | "event"
      | "event-commit"
      | "event-state";
  }
>;

/** An event as a node holds it (what `event-state` records carry). */
export interface EventState {
  readonly body: EventBody;
  /** The `event` record's stamp (a confirm round resends the record as it was). */
  readonly stamp: Stamp;
  readonly committed: boolean;
}

export interface HeldRanges {
  readonly origin: string;
  /** Every seq in [1, contiguous] is held. */
  readonly contiguous: number;
  /** Further held ranges above `contiguous`, ascending, disjoint, inclusive. */
  readonly above: readonly (readonly [number, number])[];
}

export interface KeyTombstone {
  readonly key: string;
  readonly jobId: string;
  readonly bodyHash: string;
  /** Wall-clock epoch ms after which the key may be reused. */
  readonly expiresAtMs: number;
  /**
   * The generation that finished (absent: 0). A dead letter retried by hand elsewhere lives
   * on in a later one, whose records the key must not block.
   */
  readonly gen?: number;
}

/**
 * An unkeyed job finished (generation `gen` delivered or dead) and was compacted: until
 * `expiresAtMs`, no late record of that generation or an older one makes the job anew (in
 * checkpoints and snapshots; a keyed job's `KeyTombstone` does the same for its key's window).
 */
export interface GoneTombstone {
  readonly jobId: string;
  readonly gen: number;
  /** Wall-clock epoch ms after which the tombstone is dropped. */
  readonly expiresAtMs: number;
}

/** Keyed job ids start so (a hash of the key follows); minted ones are `job_` and hex. */
export const KEYED_ID_PREFIX = "job_k";

/** A job's state as one value (what `state` records carry). */
export interface JobStateSnapshot {
  readonly jobId: string;
  /** Absent for a stub: updates arrived before the SUBMIT did. */
  readonly spec?: JobSpec;
  /** The SUBMIT's stamp (confirm rounds resend it as it was). */
  readonly submitStamp?: Stamp;
  /** Body hash of the committed version ("" for unkeyed jobs). */
  readonly bodyHash: string;
  readonly committed: boolean;
  readonly gen: number;
  readonly phase: JobPhase;
  readonly attemptsMade: number;
  readonly nextAttemptAtMs: number;
  readonly finishedAtMs: number;
  readonly deadReason: string;
  readonly history: readonly AttemptEntry[];
  /**
   * The REVIVE that claimed generation `gen` on the node that wrote this state (`JobEntry`'s
   * `reviveOf`), if one did: a node that gets the generation by this state (a checkpoint, a
   * snapshot, a handoff) then refuses another REVIVE of it as that node does.
   */
  readonly reviveOf?: { readonly gen: number; readonly stamp: Stamp };
}

/** Mutable per-job state in a node's table. */
export interface JobEntry {
  readonly jobId: string;
  spec: JobSpec | undefined;
  submitStamp: Stamp | undefined;
  bodyHash: string;
  committed: boolean;
  gen: number;
  phase: JobPhase;
  attemptsMade: number;
  nextAttemptAtMs: number;
  finishedAtMs: number;
  deadReason: string;
  history: AttemptEntry[];
  /** The payload (and secrets, headers) were dropped after delivery to save memory. */
  payloadDropped: boolean;
  /**
   * The first REVIVE of generation `gen` this node applied (the one that started it, or came
   * after the owner's RETRY had brought the generation): a replica votes for another REVIVE of
   * the same generation only if it is that one (incoming_records.ts, `#pastStartOf`).
   * A `state` (a checkpoint replayed, a snapshot, a handoff) carries it: the node that wrote it
   * named the REVIVE, and a node that gets the generation so takes that one. Undefined for
   * generation 0, and where the generation came by a state whose writer knew no REVIVE of it
   * either (one written before session 42, or a chain of them back to the owner's RETRY).
   */
  reviveOf: { readonly gen: number; readonly stamp: Stamp } | undefined;
}

/** What applying a record did, for the caller's bookkeeping (scheduling, metrics, acks). */
export type ApplyEffect =
  /** Nothing changed (a repeat, or an update older than the state). */
  | "unchanged"
  /** The job was created, or its state moved. */
  | "changed"
  /** A SUBMIT whose id is held with another body (keyed submits): not stored. */
  | "conflict";

export function newEntry(jobId: string): JobEntry {
  return {
    jobId,
    spec: undefined,
    submitStamp: undefined,
    bodyHash: "",
    committed: false,
    gen: 0,
    phase: "pending",
    attemptsMade: 0,
    nextAttemptAtMs: 0,
    finishedAtMs: 0,
    deadReason: "",
    history: [],
    payloadDropped: false,
    reviveOf: undefined,
  };
}

/**
 * The generation a delivered job's guard (its tombstone or kept key) names: every one. A
 * delivered job is delivered in every generation (`joinProgress`: a retry by hand of a job
 * some node delivered changes nothing), so no record of any generation may make it anew
 * where it was compacted (a REVIVE reaching a node that had delivered and compacted the job
 * made it pending there for ever: `hookd sim --revives`, seed 154). Fits the codecs' u32.
 */
export const ALL_GENERATIONS = 0xffff_ffff;

/** A stub has state but no spec yet: it cannot be delivered until the SUBMIT arrives. */
export function isStub(entry: JobEntry): boolean {
  return entry.spec === undefined;
}

/** What a delivered job's spec holds instead of headers and secrets: one frozen value each. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const NO_SECRETS: readonly string[] = Object.freeze([]);

/** The spec with payload, headers and secrets dropped (kept for queries after delivery). */
function withoutPayload(spec: JobSpec): JobSpec {
  return { ...spec, payload: "", headers: NO_HEADERS, secrets: NO_SECRETS };
}

/**
 * A job delivered: its spec loses payload, headers and secrets, and its history array is cut
 * to its length. What is left stays in the table for `finishedRetentionMs` (1 h), so its size
 * is the table's per-job memory: an array grown by `push` keeps room for 17 entries (136 bytes
 * of a delivered job's ~1,000, bench/results/session28/), a fresh `{}` and `[]` 90 more.
 */
function dropPayloadOf(entry: JobEntry, spec: JobSpec): void {
  entry.spec = withoutPayload(spec);
  entry.payloadDropped = true;
  entry.history = entry.history.slice();
}

/**
 * Whether `entry`'s history holds `attempt`: one node's attempt n of round r started at t is
 * one event, whichever records told of it (each manual retry numbers its attempts from 1 again).
 */
export function holdsAttempt(entry: JobEntry, attempt: AttemptEntry): boolean {
  for (const h of entry.history) {
    if (
      h.attempt === attempt.attempt && h.startedAtMs === attempt.startedAtMs &&
      h.node === attempt.node && (h.retry ?? 0) === (attempt.retry ?? 0)
    ) return true;
  }
  return false;
}

function addHistory(entry: JobEntry, attempt: AttemptEntry | undefined, historyMax: number): void {
  if (attempt === undefined || holdsAttempt(entry, attempt)) return;
  entry.history.push(attempt);
  entry.history.sort((a, b) =>
    a.startedAtMs - b.startedAtMs || a.attempt - b.attempt ||
    (a.node < b.node ? -1 : a.node > b.node ? 1 : 0)
  );
  if (entry.history.length > historyMax) entry.history.splice(0, entry.history.length - historyMax);
}

const PHASE_RANK: Readonly<Record<JobPhase, number>> = { pending: 0, dead: 1, delivered: 2 };

/** The part of a job's state that delivery moves forward. */
interface Progress {
  gen: number;
  phase: JobPhase;
  attemptsMade: number;
  nextAttemptAtMs: number;
  finishedAtMs: number;
  deadReason: string;
}

/**
 * The join of two progress values: commutative, associative and idempotent, so replicas that
 * saw the same updates in any order, any number of times, agree.
 * - `delivered` absorbs: the join is delivered at the highest generation seen, with the most
 *   attempts and the earliest delivery time.
 * - Otherwise the higher generation wins whole (a manual retry starts afresh).
 * - In one generation `dead` beats `pending`; attempts take the maximum, and the schedule
 *   (or the dead reason) goes with the most attempts, ties broken by value.
 */
function joinProgress(a: Progress, b: Progress): Progress {
  if (a.phase === "delivered" || b.phase === "delivered") {
    const finished = [a, b].filter((p) => p.phase === "delivered").map((p) => p.finishedAtMs);
    return {
      gen: Math.max(a.gen, b.gen),
      phase: "delivered",
      attemptsMade: Math.max(a.attemptsMade, b.attemptsMade),
      nextAttemptAtMs: 0,
      finishedAtMs: Math.min(...finished),
      deadReason: "",
    };
  }
  if (a.gen !== b.gen) return a.gen > b.gen ? a : b;
  const phase = PHASE_RANK[a.phase] >= PHASE_RANK[b.phase] ? a.phase : b.phase;
  const attemptsMade = Math.max(a.attemptsMade, b.attemptsMade);
  if (phase === "dead") {
    const deads = [a, b].filter((p) => p.phase === "dead").sort((x, y) =>
      y.attemptsMade - x.attemptsMade || x.finishedAtMs - y.finishedAtMs ||
      (x.deadReason < y.deadReason ? -1 : x.deadReason > y.deadReason ? 1 : 0)
    );
    const d = deads[0]!;
    return {
      gen: a.gen,
      phase,
      attemptsMade,
      nextAttemptAtMs: 0,
      finishedAtMs: d.finishedAtMs,
      deadReason: d.deadReason,
    };
  }
  const next = a.attemptsMade !== b.attemptsMade
    ? (a.attemptsMade > b.attemptsMade ? a : b).nextAttemptAtMs
    : Math.max(a.nextAttemptAtMs, b.nextAttemptAtMs);
  return {
    gen: a.gen,
    phase,
    attemptsMade,
    nextAttemptAtMs: next,
    finishedAtMs: 0,
    deadReason: "",
  };
}

/** Joins an update into `entry`; returns whether anything changed. */
function mergeProgress(
  entry: JobEntry,
  gen: number,
  phase: JobPhase,
  attemptsMade: number,
  nextAttemptAtMs: number,
  finishedAtMs: number,
  deadReason: string,
): boolean {
  const joined = joinProgress(entry, {
    gen,
    phase,
    attemptsMade,
    nextAttemptAtMs,
    finishedAtMs,
    deadReason,
  });
  const changed = joined.gen !== entry.gen || joined.phase !== entry.phase ||
    joined.attemptsMade !== entry.attemptsMade ||
    joined.nextAttemptAtMs !== entry.nextAttemptAtMs ||
    joined.finishedAtMs !== entry.finishedAtMs || joined.deadReason !== entry.deadReason;
  if (changed) {
    entry.gen = joined.gen;
    entry.phase = joined.phase;
    entry.attemptsMade = joined.attemptsMade;
    entry.nextAttemptAtMs = joined.nextAttemptAtMs;
    entry.finishedAtMs = joined.finishedAtMs;
    entry.deadReason = joined.deadReason;
  }
  return changed;
}

/**
 * Applies a job record to `entry` (created by the caller with `newEntry` when absent). Pure
 * with respect to everything but `entry`. `skip`, `key` and `meta` records do not touch jobs
 * and must not be passed here.
 */
export function applyRecord(
  entry: JobEntry,
  record: JobOnlyRecord,
  historyMax: number,
): ApplyEffect {
  switch (record.type) {
    case "submit": {
      const spec = record.spec;
      if (entry.spec !== undefined) {
        if (!sameBody(entry, spec, spec.bodyHash)) {
          // (An event's job: another body of a keyed event, told apart by what it sends.)
          return entry.bodyHash === spec.bodyHash ? "unchanged" : "conflict";
        }
        // The spec came first without the SUBMIT's stamp (a COMMIT's, or a REVIVE or `state`
        // from a copy that had it so): the stamp is this record's, whatever the order.
        if (entry.submitStamp !== undefined) return "unchanged";
        entry.submitStamp = record.stamp;
        return "changed";
      }
      // A stub made by a COMMIT knows the committed body: any other body is the loser.
      if (entry.committed && entry.bodyHash !== spec.bodyHash) return "conflict";
      entry.spec = spec;
      entry.submitStamp = record.stamp;
      entry.bodyHash = spec.bodyHash;
      if (entry.phase === "delivered") dropPayloadOf(entry, spec);
      return "changed";
    }
    case "commit": {
      if (entry.spec !== undefined && entry.bodyHash !== record.bodyHash) {
        // Another body than the committed one: only a replica that answered "conflict" can
        // hold it, and the commit then carries the winning spec. Two committed bodies for one
        // id would be a broken invariant; the caller counts it.
        if (entry.committed || record.spec === undefined) return "conflict";
        entry.spec = record.spec;
        entry.bodyHash = record.bodyHash;
        entry.committed = true;
        // Delivered already (its DONE came before this COMMIT): the winner's payload goes too.
        if (entry.phase === "delivered") dropPayloadOf(entry, record.spec);
        return "changed";
      }
      let changed = false;
      if (!entry.committed) {
        entry.committed = true;
        entry.bodyHash = record.bodyHash;
        changed = true;
      }
      if (entry.spec === undefined && record.spec !== undefined) {
        if (entry.phase === "delivered") dropPayloadOf(entry, record.spec);
        else {
          entry.spec = record.spec;
          entry.payloadDropped = false;
        }
        changed = true;
      }
      return changed ? "changed" : "unchanged";
    }
    case "retry": {
      addHistory(entry, record.attempt, historyMax);
      return mergeProgress(
          entry,
          record.gen,
          "pending",
          record.attemptsMade,
          record.nextAttemptAtMs,
          0,
          "",
        )
        ? "changed"
        : "unchanged";
    }
    case "done": {
      addHistory(entry, record.attempt, historyMax);
      const changed = mergeProgress(
        entry,
        record.gen,
        "delivered",
        record.attempt?.attempt ?? entry.attemptsMade,
        0,
        record.finishedAtMs,
        "",
      );
      if (changed) dropPayload(entry);
      return changed ? "changed" : "unchanged";
    }
    case "dead": {
      addHistory(entry, record.attempt, historyMax);
      return mergeProgress(
          entry,
          record.gen,
          "dead",
          record.attemptsMade,
          0,
          record.finishedAtMs,
          record.reason,
        )
        ? "changed"
        : "unchanged";
    }
    case "revive": {
      // Its spec is a committed copy's (only such a copy sends one): merged as a `state`'s.
      const spec = record.spec;
      let changed = spec !== undefined &&
        mergeSpec(entry, spec, spec.bodyHash, true, record.submitStamp);
      if (mergeProgress(entry, record.gen, "pending", 0, 0, 0, "")) changed = true;
      // The first REVIVE of the generation applied here claims it, even where the generation
      // came first by the owner's RETRY (its REVIVE slow or lost on the way here).
      if (entry.gen === record.gen && entry.reviveOf?.gen !== record.gen) {
        entry.reviveOf = { gen: record.gen, stamp: record.stamp };
      }
      // This generation was delivered already here (its DONE came first): no payload kept.
      if (entry.phase === "delivered") dropPayload(entry);
      return changed ? "changed" : "unchanged";
    }
    case "state": {
      const s = record.state;
      let changed = mergeSpec(entry, s.spec, s.bodyHash, s.committed, s.submitStamp);
      for (const h of s.history) addHistory(entry, h, historyMax);
      if (
        mergeProgress(
          entry,
          s.gen,
          s.phase,
          s.attemptsMade,
          s.nextAttemptAtMs,
          s.finishedAtMs,
          s.deadReason,
        )
      ) changed = true;
      // The REVIVE that claimed the generation where the state comes from claims it here, if
      // none did (a checkpoint replayed, a snapshot or a handoff brought the generation: the
      // replica then voted `ok` for any other REVIVE of it, session 41's known limit).
      // Only while the generation is pending here: a finished one refuses every REVIVE of it
      // anyway (`#pastStartOf`), and writing the state again for the claim alone is waste.
      if (
        s.reviveOf !== undefined && s.reviveOf.gen === entry.gen && s.gen === entry.gen &&
        entry.phase === "pending" && entry.reviveOf?.gen !== entry.gen
      ) {
        entry.reviveOf = s.reviveOf;
        changed = true;
      }
      if (entry.phase === "delivered") dropPayload(entry);
      return changed ? "changed" : "unchanged";
    }
  }
}

/**
 * Merges the spec of a whole copy (a `state`, or the committed spec a REVIVE carries) into
 * `entry`: it fills a copy without one, unless that copy knows another committed body; a
 * committed body replaces an uncommitted other one (a keyed id's losing submit); and it
 * commits a copy of the same body. The caller drops the payload if the job is delivered.
 */
function mergeSpec(
  entry: JobEntry,
  spec: JobSpec | undefined,
  bodyHash: string,
  committed: boolean,
  submitStamp: Stamp | undefined,
): boolean {
  let changed = false;
  const same = sameBody(entry, spec, bodyHash);
  if (spec !== undefined) {
    const fills = entry.spec === undefined && (!entry.committed || same);
    const replaces = entry.spec !== undefined && !same && committed && !entry.committed;
    if (fills || replaces) {
      entry.spec = spec;
      entry.submitStamp = submitStamp;
      entry.bodyHash = bodyHash;
      // A new spec, with its payload: dropped by the caller if the job is delivered (the flag
      // said the replaced spec's payload was gone, and kept the new one's for good).
      entry.payloadDropped = false;
      changed = true;
    }
  }
  // Holding this body now: it was, or it was just filled or replaced.
  const holds = same || entry.spec === spec;
  if (committed && !entry.committed && holds) {
    entry.committed = true;
    changed = true;
  }
  // A copy of this body that came without the SUBMIT's stamp learns it, whatever the order.
  if (
    submitStamp !== undefined && entry.submitStamp === undefined && entry.spec !== undefined &&
    holds
  ) {
    entry.submitStamp = submitStamp;
    changed = true;
  }
  return changed;
}

/**
 * Whether `entry` holds the body `bodyHash` (and `spec`, when both are known) names. An
 * event's job carries no hash of its own (""): a keyed event's losing body makes a job under
 * the same id, told apart only by what it sends (session 39's review: a committed spec of the
 * winner committed the loser's copy, which its owner would have delivered).
 */
function sameBody(entry: JobEntry, spec: JobSpec | undefined, bodyHash: string): boolean {
  if (entry.bodyHash !== bodyHash) return false;
  const held = entry.spec;
  if (held === undefined || spec === undefined || held.webhookId === undefined) return true;
  return held.url === spec.url && held.webhookId === spec.webhookId &&
    (entry.payloadDropped || held.payload === spec.payload) &&
    sameHeaders(held.headers, spec.headers);
}

function sameHeaders(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  for (const name of names) if (a[name] !== b[name]) return false;
  return true;
}

function dropPayload(entry: JobEntry): void {
  if (entry.spec !== undefined && !entry.payloadDropped) dropPayloadOf(entry, entry.spec);
}

export function snapshotOf(entry: JobEntry): JobStateSnapshot {
  return {
    jobId: entry.jobId,
    ...(entry.spec !== undefined ? { spec: entry.spec } : {}),
    ...(entry.submitStamp !== undefined ? { submitStamp: entry.submitStamp } : {}),
    bodyHash: entry.bodyHash,
    committed: entry.committed,
    gen: entry.gen,
    phase: entry.phase,
    attemptsMade: entry.attemptsMade,
    nextAttemptAtMs: entry.nextAttemptAtMs,
    finishedAtMs: entry.finishedAtMs,
    deadReason: entry.deadReason,
    history: entry.history,
    // Only a pending generation's: an earlier or finished one's decides no vote.
    ...(entry.reviveOf?.gen === entry.gen && entry.phase === "pending"
      ? { reviveOf: entry.reviveOf }
      : {}),
  };
}

/**
 * The entry a snapshot describes, field by field, for reading (a job view, an archived job): a
 * delivered one's payload is taken as dropped, and `reviveOf` is left out (snapshotOf keeps it
 * only for a pending generation, and a reader decides no vote).
 */
export function entryOfSnapshot(s: JobStateSnapshot): JobEntry {
  return {
    jobId: s.jobId,
    spec: s.spec,
    submitStamp: s.submitStamp,
    bodyHash: s.bodyHash,
    committed: s.committed,
    gen: s.gen,
    phase: s.phase,
    attemptsMade: s.attemptsMade,
    nextAttemptAtMs: s.nextAttemptAtMs,
    finishedAtMs: s.finishedAtMs,
    deadReason: s.deadReason,
    history: [...s.history],
    payloadDropped: s.phase === "delivered",
    reviveOf: undefined,
  };
}

/**
 * Numbers a job's attempts across manual retries, for display: a retry continues the count
 * ("Attempts 3 (retry 1: 1 of 2)") where the records count within the round. Round r made as
 * many attempts as the highest number of its attempts in the history (the current round: at
 * least `attemptsMade`), so `numbers[i]` is history[i]'s attempt plus every earlier round's.
 * The history keeps the newest `historyMax` attempts: a round it dropped whole is not counted
 * (it would take a per-round count in the records; 20 attempts of history cover the default
 * budgets several times over).
 */
export function numberAttempts(
  entry: Pick<JobEntry, "gen" | "attemptsMade" | "history">,
): { readonly numbers: number[]; readonly total: number } {
  const made = new Map<number, number>();
  for (const h of entry.history) {
    const round = h.retry ?? 0;
    made.set(round, Math.max(made.get(round) ?? 0, h.attempt));
  }
  made.set(entry.gen, Math.max(made.get(entry.gen) ?? 0, entry.attemptsMade));
  const before = new Map<number, number>();
  let total = 0;
  for (const round of [...made.keys()].sort((a, b) => a - b)) {
    before.set(round, total);
    total += made.get(round)!;
  }
  const numbers = entry.history.map((h) => before.get(h.retry ?? 0)! + h.attempt);
  return { numbers, total };
}
