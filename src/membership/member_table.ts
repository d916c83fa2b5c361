/**
 * The member table of the SWIM core: a row per member this node knows (itself included), a
 * bounded tombstone per reaped member, and what is derived from the whole table (counts by
 * state, the live members' addresses, the earliest suspicion deadline or reap), each cached
 * until the table next changes: recomputing them for every packet was most of the cost of a
 * step at 200 members.
 *
 * Owns: the rows and the order they were added in, the tombstones and their bound, the reap
 * rule and the version that invalidates the caches. Must not: decide a transition between
 * states (the core, swim_core.ts, applies SWIM's incarnation ordering to the rows it gets
 * here and calls `touch`), send or emit anything, or draw random numbers.
 */

import type { MembershipConfig } from "../config/membership.ts";
import { assert } from "../lib/assert.ts";
import { SYNC_MEMBERS_MAX } from "./codec.ts";
import type { MemberRecord, MemberState } from "./messages.ts";
import type { Suspicion } from "./suspicion.ts";

/** A row of the table. The core changes its fields in place, then calls `touch`. */
export interface Member {
  nodeId: string;
  address: string;
  incarnation: number;
  state: MemberState;
  stateChangeMs: number;
  suspicion: Suspicion | undefined;
}

/** A read-only row of the member table. */
export interface MemberInfo {
  readonly nodeId: string;
  readonly address: string;
  readonly incarnation: number;
  readonly state: MemberState;
  /** When this node last saw the member change state (its own clock). */
  readonly stateChangeMs: number;
}

/** What is left of a reaped member: enough to refuse a stale alive and to share in syncs. */
interface Tombstone {
  address: string;
  incarnation: number;
  state: "dead" | "left";
}

export class MemberTable {
  readonly #selfId: string;
  readonly #config: Readonly<Pick<MembershipConfig, "deadReapMs" | "tombstonesMax">>;
  readonly #members = new Map<string, Member>();
  readonly #tombstones = new Map<string, Tombstone>();
  /**
   * Bumped by every change that moves a count by state or a member's deadline (state,
   * suspicion, a member added or reaped): the caches below are rebuilt only when it moved.
   */
  #version = 0;
  #countsVersion = -1;
  #counts: Record<MemberState, number> = { alive: 0, suspect: 0, dead: 0, left: 0 };
  #liveAddressesVersion = -1;
  #liveAddressesSet: ReadonlySet<string> = new Set();
  #wakeVersion = -1;
  #wakeMs = Infinity;

  constructor(
    self: Member,
    config: Readonly<Pick<MembershipConfig, "deadReapMs" | "tombstonesMax">>,
  ) {
    this.#selfId = self.nodeId;
    this.#config = config;
    this.#members.set(self.nodeId, self);
  }

  get size(): number {
    return this.#members.size;
  }

  get(nodeId: string): Member | undefined {
    return this.#members.get(nodeId);
  }

  has(nodeId: string): boolean {
    return this.#members.has(nodeId);
  }

  /** The rows in the order they were added (a caller that changes the table copies it first). */
  values(): Iterable<Member> {
    return this.#members.values();
  }

  self(): Member {
    const self = this.#members.get(this.#selfId);
    assert(self !== undefined, "the member table always holds this node");
    return self;
  }

  /** Says that a row's state, suspicion or deadline changed. */
  touch(): void {
    this.#version++;
  }

  /** Adds a member heard of for the first time, or again after its tombstone lost. */
  add(m: Member): void {
    this.#tombstones.delete(m.nodeId);
    this.#members.set(m.nodeId, m);
    this.touch();
  }

  /** Whether a tombstone refuses an alive at `incarnation`: the member died at it or later. */
  buried(nodeId: string, incarnation: number): boolean {
    const tomb = this.#tombstones.get(nodeId);
    return tomb !== undefined && incarnation <= tomb.incarnation;
  }

  info(nodeId: string): MemberInfo | undefined {
    const m = this.#members.get(nodeId);
    return m === undefined ? undefined : toInfo(m);
  }

