/**
 * N complete node stacks (`SimNodeStack`: real transport adapter + membership service) on one
 * seeded network, run in virtual time with `SimScheduler.runUntilAsync`, so the shells' promises
 * and microtasks run between events and a seed replays exactly. Faults: ingress loss (all nodes
 * or one), duplication, partitions (on `network`), crashes and restarts, graceful leaves, and
 * event-loop stalls of single nodes.
 *
 * Owns the simulated nodes' lifecycles and the event log. It never reads the wall clock or
 * `Math.random`: a run is a pure function of its seed and the calls made on it.
 */

import type { MembershipConfig } from "../config/membership.ts";
import type { TransportConfig } from "../config/transport.ts";
import { type Rng, Sfc32 } from "../lib/rng.ts";
import type { SwimCore } from "../membership/swim_core.ts";
import { SimNetwork } from "./network.ts";
import { SimScheduler } from "./scheduler.ts";
import { SimNodeStack } from "./sim_node_stack.ts";
import type { LoggedEvent } from "./swim_cluster.ts";

export type { LoggedEvent } from "./swim_cluster.ts";

export interface SimStackClusterOptions {
  seed: number;
  nodes: number;
  /** Ingress loss on every node (`network.setIngressLoss` sets one node's). @default 0 */
  lossProbability?: number;
  /** @default 0 */
  duplicateProbability?: number;
  membership?: Partial<MembershipConfig>;
  transport?: Partial<TransportConfig>;
  /** Nodes whose addresses every node uses as seeds. @default 3 */
  seedNodes?: number;
  /** Start every node at time 0. @default true */
  startAll?: boolean;
  /** Cluster key of every node. @default a fixed test key */
  clusterKey?: string;
}

interface NodeSlot {
  nodeId: string;
  address: string;
  stack: SimNodeStack | undefined;
  lives: number;
}

export class SimStackCluster {
  readonly scheduler = new SimScheduler();
  readonly network: SimNetwork<Uint8Array>;
  readonly seed: number;
  readonly events: LoggedEvent[] = [];
  /** Called for every member event as it happens. */
  onEvent: ((event: LoggedEvent) => void) | undefined;
  readonly #rng: Rng;
  readonly #options: SimStackClusterOptions;
  readonly #slots = new Map<string, NodeSlot>();
  readonly #seeds: string[];
  readonly #closing: Promise<void>[] = [];

  constructor(options: SimStackClusterOptions) {
    this.seed = options.seed;
    this.#options = options;
    this.#rng = new Sfc32(options.seed);
    this.network = new SimNetwork<Uint8Array>(this.scheduler, this.#rng.fork(), {
      lossProbability: options.lossProbability ?? 0,
      duplicateProbability: options.duplicateProbability ?? 0,
    });
    for (let i = 1; i <= options.nodes; i++) {
      const nodeId = `n${i}`;
      this.#slots.set(nodeId, {
        nodeId,
        address: `10.0.${Math.floor(i / 256)}.${i % 256}:7946`,
        stack: undefined,
        lives: 0,
      });
    }
    this.#seeds = [...this.#slots.values()].slice(0, options.seedNodes ?? 3).map((n) => n.address);
    if (options.startAll ?? true) { for (const id of this.#slots.keys()) this.start(id); }
  }

  get nowMs(): number {
    return this.scheduler.nowMs;
  }

  nodeIds(): string[] {
    return [...this.#slots.keys()];
  }

  upNodeIds(): string[] {
    return [...this.#slots.values()].filter((n) => n.stack !== undefined).map((n) => n.nodeId);
  }

  isUp(nodeId: string): boolean {
    return this.#slot(nodeId).stack !== undefined;
  }

  address(nodeId: string): string {
    return this.#slot(nodeId).address;
  }

  /** The running stack of `nodeId` (throws if it is down). */
  stack(nodeId: string): SimNodeStack {
    const stack = this.#slot(nodeId).stack;
    if (stack === undefined) throw new Error(`${nodeId} is down`);
    return stack;
  }

  core(nodeId: string): SwimCore {
    return this.stack(nodeId).core;
  }

  /** Starts (or restarts) `nodeId` as a new process would, on the same address. */
  start(nodeId: string, incarnation?: number): void {
    const slot = this.#slot(nodeId);
    if (slot.stack !== undefined) throw new Error(`${nodeId} is already up`);
    slot.lives++;
    const stack: SimNodeStack = new SimNodeStack({
      nodeId,
      address: slot.address,
      seeds: this.#seeds,
      scheduler: this.scheduler,
      network: this.network,
      clusterKey: this.#options.clusterKey ?? "sim-stack-cluster-key-0123456789",
      rng: this.#rng.fork(),
      ...(incarnation !== undefined ? { incarnation } : {}),
      ...(this.#options.membership !== undefined ? { membership: this.#options.membership } : {}),
      ...(this.#options.transport !== undefined ? { transport: this.#options.transport } : {}),
      onEvent: (event) => {
        const logged: LoggedEvent = { ...event, atMs: this.nowMs, observer: nodeId };
        this.events.push(logged);
        this.onEvent?.(logged);
      },
    });
    slot.stack = stack;
  }

  /** Kills `nodeId` at once: no leave, datagrams to it vanish. */
  crash(nodeId: string): void {
    const slot = this.#slot(nodeId);
    const stack = slot.stack;
    if (stack === undefined) return;
    slot.stack = undefined;
    this.#closing.push(stack.crash());
  }

  /** SIGTERM: leaves gracefully; the node is down once its linger is over. */
  leave(nodeId: string, lingerMs?: number): void {
    const slot = this.#slot(nodeId);
    const stack = slot.stack;
    if (stack === undefined) return;
    this.#closing.push(
      stack.leave(lingerMs).then(() => {
        if (slot.stack === stack) slot.stack = undefined;
      }),
    );
  }

  /** Blocks `nodeId`'s event loop for `durationMs`. */
  stall(nodeId: string, durationMs: number): void {
    this.stack(nodeId).stall(durationMs);
  }

  async runFor(ms: number): Promise<void> {
    await this.scheduler.runUntilAsync(this.nowMs + ms);
  }

  /** Runs until `done()` or `limitMs` more virtual ms pass; returns whether `done()` held. */
  async runUntil(done: () => boolean, limitMs: number): Promise<boolean> {
    return await this.scheduler.runUntilAsync(this.nowMs + limitMs, done);
  }

  /** Every up node holds `nodeId` dead (or left). */
  allSeeDead(nodeId: string): boolean {
    return this.upNodeIds().every((id) => id === nodeId || this.core(id).isDead(nodeId));
  }

  /** Every up node holds every up node alive (not suspect, not dead). */
  converged(): boolean {
    const up = this.upNodeIds();
    return up.every((observer) =>
      up.every((id) => this.core(observer).member(id)?.state === "alive")
    );
  }

  /** Crashes every node and waits for their transports to close. */
  async close(): Promise<void> {
    for (const id of this.upNodeIds()) this.crash(id);
    await Promise.all(this.#closing);
  }

  #slot(nodeId: string): NodeSlot {
    const slot = this.#slots.get(nodeId);
    if (slot === undefined) throw new Error(`no node ${nodeId}`);
    return slot;
  }
}
