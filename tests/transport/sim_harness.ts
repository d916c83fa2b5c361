/**
 * Runs transport `Endpoint`s on the simulator's virtual clock and lossy network.
 *
 * Owns the glue only: each simulated node pumps its endpoint (tick, send datagrams, re-arm its
 * one timer) after every input, exactly as udp_transport.ts does on a real socket. Everything
 * random flows from one seed, so a failing seed replays exactly.
 */

import { Sfc32 } from "../../src/lib/rng.ts";
import type { TransportConfig } from "../../src/config/transport.ts";
import { SimNetwork, type SimNetworkOptions } from "../../src/sim/network.ts";
import { SimScheduler, type TimerHandle } from "../../src/sim/scheduler.ts";
import type { Rng } from "../../src/lib/rng.ts";
import { type DeliveredMessage, Endpoint, type TransportEvent } from "../../src/transport/mod.ts";

export const SIM_KEY = "simulated-cluster-key-0123456789";

export class SimNode {
  endpoint: Endpoint;
  readonly delivered: DeliveredMessage[] = [];
  readonly events: TransportEvent[] = [];
  #timer: TimerHandle | undefined;
  #timerAtMs = Infinity;

  constructor(
    readonly sim: TransportSim,
    readonly address: string,
    nodeId: string,
    epoch: number,
    config: Partial<TransportConfig>,
  ) {
    this.endpoint = new Endpoint({
      nodeId,
      epoch,
      clusterKey: SIM_KEY,
      keyId: keyIdFrom(sim.rng),
      rng: sim.rng.fork(),
      config,
    });
    sim.network.attach(address, (from, packet) => this.#receive(from, packet));
  }

  #receive(from: string, packet: Uint8Array): void {
    this.endpoint.receive(this.sim.scheduler.nowMs, from, packet);
    this.pump();
  }

  /** Processes due timers, sends what the endpoint built and re-arms the timer. */
  pump(): void {
    const now = this.sim.scheduler.nowMs;
    this.endpoint.tick(now);
    for (const d of this.endpoint.takeDatagrams()) {
      this.sim.network.send(this.address, d.address, d.bytes);
    }
    this.delivered.push(...this.endpoint.takeMessages());
    this.events.push(...this.endpoint.takeEvents());
    const deadline = this.endpoint.nextWakeMs();
    if (deadline === Infinity || deadline >= this.#timerAtMs) return;
    this.#timer?.cancel();
    this.#timerAtMs = deadline;
    this.#timer = this.sim.scheduler.at(deadline, () => {
      this.#timer = undefined;
      this.#timerAtMs = Infinity;
      this.pump();
    });
  }

  /** Replaces the endpoint with a new incarnation (new epoch) at the same address. */
  restart(epoch: number, config: Partial<TransportConfig>): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerAtMs = Infinity;
    this.endpoint = new Endpoint({
      nodeId: this.endpoint.nodeId,
      epoch,
      clusterKey: SIM_KEY,
      keyId: keyIdFrom(this.sim.rng),
      rng: this.sim.rng.fork(),
      config,
    });
  }
}

export class TransportSim {
  readonly scheduler = new SimScheduler();
  readonly rng: Sfc32;
  readonly network: SimNetwork<Uint8Array>;

  constructor(readonly seed: number, network: SimNetworkOptions) {
    this.rng = new Sfc32(seed);
    this.network = new SimNetwork(this.scheduler, this.rng.fork(), network);
  }

  node(address: string, nodeId: string, config: Partial<TransportConfig> = {}): SimNode {
    return new SimNode(this, address, nodeId, this.rng.int(0x1_0000_0000), config);
  }
}

/** A key id drawn from the simulation's seed, so a run replays to the byte. */
export function keyIdFrom(rng: Rng): Uint8Array {
  return Uint8Array.from({ length: 16 }, () => rng.int(256));
}

/** A message body whose content is a function of `id`, so corruption is detectable. */
export function makeBody(id: number, length: number): Uint8Array {
  const bytes = new Uint8Array(Math.max(8, length));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, id, true);
  view.setUint32(4, bytes.length, true);
  for (let i = 8; i < bytes.length; i++) bytes[i] = (id * 31 + i * 7) & 0xff;
  return bytes;
}

/** The id of a body made by `makeBody`, or -1 when its content is not what `makeBody` makes. */
export function checkBody(bytes: Uint8Array): number {
  if (bytes.length < 8) return -1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const id = view.getUint32(0, true);
  if (view.getUint32(4, true) !== bytes.length) return -1;
  for (let i = 8; i < bytes.length; i++) if (bytes[i] !== ((id * 31 + i * 7) & 0xff)) return -1;
  return id;
}
