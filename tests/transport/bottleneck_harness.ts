/**
 * Transport endpoints behind a bottleneck, in virtual time: what congestion control is for.
 *
 * Owns a link model that the bare simulated network lacks: every receiver drains its socket at
 * `drainBytesPerMs` from a queue of at most `queueDatagramsMax` datagrams (a kernel receive
 * buffer); a datagram that finds the queue full is dropped there (loss the senders caused
 * themselves), and one that gets through is then dropped with `lossProbability` (random loss
 * injected after the socket, as `--loss` does). Senders keep their send queues full, so
 * whatever they do not send is the controller's choice. Everything random flows from one seed.
 */

import { Sfc32 } from "../../src/lib/rng.ts";
import type { TransportConfig } from "../../src/config/transport.ts";
import { SimScheduler, type TimerHandle } from "../../src/sim/scheduler.ts";
import { Endpoint } from "../../src/transport/mod.ts";
import { keyIdFrom } from "./sim_harness.ts";

export interface BottleneckOptions {
  seed: number;
  /** How fast each receiver takes datagrams off its queue, bytes per ms. */
  drainBytesPerMs: number;
  /** Datagrams a receiver's queue holds before it drops. */
  queueDatagramsMax: number;
  /** Random loss after the queue (not congestion). */
  lossProbability: number;
  /** One-way propagation delay, ms. @default 0.05 */
  delayMs?: number;
  config?: Partial<TransportConfig>;
}

export interface FlowStats {
  /** Distinct messages the receiver got from the sender. */
  messages: number;
  /** Message bytes delivered, each message once. */
  goodputBytes: number;
  duplicates: number;
}

export interface LinkStats {
  datagrams: number;
  overflowDrops: number;
  randomDrops: number;
}

const KEY = "bottleneck-cluster-key-0123456789";

export class Host {
  readonly endpoint: Endpoint;
  /** Per sender address: the ids of the reliable messages received (see `saturate`). */
  readonly #seen = new Map<string, Set<number>>();
  readonly #flows = new Map<string, FlowStats>();
  /** Most bytes this host ever had in flight to one peer, seen after each step. */
  bytesInFlightMax = 0;
  #timer: TimerHandle | undefined;
  #timerAtMs = Infinity;

  constructor(
    readonly net: BottleneckNet,
    readonly address: string,
    nodeId: string,
    config: Partial<TransportConfig>,
  ) {
    this.endpoint = new Endpoint({
      nodeId,
      clusterKey: KEY,
      keyId: keyIdFrom(net.rng),
      rng: net.rng.fork(),
      config,
    });
  }

  pump(): void {
    const s = this.net.scheduler;
    this.endpoint.tick(s.nowMs);
    for (const d of this.endpoint.takeDatagrams()) this.net.send(this.address, d.address, d.bytes);
    for (const peer of this.endpoint.peers()) {
      const inFlight = this.endpoint.peerStats(peer)!.bytesInFlight;
      if (inFlight > this.bytesInFlightMax) this.bytesInFlightMax = inFlight;
    }
    for (const m of this.endpoint.takeMessages()) {
      if (m.reliable) this.#record(m.fromAddress, m.bytes);
    }
    this.endpoint.takeEvents();
    const deadline = this.endpoint.nextWakeMs();
    if (deadline === Infinity || deadline >= this.#timerAtMs) return;
    this.#timer?.cancel();
    this.#timerAtMs = deadline;
    this.#timer = s.at(deadline, () => {
      this.#timer = undefined;
      this.#timerAtMs = Infinity;
      this.pump();
    });
  }

  /** What this host received from `from` so far. */
  flowFrom(from: string): FlowStats {
    return { ...(this.#flows.get(from) ?? { messages: 0, goodputBytes: 0, duplicates: 0 }) };
  }

  #record(from: string, bytes: Uint8Array): void {
    let seen = this.#seen.get(from);
    let flow = this.#flows.get(from);
    if (seen === undefined || flow === undefined) {
      this.#seen.set(from, seen = new Set());
      this.#flows.set(from, flow = { messages: 0, goodputBytes: 0, duplicates: 0 });
    }
    const id = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
    if (seen.has(id)) {
      flow.duplicates++;
      return;
    }
    seen.add(id);
    flow.messages++;
    flow.goodputBytes += bytes.length;
  }
}

