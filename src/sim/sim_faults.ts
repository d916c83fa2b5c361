/**
 * The fault schedule of a whole-cluster simulation run: drawn from the run's fault generator
 * before it starts, it crashes nodes (at once, during their next fsync, or right after their
 * next acknowledgement) and restarts them, partitions the network (both ways and one way),
 * makes one node's ingress lossy, stalls event loops, takes the receiver down and fails disks;
 * after the chaos, `heal()` ends every fault and restarts the nodes not meant to stay down.
 *
 * Owns the faults and their counts. Starting and crashing a node life is the driver's
 * (cluster_sim.ts), reached through `FaultHost`; the faults only talk to nodes as a network,
 * a disk, a receiver and an operator would. Draws only from the generator it is given, in the
 * order the schedule fixes: a change here changes every trace.
 */

import type { Rng } from "../lib/rng.ts";
import type { DiskFault } from "./disk.ts";
import type { SimNetwork } from "./network.ts";
import type { SimScheduler } from "./scheduler.ts";
import type { StallLog, WalFailureLog } from "./sim_history.ts";
import type { SimNodeStack } from "./sim_node_stack.ts";
import type { ReceiverMode, SimReceiver } from "./sim_receiver.ts";
import { SIM_NODES, type SimProfile } from "./sim_profile.ts";
import type { Slot } from "./sim_slot.ts";

/** Faults injected and nodes crashed and restarted in a run, by kind. */
export interface FaultStats {
  crashes: number;
  restarts: number;
  partitions: number;
  oneWayCuts: number;
  stalls: number;
  receiverOutages: number;
  lossyNodes: number;
  diskFaults: number;
}

/** What the faults need of the cluster around them. */
export interface FaultHost {
  readonly scheduler: SimScheduler;
  readonly network: SimNetwork<Uint8Array>;
  readonly receiver: SimReceiver;
  readonly profile: SimProfile;
  /** The fault generator (node crashes tear disks with it too). */
  readonly rng: Rng;
  /** Virtual ms of faults before the heal. */
  readonly chaosMs: number;
  /** The cluster's nodes, in address order. */
  readonly slots: readonly Slot[];
  readonly stallLog: StallLog[];
  readonly walFailures: WalFailureLog[];
  readonly violations: string[];
  trace(line: string): void;
  /** Ends `slot`'s life (a no-op while it is down). */
  crash(slot: Slot): void;
  /** Starts `slot`'s next life on its disk. */
  start(slot: Slot): void;
}

export class SimFaults {
  readonly stats: FaultStats = {
    crashes: 0,
    restarts: 0,
    partitions: 0,
    oneWayCuts: 0,
    stalls: 0,
    receiverOutages: 0,
    lossyNodes: 0,
    diskFaults: 0,
  };
  readonly #host: FaultHost;
  readonly #scheduler: SimScheduler;
  readonly #network: SimNetwork<Uint8Array>;
  readonly #receiver: SimReceiver;
  readonly #profile: SimProfile;
  readonly #rng: Rng;
  readonly #chaosMs: number;
  readonly #slots: readonly Slot[];
  readonly #stallLog: StallLog[];
  readonly #walFailures: WalFailureLog[];
  readonly #violations: string[];
  /** Fault state re-applied to the network on every change. */
  #partition: { side: string[]; untilMs: number } | undefined;
  #oneWay: Array<{ from: string; to: string; untilMs: number }> = [];
  #healed = false;

  constructor(host: FaultHost) {
    this.#host = host;
    this.#scheduler = host.scheduler;
    this.#network = host.network;
    this.#receiver = host.receiver;
    this.#profile = host.profile;
    this.#rng = host.rng;
    this.#chaosMs = host.chaosMs;
    this.#slots = host.slots;
    this.#stallLog = host.stallLog;
    this.#walFailures = host.walFailures;
    this.#violations = host.violations;
  }

  #applyNetworkFaults(): void {
    this.#network.heal();
    const now = this.#scheduler.nowMs;
    if (this.#partition !== undefined && this.#partition.untilMs > now) {
      this.#network.partition(this.#partition.side);
    } else {
      this.#partition = undefined;
    }
    this.#oneWay = this.#oneWay.filter((c) => c.untilMs > now);
    for (const c of this.#oneWay) this.#network.cutOneWay(c.from, c.to);
  }

