/**
 * The sans-I/O SWIM core with the Lifeguard extensions: member table, randomised round-robin
 * probe loop, indirect probes with nacks, suspicion with incarnations and refutation, shrinking
 * suspicion timeouts, local health awareness, piggybacked gossip, full state sync on join and
 * periodically, graceful leave and dead reaping.
 *
 * Driven only by `step(nowMs, input)`; it returns datagrams to send and member events, and
 * `nextWakeMs()` says when it next needs a `tick`. Clock and Rng are injected, so the simulator
 * replays a seed exactly.
 *
 * Owns: every change of a member's state (the incarnation ordering, suspicion, death,
 * refutation), the gossip, sync and join timers, the late-wake check, every random draw (the
 * parts below draw through it, so a seed replays in one order), the probe sequence counter
 * and the outputs of a step. Delegates, each part with a narrow host and never the whole
 * core: the rows and tombstones to member_table.ts, this node's probe round to prober.ts, the
 * probes it relays for others to probe_relays.ts, queued updates to gossip_queue.ts, a
 * suspicion's timer to suspicion.ts, the health score to awareness.ts, metric names to
 * swim_metrics.ts. Must not: touch a socket or a timer, or output anything that must be
 * durable (membership is soft state, rebuilt after a restart).
 *
 * Where this departs from memberlist, and why (each found by `hookd bench membership` at 20 %
 * loss, where plain SWIM + Lifeguard gave 7-30 false deaths per 10 simulated minutes):
 * - A ping carries the prober's view of the target (incarnation, suspected?). A suspected
 *   target refutes on the spot and any target seen at an old incarnation puts its current
 *   `alive` in the ack, so refutation does not depend on gossip reaching the suspect.
 * - A suspect/dead message about ourselves is answered to its sender with our current `alive`;
 *   every holder of a suspicion re-sends it to the suspect each gossip period.
 * - Notices are pushed at once, not only gossiped: a refutation by the refuted member, a death
 *   or leave by every member that first learns it, each to `noticeFanout` random members (the
 *   tail of detection was one member missing every gossip retransmission). They once went to
 *   every member directly, which at 20 % loss made N² packets a second cluster-wide
 *   (refutations come at a rate that grows with N); see #pushNotice.
 * - A suspicion at a newer incarnation restarts the timer (memberlist keeps the old one).
 * - Suspicions learnt from a bulk state sync start a timer but neither confirm nor re-gossip
 *   (one real suspicion copied by syncs would shrink everyone's timeout).
 * - A second direct ping accompanies the indirect probes (memberlist uses a TCP ping there).
 * - A member others suspect is probed next (a fast confirmation or a fast refutation).
 * - Reaped members leave a bounded tombstone (memberlist forgets them) so a stale alive cannot
 *   resurrect them, and state syncs carry the tombstones, so that after a partition longer
 *   than deadReapMs each side learns it was declared dead and refutes (without that, the two
 *   sides refused each other's alives forever).
 * - A step long past the deadline it was due at (this node's event loop stalled) postpones the
 *   timers that expired meanwhile by probeTimeoutMs and raises the health score, so datagrams
 *   queued during the stall (a refutation, an ack) are read before anyone is declared dead;
 *   once per stretch of lateness, so timers that always fire late cannot postpone for ever.
 * - The confirmations that shrink a suspicion are capped at N − 2 rather than set to 0 when
 *   fewer than suspicionMult − 2 members could confirm (memberlist then uses the shortest
 *   timeout at once, which in a three-node cluster at 20 % loss turns lone false suspicions
 *   into deaths). N counts live members only: the dead cannot confirm.
 */

import {
  type MembershipConfig,
  membershipDefaults,
  validateMembershipConfig,
} from "../config/membership.ts";
import { assert, fail, unreachable } from "../lib/assert.ts";
import type { Rng } from "../lib/rng.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import { Awareness } from "./awareness.ts";
import {
  decodePacket,
  encodePacket,
  messageBytes,
  PACKET_HEADER_BYTES,
  PACKET_MESSAGES_MAX,
} from "./codec.ts";
import { GossipQueue } from "./gossip_queue.ts";
import { type Member, type MemberInfo, MemberTable } from "./member_table.ts";
import {
  ack,
  ADDRESS_BYTES_MAX,
  alive,
  dead,
  type GossipMessage,
  type MemberRecord,
  NODE_ID_BYTES_MAX,
  suspect,
  type SwimMessage,
} from "./messages.ts";
import { ProbeRelays } from "./probe_relays.ts";
import { Prober } from "./prober.ts";
import { Suspicion } from "./suspicion.ts";
import { retransmitLimit, suspicionBounds } from "./suspicion_math.ts";
import { registerSwimMetrics, type SwimMetrics } from "./swim_metrics.ts";

