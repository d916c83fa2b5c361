/**
 * Runs N bare SWIM cores over the seeded simulator (`SimScheduler` + `SimNetwork<Uint8Array>`),
 * with no transport between them: every message is encoded to bytes, so the codec is exercised
 * on every hop, and a node costs little, so hundreds of them run in seconds. Used by the
 * membership simulation tests and `hookd bench membership`. The same cores inside complete node
 * stacks (the real transport adapter and membership service, with event-loop stalls) run in
 * sim_stack_cluster.ts.
 *
 * Owns the simulated nodes (their cores, addresses and wake-up timers) and the event log. It
 * never reads the wall clock or `Math.random`: a run is a pure function of its seed.
 */

import type { MembershipConfig } from "../config/membership.ts";
import { type Rng, Sfc32 } from "../lib/rng.ts";
import { SimNetwork } from "./network.ts";
import { SimScheduler, type TimerHandle } from "./scheduler.ts";
import { type MemberEvent, SwimCore, type SwimInput } from "../membership/swim_core.ts";

export interface SimClusterOptions {
  seed: number;
  /** Nodes created (and started unless `startAll` is false). */
  nodes: number;
  /** Ingress loss on every node. @default 0 */
  lossProbability?: number;
  config?: Partial<MembershipConfig>;
  /** Nodes whose addresses every node uses as seeds. @default 3 */
  seedNodes?: number;
  /** Start every node at time 0. @default true */
  startAll?: boolean;
}

export interface LoggedEvent extends MemberEvent {
  atMs: number;
  /** The node that observed the change. */
  observer: string;
}

interface SimNode {
  nodeId: string;
  address: string;
  core: SwimCore | undefined;
  timer: TimerHandle | undefined;
  wakeAtMs: number;
  lives: number;
  /** Packets this node sent, all lives. */
  sent: number;
}

export class SimCluster {
  readonly scheduler = new SimScheduler();
  readonly network: SimNetwork<Uint8Array>;
  readonly seed: number;
  readonly events: LoggedEvent[] = [];
  /** Called for every member event as it happens. */
  onEvent: ((event: LoggedEvent) => void) | undefined;
  readonly #rng: Rng;
  readonly #config: Partial<MembershipConfig>;
  readonly #nodes = new Map<string, SimNode>();
  readonly #seeds: string[];

  constructor(options: SimClusterOptions) {
    this.seed = options.seed;
    this.#rng = new Sfc32(options.seed);
    this.#config = options.config ?? {};
    this.network = new SimNetwork<Uint8Array>(this.scheduler, this.#rng.fork(), {
      lossProbability: options.lossProbability ?? 0,
    });
    for (let i = 1; i <= options.nodes; i++) {
      const nodeId = `n${i}`;
      this.#nodes.set(nodeId, {
        nodeId,
        address: `10.0.${Math.floor(i / 256)}.${i % 256}:7946`,
        core: undefined,
        timer: undefined,
        wakeAtMs: Infinity,
        lives: 0,
        sent: 0,
      });
    }
    this.#seeds = [...this.#nodes.values()].slice(0, options.seedNodes ?? 3).map((n) => n.address);
    if (options.startAll ?? true) { for (const id of this.#nodes.keys()) this.start(id); }
  }

  get nowMs(): number {
    return this.scheduler.nowMs;
  }

  nodeIds(): string[] {
    return [...this.#nodes.keys()];
  }

  upNodeIds(): string[] {
    return [...this.#nodes.values()].filter((n) => n.core !== undefined).map((n) => n.nodeId);
  }

  isUp(nodeId: string): boolean {
    return this.#node(nodeId).core !== undefined;
  }

  address(nodeId: string): string {
    return this.#node(nodeId).address;
  }

  /** Packets `nodeId` has sent so far (every life, lost ones included). */
  packetsSent(nodeId: string): number {
    return this.#node(nodeId).sent;
  }

  /** The running core of `nodeId` (throws if it is down). */
  core(nodeId: string): SwimCore {
    const core = this.#node(nodeId).core;
    if (core === undefined) throw new Error(`${nodeId} is down`);
    return core;
  }

  /** Starts (or restarts) `nodeId` with a fresh core, as a new process would. */
  start(nodeId: string, incarnation = 0): void {
    const node = this.#node(nodeId);
    if (node.core !== undefined) throw new Error(`${nodeId} is already up`);
    node.lives++;
    node.core = new SwimCore({
      nodeId,
      address: node.address,
      seeds: this.#seeds,
      config: this.#config,
      rng: this.#rng.fork(),
      nowMs: this.nowMs,
      incarnation,
    });
    const core = node.core;
    this.network.attach(node.address, (from, bytes) => {
      if (node.core === core) this.#drive(node, { type: "packet", fromAddress: from, bytes });
    });
    this.#drive(node, { type: "tick" });
  }

  /** Kills `nodeId` at once: no leave, packets to it vanish. */
  crash(nodeId: string): void {
    const node = this.#node(nodeId);
    node.timer?.cancel();
    node.timer = undefined;
    node.wakeAtMs = Infinity;
    node.core = undefined;
    this.network.detach(node.address);
  }

  /** Graceful leave; the node keeps answering until `crash` (its process exit) is called. */
  leave(nodeId: string): void {
    const node = this.#node(nodeId);
    if (node.core !== undefined) this.#drive(node, { type: "leave" });
  }

  runFor(ms: number): void {
    this.scheduler.runUntil(this.nowMs + ms);
  }

  /** Runs until `done()` or `limitMs` more virtual ms pass; returns whether `done()` held. */
  runUntil(done: () => boolean, limitMs: number): boolean {
    const limit = this.nowMs + limitMs;
    const held = this.scheduler.runWhile(() => !done(), limit);
    if (!held) this.scheduler.runUntil(limit);
    return held || done();
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

  #node(nodeId: string): SimNode {
    const node = this.#nodes.get(nodeId);
    if (node === undefined) throw new Error(`no node ${nodeId}`);
    return node;
  }

  #drive(node: SimNode, input: SwimInput): void {
    const core = node.core;
    if (core === undefined) return;
    const now = this.nowMs;
    for (const out of core.step(now, input)) {
      if (out.type === "send") {
        node.sent++;
        this.network.send(node.address, out.toAddress, out.bytes);
      } else {
        const logged: LoggedEvent = { ...out.event, atMs: now, observer: node.nodeId };
        this.events.push(logged);
        this.onEvent?.(logged);
      }
    }
    if (node.core !== core) return;
    const wake = core.nextWakeMs();
    // A pending wake-up that is no later is kept: an early tick finds nothing due and re-arms.
    if (node.timer !== undefined && node.wakeAtMs <= wake) return;
    node.timer?.cancel();
    node.wakeAtMs = wake;
    node.timer = this.scheduler.at(wake, () => {
      node.timer = undefined;
      node.wakeAtMs = Infinity;
      this.#drive(node, { type: "tick" });
    });
  }
}