  schedule(): void {
    const rng = this.#rng;
    const exp = (mean: number) => -Math.log(1 - rng.next()) * mean;
    for (let t = 2_000 + exp(this.#profile.faultIntervalMs); t < this.#chaosMs;) {
      const roll = rng.next();
      const durationMs = 500 + rng.next() * 9_500;
      const a = rng.int(SIM_NODES);
      const b = (a + 1 + rng.int(SIM_NODES - 1)) % SIM_NODES;
      const arg = rng.next();
      this.#scheduler.at(t, () => this.#fault(roll, durationMs, a, b, arg));
      t += exp(this.#profile.faultIntervalMs);
    }
  }

  #fault(roll: number, durationMs: number, a: number, b: number, arg: number): void {
    if (this.#healed) return;
    const now = this.#scheduler.nowMs;
    const slotA = this.#slots[a]!;
    const slotB = this.#slots[b]!;
    if (roll < 0.25) {
      // Crash a node (at most two down at once); it restarts after a while. Half the crashes
      // wait for the node's next fsync and strike while it runs: what the node was making
      // durable (its own records, already sent to its peers) is lost.
      if (
        slotA.stack === undefined || this.#downCount() >= 2 || slotA.syncTrap !== undefined ||
        slotA.ackTrap !== undefined
      ) {
        return;
      }
      const downMs = 300 + arg * 15_000;
      if (durationMs < 5_250) this.#crashAndRestart(slotA, downMs);
      else if (durationMs < 7_625) slotA.syncTrap = { downMs, untilMs: now + 2_000 };
      else slotA.ackTrap = { downMs, untilMs: now + 2_000 };
    } else if (roll < 0.4) {
      if (this.#partition !== undefined) return;
      const side = arg < 0.5 ? [slotA.address] : [slotA.address, slotB.address];
      this.#partition = { side, untilMs: now + durationMs };
      this.stats.partitions++;
      this.#host.trace(`partition ${side.join(",")} for ${durationMs.toFixed(0)} ms`);
      this.#applyNetworkFaults();
      this.#scheduler.at(now + durationMs, () => this.#applyNetworkFaults());
    } else if (roll < 0.55) {
      this.#oneWay.push({ from: slotA.address, to: slotB.address, untilMs: now + durationMs });
      if (arg < 0.3) {
        // A node that hears nobody: every link into it is cut.
        for (const other of this.#slots) {
          if (other === slotA) continue;
          this.#oneWay.push({ from: other.address, to: slotA.address, untilMs: now + durationMs });
        }
      }
      this.stats.oneWayCuts++;
      this.#host.trace(
        `one-way ${slotA.nodeId}>${slotB.nodeId}${arg < 0.3 ? ` and all>${slotA.nodeId}` : ""}` +
          ` for ${durationMs.toFixed(0)} ms`,
      );
      this.#applyNetworkFaults();
      this.#scheduler.at(now + durationMs, () => this.#applyNetworkFaults());
    } else if (roll < 0.72) {
      const stack = slotA.stack;
      if (stack === undefined) return;
      const stallMs = arg < 0.8 ? 50 + arg * 1_000 : 1_000 + durationMs / 3;
      stack.stall(stallMs);
      this.stats.stalls++;
      this.#stallLog.push({ node: slotA.nodeId, fromMs: now, toMs: now + stallMs });
      this.#host.trace(`stall ${slotA.nodeId} for ${stallMs.toFixed(0)} ms`);
    } else if (roll < 0.83) {
      const modes: ReceiverMode[] = ["error", "unavailable", "slow", "refuse"];
      const mode = modes[Math.floor(arg * modes.length)]!;
      this.#receiver.mode = mode;
      this.stats.receiverOutages++;
      this.#host.trace(`receiver ${mode} for ${durationMs.toFixed(0)} ms`);
      this.#scheduler.at(now + durationMs, () => {
        if (this.#receiver.mode === mode) this.#receiver.mode = "ok";
      });
    } else if (roll < 0.88) {
      // The node's disk fails its next write or fsync (or fills up): the WAL fails, the node
      // must acknowledge nothing more (fail-stop) and, as hookd node does, leave the cluster.
      if (slotA.store === undefined || slotA.diskFault !== undefined) return;
      if (this.#downCount() >= 2) return;
      const kinds: DiskFault[] = ["sync", "write", "full"];
      const kind = kinds[Math.floor(arg * kinds.length)]!;
      slotA.disk.injectFault(kind, Math.floor(durationMs / 2_500));
      slotA.diskFault = "armed";
      this.stats.diskFaults++;
      this.#host.trace(`disk fault ${kind} on ${slotA.nodeId}/${slotA.life}`);
    } else {
      // One node's ingress turns lossy (up to 20 %) for a while.
      const loss = 0.05 + arg * 0.15;
      this.#network.setIngressLoss(slotA.address, loss);
      this.stats.lossyNodes++;
      this.#host.trace(`lossy ${slotA.nodeId} ${loss.toFixed(2)} for ${durationMs.toFixed(0)} ms`);
      this.#scheduler.at(
        now + durationMs,
        () => this.#network.setIngressLoss(slotA.address, this.#profile.lossProbability),
      );
    }
  }

  /** Nodes down, or up with a failed WAL (they left the cluster). */
  #downCount(): number {
    return this.#slots.filter((s) => s.stack === undefined || s.diskFault === "failed").length;
  }