export type SwimInput =
  | { type: "tick" }
  | { type: "packet"; fromAddress: string; bytes: Uint8Array }
  /** Graceful leave: tell everyone at once, stop probing, keep answering until shut down. */
  | { type: "leave" };

export type MemberEventType = "member-alive" | "member-suspect" | "member-dead" | "member-left";

export interface MemberEvent {
  type: MemberEventType;
  nodeId: string;
  address: string;
  incarnation: number;
}

export type SwimOutput =
  | {
    type: "send";
    toAddress: string;
    bytes: Uint8Array;
    /** Full state syncs may exceed one datagram: send them on the reliable channel. */
    reliable: boolean;
  }
  | { type: "event"; event: MemberEvent };

export type { MemberInfo };

/** What ownership and the CLI may read; nothing here changes the protocol state. */
export interface MembershipView {
  readonly nodeId: string;
  members(): MemberInfo[];
  member(nodeId: string): MemberInfo | undefined;
  /** Dead or left, or reaped after being so. Unknown ids are not dead: they never joined. */
  isDead(nodeId: string): boolean;
  isAlive(nodeId: string): boolean;
}

export interface SwimCoreOptions {
  nodeId: string;
  /** This node's `host:port`, as peers reach it. */
  address: string;
  /** Seed addresses to join through (any subset of the cluster; our own is skipped). */
  seeds?: readonly string[];
  config?: Partial<MembershipConfig>;
  rng: Rng;
  /** Time of creation on the caller's clock. */
  nowMs: number;
  /**
   * Starting incarnation. A restarted node should start higher than its previous life (the
   * node process uses wall-clock seconds); if it does not, it refutes its own death on joining.
   * @default 0
   */
  incarnation?: number;
  metrics?: MetricsRegistry;
}

const INCARNATION_MAX = 0xffffffff;

/**
 * Driven like every core (docs/architecture.md, "Driving a core"): inputs and the tick both go
 * through `step(nowMs, input)` (`{ type: "tick" }` is the tick), which returns its outputs
 * directly instead of queueing them for a `take…()`; `nextWakeMs()` for the next tick.
 */
export class SwimCore implements MembershipView {
  readonly nodeId: string;
  readonly address: string;
  readonly config: Readonly<MembershipConfig>;
  readonly #rng: Rng;
  readonly #seeds: string[];
  readonly #table: MemberTable;
  readonly #gossip: GossipQueue;
  readonly #awareness: Awareness;
  readonly #prober: Prober;
  readonly #relays: ProbeRelays;
  /** Probes' and relays' sequence numbers: one counter, so an ack's seq names one of them. */
  #seq = 0;
  #nextGossipMs: number;
  #nextSyncMs: number;
  #nextJoinMs: number;
  /** `nextWakeMs()` as of the end of the last step: a step much later means we were stalled. */
  #wakeMs = -Infinity;
  /**
   * Whether a late wake may still postpone timers: spent by one, given back by the next tick
   * that comes on time (see `#checkLateWake`).
   */
  #lateWakePostponeArmed = true;
  #joined: boolean;
  #leaving = false;
  #out: SwimOutput[] = [];
  readonly #m: SwimMetrics;

