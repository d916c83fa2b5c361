/**
 * Endpoint reads in flight: before a PATCH or DELETE is built, the node that took it reads the
 * endpoint's value from a majority of the voters (itself included) and builds the write on the
 * newest value any of them holds (docs/endpoints.md, "Writes build on a majority read"). A
 * client's GET of an endpoint reads the same way (a `lookup`), so it sees every write
 * acknowledged through any node.
 *
 * Why: a write is acknowledged once a majority holds it, so the node taking the next write may
 * not hold it yet. Built from that node's own stale value and stamped past it, the next write
 * would win whole and undo the acknowledged one (a DELETE brought back, a URL reverted). Any
 * two majorities intersect, so a majority read sees every acknowledged write.
 *
 * Owns: the rounds in flight, who answered each, and the newest value seen. Must not send
 * messages, arm timers or emit outputs: the submit path (submit_path.ts) does, with what these
 * methods return. Round ids are this node's own (a u32 on the wire), not the request ids.
 */

import { fail } from "../lib/assert.ts";
import { type EndpointState, type EndpointWrite, mergeEndpoint } from "./endpoint_model.ts";

/** A write that builds on the endpoint's current value. */
export type EndpointChange = Exclude<EndpointWrite, { kind: "create" }>;

/** A client's read of the endpoint: nothing is written once the majority answered. */
export interface EndpointLookup {
  readonly kind: "lookup";
  readonly id: string;
}

export interface EndpointRead {
  /** Undefined for a write of this node's own (nobody to answer). */
  readonly requestId: number | undefined;
  /** What the read is for: the write it comes before, or a client's read. */
  readonly purpose: EndpointChange | EndpointLookup;
  /** Voters that answered, this node included. */
  readonly answered: Set<string>;
  /** Peers asked that have not answered. */
  readonly waiting: Set<string>;
  readonly deadlineMs: number;
  /** The newest value among the answers; undefined while nobody that answered holds one. */
  newest: EndpointState | undefined;
}

/** Round ids wrap within the wire's u32. */
const ROUND_ID_LIMIT = 0x1_0000_0000;

export class EndpointReads {
  readonly #quorum: number;
  readonly #rounds = new Map<number, EndpointRead>();
  #nextRoundId = 1;

  /** `quorum`: the answers a round needs, this node's own included (⌊N/2⌋+1). */
  constructor(quorum: number) {
    if (!(Number.isInteger(quorum) && quorum >= 1)) fail(`quorum ${quorum} must be >= 1`);
    this.#quorum = quorum;
  }

  /** Rounds in flight. */
  get size(): number {
    return this.#rounds.size;
  }

  /**
   * Starts a round for `purpose`, with this node's (`self`) own value `local` as its first
   * answer, waiting on `peers` until `deadlineMs`. Returns the round's id and, when this
   * node's answer alone is a majority (a one-voter cluster), the round already settled.
   */
  open(
    requestId: number | undefined,
    purpose: EndpointChange | EndpointLookup,
    self: { readonly address: string; readonly local: EndpointState | undefined },
    peers: ReadonlySet<string>,
    deadlineMs: number,
  ): { roundId: number; settled?: EndpointRead } {
    const round: EndpointRead = {
      requestId,
      purpose,
      answered: new Set([self.address]),
      waiting: new Set(peers),
      deadlineMs,
      newest: self.local,
    };
    if (round.answered.size >= this.#quorum) return { roundId: 0, settled: round };
    let roundId = this.#nextRoundId;
    while (this.#rounds.has(roundId)) roundId = roundId % (ROUND_ID_LIMIT - 1) + 1;
    this.#nextRoundId = roundId % (ROUND_ID_LIMIT - 1) + 1;
    this.#rounds.set(roundId, round);
    return { roundId };
  }

  /**
   * A peer's answer: the value it holds (tombstone included), or undefined. Returns the round
   * once this answer makes a majority (the round is closed), else undefined. An answer from a
   * peer not waited on (a repeat, a round closed) or about another endpoint is ignored.
   */
  reply(from: string, roundId: number, state: EndpointState | undefined): EndpointRead | undefined {
    const round = this.#rounds.get(roundId);
    if (round === undefined || !round.waiting.has(from)) return undefined;
    if (state !== undefined && state.id !== round.purpose.id) return undefined;
    round.waiting.delete(from);
    round.answered.add(from);
    if (state !== undefined) {
      round.newest = round.newest === undefined ? state : mergeEndpoint(round.newest, state);
    }
    if (round.answered.size < this.#quorum) return undefined;
    this.#rounds.delete(roundId);
    return round;
  }

  /**
   * Closes the round if it is still open and past its deadline (no majority answered in
   * time); returns it then, else undefined.
   */
  expire(roundId: number, nowMs: number): EndpointRead | undefined {
    const round = this.#rounds.get(roundId);
    if (round === undefined || round.deadlineMs > nowMs) return undefined;
    this.#rounds.delete(roundId);
    return round;
  }
}
