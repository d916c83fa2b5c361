/**
 * This node's probe round: which member it probes next (a randomised round-robin whose pass a
 * member can be moved up in), the one probe in flight (a direct ping, then at probeTimeoutMs
 * the indirect probes through relays with a second direct ping, then at the end of the period
 * a failure), and the Lifeguard awareness deltas a probe's outcome earns.
 *
 * Owns: the probe order and its position, the probe in flight, its nack count and when the
 * next one starts. Must not: change a member's state (a failed probe goes to the host, and
 * the core suspects the target), read the member table other than through `get`/`values`, or
 * draw random numbers itself: the host's `pick` and the caller's `at` do, so the order of the
 * draws a seed replays stays the core's.
 */

import type { MembershipConfig } from "../config/membership.ts";
import type { Awareness } from "./awareness.ts";
import type { Member, MemberTable } from "./member_table.ts";
import { ping, type SwimMessage } from "./messages.ts";
import type { SwimMetrics } from "./swim_metrics.ts";

interface Probe {
  seq: number;
  targetId: string;
  targetAddress: string;
  indirectAtMs: number;
  endMs: number;
  indirectSent: boolean;
  expectedNacks: number;
  nacks: number;
}

/** What the prober needs of the core: each a narrow door, none the whole core. */
export interface ProberHost {
  /** A sequence number from the counter relays draw from too, so an ack's names one of them. */
  nextSeq(): number;
  /** Sends `messages` in one packet (with what gossip fits). */
  send(toAddress: string, messages: SwimMessage[]): void;
  /** Up to `count` distinct members satisfying `accept`, in a random order. */
  pick(count: number, accept: (m: Member) => boolean): Member[];
  /** The probe of `targetId` got no ack within its period: the core suspects the member. */
  probeFailed(nowMs: number, targetId: string): void;
}

export interface ProberOptions {
  readonly selfId: string;
  readonly config: Readonly<
    Pick<MembershipConfig, "probeIntervalMs" | "probeTimeoutMs" | "indirectChecks">
  >;
  readonly members: Pick<MemberTable, "get" | "values">;
  readonly awareness: Awareness;
  readonly metrics: Pick<SwimMetrics, "probes" | "acks" | "nacks" | "indirectProbes">;
  /** When the first probe starts (the core spreads it over a period). */
  readonly firstProbeMs: number;
}

export class Prober {
  readonly #host: ProberHost;
  readonly #selfId: string;
  readonly #config: ProberOptions["config"];
  readonly #members: ProberOptions["members"];
  readonly #awareness: Awareness;
  readonly #m: ProberOptions["metrics"];
  #order: string[] = [];
  #index = 0;
  #probe: Probe | undefined;
  #nextProbeMs: number;
  /** Set on leaving: a leaving node answers probes but starts none. */
  #stopped = false;

  constructor(host: ProberHost, options: ProberOptions) {
    this.#host = host;
    this.#selfId = options.selfId;
    this.#config = options.config;
    this.#members = options.members;
    this.#awareness = options.awareness;
    this.#m = options.metrics;
    this.#nextProbeMs = options.firstProbeMs;
  }

  /** When the probe in flight next moves on, or the next one starts. */
  wakeMs(): number {
    const probe = this.#probe;
    if (probe !== undefined) return probe.indirectSent ? probe.endMs : probe.indirectAtMs;
    return this.#stopped ? Infinity : this.#nextProbeMs;
  }

  tick(now: number): void {
    const probe = this.#probe;
    if (probe !== undefined) {
      if (!probe.indirectSent && now >= probe.indirectAtMs) this.#probeIndirect(probe);
      if (now >= probe.endMs) this.#probeFailed(now, probe);
    }
    if (this.#probe === undefined && !this.#stopped && now >= this.#nextProbeMs) {
      this.#startProbe(now);
    }
  }

  /** Drops the probe in flight and starts no more (a graceful leave). */
  stop(): void {
    this.#stopped = true;
    this.#probe = undefined;
  }

