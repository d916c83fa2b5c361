/**
 * The replication core's view of the voters and the ownership it implies: which voters the
 * local SWIM view holds down, and each job's owner (the first voter of its preference list
 * not held down), remembered until the down set changes.
 *
 * Owns: the voter view and the owner cache. Must not walk the job table, send handoffs or
 * touch proposals: `update` says whether ownership moved, and the core (replication_core.ts)
 * reconsiders its jobs and hands them over.
 */

import { ownerOf } from "./preference.ts";

/** A voter as the local SWIM view holds it. */
export type VoterState = "alive" | "suspect" | "dead" | "left";

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

  isDown(voter: string): boolean {
    const s = this.voterState(voter);
    return s === "dead" || s === "left";
  }

  /** Voters not held dead or left, this node included. */
  reachableVoters(): number {
    let n = 0;
    for (const v of this.#voters) if (!this.isDown(v)) n++;
    return n;
  }

  ownerOf(jobId: string): string | undefined {
    // Asked on every record applied (and several times per minted id); the answer depends
    // only on the job id and which voters are down, so it is remembered until that changes.
    if (this.#owners.has(jobId)) return this.#owners.get(jobId);
    return this.remember(jobId, ownerOf(jobId, this.#voters, (v) => this.isDown(v)));
  }

  /** Remembers `owner` as `jobId`'s owner under the current view; returns it. */
  remember(jobId: string, owner: string | undefined): string | undefined {
    if (this.#owners.size >= OWNER_CACHE_MAX) this.#owners.clear();
    this.#owners.set(jobId, owner);
    return owner;
  }

  /**
   * Takes the SWIM view's states of the voters (a voter it does not name is alive). Returns
   * undefined when no voter went down or came back (ownership did not move: alive <-> suspect
   * moves no job), else which voters the previous view held down.
   */
  update(view: ReadonlyMap<string, VoterState>): ((voter: string) => boolean) | undefined {
    const before = this.#view;
    const next = new Map<string, VoterState>();
    for (const v of this.#peers) next.set(v, view.get(v) ?? "alive");
    let changed = false;
    for (const v of this.#peers) if ((before.get(v) ?? "alive") !== next.get(v)) changed = true;
    if (!changed) return undefined;
    const wasDown = (v: string) =>
      v !== this.#self && ((before.get(v) ?? "alive") === "dead" || before.get(v) === "left");
    this.#view = next;
    if (this.#peers.every((v) => wasDown(v) === this.isDown(v))) return undefined;
    this.#owners.clear();
    return wasDown;
  }
}