  infos(): MemberInfo[] {
    return [...this.#members.values()].map(toInfo);
  }

  /** Dead or left, or reaped after being so. Unknown ids are not dead: they never joined. */
  isDead(nodeId: string): boolean {
    const m = this.#members.get(nodeId);
    if (m === undefined) return this.#tombstones.has(nodeId);
    return m.state === "dead" || m.state === "left";
  }

  isAlive(nodeId: string): boolean {
    const s = this.#members.get(nodeId)?.state;
    return s === "alive" || s === "suspect";
  }

  counts(): Readonly<Record<MemberState, number>> {
    if (this.#countsVersion !== this.#version) {
      const counts: Record<MemberState, number> = { alive: 0, suspect: 0, dead: 0, left: 0 };
      for (const m of this.#members.values()) counts[m.state]++;
      this.#counts = counts;
      this.#countsVersion = this.#version;
    }
    return this.#counts;
  }

  /** Alive or suspect, this node included: the members that can still confirm or answer. */
  liveCount(): number {
    const counts = this.counts();
    return counts.alive + counts.suspect;
  }

  /** Addresses of the live members but this node (alive or suspect). */
  liveAddresses(): ReadonlySet<string> {
    if (this.#liveAddressesVersion !== this.#version) {
      const addresses = new Set<string>();
      for (const m of this.#members.values()) {
        if (m.nodeId !== this.#selfId && (m.state === "alive" || m.state === "suspect")) {
          addresses.add(m.address);
        }
      }
      this.#liveAddressesSet = addresses;
      this.#liveAddressesVersion = this.#version;
    }
    return this.#liveAddressesSet;
  }

  /** The earliest suspicion deadline or reap time in the table. */
  wakeMs(): number {
    if (this.#wakeVersion !== this.#version) {
      let wake = Infinity;
      for (const m of this.#members.values()) {
        if (m.suspicion !== undefined) wake = Math.min(wake, m.suspicion.deadlineMs);
        if (m.state === "dead" || m.state === "left") {
          wake = Math.min(wake, m.stateChangeMs + this.#config.deadReapMs);
        }
      }
      this.#wakeMs = wake;
      this.#wakeVersion = this.#version;
    }
    return this.#wakeMs;
  }

  /** Moves every suspicion's deadline to `resumeMs` at the earliest. */
  postponeSuspicions(resumeMs: number): void {
    for (const m of this.#members.values()) m.suspicion?.postpone(resumeMs);
    this.touch();
  }

  /** Replaces the rows dead or left for deadReapMs by tombstones. */
  reap(now: number): void {
    for (const m of [...this.#members.values()]) {
      // The same sum `wakeMs` asks to be woken at: `now - stateChangeMs` can round a hair
      // below deadReapMs at exactly that time, and the timer re-fired at the same instant
      // forever (a livelock in virtual time, found by the whole-cluster simulation).
      if (
        (m.state === "dead" || m.state === "left") &&
        now >= m.stateChangeMs + this.#config.deadReapMs
      ) {
        this.#members.delete(m.nodeId);
        this.touch();
        this.remember(m.nodeId, m.address, m.incarnation, m.state);
      }
    }
  }

  /** Tombstones a dead member's last incarnation (bounded: the oldest is forgotten first). */
  remember(nodeId: string, address: string, incarnation: number, state: "dead" | "left"): void {
    const known = this.#tombstones.get(nodeId);
    if (known !== undefined && known.incarnation > incarnation) return;
    this.#tombstones.delete(nodeId);
    this.#tombstones.set(nodeId, { address, incarnation, state });
    if (this.#tombstones.size > this.#config.tombstonesMax) {
      const oldest = this.#tombstones.keys().next().value;
      if (oldest !== undefined) this.#tombstones.delete(oldest);
    }
  }

  /** The rows of a full state sync: every member, then as many tombstones as fit. */
  records(): MemberRecord[] {
    const members: MemberRecord[] = [...this.#members.values()].map((m) => ({
      nodeId: m.nodeId,
      address: m.address,
      incarnation: m.incarnation,
      state: m.state,
    }));
    // Tombstones travel too. After a partition longer than deadReapMs each side has reaped the
    // other, and its tombstones refuse the other side's alives at the same incarnation; only
    // learning of its own death (and refuting it) lets a member back in, and a sync is where a
    // node first hears from the other side again.
    for (const [nodeId, t] of this.#tombstones) {
      if (members.length >= SYNC_MEMBERS_MAX) break;
      members.push({ nodeId, address: t.address, incarnation: t.incarnation, state: t.state });
    }
    return members;
  }
}

function toInfo(m: Member): MemberInfo {
  return {
    nodeId: m.nodeId,
    address: m.address,
    incarnation: m.incarnation,
    state: m.state,
    stateChangeMs: m.stateChangeMs,
  };
}
