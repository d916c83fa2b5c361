/**
 * The thin adapter that runs a `SwimCore` on the transport: SWIM packets travel unreliably on
 * `MEMBERSHIP_CHANNEL`, queued gossip rides on the transport's spare datagram room (the
 * piggyback hook, delivered on `PIGGYBACK_CHANNEL`), and one timer is armed at the core's next
 * deadline.
 *
 * Owns its one timer (a `DeadlineTimer` on an injected `Runtime`: the real clock in a node, the
 * virtual one in the simulator) and the subscription to the transport. Protocol decisions all
 * live in swim_core.ts and the parts it delegates to; this file must not grow any.
 */

import { DeadlineTimer } from "../lib/deadline_timer.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import { type Counter, MetricsRegistry } from "../metrics/registry.ts";
import { PIGGYBACK_CHANNEL } from "../transport/types.ts";
import type { DeliveredMessage, PiggybackProvider, SendResult } from "../transport/types.ts";
import type { MemberEvent, MembershipView, SwimCore, SwimInput } from "./swim_core.ts";

/** Transport channel of SWIM packets. */
export const MEMBERSHIP_CHANNEL = 1;

/** What the adapter needs from the transport (`UdpTransport` has it; tests may fake it). */
export interface MembershipTransport {
  send(address: string, channel: number, bytes: Uint8Array): SendResult;
  sendUnreliable(address: string, channel: number, bytes: Uint8Array): SendResult;
  onMessage(handler: (message: DeliveredMessage) => void): () => void;
  setPiggyback(provider: PiggybackProvider | null): void;
}

export interface MembershipServiceOptions {
  core: SwimCore;
  transport: MembershipTransport;
  onEvent?: (event: MemberEvent) => void;
  /**
   * Clock and timers; the simulator passes a `SimRuntime`. The core must have been created on
   * the same clock (`nowMs: runtime.nowMs()`). @default realRuntime
   */
  runtime?: Runtime;
  /** Where the refused-sends counter goes (the node's registry). @default a private one */
  metrics?: MetricsRegistry;
  /**
   * The only addresses SWIM packets are taken from (a node passes its configured voters). Every
   * holder of the cluster key can seal a datagram — the UDP submit client is one — so without
   * this any of them could speak for a member: accuse, refute, or gossip a death. A packet from
   * another authenticated address is dropped and counted. Rumours a voter relays still name
   * their originator (SWIM gossips them on), which one shared key cannot bind further.
   * @default every address (a cluster whose membership is open)
   */
  senders?: ReadonlySet<string>;
}

export class MembershipService {
  readonly core: SwimCore;
  readonly #transport: MembershipTransport;
  readonly #onEvent: ((event: MemberEvent) => void) | undefined;
  readonly #runtime: Runtime;
  readonly #timer: DeadlineTimer;
  #unsubscribe: (() => void) | undefined;
  /** Ends a `leave()` linger early when `close()` comes first. */
  #endLinger: (() => void) | undefined;
  #closed = false;
  /**
   * Sends the transport refused, by reason: counted, not retried (SWIM tolerates loss by
   * design), and registered in the node's metrics so that a steady "message-too-large"
   * (membership.packetBytesMax above the transport's datagram room) shows on /metrics instead of
   * passing for packet loss.
   */
  readonly #refusedByReason = new Map<string, Counter>();
  readonly #metrics: MetricsRegistry;
  readonly #senders: ReadonlySet<string> | undefined;
  readonly #foreignPackets: Counter;

  constructor(options: MembershipServiceOptions) {
    this.core = options.core;
    this.#transport = options.transport;
    this.#onEvent = options.onEvent;
    this.#runtime = options.runtime ?? realRuntime;
    this.#timer = new DeadlineTimer(this.#runtime, () => this.#step({ type: "tick" }));
    this.#metrics = options.metrics ?? new MetricsRegistry();
    this.#senders = options.senders;
    this.#foreignPackets = this.#metrics.counter(
      "hookd_swim_foreign_packets_total",
      "SWIM packets dropped because their authenticated sender is not a configured voter",
    );
  }

  /** SWIM packets dropped because their sender is not one of `senders`. */
  get foreignPackets(): number {
    return this.#foreignPackets.value;
  }

  /** Sends refused by the transport so far, all reasons. */
  get sendsRefused(): number {
    let total = 0;
    for (const c of this.#refusedByReason.values()) total += c.value;
    return total;
  }

  get view(): MembershipView {
    return this.core;
  }

  /** Subscribes to the transport, installs the piggyback hook and runs the first tick. */
  start(): void {
    this.#unsubscribe = this.#transport.onMessage((m) => {
      if (m.channel !== MEMBERSHIP_CHANNEL && m.channel !== PIGGYBACK_CHANNEL) return;
      if (this.#senders !== undefined && !this.#senders.has(m.fromAddress)) {
        this.#foreignPackets.inc();
        return;
      }
      this.#step({ type: "packet", fromAddress: m.fromAddress, bytes: m.bytes });
    });
    this.#transport.setPiggyback((peer, spaceBytes) =>
      this.#closed ? null : this.core.gossipPacket(spaceBytes, peer)
    );
    this.#step({ type: "tick" });
  }

  /**
   * Graceful leave: tells every live member at once, keeps answering probes for `lingerMs` so
   * the notice spreads (and nobody suspects us meanwhile), then stops.
   */
  async leave(lingerMs = 2 * this.core.config.gossipIntervalMs): Promise<void> {
    if (this.#closed) return;
    this.#step({ type: "leave" });
    await new Promise<void>((resolve) => {
      const cancel = this.#runtime.setTimer(lingerMs, () => resolve());
      // A close() during the linger (or a halted simulated runtime) must not leave the caller
      // waiting on a timer that will never fire.
      this.#endLinger = () => {
        cancel();
        resolve();
      };
    });
    this.close();
  }

  /** Stops the timer and the subscriptions; the transport is the caller's to close. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer.close();
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#endLinger?.();
    this.#endLinger = undefined;
    this.#transport.setPiggyback(null);
  }

  #step(input: SwimInput): void {
    if (this.#closed) return;
    for (const out of this.core.step(this.#runtime.nowMs(), input)) {
      if (out.type === "send") {
        // Syncs are marked reliable because a large table can exceed a datagram; a small one
        // goes unreliably, so a join to a seed that is not up yet queues nothing.
        let result = this.#transport.sendUnreliable(out.toAddress, MEMBERSHIP_CHANNEL, out.bytes);
        if (!result.accepted && result.reason === "message-too-large" && out.reliable) {
          result = this.#transport.send(out.toAddress, MEMBERSHIP_CHANNEL, out.bytes);
        }
        if (!result.accepted) this.#refusal(result.reason).inc();
      } else {
        this.#onEvent?.(out.event);
      }
    }
    this.#timer.arm(this.core.nextWakeMs());
  }

  #refusal(reason: string): Counter {
    let counter = this.#refusedByReason.get(reason);
    if (counter === undefined) {
      counter = this.#metrics.counter(
        "hookd_membership_sends_refused_total",
        "Membership packets the transport refused to send",
        { reason },
      );
      this.#refusedByReason.set(reason, counter);
    }
    return counter;
  }
}
