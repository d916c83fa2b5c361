/**
 * The replication core's proposals: submits, confirm rounds and manual retries waiting for a
 * majority of the configured voters, the votes, conflicts and blocks the voters' ACKs bring
 * them, and the quorum arithmetic that says when one's outcome is certain.
 *
 * Owns: the open proposals (by stamp, and keyed submits and confirms by job id), the submits
 * waiting for their majority in start order, what an ACK entry changes in a proposal, and the
 * verdict of `evaluate`. Must not answer clients, emit outputs, arm timers, append, apply
 * records or read the job table: the core (replication_core.ts) does, with the verdict, and
 * counts this node's own vote only once its append is durable.
 */

import { assert, fail, unreachable } from "../lib/assert.ts";
import type { AckEntry } from "./job_messages.ts";
import type { EndpointState } from "./endpoint_model.ts";
import type { EventBody } from "./event_model.ts";
import type { JobSpec, Stamp } from "./job_model.ts";

/**
 * `endpoint`: an endpoint write (docs/endpoints.md); its `jobId` is the endpoint's id.
 * `event`: an event with its jobs, submitted; its `jobId` is the event's id. `event-confirm`: one
 * held here, stored again on every voter (as `confirm` is to `submit`).
 */
export type ProposalKind =
  | "submit"
  | "confirm"
  | "revive"
  | "endpoint"
  | "event"
  | "event-confirm";

/** Whether `kind` proposes an event (with its jobs). */
export function isEventKind(kind: ProposalKind): boolean {
  return kind === "event" || kind === "event-confirm";
}

/** A client request a proposal answers (`existing`: answered as an earlier submit's job). */
export interface ProposalRequest {
  requestId: number;
  existing: boolean;
  /**
   * When it must be answered at the latest: set on a request moved over from a proposal that
   * ended undecided (`moved`), which keeps that proposal's deadline in every round it joins.
   * A client waits `submitTimeoutMs` for its answer in all, not once per round.
   */
  answerByMs?: number;
}

export interface Proposal {
  readonly key: string;
  readonly kind: ProposalKind;
  readonly stamp: Stamp;
  readonly jobId: string;
  readonly bodyHash: string;
  readonly votes: Set<string>;
  readonly conflicts: Map<string, boolean>;
  readonly finished: Set<string>;
  readonly deadlineMs: number;
  readonly startedAtMs: number;
  /** Submit requests answered when it resolves: id → was the job already there. */
  readonly requests: ProposalRequest[];
  readonly reviveRequests: number[];
  /** Endpoint writes answered when it resolves, with `endpoint`, the value written. */
  readonly endpointRequests: number[];
  readonly endpoint: EndpointState | undefined;
  /** Event submits answered when it resolves (`existing`: answered as an earlier one's event). */
  readonly eventRequests: ProposalRequest[];
  /** The event proposed (kind `event`). */
  readonly event: EventBody | undefined;
  /** Whether this node's own copy is stored (it votes once durable). */
  readonly localStored: boolean;
  /** The body proposed (submits and confirms): a keyed job's COMMIT carries it. */
  readonly spec: JobSpec | undefined;
  /**
   * Another incarnation of the key (another id) that a replica holds committed or finished,
   * live for this submit: it stands, and this proposal resolves to it.
   */
  settledOther?: {
    readonly jobId: string;
    readonly bodyHash: string;
    /** Its first submit's wall time (the start of its window). */
    readonly submittedAtMs: number;
  };
  /**
   * An earlier incarnation of the key a replica holds uncommitted, live for this submit: a
   * client's submit moves over to it (a retry whose first try went unacknowledged, in the
   * previous epoch), so one window makes one job.
   */
  earlierOther?: { readonly jobId: string; readonly submittedAtMs: number };
  /** Voters holding another live, uncommitted incarnation this one cannot displace. */
  readonly blocked: Set<string>;
}

/**
 * What `evaluate` decided. Every verdict but `pending` and `closed` has closed the proposal
 * already; the core acts on it.
 */
export type Verdict =
  /** Not open (resolved or expired earlier): nothing to do. */
  | { readonly kind: "closed" }
  /** Its outcome is not certain yet: it waits for more ACKs or its deadline. */
  | { readonly kind: "pending" }
  /**
   * Another incarnation of the key is acknowledged and live for this submit: it stands; this
   * one can never gather a majority (the other's majority holds it and refuses this one).
   */
  | {
    readonly kind: "settled-other";
    readonly other: {
      readonly jobId: string;
      readonly bodyHash: string;
      readonly submittedAtMs: number;
    };
  }
  /**
   * A replica holds an earlier incarnation of the key, uncommitted: a client's submit moves
   * over to it, as `spec` under the earlier id and first submit time.
   */
  | { readonly kind: "moved"; readonly spec: JobSpec }
  /** As `moved`, for a keyed event: `body` under the earlier id and first submit time. */
  | { readonly kind: "moved-event"; readonly body: EventBody }
  /** An earlier job with this key and body finished and was compacted: it stands. */
  | { readonly kind: "finished" }
  /**
   * Enough voters hold another live, uncommitted incarnation of the key that this one cannot
   * win now: not acknowledged, as without a majority.
   */
  | { readonly kind: "blocked" }
  /** A voter holds the id committed with another body, or too many hold another body. */
  | { readonly kind: "conflict" }
  /**
   * A REVIVE's voter holds the job past the generation it starts (delivered, or that
   * generation over, or a later one): the retry was made from a copy a generation behind and
   * would change nothing.
   */
  | { readonly kind: "stale" }
  /** A majority of the configured voters holds it durably. */
  | { readonly kind: "committed" };