  constructor(options: SwimCoreOptions) {
    this.config = validateMembershipConfig({ ...membershipDefaults, ...options.config });
    // Both go into every packet; the encoder would assert on the first send, far from the cause.
    checkLength("nodeId", options.nodeId, 1, NODE_ID_BYTES_MAX);
    checkLength("address", options.address, 1, ADDRESS_BYTES_MAX);
    this.nodeId = options.nodeId;
    this.address = options.address;
    this.#rng = options.rng;
    this.#seeds = [...new Set(options.seeds ?? [])].filter((a) => a !== options.address);
    this.#gossip = new GossipQueue(this.config.gossipQueueMax);
    this.#awareness = new Awareness(this.config.awarenessMaxMultiplier);
    const incarnation = options.incarnation ?? 0;
    if (!(Number.isInteger(incarnation) && incarnation >= 0 && incarnation < INCARNATION_MAX)) {
      fail(`incarnation must be a u32, got ${incarnation}`);
    }
    const now = options.nowMs;
    this.#table = new MemberTable({
      nodeId: this.nodeId,
      address: this.address,
      incarnation,
      state: "alive",
      stateChangeMs: now,
      suspicion: undefined,
    }, this.config);
    this.#m = registerSwimMetrics(options.metrics ?? new MetricsRegistry());
    const send = (toAddress: string, messages: SwimMessage[]) => this.#send(toAddress, messages);
    const nextSeq = () => this.#nextSeq();
    // Spread the first probe and sync over a period so that nodes started together do not
    // move in lockstep.
    this.#prober = new Prober({
      nextSeq,
      send,
      pick: (count, accept) => this.#pick(count, accept),
      probeFailed: (nowMs, targetId) => this.#suspectProbed(nowMs, targetId),
    }, {
      selfId: this.nodeId,
      config: this.config,
      members: this.#table,
      awareness: this.#awareness,
      metrics: this.#m,
      firstProbeMs: now + this.#rng.next() * this.config.probeIntervalMs,
    });
    this.#relays = new ProbeRelays({ nextSeq, send }, {
      config: this.config,
      members: this.#table,
      metrics: this.#m,
    });
    this.#nextGossipMs = now + this.#rng.next() * this.config.gossipIntervalMs;
    this.#nextSyncMs = now + (0.5 + this.#rng.next()) * this.config.syncIntervalMs;
    this.#nextJoinMs = now;
    this.#joined = this.#seeds.length === 0;
    this.#updateGauges();
    this.#wakeMs = this.#computeWakeMs();
  }

  // -------------------------------------------------------------------------------------------
  // Read-only view
  // -------------------------------------------------------------------------------------------

  members(): MemberInfo[] {
    return this.#table.infos();
  }

  member(nodeId: string): MemberInfo | undefined {
    return this.#table.info(nodeId);
  }

  isDead(nodeId: string): boolean {
    return this.#table.isDead(nodeId);
  }

  isAlive(nodeId: string): boolean {
    return this.#table.isAlive(nodeId);
  }

  get incarnation(): number {
    return this.#table.self().incarnation;
  }

  get awarenessScore(): number {
    return this.#awareness.score;
  }

  get joined(): boolean {
    return this.#joined;
  }

  get leaving(): boolean {
    return this.#leaving;
  }

  get gossipQueued(): number {
    return this.#gossip.size;
  }

  // -------------------------------------------------------------------------------------------
  // Driving the core
  // -------------------------------------------------------------------------------------------

  step(nowMs: number, input: SwimInput): SwimOutput[] {
    assert(this.#out.length === 0, "step is not re-entrant");
    this.#idleGossipClock(nowMs);
    this.#checkLateWake(nowMs, input.type === "tick");
    switch (input.type) {
      case "tick":
        this.#tick(nowMs);
        break;
      case "packet":
        this.#onPacket(nowMs, input.fromAddress, input.bytes);
        break;
      case "leave":
        this.#leave(nowMs);
        break;
      default:
        unreachable(input, "input");
    }
    this.#updateGauges();
    this.#wakeMs = this.#computeWakeMs();
    const out = this.#out;
    this.#out = [];
    return out;
  }

  /** The earliest time at which `tick` has work to do. */
  nextWakeMs(): number {
    return this.#wakeMs;
  }

  #computeWakeMs(): number {
    let wake = this.#nextSyncMs;
    if (this.#gossipWanted()) wake = Math.min(wake, this.#nextGossipMs);
    if (!this.#joined) wake = Math.min(wake, this.#nextJoinMs);
    wake = Math.min(wake, this.#prober.wakeMs());
    wake = Math.min(wake, this.#table.wakeMs());
    return Math.min(wake, this.#relays.wakeMs());
  }

  /**
   * Gossip for the transport's piggyback hook: a packet of queued updates fitting in
   * `spaceBytes`, or null when nothing is queued or nothing fits. With `toAddress`, null also
   * when no live member is at that address: the transport builds datagrams for non-members too
   * (UDP job clients), and each update may be sent only `#retransmitLimit()` times, so a busy
   * client's answers used them all up within milliseconds and the members heard nothing.
   */
  gossipPacket(spaceBytes: number, toAddress?: string): Uint8Array | null {
    if (toAddress !== undefined && !this.#table.liveAddresses().has(toAddress)) return null;
    const room = Math.min(spaceBytes, this.config.packetBytesMax) - PACKET_HEADER_BYTES;
    const updates = this.#gossip.take(room, PACKET_MESSAGES_MAX, this.#retransmitLimit());
    if (updates.length === 0) return null;
    this.#m.packetsOut.inc();
    return encodePacket(updates);
  }

  // -------------------------------------------------------------------------------------------
  // Timers
  // -------------------------------------------------------------------------------------------

  #tick(now: number): void {
    if (!this.#joined && now >= this.#nextJoinMs) {
      // Join: push our state to every seed; the first answer makes us a member.
      for (const seed of this.#seeds) this.#sendSync(seed, false, true);
      this.#nextJoinMs = now + this.config.joinRetryMs;
    }
    this.#prober.tick(now);
    // Suspicion deadlines and reaps: only when one is due, not a table walk per tick.
    const membersDue = now >= this.#table.wakeMs();
    for (const m of membersDue ? [...this.#table.values()] : []) {
      if (m.suspicion !== undefined && now >= m.suspicion.deadlineMs) {
        this.#m.deadDeclared.inc();
        const notice = dead(m.nodeId, m.incarnation, this.nodeId);
        this.#onDead(now, notice);
      }
    }
    this.#relays.tick(now);
    if (now >= this.#nextGossipMs) {
      this.#gossipRound(now);
      this.#nextGossipMs += this.config.gossipIntervalMs;
      if (this.#nextGossipMs <= now) this.#nextGossipMs = now + this.config.gossipIntervalMs;
    }
    if (now >= this.#nextSyncMs) {
      if (this.#joined && !this.#leaving) this.#periodicSync(now);
      this.#nextSyncMs = now + this.config.syncIntervalMs;
    }
    if (membersDue) this.#table.reap(now);
  }

  /**
   * A step that comes long after the deadline we asked to be woken at means this node's event
   * loop stalled (a GC pause, a starved CPU), not that others went quiet: the datagrams that
   * arrived meanwhile are still queued, and they are read only after this step. So timers that
   * expired during the stall wait a little (`probeTimeoutMs`) for that backlog instead of firing
   * on a stale view: without this, a node resuming from a 600 ms stall declared dead a member
   * whose refutation sat unread in its socket (found by tests/membership/stack_sim_test.ts).
   * And Lifeguard's health score rises: a stalled node is the slow one.
   *
   * One postponement per stretch of lateness: it is given back only by a tick that comes on
   * time. An event loop so busy that every timer fires late (past the tolerance) reads its
   * socket in between; postponing again at each late tick moved every expired suspicion and
   * every probe a little further each time, so a crashed member was never even suspected
   * (tests/membership/swim_core_test.ts, timers 60 ms late). Now a deadline waits at most
   * probeTimeoutMs (plus the lateness) for the backlog, however late the timers stay.
   */
  #checkLateWake(now: number, isTick: boolean): void {
    if (now - this.#wakeMs <= this.config.lateWakeToleranceMs) {
      if (isTick) this.#lateWakePostponeArmed = true;
      return;
    }
    this.#m.lateWakes.inc();
    this.#awareness.applyDelta(1);
    if (!this.#lateWakePostponeArmed) return;
    this.#lateWakePostponeArmed = false;
    const resumeMs = now + this.config.probeTimeoutMs;
    this.#table.postponeSuspicions(resumeMs);
    this.#prober.postpone(resumeMs);
    this.#relays.postpone(resumeMs);
  }

  /** Our probe of `targetId` failed (prober.ts): suspect it, if it is still there to suspect. */
  #suspectProbed(now: number, targetId: string): void {
    const target = this.#table.get(targetId);
    if (target === undefined || target.state !== "alive" && target.state !== "suspect") return;
    this.#onSuspect(now, suspect(target.nodeId, target.incarnation, this.nodeId));
    if (target.state === "suspect") {
      // Tell the suspect at once so it can refute without waiting for gossip to reach it.
      this.#send(target.address, [suspect(target.nodeId, target.incarnation, this.nodeId)]);
    }
  }

  /**
   * Whether a gossip round would send anything: updates queued, or a suspect to keep telling.
   * An idle node's rounds send nothing, and their timer was a fifth of its wake-ups.
   */
  #gossipWanted(): boolean {
    return this.#gossip.size > 0 || this.#table.counts().suspect > 0;
  }

  /**
   * While no round is wanted its timer is not armed; the gossip clock still keeps its phase,
   * so news queued later goes out at the next period boundary, as if every round had run.
   * The skipped rounds would have drawn no random number (`#gossipRound` returns first).
   */
  #idleGossipClock(now: number): void {
    if (now < this.#nextGossipMs || this.#gossipWanted()) return;
    const intervalMs = this.config.gossipIntervalMs;
    this.#nextGossipMs += (Math.floor((now - this.#nextGossipMs) / intervalMs) + 1) * intervalMs;
  }

  #gossipRound(now: number): void {
    // Keep telling each member we suspect, until it refutes or our timer fires: its refutation
    // is the only thing that stops a false death, and one lost datagram must not prevent it.
    for (const m of this.#table.values()) {
      if (m.state === "suspect") {
        this.#send(m.address, [suspect(m.nodeId, m.incarnation, this.nodeId)]);
      }
    }
    if (this.#gossip.size === 0) return;
    const targets = this.#pick(this.config.gossipFanout, (m) =>
      m.nodeId !== this.nodeId &&
      (m.state === "alive" || m.state === "suspect" ||
        (m.state === "dead" && now - m.stateChangeMs < this.config.gossipToDeadMs)));
    for (const t of targets) {
      const packet = this.gossipPacket(this.config.packetBytesMax);
      if (packet === null) return;
      this.#out.push({ type: "send", toAddress: t.address, bytes: packet, reliable: false });
    }
  }

  #periodicSync(now: number): void {
    const candidates = [...this.#table.values()].filter((m) =>
      m.nodeId !== this.nodeId &&
      (m.state === "alive" || m.state === "suspect" ||
        (m.state === "dead" && now - m.stateChangeMs < this.config.gossipToDeadMs))
    );
    // Now and then a seed: after a long partition the other side may be reaped from our table,
    // and the seeds are how we find it again.
    const useSeed = this.#seeds.length > 0 &&
      (candidates.length === 0 || this.#rng.next() < 1 / (candidates.length + 1));
    const address = useSeed
      ? this.#seeds[this.#rng.int(this.#seeds.length)]!
      : candidates[this.#rng.int(candidates.length)]?.address;
    if (address !== undefined) this.#sendSync(address, false, false);
  }

  #leave(now: number): void {
    if (this.#leaving) return;
    this.#leaving = true;
    this.#prober.stop();
    const self = this.#table.self();
    self.state = "left";
    self.stateChangeMs = now;
    this.#table.touch();
    const notice = dead(this.nodeId, self.incarnation, this.nodeId);
    this.#gossip.push(notice);
    // Others must learn at once, not after a gossip round; each pushes it on (see #onDead).
    this.#pushNotice(notice);
  }

  // -------------------------------------------------------------------------------------------
  // Packets
  // -------------------------------------------------------------------------------------------

  #onPacket(now: number, fromAddress: string, bytes: Uint8Array): void {
    const decoded = decodePacket(bytes);
    if (!decoded.ok) {
      this.#m.decodeErrors.inc();
      return;
    }
    this.#m.packetsIn.inc();
    for (const message of decoded.value) this.#onMessage(now, fromAddress, message);
  }

  #onMessage(now: number, fromAddress: string, message: SwimMessage): void {
    switch (message.type) {
      case "ping": {
        // A probe for another node id reached a process that reused the address: stay silent,
        // so the prober learns that its target is gone.
        if (message.targetId !== this.nodeId) return;
        const self = this.#table.self();
        if (this.#leaving) {
          this.#send(fromAddress, [
            ack(message.seq),
            dead(this.nodeId, self.incarnation, this.nodeId),
          ]);
          return;
        }
        if (message.targetSuspect && message.targetIncarnation >= self.incarnation) {
          this.#refute(message.targetIncarnation);
        }
        // The prober's view of us is stale: correct it in the ack itself.
        const stale = message.targetSuspect || message.targetIncarnation < self.incarnation;
        this.#send(
          fromAddress,
          stale
            ? [ack(message.seq), alive(this.nodeId, this.address, self.incarnation)]
            : [ack(message.seq)],
        );
        return;
      }
      case "ping-req":
        this.#relays.onPingReq(now, fromAddress, message);
        return;
      case "ack":
        if (!this.#prober.onAck(message.seq)) this.#relays.onAck(message.seq);
        return;
      case "nack":
        this.#prober.onNack(message.seq);
        return;
      case "alive":
        this.#onAlive(now, message);
        return;
      case "suspect":
      case "dead":
        if (message.type === "suspect") this.#onSuspect(now, message);
        else this.#onDead(now, message);
        if (message.nodeId === this.nodeId) {
          // The sender holds a stale view of us (refuted or not): correct it directly, as the
          // ack of a ping would. Without this an accuser that missed our refutation keeps
          // accusing until its timer declares us dead.
          const self = this.#table.self();
          this.#send(fromAddress, [
            this.#leaving
              ? dead(this.nodeId, self.incarnation, this.nodeId)
              : alive(this.nodeId, this.address, self.incarnation),
          ]);
        }
        return;
      case "sync":
        this.#onSync(now, fromAddress, message.isResponse, message.members);
        return;
      default:
        unreachable(message, "message");
    }
  }

  #onSync(now: number, fromAddress: string, isResponse: boolean, rows: MemberRecord[]): void {
    for (const row of rows) {
      const unknown = !this.#table.has(row.nodeId) && row.nodeId !== this.nodeId;
      if (unknown && (row.state === "dead" || row.state === "left")) {
        // A member we never knew that is gone is only remembered, so that a stale alive still
        // in flight cannot add it back.
        this.#table.remember(row.nodeId, row.address, row.incarnation, row.state);
        continue;
      }
      switch (row.state) {
        case "alive":
          this.#onAlive(now, alive(row.nodeId, row.address, row.incarnation));
          break;
        case "suspect":
        case "dead":
          // Another node's "dead" in a bulk sync may be stale; start our own suspicion instead,
          // which the member can refute (as memberlist does). A suspect we never knew is added
          // and suspected.
          if (unknown) this.#onAlive(now, alive(row.nodeId, row.address, row.incarnation));
          this.#onSuspect(now, suspect(row.nodeId, row.incarnation, this.nodeId), true);
          break;
        case "left":
          this.#onDead(now, dead(row.nodeId, row.incarnation, row.nodeId), true);
          break;
        default:
          unreachable(row.state, "state");
      }
    }
    if (isResponse) {
      this.#joined = true;
    } else if (!this.#leaving) {
      this.#sendSync(fromAddress, true, false);
    }
  }

  // -------------------------------------------------------------------------------------------
  // State transitions (the SWIM ordering: higher incarnation wins; at equal incarnation
  // dead/left beats suspect beats alive)
  // -------------------------------------------------------------------------------------------

  #onAlive(now: number, message: GossipMessage & { type: "alive" }): void {
    if (message.nodeId === this.nodeId) {
      // Someone claims a newer us (a previous life, or a forged message): outvote it.
      if (message.incarnation > this.#table.self().incarnation && !this.#leaving) {
        this.#refute(message.incarnation);
      }
      return;
    }
    let m = this.#table.get(message.nodeId);
    if (m === undefined) {
      if (this.#table.buried(message.nodeId, message.incarnation)) return;
      if (this.#table.size >= this.config.membersMax) {
        this.#m.membersRefused.inc();
        return;
      }
      m = {
        nodeId: message.nodeId,
        address: message.address,
        incarnation: message.incarnation,
        state: "alive",
        stateChangeMs: now,
        suspicion: undefined,
      };
      this.#table.add(m);
      // New members go to a random place in the current pass so they are probed soon.
      this.#prober.queue(m.nodeId, (pending) => this.#rng.int(pending + 1));
      if (this.#table.size === 2 && this.#seeds.length > 0) this.#joined = true;
      this.#gossip.push(message);
      this.#emit("member-alive", m);
      return;
    }
    if (message.incarnation <= m.incarnation) return;
    const wasSuspect = m.state === "suspect";
    const changed = m.state !== "alive";
    m.incarnation = message.incarnation;
    m.address = message.address;
    m.suspicion = undefined;
    this.#table.touch();
    if (changed) {
      m.state = "alive";
      m.stateChangeMs = now;
      if (wasSuspect) {
        this.#m.suspicionsRefuted.inc();
        // It was queued to be probed next because others suspected it (#onSuspect); refuted
        // before that probe, it goes back to a random place in the pass. Otherwise passing
        // suspicions can take a large share of the probes (at 200 members and 20 % loss each
        // member hears of ~1.9 a second and probes 5 times a second), and a crashed member
        // waits that much longer to be probed at all.
        if (this.#prober.isNext(m.nodeId)) {
          this.#prober.queue(m.nodeId, (pending) => this.#rng.int(pending + 1));
        }
      }
      this.#emit("member-alive", m);
    }
    this.#gossip.push(message);
  }

  /**
   * `fromSync`: the suspicion comes from a bulk state sync, i.e. second hand. It starts our own
   * timer but is neither an independent confirmation nor news to gossip, or one real suspicion
   * copied around by syncs would shrink everyone's timeout.
   */
  #onSuspect(now: number, message: GossipMessage & { type: "suspect" }, fromSync = false): void {
    if (this.#refuteIfAboutSelf(message)) return;
    const m = this.#table.get(message.nodeId);
    if (m === undefined || message.incarnation < m.incarnation) return;
    if (m.state === "dead" || m.state === "left") return;
    if (
      m.state === "suspect" && m.suspicion !== undefined && message.incarnation === m.incarnation
    ) {
      if (fromSync) return;
      // An independent confirmation shrinks our timer; pass it on so others' shrink too.
      if (m.suspicion.confirm(message.fromId)) {
        this.#table.touch();
        this.#gossip.push(message);
      }
      return;
    }
    // Alive, or suspected at an older incarnation: a newer suspicion means the member refuted
    // the old one (we missed that), so it gets a fresh timer rather than the old one's remains.
    const wasSuspect = m.state === "suspect";
    m.incarnation = message.incarnation;
    m.state = "suspect";
    m.stateChangeMs = now;
    this.#table.touch();
    m.suspicion = new Suspicion(
      now,
      message.fromId,
      suspicionBounds(this.#table.liveCount(), this.config),
    );
    this.#m.suspicionsRaised.inc();
    if (message.fromId !== this.nodeId && !fromSync) {
      // Probe a member others suspect next: our ping tells it it is suspected (so a live one
      // refutes at once) and a failure is an independent confirmation (so a dead one is
      // confirmed within a period or two instead of waiting for our round-robin).
      this.#prober.queue(m.nodeId, () => 0);
    }
    if (!fromSync) this.#gossip.push(message);
    if (!wasSuspect) this.#emit("member-suspect", m);
  }

  /**
   * A suspicion or death notice about this node: refute it (unless we are leaving, when a
   * death is what we announced) and report it handled. Older incarnations are already beaten.
   */
  #refuteIfAboutSelf(message: { nodeId: string; incarnation: number }): boolean {
    if (message.nodeId !== this.nodeId) return false;
    if (!this.#leaving && message.incarnation >= this.#table.self().incarnation) {
      this.#refute(message.incarnation);
    }
    return true;
  }

  /**
   * `fromSync`: learnt from a bulk state sync (old news, like a sync's suspicions): gossiped,
   * but not pushed on at once.
   */
  #onDead(now: number, message: GossipMessage & { type: "dead" }, fromSync = false): void {
    if (this.#refuteIfAboutSelf(message)) return;
    const m = this.#table.get(message.nodeId);
    if (m === undefined || message.incarnation < m.incarnation) return;
    if (m.state === "dead" || m.state === "left") return;
    m.incarnation = message.incarnation;
    m.state = message.fromId === message.nodeId ? "left" : "dead";
    m.stateChangeMs = now;
    m.suspicion = undefined;
    this.#table.touch();
    this.#prober.forget(m.nodeId);
    this.#gossip.push(message);
    if (!fromSync) this.#pushNotice(message);
    this.#emit(m.state === "left" ? "member-left" : "member-dead", m);
  }

  #refute(seenIncarnation: number): void {
    const self = this.#table.self();
    if (Math.max(self.incarnation, seenIncarnation) >= INCARNATION_MAX) {
      // Only a forged or corrupt message can name the last u32 incarnation (ours starts far
      // below it and rises by one per refutation). It cannot be outvoted, and asserting here
      // would let one datagram take the node down: ignore it and count it.
      this.#m.refutationsRefused.inc();
      return;
    }
    const next = Math.max(self.incarnation, seenIncarnation) + 1;
    self.incarnation = next;
    this.#m.selfRefutations.inc();
    // Lifeguard: being suspected hints that we are the slow one.
    this.#awareness.applyDelta(1);
    const notice = alive(this.nodeId, this.address, next);
    this.#gossip.push(notice);
    this.#pushNotice(notice);
  }

  /**
   * Pushes a notice (a death or leave we just learnt, a refutation of our own) to
   * `noticeFanout` random live members at once, besides queueing it for gossip: a gossip round
   * of its own that does not wait for the next period. Each member that learns of a death
   * pushes it on once, so it reaches everyone in about log_{fanout+1} N network hops, that is
   * milliseconds, for fanout packets per member. Sending every notice to every member instead
   * cost N packets per declarer and per refutation, and refutations come at a rate that grows
   * with N (false suspicions at 20 % loss), so N² packets a second cluster-wide. A refutation
   * is not pushed on by others: the members that hold the suspicion learn it from the ack of
   * the probe they send the suspect next, the rest by gossip.
   */
  #pushNotice(notice: GossipMessage): void {
    const targets = this.#pick(
      this.config.noticeFanout,
      (m) =>
        m.nodeId !== this.nodeId && m.nodeId !== notice.nodeId &&
        (m.state === "alive" || m.state === "suspect"),
    );
    for (const t of targets) this.#send(t.address, [notice]);
  }

  // -------------------------------------------------------------------------------------------
  // Helpers
  // -------------------------------------------------------------------------------------------

  #retransmitLimit(): number {
    return retransmitLimit(this.config.retransmitMult, this.#table.liveCount());
  }

  #nextSeq(): number {
    this.#seq = (this.#seq + 1) >>> 0;
    return this.#seq;
  }

  /** Up to `count` distinct random members satisfying `accept`. */
  #pick(count: number, accept: (m: Member) => boolean): Member[] {
    const all = [...this.#table.values()].filter(accept);
    shuffle(all, this.#rng);
    return all.slice(0, count);
  }

  /** Sends `messages` with as much queued gossip as fits the packet. */
  #send(toAddress: string, messages: SwimMessage[]): void {
    let used = PACKET_HEADER_BYTES;
    for (const m of messages) used += messageBytes(m);
    const extra = this.#gossip.take(
      this.config.packetBytesMax - used,
      PACKET_MESSAGES_MAX - messages.length,
      this.#retransmitLimit(),
      messages,
    );
    this.#m.packetsOut.inc();
    this.#out.push({
      type: "send",
      toAddress,
      bytes: encodePacket([...messages, ...extra]),
      reliable: false,
    });
  }

  #sendSync(toAddress: string, isResponse: boolean, isJoin: boolean): void {
    this.#m.packetsOut.inc();
    this.#out.push({
      type: "send",
      toAddress,
      bytes: encodePacket([{ type: "sync", isResponse, isJoin, members: this.#table.records() }]),
      reliable: true,
    });
  }

  #emit(type: MemberEventType, m: Member): void {
    this.#out.push({
      type: "event",
      event: { type, nodeId: m.nodeId, address: m.address, incarnation: m.incarnation },
    });
  }

  #updateGauges(): void {
    const counts = this.#table.counts();
    for (const s of ["alive", "suspect", "dead", "left"] as const) {
      this.#m.byState[s].set(counts[s]);
    }
    this.#m.awareness.set(this.#awareness.score);
  }
}

function checkLength(option: string, value: string, minBytes: number, maxBytes: number): void {
  const bytes = new TextEncoder().encode(value).length;
  if (bytes < minBytes || bytes > maxBytes) {
    throw new RangeError(
      `${option} ${
        JSON.stringify(value)
      } must be ${minBytes}..${maxBytes} UTF-8 bytes, got ${bytes}`,
    );
  }
}

function shuffle<T>(items: T[], rng: Rng): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
