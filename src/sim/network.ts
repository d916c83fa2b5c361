/**
 * A seeded, lossy datagram network for the simulator.
 *
 * Owns packets in flight between simulated addresses. Loss is applied at the receiver's
 * ingress (as a node's `--loss` flag does), so a dropped packet can be anything. It also
 * duplicates, delays with jitter (which reorders), and partitions, two-way or one-way (a
 * firewall rule, a broken route: A reaches B while B's answers to A are lost). Packets are
 * opaque: the same network carries transport datagrams or bare protocol messages.
 */

import { assert } from "../lib/assert.ts";
import type { Rng } from "../lib/rng.ts";
import type { SimScheduler } from "./scheduler.ts";

export interface SimNetworkOptions {
  /** Probability that a packet is dropped at the receiver's ingress. @default 0 */
  lossProbability?: number;
  /** Probability that a delivered packet is delivered twice. @default 0 */
  duplicateProbability?: number;
  /** Minimum one-way delay. @default 0.05 */
  delayMsMin?: number;
  /** Maximum one-way delay; the spread between min and max reorders packets. @default 0.5 */
  delayMsMax?: number;
}

export interface SimNetworkStats {
  sent: number;
  delivered: number;
  dropped: number;
  duplicated: number;
  partitioned: number;
}

type Receiver<P> = (from: string, packet: P) => void;

export class SimNetwork<P> {
  readonly #scheduler: SimScheduler;
  readonly #rng: Rng;
  readonly #receivers = new Map<string, Receiver<P>>();
  readonly #ingressLoss = new Map<string, number>();
  readonly #cut = new Set<string>();
  /** One-way cuts: `from` + ">" + `to` for each link whose packets are dropped. */
  readonly #oneWay = new Set<string>();
  #lossProbability: number;
  #duplicateProbability: number;
  #delayMsMin: number;
  #delayMsMax: number;
  readonly stats: SimNetworkStats = {
    sent: 0,
    delivered: 0,
    dropped: 0,
    duplicated: 0,
    partitioned: 0,
  };

  constructor(scheduler: SimScheduler, rng: Rng, options: SimNetworkOptions = {}) {
    this.#scheduler = scheduler;
    this.#rng = rng;
    this.#lossProbability = checkProbability("lossProbability", options.lossProbability ?? 0);
    this.#duplicateProbability = checkProbability(
      "duplicateProbability",
      options.duplicateProbability ?? 0,
    );
    this.#delayMsMin = options.delayMsMin ?? 0.05;
    this.#delayMsMax = options.delayMsMax ?? 0.5;
    if (!(this.#delayMsMin >= 0 && this.#delayMsMax >= this.#delayMsMin)) {
      throw new RangeError(
        `SimNetwork: need 0 <= delayMsMin <= delayMsMax, got ${this.#delayMsMin}, ${this.#delayMsMax}`,
      );
    }
  }

  /** Registers the receiver for `address`; a later call replaces it (a restarted node). */
  attach(address: string, receive: Receiver<P>): void {
    this.#receivers.set(address, receive);
  }

  /** Removes `address`: packets to it vanish, as to a crashed process. */
  detach(address: string): void {
    this.#receivers.delete(address);
  }

  /** Loss probability for every node without its own setting. */
  setLoss(probability: number): void {
    this.#lossProbability = checkProbability("lossProbability", probability);
  }

  /** Ingress loss for one node. */
  setIngressLoss(address: string, probability: number): void {
    this.#ingressLoss.set(address, checkProbability("lossProbability", probability));
  }

  /** Cuts every link between a node of `side` and a node outside it. */
  partition(side: Iterable<string>): void {
    this.#cut.clear();
    for (const address of side) this.#cut.add(address);
  }

  /** Drops every packet from `from` to `to` (not the other way), until `heal`. */
  cutOneWay(from: string, to: string): void {
    this.#oneWay.add(`${from}>${to}`);
  }

  /** Ends every partition, two-way and one-way. */
  heal(): void {
    this.#cut.clear();
    this.#oneWay.clear();
  }

  send(from: string, to: string, packet: P): void {
    this.stats.sent++;
    if (
      (this.#cut.size > 0 && this.#cut.has(from) !== this.#cut.has(to)) ||
      (this.#oneWay.size > 0 && this.#oneWay.has(`${from}>${to}`))
    ) {
      this.stats.partitioned++;
      return;
    }
    const copies = this.#rng.next() < this.#duplicateProbability ? 2 : 1;
    if (copies === 2) this.stats.duplicated++;
    for (let i = 0; i < copies; i++) {
      const delayMs = this.#delayMsMin + this.#rng.next() * (this.#delayMsMax - this.#delayMsMin);
      this.#scheduler.after(delayMs, () => this.#arrive(from, to, packet));
    }
  }

  #arrive(from: string, to: string, packet: P): void {
    const loss = this.#ingressLoss.get(to) ?? this.#lossProbability;
    if (this.#rng.next() < loss) {
      this.stats.dropped++;
      return;
    }
    const receive = this.#receivers.get(to);
    if (receive === undefined) {
      this.stats.dropped++;
      return;
    }
    this.stats.delivered++;
    receive(from, packet);
  }
}

function checkProbability(name: string, value: number): number {
  if (!(value >= 0 && value <= 1)) {
    throw new RangeError(`SimNetwork: ${name} must be in [0, 1], got ${value}`);
  }
  assert(Number.isFinite(value), "probability is finite");
  return value;
}