interface Queue {
  datagrams: Array<{ from: string; bytes: Uint8Array }>;
  busyUntilMs: number;
}

export class BottleneckNet {
  readonly scheduler = new SimScheduler();
  readonly rng: Sfc32;
  readonly link: LinkStats = { datagrams: 0, overflowDrops: 0, randomDrops: 0 };
  readonly #o: BottleneckOptions;
  #drainBytesPerMs: number;
  #lossProbability: number;
  readonly #hosts = new Map<string, Host>();
  readonly #queues = new Map<string, Queue>();
  readonly #lossRng: Sfc32;

  constructor(options: BottleneckOptions) {
    this.#o = options;
    this.#drainBytesPerMs = options.drainBytesPerMs;
    this.#lossProbability = options.lossProbability;
    this.rng = new Sfc32(options.seed);
    this.#lossRng = new Sfc32(options.seed ^ 0x5eed);
  }

  host(address: string, nodeId: string): Host {
    const h = new Host(this, address, nodeId, this.#o.config ?? {});
    this.#hosts.set(address, h);
    this.#queues.set(address, { datagrams: [], busyUntilMs: 0 });
    return h;
  }

  /** Changes every receiver's drain rate from now on (a receiver that gets busier). */
  setDrain(bytesPerMs: number): void {
    this.#drainBytesPerMs = bytesPerMs;
  }

  /** Changes the random loss after the queue from now on (1: a blackout). */
  setLoss(probability: number): void {
    this.#lossProbability = probability;
  }

  send(from: string, to: string, bytes: Uint8Array): void {
    this.link.datagrams++;
    this.scheduler.after(this.#o.delayMs ?? 0.05, () => this.#arrive(from, to, bytes));
  }

  #arrive(from: string, to: string, bytes: Uint8Array): void {
    const q = this.#queues.get(to);
    if (q === undefined) return;
    if (q.datagrams.length >= this.#o.queueDatagramsMax) {
      this.link.overflowDrops++;
      return;
    }
    q.datagrams.push({ from, bytes });
    if (q.datagrams.length === 1) this.#serveNext(to, q);
  }

  /** The receiver takes the queue's head once the previous datagram's drain time has passed. */
  #serveNext(to: string, q: Queue): void {
    const head = q.datagrams[0];
    if (head === undefined) return;
    const startMs = Math.max(this.scheduler.nowMs, q.busyUntilMs);
    q.busyUntilMs = startMs + head.bytes.length / this.#drainBytesPerMs;
    this.scheduler.at(q.busyUntilMs, () => {
      q.datagrams.shift();
      if (this.#lossRng.next() < this.#lossProbability) this.link.randomDrops++;
      else {
        const host = this.#hosts.get(to)!;
        host.endpoint.receive(this.scheduler.nowMs, head.from, head.bytes);
        host.pump();
      }
      this.#serveNext(to, q);
    });
  }
}

/** Keeps `from`'s send queue to `to` full of `messageBytes` messages until `untilMs`. */
export function saturate(
  net: BottleneckNet,
  from: Host,
  to: Host,
  messageBytes: number,
  untilMs: number,
): void {
  let next = 0;
  const refill = () => {
    if (net.scheduler.nowMs >= untilMs) return;
    for (;;) {
      const body = new Uint8Array(messageBytes);
      new DataView(body.buffer).setUint32(0, next, true);
      if (!from.endpoint.send(net.scheduler.nowMs, to.address, 1, body).accepted) break;
      next++;
    }
    from.pump();
    net.scheduler.after(0.5, refill);
  };
  net.scheduler.at(net.scheduler.nowMs, refill);
}