  /** The WAL of `slot`'s life failed: fail-stop, leave (as hookd node does), restart later. */
  walFailed(slot: Slot, life: number, stack: SimNodeStack, fields: Record<string, unknown>): void {
    if (slot.life !== life) return;
    if (slot.diskFault !== "armed") {
      this.#violations.push(
        `${slot.nodeId}/${life}: WAL failed unprovoked: ${JSON.stringify(fields)}`,
      );
      return;
    }
    slot.diskFault = "failed";
    this.#walFailures.push({ node: slot.nodeId, life, atMs: this.#scheduler.nowMs });
    void stack.membership.leave();
    // An operator restarts it a while later (also after the heal: a fault armed before the
    // heal may strike after it).
    this.#scheduler.at(this.#scheduler.nowMs + 1_000 + this.#rng.next() * 7_000, () => {
      if (slot.life !== life || slot.stack === undefined) return;
      this.stats.restarts++;
      this.#host.crash(slot);
      this.#host.start(slot);
    });
  }

  #crashAndRestart(slot: Slot, downMs: number): void {
    this.#host.crash(slot);
    this.#scheduler.at(this.#scheduler.nowMs + downMs, () => {
      if (slot.stack === undefined && !this.#healed) {
        this.stats.restarts++;
        this.#host.start(slot);
      }
    });
  }

  /** The node of `slot` starts an fsync: crash it now if a fault is waiting for that. */
  springSyncTrap(slot: Slot, life: number): void {
    const trap = slot.syncTrap;
    if (trap === undefined || slot.life !== life || slot.stack === undefined) return;
    slot.syncTrap = undefined;
    if (this.#healed || this.#scheduler.nowMs > trap.untilMs) return;
    if (this.#downCount() >= 2) return;
    // Not inside the WAL's call: the crash is the next event, before the fsync completes.
    this.#scheduler.after(0, () => {
      if (slot.life !== life || slot.stack === undefined) return;
      this.#host.trace(`crash during an fsync of ${slot.nodeId}/${life}`);
      this.#crashAndRestart(slot, trap.downMs);
    });
  }

  /** `slot`'s node acknowledged a new job: crash it now if a fault is waiting for that. */
  springAckTrap(slot: Slot, life: number): void {
    const trap = slot.ackTrap;
    if (trap === undefined || slot.life !== life || slot.stack === undefined) return;
    slot.ackTrap = undefined;
    if (this.#healed || this.#scheduler.nowMs > trap.untilMs) return;
    if (this.#downCount() >= 2) return;
    this.#scheduler.after(0, () => {
      if (slot.life !== life || slot.stack === undefined) return;
      this.#host.trace(`crash right after an acknowledgement by ${slot.nodeId}/${life}`);
      this.#crashAndRestart(slot, trap.downMs);
    });
  }

  /** Ends every fault; restarts the nodes that are down, except those meant to stay down. */
  heal(): void {
    this.#healed = true;
    this.#partition = undefined;
    this.#oneWay = [];
    this.#network.heal();
    for (const s of this.#slots) {
      this.#network.setIngressLoss(s.address, this.#profile.lossProbability);
    }
    this.#receiver.mode = "ok";
    for (const s of this.#slots) if (s.diskFault === "failed") this.#host.crash(s);
    const down = this.#slots.filter((s) => s.stack === undefined);
    const stayDown = this.#profile.downAfterHeal;
    // Keep `stayDown` nodes down: those already down first, else crash some now.
    for (const s of down.slice(0, stayDown)) s.permanent = true;
    let more = stayDown - down.length;
    for (const s of this.#slots) {
      if (more <= 0) break;
      if (s.stack !== undefined) {
        this.#host.crash(s);
        s.permanent = true;
        more--;
      }
    }
    for (const s of this.#slots) {
      if (s.stack === undefined && !s.permanent) {
        this.stats.restarts++;
        this.#host.start(s);
      }
    }
    this.#host.trace(
      `heal; down for good: ${this.#slots.filter((s) => s.permanent).map((s) => s.nodeId)}`,
    );
  }
}