const STAMP_SEP = "\u0000";

/** A record's stamp as a map key. */
export function stampKey(s: Stamp): string {
  return s.origin + STAMP_SEP + s.seq;
}

export class Proposals {
  readonly #voters: ReadonlySet<string>;
  readonly #quorum: number;
  readonly #submitTimeoutMs: number;
  readonly #byKey = new Map<string, Proposal>();
  /** Keyed submits and confirms in flight by job id (one proposal per id on this node). */
  readonly #byJob = new Map<string, string>();
  /** Submit proposals waiting for their majority → when they started, oldest first. */
  readonly #submitsWaiting = new Map<string, number>();

  /** `quorum` a majority of the configured `voters`, which it counts against. */
  constructor(voters: readonly string[], quorum: number, submitTimeoutMs: number) {
    this.#voters = new Set(voters);
    this.#quorum = quorum;
    this.#submitTimeoutMs = submitTimeoutMs;
    if (!(2 * quorum > this.#voters.size && quorum <= this.#voters.size)) {
      fail(`quorum ${quorum} of ${this.#voters.size} voters is not a majority`);
    }
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** When the oldest submit still waiting for its majority started. */
  oldestSubmitStartedAtMs(): number | undefined {
    return this.#submitsWaiting.values().next().value;
  }

  /** The open proposal of the record stamped `key`. */
  get(key: string): Proposal | undefined {
    return this.#byKey.get(key);
  }

  /**
   * The submit, confirm or event in flight for `jobId` (an event's id for an event; revives
   * and endpoint writes are not kept by id).
   */
  forJob(jobId: string): Proposal | undefined {
    const key = this.#byJob.get(jobId);
    if (key === undefined) return undefined;
    const p = this.#byKey.get(key);
    if (!(p !== undefined && p.jobId === jobId)) fail(`job ${jobId} maps to no open proposal`);
    return p;
  }

  hasJob(jobId: string): boolean {
    return this.#byJob.has(jobId);
  }

  /** The open proposals, in the order they were opened (a copy: closing during a walk is safe). */
  inFlight(): Proposal[] {
    return [...this.#byKey.values()];
  }

  /** Opens a proposal for the record stamped `stamp`; it waits `submitTimeoutMs` at most. */
  propose(
    nowMs: number,
    kind: ProposalKind,
    stamp: Stamp,
    jobId: string,
    bodyHash: string,
    localStored: boolean,
    spec: JobSpec | undefined,
    endpoint?: EndpointState,
    event?: EventBody,
  ): Proposal {
    const key = stampKey(stamp);
    const byJob = kind === "submit" || kind === "confirm" || isEventKind(kind);
    assert(
      (kind === "endpoint") === (endpoint !== undefined),
      "an endpoint write carries its value",
    );
    assert(isEventKind(kind) === (event !== undefined), "an event proposal carries its event");
    // Two proposals of one record would count its votes twice over and answer one's clients
    // with the other's outcome; two of one job, commit it twice.
    if (this.#byKey.has(key)) {
      fail(`a proposal of ${stamp.origin}#${stamp.seq} is open already`);
    }
    if (byJob && this.#byJob.has(jobId)) fail(`job ${jobId} has a proposal in flight already`);
    const proposal: Proposal = {
      key,
      kind,
      stamp,
      jobId,
      bodyHash,
      votes: new Set(),
      conflicts: new Map(),
      finished: new Set(),
      deadlineMs: nowMs + this.#submitTimeoutMs,
      startedAtMs: nowMs,
      requests: [],
      reviveRequests: [],
      endpointRequests: [],
      endpoint,
      eventRequests: [],
      event,
      localStored,
      spec,
      blocked: new Set(),
    };
    this.#byKey.set(key, proposal);
    if (kind === "submit") this.#submitsWaiting.set(key, nowMs);
    if (byJob) this.#byJob.set(jobId, key);
    return proposal;
  }

  /** Closes the open proposal `p`: it is answered once, by whoever closed it. */
  close(p: Proposal): void {
    if (this.#byKey.get(p.key) !== p) fail(`proposal ${p.jobId} closed twice`);
    this.#byKey.delete(p.key);
    this.#submitsWaiting.delete(p.key);
    if (this.#byJob.get(p.jobId) === p.key) this.#byJob.delete(p.jobId);
  }

  /** Closes and returns the proposal `key` if it is open and past its deadline. */
  expire(key: string, nowMs: number): Proposal | undefined {
    const p = this.#byKey.get(key);
    if (p === undefined || p.deadlineMs > nowMs) return undefined;
    this.close(p);
    return p;
  }

  /** A voter holds the record stamped `key` durably: the open proposal it counts for. */
  vote(key: string, voter: string): Proposal | undefined {
    const p = this.#byKey.get(key);
    if (p === undefined) return undefined;
    this.#assertVoter(voter);
    p.votes.add(voter);
    return p;
  }

  /**
   * What a voter's ACK entry says of the proposal of its record: a vote, a conflict, a
   * finished job, another incarnation of the key. Returns the open proposal it updated.
   */
  ack(from: string, e: AckEntry): Proposal | undefined {
    const p = this.#byKey.get(stampKey(e.stamp));
    if (p === undefined) return undefined;
    this.#assertVoter(from);
    switch (e.status) {
      case "ok":
        p.votes.add(from);
        break;
      case "conflict":
        p.conflicts.set(from, false);
        break;
      case "conflict_committed":
        p.conflicts.set(from, true);
        break;
      case "finished":
        p.finished.add(from);
        break;
      case "other_settled":
        if (e.incarnation !== undefined) {
          p.settledOther = {
            jobId: e.incarnation.jobId,
            bodyHash: e.bodyHash,
            submittedAtMs: e.incarnation.submittedAtMs,
          };
        }
        break;
      case "other_live": {
        const other = e.incarnation;
        const mine = p.kind === "submit"
          ? p.spec?.submittedAtMs
          : p.kind === "event"
          ? p.event?.event.submittedAtMs
          : undefined;
        // Earlier moves a client's submit (of a job or an event) over (ties by id, so two
        // proposers agree); anything else, and any confirm round, only blocks this replica's
        // vote.
        const earlier = other !== undefined && mine !== undefined &&
          (other.submittedAtMs < mine ||
            (other.submittedAtMs === mine && other.jobId < p.jobId));
        if (
          earlier &&
          (p.earlierOther === undefined ||
            other.submittedAtMs < p.earlierOther.submittedAtMs)
        ) p.earlierOther = other;
        else if (!earlier) p.blocked.add(from);
        break;
      }
      default:
        unreachable(e.status, "ACK status");
    }
    return p;
  }

  /**
   * Whether `p`'s outcome is certain, and which: a final verdict closes it (before the core
   * acts, so a submit moved to another id finds no proposal of its own in flight).
   */
  evaluate(p: Proposal): Verdict {
    if (!this.#byKey.has(p.key)) return { kind: "closed" };
    if (p.settledOther !== undefined) {
      this.close(p);
      return { kind: "settled-other", other: p.settledOther };
    }
    if (p.earlierOther !== undefined && p.kind === "submit" && p.spec !== undefined) {
      const target = p.earlierOther;
      this.close(p);
      return {
        kind: "moved",
        spec: { ...p.spec, id: target.jobId, submittedAtMs: target.submittedAtMs },
      };
    }
    if (p.earlierOther !== undefined && p.kind === "event" && p.event !== undefined) {
      const target = p.earlierOther;
      this.close(p);
      return {
        kind: "moved-event",
        body: {
          ...p.event,
          event: { ...p.event.event, id: target.jobId, submittedAtMs: target.submittedAtMs },
        },
      };
    }
    if (
      p.finished.size > 0 && (p.kind === "submit" || p.kind === "confirm" || isEventKind(p.kind))
    ) {
      this.close(p);
      return { kind: "finished" };
    }
    const voters = this.#voters.size;
    // Votes, conflicts and blocks each count distinct voters (a peer's repeated ACK is a set
    // insert): more of them than voters means a forged or miscounted vote got in.
    if (!(p.votes.size <= voters && p.conflicts.size <= voters && p.blocked.size <= voters)) {
      fail(
        `proposal ${p.jobId}: ${p.votes.size} votes, ${p.conflicts.size} conflicts, ` +
          `${p.blocked.size} blocked among ${voters} voters`,
      );
    }
    const committedConflict = [...p.conflicts.values()].some((committed) => committed);
    const possible = voters - p.conflicts.size;
    if (
      !committedConflict && possible >= this.#quorum && possible - p.blocked.size < this.#quorum
    ) {
      this.close(p);
      return { kind: "blocked" };
    }
    if (committedConflict || possible < this.#quorum) {
      this.close(p);
      return { kind: "conflict" };
    }
    if (p.votes.size < this.#quorum) {
      // Only once no majority can vote for it: a replica may answer `finished` because this
      // very retry already ran and ended there (its DEAD outran the REVIVE to that replica),
      // and refusing it then told the client to retry a retry that took effect (session 39's
      // review).
      if (p.kind === "revive" && voters - p.finished.size < this.#quorum) {
        this.close(p);
        return { kind: "stale" };
      }
      return { kind: "pending" };
    }
    this.close(p);
    return { kind: "committed" };
  }

  #assertVoter(voter: string): void {
    // The transport authenticates the sender and the core takes ACKs from voters only: a vote
    // from anyone else would count toward a majority it is no part of.
    if (!this.#voters.has(voter)) fail(`a vote from ${voter}, not a configured voter`);
  }
}
