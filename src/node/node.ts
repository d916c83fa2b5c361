/**
 * A hookd node process: owns the pieces that make one cluster member (today the transport and
 * the membership service; later issues add the WAL, replication and the HTTP API here) and
 * their start and stop order.
 *
 * Owns lifecycles only. Flag parsing is src/cli/node.ts; protocols live in their own areas.
 */

import {
  MEMBERSHIP_PACKET_BYTES_MIN,
  type MembershipConfig,
  membershipDefaults,
  type TransportConfig,
} from "../config.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import { randomRng } from "../lib/rng.ts";
import { canonicalAddress, UdpTransport } from "../transport/mod.ts";
import { MembershipService } from "../membership/membership_service.ts";
import { type MemberEvent, SwimCore } from "../membership/swim_core.ts";

export interface NodeOptions {
  nodeId: string;
  /** UDP `host:port` to bind; also the address peers reach this node at. */
  listen: string;
  /** Seed addresses (any subset of the cluster). */
  peers: readonly string[];
  clusterKey: string;
  /** Ingress loss injection, passed to the transport. @default 0 */
  lossProbability?: number;
  lossSeed?: number;
  transport?: Partial<TransportConfig>;
  membership?: Partial<MembershipConfig>;
  onMemberEvent?: (event: MemberEvent) => void;
}

export class Node {
  readonly nodeId: string;
  readonly metrics: MetricsRegistry;
  readonly transport: UdpTransport;
  readonly membership: MembershipService;
  #stopped = false;

  private constructor(options: NodeOptions, transport: UdpTransport, metrics: MetricsRegistry) {
    this.nodeId = options.nodeId;
    this.metrics = metrics;
    this.transport = transport;
    const seeds = options.peers.map((p) => {
      const canonical = canonicalAddress(p);
      if (canonical === undefined) throw new RangeError(`peers: bad address ${JSON.stringify(p)}`);
      return canonical;
    });
    // Membership packets ride one unreliable transport message each, so they may be no larger
    // than what the transport's datagram size leaves after its header, acks and MAC.
    const packetRoomBytes = transport.endpoint.unreliableBytesMax;
    const packetBytesMax = Math.min(
      options.membership?.packetBytesMax ?? membershipDefaults.packetBytesMax,
      packetRoomBytes,
    );
    if (packetBytesMax < MEMBERSHIP_PACKET_BYTES_MIN) {
      throw new RangeError(
        `transport.datagramBytes ${transport.endpoint.config.datagramBytes} leaves ${packetRoomBytes} bytes ` +
          `for membership packets, which need at least ${MEMBERSHIP_PACKET_BYTES_MIN}`,
      );
    }
    const core = new SwimCore({
      nodeId: options.nodeId,
      address: transport.address,
      seeds,
      rng: randomRng(),
      nowMs: performance.now(),
      // A restarted process must outrank its previous life at once: wall-clock seconds grow
      // across restarts (a refutation still fixes it if the clock went backwards).
      incarnation: Math.floor(Date.now() / 1000),
      metrics,
      config: { ...options.membership, packetBytesMax },
    });
    const onMemberEvent = options.onMemberEvent;
    this.membership = new MembershipService({
      core,
      transport,
      metrics,
      onEvent: (event) => {
        // The transport retransmits to a silent peer for as long as it holds messages for it;
        // membership is what knows the peer is gone, so it releases them here. A node declared
        // dead by mistake loses nothing that matters: it refutes, and its next session starts
        // under a fresh epoch.
        if (event.type === "member-dead" || event.type === "member-left") {
          transport.forgetPeer(event.address);
        }
        onMemberEvent?.(event);
      },
    });
  }

  /** Binds the socket and joins the cluster through `peers`. */
  static start(options: NodeOptions): Node {
    const metrics = new MetricsRegistry();
    const transport = UdpTransport.start({
      nodeId: options.nodeId,
      listen: options.listen,
      clusterKey: options.clusterKey,
      metrics,
      lossProbability: options.lossProbability ?? 0,
      ...(options.lossSeed !== undefined ? { lossSeed: options.lossSeed } : {}),
      ...(options.transport !== undefined ? { config: options.transport } : {}),
    });
    let node: Node;
    try {
      node = new Node(options, transport, metrics);
    } catch (error) {
      void transport.close();
      throw error;
    }
    node.membership.start();
    return node;
  }

  get address(): string {
    return this.transport.address;
  }

  /** Leaves the cluster gracefully (others learn at once), then closes the transport. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.membership.leave();
    await this.transport.close();
  }
}