  /** Drops the probe in flight if it targets `nodeId` (which others declared dead or left). */
  forget(nodeId: string): void {
    if (this.#probe?.targetId === nodeId) this.#probe = undefined;
  }

  /** An ack: returns whether it answered our probe (else it may be for a relay). */
  onAck(seq: number): boolean {
    const probe = this.#probe;
    if (probe === undefined || probe.seq !== seq) return false;
    this.#probe = undefined;
    this.#m.acks.inc();
    this.#awareness.applyDelta(-1);
    return true;
  }

  onNack(seq: number): void {
    if (this.#probe !== undefined && this.#probe.seq === seq) {
      this.#probe.nacks++;
      this.#m.nacks.inc();
    }
  }

  /**
   * Gives the probe in flight until `resumeMs` to finish (this node stalled: its answer may sit
   * unread in the socket), and the next one starts no earlier than the moved end.
   */
  postpone(resumeMs: number): void {
    const probe = this.#probe;
    if (probe === undefined) return;
    if (!probe.indirectSent && probe.indirectAtMs < resumeMs) {
      // The whole probe moves, so the indirect stage keeps its share of the period.
      const shiftMs = resumeMs - probe.indirectAtMs;
      probe.indirectAtMs += shiftMs;
      probe.endMs += shiftMs;
      this.#nextProbeMs = Math.max(this.#nextProbeMs, probe.endMs);
    } else if (probe.endMs < resumeMs) {
      probe.endMs = resumeMs;
      this.#nextProbeMs = Math.max(this.#nextProbeMs, resumeMs);
    }
  }

  /** Whether `nodeId` is the next member the round-robin probes. */
  isNext(nodeId: string): boolean {
    return this.#order[this.#index] === nodeId;
  }

  /**
   * Puts `nodeId` in the rest of the current pass at the place `at(pending count)` picks, once:
   * a place it already held is given up and the probed prefix is dropped. Without that, every
   * suspicion at a new incarnation added a copy, so a stream of them grew the list without
   * bound and starved the other members of probes.
   */
  queue(nodeId: string, at: (pending: number) => number): void {
    const pending = this.#order.slice(this.#index).filter((id) => id !== nodeId);
    pending.splice(at(pending.length), 0, nodeId);
    this.#order = pending;
    this.#index = 0;
  }

  #startProbe(now: number): void {
    const target = this.#nextTarget();
    if (target === undefined) {
      this.#nextProbeMs = now + this.#config.probeIntervalMs;
      return;
    }
    const seq = this.#host.nextSeq();
    const endMs = now + this.#awareness.scaleMs(this.#config.probeIntervalMs);
    this.#probe = {
      seq,
      targetId: target.nodeId,
      targetAddress: target.address,
      indirectAtMs: now + this.#awareness.scaleMs(this.#config.probeTimeoutMs),
      endMs,
      indirectSent: false,
      expectedNacks: 0,
      nacks: 0,
    };
    this.#nextProbeMs = endMs;
    this.#m.probes.inc();
    this.#host.send(target.address, [
      ping(seq, target.nodeId, target.incarnation, target.state === "suspect"),
    ]);
  }

  #probeIndirect(probe: Probe): void {
    probe.indirectSent = true;
    const target = this.#members.get(probe.targetId);
    const targetIncarnation = target?.incarnation ?? 0;
    const targetSuspect = target?.state === "suspect";
    const relays = this.#host.pick(
      this.#config.indirectChecks,
      (m) => m.state === "alive" && m.nodeId !== this.#selfId && m.nodeId !== probe.targetId,
    );
    for (const relay of relays) {
      this.#m.indirectProbes.inc();
      this.#host.send(relay.address, [{
        type: "ping-req",
        seq: probe.seq,
        targetId: probe.targetId,
        targetAddress: probe.targetAddress,
        targetIncarnation,
        targetSuspect,
        wantNack: true,
      }]);
    }
    probe.expectedNacks = relays.length;
    // A second direct ping: a lost datagram is far likelier than a dead peer, and it costs one
    // packet (memberlist sends a TCP ping at this point).
    this.#host.send(probe.targetAddress, [
      ping(probe.seq, probe.targetId, targetIncarnation, targetSuspect),
    ]);
  }

  #probeFailed(now: number, probe: Probe): void {
    this.#probe = undefined;
    // Lifeguard: missing nacks mean our own links (or we) are slow, so stretch our timeouts
    // before we accuse anyone else.
    const delta = probe.expectedNacks > 0 ? probe.expectedNacks - probe.nacks : 1;
    this.#awareness.applyDelta(delta);
    this.#host.probeFailed(now, probe.targetId);
  }

  #nextTarget(): Member | undefined {
    const probeable = (m: Member | undefined): m is Member =>
      m !== undefined && m.nodeId !== this.#selfId &&
      (m.state === "alive" || m.state === "suspect");
    for (let attempts = 0; attempts < 2; attempts++) {
      while (this.#index < this.#order.length) {
        const m = this.#members.get(this.#order[this.#index++]!);
        if (probeable(m)) return m;
      }
      // End of a pass: reshuffle, so each member is probed once per pass in a fresh order
      // (`pick` with no limit is a shuffle of them all).
      this.#order = this.#host.pick(Infinity, probeable).map((m) => m.nodeId);
      this.#index = 0;
    }
    return undefined;
  }
}
