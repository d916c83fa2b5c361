/**
 * The indirect probes this node relays for other members (the serving side of a ping-req):
 * it pings the target under a sequence number of its own, passes the target's ack back to the
 * requester under the requester's, and sends a nack when the target stays silent, so the
 * requester can tell a dead target from its own slow links (Lifeguard).
 *
 * Owns: the pending relays, their bound, and their nack and expiry deadlines. Must not: probe
 * on its own account (prober.ts does), change a member's state, or read the member table
 * other than through `get`.
 */

import type { MembershipConfig } from "../config/membership.ts";
import type { MemberTable } from "./member_table.ts";
import { ack, alive, nack, ping, type PingReqMessage, type SwimMessage } from "./messages.ts";
import type { SwimMetrics } from "./swim_metrics.ts";

interface Relay {
  requesterAddress: string;
  requesterSeq: number;
  targetId: string;
  /** The requester's view of the target, to correct it in the relayed ack if stale. */
  targetIncarnation: number;
  nackAtMs: number;
  expiresMs: number;
}

/** What the relays need of the core: each a narrow door, none the whole core. */
export interface ProbeRelaysHost {
  /** A sequence number from the counter probes draw from too, so an ack's names one of them. */
  nextSeq(): number;
  /** Sends `messages` in one packet (with what gossip fits). */
  send(toAddress: string, messages: SwimMessage[]): void;
}

export interface ProbeRelaysOptions {
  readonly config: Readonly<Pick<MembershipConfig, "probeTimeoutMs" | "relayPendingMax">>;
  readonly members: Pick<MemberTable, "get">;
  readonly metrics: Pick<SwimMetrics, "relayed" | "relayRefused">;
}

export class ProbeRelays {
  readonly #host: ProbeRelaysHost;
  readonly #config: ProbeRelaysOptions["config"];
  readonly #members: ProbeRelaysOptions["members"];
  readonly #m: ProbeRelaysOptions["metrics"];
  /** By our own sequence number, the one the target's ack carries. */
  readonly #relays = new Map<number, Relay>();

  constructor(host: ProbeRelaysHost, options: ProbeRelaysOptions) {
    this.#host = host;
    this.#config = options.config;
    this.#members = options.members;
    this.#m = options.metrics;
  }

  /** The earliest nack or expiry due. */
  wakeMs(): number {
    let wake = Infinity;
    for (const r of this.#relays.values()) wake = Math.min(wake, r.nackAtMs, r.expiresMs);
    return wake;
  }

  onPingReq(now: number, fromAddress: string, message: PingReqMessage): void {
    if (this.#relays.size >= this.#config.relayPendingMax) {
      this.#m.relayRefused.inc();
      return;
    }
    const seq = this.#host.nextSeq();
    this.#relays.set(seq, {
      requesterAddress: fromAddress,
      requesterSeq: message.seq,
      targetId: message.targetId,
      targetIncarnation: message.targetIncarnation,
      nackAtMs: message.wantNack ? now + 0.8 * this.#config.probeTimeoutMs : Infinity,
      expiresMs: now + this.#config.probeTimeoutMs,
    });
    this.#m.relayed.inc();
    this.#host.send(message.targetAddress, [
      ping(seq, message.targetId, message.targetIncarnation, message.targetSuspect),
    ]);
  }

  /** An ack that is not for our own probe: passed on if it answers a relay. */
  onAck(seq: number): void {
    const relay = this.#relays.get(seq);
    if (relay === undefined) return;
    this.#relays.delete(seq);
    // The target's ack came with its current incarnation if the requester's was stale
    // (already applied, as it precedes the ack in the packet): pass it on.
    const target = this.#members.get(relay.targetId);
    this.#host.send(
      relay.requesterAddress,
      target !== undefined && target.state === "alive" &&
        target.incarnation > relay.targetIncarnation
        ? [ack(relay.requesterSeq), alive(target.nodeId, target.address, target.incarnation)]
        : [ack(relay.requesterSeq)],
    );
  }

  /** Sends the nacks due and forgets the relays past their expiry. */
  tick(now: number): void {
    for (const [seq, r] of this.#relays) {
      if (now >= r.nackAtMs) {
        r.nackAtMs = Infinity;
        this.#host.send(r.requesterAddress, [nack(r.requesterSeq)]);
      }
      if (now >= r.expiresMs) this.#relays.delete(seq);
    }
  }

  /** Keeps every relay until `resumeMs` at least (this node stalled; the ack may be unread). */
  postpone(resumeMs: number): void {
    for (const r of this.#relays.values()) r.expiresMs = Math.max(r.expiresMs, resumeMs);
  }
}
