/**
 * The replication core's view of the voters and the ownership it implies: which voters the
 * local SWIM view holds down, and each job's owner (the first voter of its preference list
 * not held gone: dead or left), remembered until the down set changes.
 *
 * Owns: the voter view and the owner cache. Must not walk the job table, send handoffs or
 * touch proposals: `update` says whether ownership moved, and the core (replication_core.ts)
 * reconsiders its jobs and hands them over.
 */

import { ownerOf } from "./preference.ts";

/**
 * A voter as the local SWIM view holds it. `unheard`: membership has not reported it since this
 * store opened, and the store's grace for that (the SWIM detection bound) has not passed. It is
 * down for sending and counting (no records go to it, it is not reachable) but keeps its jobs:
 * taken as dead, a node starting beside it would deliver the jobs it owns while it delivers them
 * too (a duplicate of every such job at every cluster start).
 */
export type VoterState = "alive" | "suspect" | "unheard" | "dead" | "left";

/** Owners remembered by `ownerOf`: the jobs of the last few seconds at full rate. */
const OWNER_CACHE_MAX = 65_536;

export class OwnershipView {
  readonly #self: string;
  readonly #voters: readonly string[];
  readonly #peers: readonly string[];
  #view = new Map<string, VoterState>();
  readonly #owners = new Map<string, string | undefined>();

  /** `voters` sorted, `self` among them; `peers` the voters but `self`. */
  constructor(self: string, voters: readonly string[], peers: readonly string[]) {
    this.#self = self;
    this.#voters = voters;
    this.#peers = peers;
  }

  voterState(voter: string): VoterState {
    if (voter === this.#self) return "alive";
    return this.#view.get(voter) ?? "alive";
  }

  /** Held dead, left or unheard: sent nothing, not counted reachable. */
  isDown(voter: string): boolean {
    const s = this.voterState(voter);
    return s === "dead" || s === "left" || s === "unheard";
  }

  /** Held dead or left: its jobs pass to the next voter of their lists. */
  isGone(voter: string): boolean {
    const s = this.voterState(voter);
    return s === "dead" || s === "left";
  }

  /** Voters not held down, this node included. */
  reachableVoters(): number {
    let n = 0;
    for (const v of this.#voters) if (!this.isDown(v)) n++;
    return n;
  }

  ownerOf(jobId: string): string | undefined {
    // Asked on every record applied (and several times per minted id); the answer depends
    // only on the job id and which voters are gone, so it is remembered until that changes.
    if (this.#owners.has(jobId)) return this.#owners.get(jobId);
    return this.remember(jobId, ownerOf(jobId, this.#voters, (v) => this.isGone(v)));
  }

  /** Remembers `owner` as `jobId`'s owner under the current view; returns it. */
  remember(jobId: string, owner: string | undefined): string | undefined {
    if (this.#owners.size >= OWNER_CACHE_MAX) this.#owners.clear();
    this.#owners.set(jobId, owner);
    return owner;
  }

  /**
   * Takes the SWIM view's states of the voters (a voter it does not name is alive). Returns
   * undefined when no voter went down or came back (alive <-> suspect moves no job and changes
   * no send), else which voters the previous view held gone: the caller's old owners.
   */
  update(view: ReadonlyMap<string, VoterState>): ((voter: string) => boolean) | undefined {
    const before = this.#view;
    const next = new Map<string, VoterState>();
    for (const v of this.#peers) next.set(v, view.get(v) ?? "alive");
    let changed = false;
    for (const v of this.#peers) if ((before.get(v) ?? "alive") !== next.get(v)) changed = true;
    if (!changed) return undefined;
    const was = (v: string): VoterState => before.get(v) ?? "alive";
    const wasGone = (v: string) => v !== this.#self && (was(v) === "dead" || was(v) === "left");
    const wasDown = (v: string) => wasGone(v) || (v !== this.#self && was(v) === "unheard");
    this.#view = next;
    // unheard -> dead keeps the voter down but moves its jobs; unheard -> alive moves no job
    // but changes where records go and what is reachable.
    if (this.#peers.every((v) => wasDown(v) === this.isDown(v) && wasGone(v) === this.isGone(v))) {
      return undefined;
    }
    this.#owners.clear();
    return wasGone;
  }
}
