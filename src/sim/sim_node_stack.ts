/**
 * One hookd node's network stack inside the simulator: the real `UdpTransport` adapter (framing,
 * MAC, sessions, acks, piggybacking, the reliable path) on a `SimSocket`, and the real
 * `MembershipService` around a `SwimCore`, wired as src/node/node.ts wires them, all on one
 * `SimRuntime`. Every entry point into the node (its timers and its socket) goes through a
 * `StallGate`, so the node can be stalled like a blocked event loop.
 *
 * Owns the lifecycle of one simulated node's shells: start, stall, crash, graceful leave. The
 * whole-cluster simulation (job store, WAL on the simulated disk, delivery) stacks its layers
 * on `runtime` and `transport` here. Never reads the wall clock or `Math.random`.
 */

import { MEMBERSHIP_PACKET_BYTES_MIN, type MembershipConfig } from "../config/membership.ts";
import type { TransportConfig } from "../config/transport.ts";
import type { Rng } from "../lib/rng.ts";
import type { Runtime } from "../lib/runtime.ts";
import { MembershipService } from "../membership/membership_service.ts";
import { type MemberEvent, SwimCore } from "../membership/swim_core.ts";
import { UdpTransport } from "../transport/udp_transport.ts";
import type { SimNetwork } from "./network.ts";
import type { SimScheduler } from "./scheduler.ts";
import { SimRuntime } from "./sim_runtime.ts";
import { SimSocket } from "./sim_socket.ts";
import { StallGate, StallingRuntime, StallingSocket } from "./stall.ts";

export interface SimNodeStackOptions {
  nodeId: string;
  /** The node's `host:port` on the simulated network. */
  address: string;
  /** Seed addresses (any subset of the cluster). */
  seeds: readonly string[];
  /**
   * The voters' addresses: SWIM packets from any other address are dropped, as `hookd node`
   * does (`MembershipServiceOptions.senders`). @default any address
   */
  voters?: readonly string[];
  scheduler: SimScheduler;
  network: SimNetwork<Uint8Array>;
  clusterKey: string;
  /** This node's randomness (the SWIM core and the transport each get a fork). */
  rng: Rng;
  /**
   * Starting incarnation. @default the node's wall-clock seconds, as `hookd node` does, so a
   * restart outranks the previous life
   */
  incarnation?: number;
  membership?: Partial<MembershipConfig>;
  transport?: Partial<TransportConfig>;
  /** Added to this node's wall clock, ms. @default 0 */
  wallSkewMs?: number;
  onEvent?: (event: MemberEvent) => void;
}

export class SimNodeStack {
  readonly nodeId: string;
  readonly address: string;
  readonly gate: StallGate;
  /** The node's clock and timers, stalls included: what every layer of the node must use. */
  readonly runtime: Runtime;
  readonly transport: UdpTransport;
  readonly membership: MembershipService;
  readonly #simRuntime: SimRuntime;
  readonly #socket: StallingSocket;
  #closing: Promise<void> | undefined;

  constructor(options: SimNodeStackOptions) {
    this.nodeId = options.nodeId;
    this.gate = new StallGate(options.scheduler);
    this.#simRuntime = new SimRuntime(options.scheduler, options.wallSkewMs ?? 0);
    this.runtime = new StallingRuntime(this.#simRuntime, this.gate);
    this.#socket = new StallingSocket(new SimSocket(options.network, options.address), this.gate);
    this.transport = UdpTransport.start({
      nodeId: options.nodeId,
      clusterKey: options.clusterKey,
      socket: this.#socket,
      runtime: this.runtime,
      rng: options.rng.fork(),
      ...(options.transport !== undefined ? { config: options.transport } : {}),
    });
    this.address = this.transport.address;
    // As in the node: a membership packet rides one unreliable message, so it is no larger
    // than the transport's datagram leaves after header, acks and MAC.
    const packetBytesMax = Math.min(
      options.membership?.packetBytesMax ?? Infinity,
      this.transport.endpoint.unreliableBytesMax,
    );
    if (packetBytesMax < MEMBERSHIP_PACKET_BYTES_MIN) {
      throw new RangeError(`SimNodeStack: ${packetBytesMax} bytes of membership packet room`);
    }
    const core = new SwimCore({
      nodeId: options.nodeId,
      address: this.address,
      seeds: options.seeds,
      rng: options.rng.fork(),
      nowMs: this.runtime.nowMs(),
      incarnation: options.incarnation ?? Math.floor(this.runtime.wallMs() / 1000),
      config: { ...options.membership, packetBytesMax },
    });
    const onEvent = options.onEvent;
    const transport = this.transport;
    this.membership = new MembershipService({
      core,
      transport,
      runtime: this.runtime,
      // As src/node/node.ts: only the voters' authenticated addresses may speak SWIM.
      ...(options.voters !== undefined ? { senders: new Set(options.voters) } : {}),
      onEvent: (event) => {
        // src/node/node.ts releases the transport's queue to a peer membership holds gone.
        if (event.type === "member-dead" || event.type === "member-left") {
          transport.forgetPeer(event.address);
        }
        onEvent?.(event);
      },
    });
    this.membership.start();
  }

  get core(): SwimCore {
    return this.membership.core;
  }

  get stalled(): boolean {
    return this.gate.stalled;
  }

  /** Blocks the node's event loop for `durationMs` (extends a stall already running). */
  stall(durationMs: number): void {
    this.gate.stall(durationMs);
  }

  /**
   * Kills the node at once: no leave, its pending timers and deferred work are dropped and its
   * address detached (datagrams to it vanish). The address may be reused at once.
   */
  crash(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.gate.halt();
    this.#simRuntime.halt();
    // Detach now, not after the transport's close drains: a restart on the same address
    // attaches its own socket right after this returns.
    this.#socket.close();
    this.membership.close();
    this.#closing = this.transport.close();
    return this.#closing;
  }

  /** SIGTERM: leave gracefully (linger in the node's time), then close the transport. */
  async leave(lingerMs?: number): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    await this.membership.leave(lingerMs);
    return this.crash();
  }
}
