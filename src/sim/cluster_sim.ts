/**
 * The whole-cluster deterministic simulation (VOPR-style): five complete hookd node stacks in
 * virtual time under one seed. Each node is a `SimNodeStack` (the real `UdpTransport` on a
 * simulated socket, the real `MembershipService` around a `SwimCore`, stalls through its gate)
 * with a real `JobStore` on top: the real WAL on the node's own `SimDisk` (fsyncs take seeded
 * virtual time; a crash loses what was not synced), replication, ownership, catch-up, and the
 * real delivery engine attempting against a simulated receiver (sim_receiver.ts). A seeded
 * workload submits to random live nodes; a seeded fault schedule crashes and restarts nodes,
 * partitions the network (both ways and one way), loses, duplicates and reorders packets,
 * stalls event loops, skews wall clocks and takes the receiver down. Then the cluster heals
 * and drains, and cluster_sim_checker.ts judges the recorded history.
 *
 * Owns the simulated nodes' lives (start, crash, restart on the same disk), the fault
 * schedule, the workload, the record of what happened, and the trace hash that proves a
 * replay is exact. Must not reach into a node's state to help it: the checker may read
 * tables and disks, the harness only talks to nodes as a client, a network and a disk would.
 * Never reads the wall clock or `Math.random`: a run is a pure function of its options.
 */

import {
  type DeliveryConfig,
  deliveryDefaults,
  type JobsConfig,
  jobsDefaults,
  type TransportConfig,
  type WalConfig,
} from "../config.ts";
import { type Rng, Sfc32 } from "../lib/rng.ts";
import type { Runtime } from "../lib/runtime.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import type { MemberEvent } from "../membership/swim_core.ts";
import { JobStore, type MemberRow } from "../jobs/job_store.ts";
import { submitBodyHash } from "../jobs/replication_core.ts";
import type { SubmitOutcome, SubmitRequest } from "../jobs/service.ts";
import type { JobPhase } from "../jobs/job_model.ts";
import type { WalFile, WalFs } from "../wal/wal_fs.ts";
import { type DiskFault, SimDisk } from "./disk.ts";
import { DurabilityProbe } from "./durability_probe.ts";
import { SimNetwork } from "./network.ts";
import { SimScheduler } from "./scheduler.ts";
import { SimNodeStack } from "./sim_node_stack.ts";
import { type ReceiverMode, SimReceiver } from "./sim_receiver.ts";
import { type CheckResult, checkRun, type OwnershipSplit } from "./cluster_sim_checker.ts";

export const SIM_NODES = 5;
const CLUSTER_KEY = "cluster-sim-key-0123456789abcdef";
const DATA_DIR = "/var/lib/hookd";
/**
 * Events one virtual second may take before the run counts as a livelock (a timer re-armed at
 * the instant it fires). A busy second of this simulation runs a few thousand.
 */
const EVENTS_PER_VIRTUAL_SECOND_MAX = 1_000_000;

/**
 * Delivery settings of the simulated nodes: the real defaults' shape with short times, so a
 * job's whole retry schedule fits in simulated seconds. Relations the validator checks hold.
 */
export const SIM_DELIVERY: Readonly<DeliveryConfig> = Object.freeze({
  ...deliveryDefaults,
  retryScheduleMs: Object.freeze([100, 300, 1_000, 2_000, 4_000]),
  attemptTimeoutMs: 1_000,
  attemptTimeoutMaxMs: 5_000,
  // A 503's Retry-After (1-2 s here) is honoured but cannot park a job past the drain.
  retryAfterMinMs: 100,
  retryAfterMaxMs: 5_000,
  breakerOpenMs: 500,
  breakerOpenMaxMs: 4_000,
  allowPrivateTargets: true,
});

export type SimJobPhase = JobPhase | "absent" | `stub:${JobPhase}` | "uncommitted";

/** The node holds the job dead-lettered (a stub too: the DEAD record came, the SUBMIT not). */
export function isDeadPhase(phase: SimJobPhase): boolean {
  return phase === "dead" || phase === "stub:dead";
}

/** The node holds the job over: delivered or dead. */
export function isFinishedPhase(phase: SimJobPhase): boolean {
  return isDeadPhase(phase) || phase === "delivered" || phase === "stub:delivered";
}

/** What a run varies, drawn from its seed (printed with a failure). */
export interface SimProfile {
  lossProbability: number;
  duplicateProbability: number;
  delayMsMax: number;
  /** Largest wall-clock skew between a node and true time, ms. */
  skewMsMax: number;
  /** Mean time between two faults, ms. */
  faultIntervalMs: number;
  /** Mean time between two submits, ms. */
  submitIntervalMs: number;
  /** Crashes keep a seeded random part of the unsynced bytes and tear it. */
  tornCrashes: boolean;
  /** Nodes left down after the heal (their jobs must be delivered by the others). */
  downAfterHeal: number;
  jobs: Partial<JobsConfig>;
  wal: Partial<WalConfig>;
  /**
   * The transport's per-peer send queue scaled down to the simulated tables (some runs): in
   * production a table of an hour's jobs is far larger than the queue (8 MiB), and a
   * catch-up reply sent whole never got through; the simulated tables are too small to show
   * it at the real size.
   */
  transport: Partial<TransportConfig>;
}

export interface ClusterSimOptions {
  seed: number;
  /** Virtual ms of workload and faults before the heal. @default 30_000 */
  chaosMs?: number;
  /** Longest the healed cluster gets to deliver or dead-letter every job, ms. @default 120_000 */
  drainLimitMs?: number;
  /** Every trace line, as it happens (for `hookd sim --trace`). */
  onTrace?: (line: string) => void;
}

export interface SimStats {
  submits: number;
  acked: number;
  ackedExisting: number;
  refused: Record<string, number>;
  unanswered: number;
  jobsAcked: number;
  delivered: number;
  deadLettered: number;
  attempts: number;
  duplicates: Record<string, number>;
  /** Duplicates per cause split by whether an ownership change preceded them. */
  duplicateOwnership: Record<string, OwnershipSplit>;
  /** The first duplicates no ownership change explains, described. */
  duplicateDetails: string[];
  /** Acknowledged jobs a live node still held uncommitted at the end (garbage). */
  leftoverUncommitted: number;
  /** Acknowledged jobs compacted where they finished yet still pending on a live replica. */
  zombies: number;
  crashes: number;
  restarts: number;
  partitions: number;
  oneWayCuts: number;
  stalls: number;
  receiverOutages: number;
  lossyNodes: number;
  diskFaults: number;
  virtualMs: number;
  drainMs: number;
  events: number;
}

export interface ClusterSimReport {
  readonly seed: number;
  readonly ok: boolean;
  readonly violations: readonly string[];
  readonly profile: SimProfile;
  readonly stats: SimStats;
  /** FNV-1a over every trace line: equal hashes mean the same run. */
  readonly traceHash: string;
}

/** A job body as the client sent it (keyed retries resend the same body). */
export interface BodySpec {
  readonly bodyId: number;
  readonly request: SubmitRequest;
  readonly bodyHash: string;
}

export interface SubmitLog {
  readonly serial: number;
  readonly bodyId: number;
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
  answeredAtMs: number | undefined;
  outcome: SubmitOutcome | undefined;
  /** For acknowledged submits: nodes whose disk held the job at that instant. */
  durableOn: string[];
}

export interface LifeLog {
  readonly node: string;
  readonly life: number;
  readonly startMs: number;
  endMs: number | undefined;
}

/** One membership event as a node's SWIM core reported it (the node's own view changing). */
export interface MemberLog {
  /** The observer: the node whose view changed, and its life. */
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
  readonly type: MemberEvent["type"];
  /** The voter address the event is about. */
  readonly subject: string;
}

export interface StallLog {
  readonly node: string;
  readonly fromMs: number;
  readonly toMs: number;
}

interface Slot {
  readonly nodeId: string;
  readonly address: string;
  readonly disk: SimDisk;
  readonly skewMs: number;
  life: number;
  stack: SimNodeStack | undefined;
  store: JobStore | undefined;
  /** Stays down after the heal. */
  permanent: boolean;
  /** A crash waiting for the node's next fsync (until `untilMs`), then down for `downMs`. */
  syncTrap: { downMs: number; untilMs: number } | undefined;
  /**
   * A crash waiting for the node's next acknowledgement (until `untilMs`), then down for
   * `downMs`: its lazy COMMIT has not left yet, so the job is held uncommitted everywhere
   * and only a confirm round by its next owner makes it deliverable.
   */
  ackTrap: { downMs: number; untilMs: number } | undefined;
  /** An injected disk fault: waiting to strike, or struck (the WAL failed). */
  diskFault: "armed" | "failed" | undefined;
}

/** Draws a run's profile from its seed. */
export function profileFor(seed: number): SimProfile {
  const rng = new Sfc32(seed ^ 0x5eed_c1a5);
  const pick = <T>(items: readonly T[]): T => items[rng.int(items.length)]!;
  const lossRoll = rng.next();
  const lossProbability = lossRoll < 0.2 ? 0 : lossRoll < 0.6 ? rng.next() * 0.05 : 0.05 +
    rng.next() * 0.15;
  const profile: SimProfile = {
    lossProbability: round3(lossProbability),
    duplicateProbability: rng.next() < 0.5 ? 0 : round3(rng.next() * 0.05),
    delayMsMax: round3(0.5 + rng.next() * 4.5),
    skewMsMax: pick([0, 2_000, 30_000]),
    faultIntervalMs: pick([1_500, 3_000, 6_000]),
    submitIntervalMs: pick([25, 60, 150]),
    tornCrashes: rng.next() < 0.5,
    downAfterHeal: pick([0, 0, 0, 1, 1, 2]),
    jobs: {
      checkpointBytes: pick([16 * 1024, 64 * 1024, jobsDefaults.checkpointBytes]),
      catchupLogBytesMax: pick([16 * 1024, jobsDefaults.catchupLogBytesMax]),
      messageBytesMax: pick([4 * 1024, jobsDefaults.messageBytesMax]),
      finishedRetentionMs: pick([5_000, 20_000, jobsDefaults.finishedRetentionMs]),
    },
    wal: pick([
      {},
      { segmentBytes: 128 * 1024, batchBytesMax: 64 * 1024, recordBytesMax: 32 * 1024 },
    ]),
    transport: {},
  };
  if (rng.next() < 0.25) {
    // Queues scaled to the simulated tables (a few hundred jobs, ~250 bytes of state each),
    // and the catch-up page to an eighth of the queue, as the defaults are.
    profile.transport = {
      sendQueueBytesMax: 96 * 1024,
      messageBytesMax: 48 * 1024,
      reassemblyBytesMax: 96 * 1024,
    };
    profile.jobs = { ...profile.jobs, messageBytesMax: 4 * 1024, syncReplyBytesMax: 12 * 1024 };
  }
  // Some runs shorten the idempotency window to seconds, so the workload's keyed retries,
  // picked among every key so far, also reuse keys after their window (new incarnations, with
  // new ids), some of them across node restarts, always with skewed clocks: key expiry runs
  // on each node's clock. Drawn from a generator of its own, so the other seeds' profiles
  // stay as they were.
  const reuse = new Sfc32(seed ^ 0x1d3a_0017);
  if (reuse.next() < 0.3) {
    profile.jobs = { ...profile.jobs, idempotencyWindowMs: reuse.next() < 0.5 ? 4_000 : 8_000 };
    if (profile.skewMsMax === 0) profile.skewMsMax = 2_000;
  }
  return profile;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** A 64-bit FNV-1a (two 32-bit lanes) over trace lines. */
class TraceHash {
  #a = 0x811c9dc5;
  #b = 0x01000193 ^ 0x9e3779b9;

  add(line: string): void {
    let a = this.#a;
    let b = this.#b;
    for (let i = 0; i < line.length; i++) {
      const c = line.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193) ^ (a >>> 7);
    }
    this.#a = Math.imul(a ^ 10, 0x01000193) >>> 0;
    this.#b = b >>> 0;
  }

  get hex(): string {
    return (this.#a >>> 0).toString(16).padStart(8, "0") +
      (this.#b >>> 0).toString(16).padStart(8, "0");
  }
}

/**
 * The node's disk as its process sees it, with fsyncs that take seeded virtual time on the
 * node's runtime: a crash during one loses what it was making durable, a stall delays it.
 */
function slowSyncFs(
  inner: WalFs,
  runtime: Runtime,
  rng: Rng,
  onSync: () => void,
): WalFs {
  const delayMs = (): number => {
    const u = rng.next();
    if (u < 0.9) return 0.1 + rng.next() * 2;
    if (u < 0.99) return 2 + rng.next() * 20;
    return 20 + rng.next() * 100;
  };
  const wait = (ms: number) => {
    onSync();
    return new Promise<void>((resolve) => runtime.setTimer(ms, resolve));
  };
  return {
    mkdirp: (dir) => inner.mkdirp(dir),
    list: (dir) => inner.list(dir),
    readFile: (path) => inner.readFile(path),
    readRange: (path, offset, lengthBytes) => inner.readRange(path, offset, lengthBytes),
    truncate: (path, lengthBytes) => inner.truncate(path, lengthBytes),
    remove: (path) => inner.remove(path),
    syncDir: async (dir) => {
      await wait(delayMs());
      await inner.syncDir(dir);
    },
    openAppend: async (path, create): Promise<WalFile> => {
      const file = await inner.openAppend(path, create);
      return {
        writeAll: (bytes) => file.writeAll(bytes),
        syncData: async () => {
          await wait(delayMs());
          await file.syncData();
        },
        close: () => file.close(),
      };
    },
  };
}

export class ClusterSim {
  readonly seed: number;
  readonly profile: SimProfile;
  readonly scheduler = new SimScheduler();
  readonly network: SimNetwork<Uint8Array>;
  readonly receiver: SimReceiver;
  readonly probe = new DurabilityProbe();
  readonly bodies: BodySpec[] = [];
  readonly submits: SubmitLog[] = [];
  readonly lives: LifeLog[] = [];
  readonly stallLog: StallLog[] = [];
  /** Every node's membership events: the views from which the checker derives ownership. */
  readonly memberLog: MemberLog[] = [];
  /** When each life's store became ready (caught up after its start): it delivers from then. */
  readonly readyLog: Array<{ node: string; life: number; atMs: number }> = [];
  /** When a node's WAL failed (an injected disk fault): it must acknowledge nothing after. */
  readonly walFailures: Array<{ node: string; life: number; atMs: number }> = [];
  readonly violations: string[] = [];
  readonly #slots: Slot[] = [];
  readonly #rng: Rng;
  readonly #faultRng: Rng;
  readonly #workRng: Rng;
  readonly #chaosMs: number;
  readonly #drainLimitMs: number;
  readonly #trace = new TraceHash();
  readonly #onTrace: ((line: string) => void) | undefined;
  readonly #closing: Promise<void>[] = [];
  readonly #stats = {
    crashes: 0,
    restarts: 0,
    partitions: 0,
    oneWayCuts: 0,
    stalls: 0,
    receiverOutages: 0,
    lossyNodes: 0,
    diskFaults: 0,
  };
  /** Fault state re-applied to the network on every change. */
  #partition: { side: string[]; untilMs: number } | undefined;
  #oneWay: Array<{ from: string; to: string; untilMs: number }> = [];
  #healed = false;
  #drainMs = 0;
  /** Debugging hook: runs after the settle time, before the checks and the shutdown. */
  beforeClose: (() => void) | undefined;

  constructor(options: ClusterSimOptions) {
    this.seed = options.seed;
    this.profile = profileFor(options.seed);
    this.#chaosMs = options.chaosMs ?? 30_000;
    this.#drainLimitMs = options.drainLimitMs ?? 120_000;
    this.#onTrace = options.onTrace;
    this.#rng = new Sfc32(options.seed);
    this.#faultRng = this.#rng.fork();
    this.#workRng = this.#rng.fork();
    this.network = new SimNetwork<Uint8Array>(this.scheduler, this.#rng.fork(), {
      lossProbability: this.profile.lossProbability,
      duplicateProbability: this.profile.duplicateProbability,
      delayMsMin: 0.05,
      delayMsMax: this.profile.delayMsMax,
    });
    this.receiver = new SimReceiver({ scheduler: this.scheduler, rng: this.#rng.fork() });
    this.receiver.onRequest = (r) =>
      this.#traceLine(
        `recv ${r.node}/${r.life} ${r.jobId} a${r.attempt} ${
          r.arrivedAtMs === undefined ? "refused" : r.status
        }`,
      );
    const skewRng = this.#rng.fork();
    for (let i = 1; i <= SIM_NODES; i++) {
      this.#slots.push({
        nodeId: `n${i}`,
        address: `10.0.0.${i}:7946`,
        disk: new SimDisk(),
        skewMs: Math.round((skewRng.next() * 2 - 1) * this.profile.skewMsMax),
        life: 0,
        stack: undefined,
        store: undefined,
        permanent: false,
        syncTrap: undefined,
        ackTrap: undefined,
        diskFault: undefined,
      });
    }
    for (const slot of this.#slots) this.probe.name(slot.disk, slot.nodeId);
  }

  get voters(): string[] {
    return this.#slots.map((s) => s.address);
  }

  nodeIds(): string[] {
    return this.#slots.map((s) => s.nodeId);
  }

  /** The open store of `nodeId`, if the node is up and its store has opened. */
  store(nodeId: string): JobStore | undefined {
    return this.#slot(nodeId).store;
  }

  /** The running stack of `nodeId` (undefined while it is down). */
  stack(nodeId: string): SimNodeStack | undefined {
    return this.#slot(nodeId).stack;
  }

  disk(nodeId: string): SimDisk {
    return this.#slot(nodeId).disk;
  }

  isUp(nodeId: string): boolean {
    return this.#slot(nodeId).stack !== undefined;
  }

  #slot(nodeId: string): Slot {
    const slot = this.#slots.find((s) => s.nodeId === nodeId);
    if (slot === undefined) throw new Error(`no node ${nodeId}`);
    return slot;
  }

  #traceLine(line: string): void {
    const full = `${this.scheduler.nowMs.toFixed(3)} ${line}`;
    this.#trace.add(full);
    this.#onTrace?.(full);
  }

  // -------------------------------------------------------------------------------------------
  // Node lives
  // -------------------------------------------------------------------------------------------

  #start(slot: Slot): void {
    slot.life++;
    const life = slot.life;
    const rng = this.#rng.fork();
    const stack = new SimNodeStack({
      nodeId: slot.nodeId,
      address: slot.address,
      seeds: this.#slots.slice(0, 3).map((s) => s.address),
      voters: this.#slots.map((s) => s.address),
      scheduler: this.scheduler,
      network: this.network,
      clusterKey: CLUSTER_KEY,
      rng: rng.fork(),
      wallSkewMs: slot.skewMs,
      transport: this.profile.transport,
      onEvent: (event: MemberEvent) => {
        this.#traceLine(`member ${slot.nodeId}/${life} ${event.type} ${event.nodeId}`);
        this.memberLog.push({
          node: slot.nodeId,
          life,
          atMs: this.scheduler.nowMs,
          type: event.type,
          subject: event.address,
        });
        if (slot.life === life) slot.store?.membershipChanged();
      },
    });
    if (stack.address !== slot.address) {
      throw new Error(`sim: ${slot.nodeId} got address ${stack.address}, not ${slot.address}`);
    }
    slot.stack = stack;
    this.lives.push({ node: slot.nodeId, life, startMs: this.scheduler.nowMs, endMs: undefined });
    this.#traceLine(`start ${slot.nodeId}/${life}`);
    const runtime = stack.runtime;
    const opening = JobStore.open({
      self: slot.address,
      nodeId: slot.nodeId,
      voters: this.voters,
      dataDir: DATA_DIR,
      fs: slowSyncFs(
        slot.disk.mount(),
        runtime,
        rng.fork(),
        () => this.#springSyncTrap(slot, life),
      ),
      wal: this.profile.wal,
      jobs: this.profile.jobs,
      delivery: SIM_DELIVERY,
      transport: stack.transport,
      members: () => this.#members(slot, stack),
      runtime,
      rng: rng.fork(),
      deliveryRng: rng.fork(),
      metrics: new MetricsRegistry(),
      attemptTransport: this.receiver.transportFor(slot.nodeId, life, runtime),
      onLog: (event, fields) => {
        if (event === "caught-up" || event === "wal-failed" || event === "wal-truncated") {
          this.#traceLine(`log ${slot.nodeId}/${life} ${event} ${JSON.stringify(fields)}`);
        }
        if (event === "caught-up") {
          this.readyLog.push({ node: slot.nodeId, life, atMs: this.scheduler.nowMs });
        }
        if (event === "wal-failed") this.#walFailed(slot, life, stack, fields);
      },
    });
    opening.then(
      (store) => {
        if (slot.life !== life || slot.stack !== stack) {
          store.halt();
          return;
        }
        slot.store = store;
        this.#traceLine(`open ${slot.nodeId}/${life} jobs=${store.core.table.size}`);
      },
      (error: unknown) => {
        if (slot.life !== life) return; // opened by a process that has since crashed
        this.violations.push(
          `${slot.nodeId}/${life}: the job store did not open on its disk: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      },
    );
  }

  /** The membership table as `hookd node` gives it to the store: every voter it knows. */
  #members(slot: Slot, stack: SimNodeStack): MemberRow[] {
    const rows: MemberRow[] = [];
    const seen = new Set<string>();
    for (const m of stack.core.members()) {
      rows.push({
        nodeId: m.nodeId,
        address: m.address,
        state: m.state,
        incarnation: m.incarnation,
      });
      seen.add(m.address);
    }
    // A member reaped after its death is gone from the table but still dead (a tombstone):
    // without this row the store would count an unknown voter as alive and hand it its jobs.
    for (const other of this.#slots) {
      if (other === slot || seen.has(other.address)) continue;
      if (stack.core.isDead(other.nodeId)) {
        rows.push({ nodeId: other.nodeId, address: other.address, state: "dead", incarnation: 0 });
      }
    }
    return rows;
  }

  #crash(slot: Slot): void {
    const stack = slot.stack;
    if (stack === undefined) return;
    this.#stats.crashes++;
    slot.store?.halt();
    slot.store = undefined;
    slot.stack = undefined;
    slot.diskFault = undefined;
    slot.ackTrap = undefined;
    this.#closing.push(stack.crash());
    // The process is gone: what it had not synced is lost (torn, in some runs).
    if (this.profile.tornCrashes) slot.disk.crash(this.#faultRng, true);
    else slot.disk.crash();
    const life = this.lives.findLast((l) => l.node === slot.nodeId && l.life === slot.life);
    if (life !== undefined) life.endMs = this.scheduler.nowMs;
    this.#traceLine(`crash ${slot.nodeId}/${slot.life}`);
  }

  // -------------------------------------------------------------------------------------------
  // Faults
  // -------------------------------------------------------------------------------------------

  #applyNetworkFaults(): void {
    this.network.heal();
    const now = this.scheduler.nowMs;
    if (this.#partition !== undefined && this.#partition.untilMs > now) {
      this.network.partition(this.#partition.side);
    } else {
      this.#partition = undefined;
    }
    this.#oneWay = this.#oneWay.filter((c) => c.untilMs > now);
    for (const c of this.#oneWay) this.network.cutOneWay(c.from, c.to);
  }

  #scheduleFaults(): void {
    const rng = this.#faultRng;
    const exp = (mean: number) => -Math.log(1 - rng.next()) * mean;
    for (let t = 2_000 + exp(this.profile.faultIntervalMs); t < this.#chaosMs;) {
      const roll = rng.next();
      const durationMs = 500 + rng.next() * 9_500;
      const a = rng.int(SIM_NODES);
      const b = (a + 1 + rng.int(SIM_NODES - 1)) % SIM_NODES;
      const arg = rng.next();
      this.scheduler.at(t, () => this.#fault(roll, durationMs, a, b, arg));
      t += exp(this.profile.faultIntervalMs);
    }
  }

  #fault(roll: number, durationMs: number, a: number, b: number, arg: number): void {
    if (this.#healed) return;
    const now = this.scheduler.nowMs;
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
      this.#stats.partitions++;
      this.#traceLine(`partition ${side.join(",")} for ${durationMs.toFixed(0)} ms`);
      this.#applyNetworkFaults();
      this.scheduler.at(now + durationMs, () => this.#applyNetworkFaults());
    } else if (roll < 0.55) {
      this.#oneWay.push({ from: slotA.address, to: slotB.address, untilMs: now + durationMs });
      if (arg < 0.3) {
        // A node that hears nobody: every link into it is cut.
        for (const other of this.#slots) {
          if (other === slotA) continue;
          this.#oneWay.push({ from: other.address, to: slotA.address, untilMs: now + durationMs });
        }
      }
      this.#stats.oneWayCuts++;
      this.#traceLine(
        `one-way ${slotA.nodeId}>${slotB.nodeId}${arg < 0.3 ? ` and all>${slotA.nodeId}` : ""}` +
          ` for ${durationMs.toFixed(0)} ms`,
      );
      this.#applyNetworkFaults();
      this.scheduler.at(now + durationMs, () => this.#applyNetworkFaults());
    } else if (roll < 0.72) {
      const stack = slotA.stack;
      if (stack === undefined) return;
      const stallMs = arg < 0.8 ? 50 + arg * 1_000 : 1_000 + durationMs / 3;
      stack.stall(stallMs);
      this.#stats.stalls++;
      this.stallLog.push({ node: slotA.nodeId, fromMs: now, toMs: now + stallMs });
      this.#traceLine(`stall ${slotA.nodeId} for ${stallMs.toFixed(0)} ms`);
    } else if (roll < 0.83) {
      const modes: ReceiverMode[] = ["error", "unavailable", "slow", "refuse"];
      const mode = modes[Math.floor(arg * modes.length)]!;
      this.receiver.mode = mode;
      this.#stats.receiverOutages++;
      this.#traceLine(`receiver ${mode} for ${durationMs.toFixed(0)} ms`);
      this.scheduler.at(now + durationMs, () => {
        if (this.receiver.mode === mode) this.receiver.mode = "ok";
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
      this.#stats.diskFaults++;
      this.#traceLine(`disk fault ${kind} on ${slotA.nodeId}/${slotA.life}`);
    } else {
      // One node's ingress turns lossy (up to 20 %) for a while.
      const loss = 0.05 + arg * 0.15;
      this.network.setIngressLoss(slotA.address, loss);
      this.#stats.lossyNodes++;
      this.#traceLine(`lossy ${slotA.nodeId} ${loss.toFixed(2)} for ${durationMs.toFixed(0)} ms`);
      this.scheduler.at(
        now + durationMs,
        () => this.network.setIngressLoss(slotA.address, this.profile.lossProbability),
      );
    }
  }

  /** Nodes down, or up with a failed WAL (they left the cluster). */
  #downCount(): number {
    return this.#slots.filter((s) => s.stack === undefined || s.diskFault === "failed").length;
  }

  /** The WAL of `slot`'s life failed: fail-stop, leave (as hookd node does), restart later. */
  #walFailed(slot: Slot, life: number, stack: SimNodeStack, fields: Record<string, unknown>): void {
    if (slot.life !== life) return;
    if (slot.diskFault !== "armed") {
      this.violations.push(
        `${slot.nodeId}/${life}: WAL failed unprovoked: ${JSON.stringify(fields)}`,
      );
      return;
    }
    slot.diskFault = "failed";
    this.walFailures.push({ node: slot.nodeId, life, atMs: this.scheduler.nowMs });
    void stack.membership.leave();
    // An operator restarts it a while later (also after the heal: a fault armed before the
    // heal may strike after it).
    this.scheduler.at(this.scheduler.nowMs + 1_000 + this.#faultRng.next() * 7_000, () => {
      if (slot.life !== life || slot.stack === undefined) return;
      this.#stats.restarts++;
      this.#crash(slot);
      this.#start(slot);
    });
  }

  #crashAndRestart(slot: Slot, downMs: number): void {
    this.#crash(slot);
    this.scheduler.at(this.scheduler.nowMs + downMs, () => {
      if (slot.stack === undefined && !this.#healed) {
        this.#stats.restarts++;
        this.#start(slot);
      }
    });
  }

  /** The node of `slot` starts an fsync: crash it now if a fault is waiting for that. */
  #springSyncTrap(slot: Slot, life: number): void {
    const trap = slot.syncTrap;
    if (trap === undefined || slot.life !== life || slot.stack === undefined) return;
    slot.syncTrap = undefined;
    if (this.#healed || this.scheduler.nowMs > trap.untilMs) return;
    if (this.#downCount() >= 2) return;
    // Not inside the WAL's call: the crash is the next event, before the fsync completes.
    this.scheduler.after(0, () => {
      if (slot.life !== life || slot.stack === undefined) return;
      this.#traceLine(`crash during an fsync of ${slot.nodeId}/${life}`);
      this.#crashAndRestart(slot, trap.downMs);
    });
  }

  /** `slot`'s node acknowledged a new job: crash it now if a fault is waiting for that. */
  #springAckTrap(slot: Slot, life: number): void {
    const trap = slot.ackTrap;
    if (trap === undefined || slot.life !== life || slot.stack === undefined) return;
    slot.ackTrap = undefined;
    if (this.#healed || this.scheduler.nowMs > trap.untilMs) return;
    if (this.#downCount() >= 2) return;
    this.scheduler.after(0, () => {
      if (slot.life !== life || slot.stack === undefined) return;
      this.#traceLine(`crash right after an acknowledgement by ${slot.nodeId}/${life}`);
      this.#crashAndRestart(slot, trap.downMs);
    });
  }

  /** Ends every fault; restarts the nodes that are down, except those meant to stay down. */
  #heal(): void {
    this.#healed = true;
    this.#partition = undefined;
    this.#oneWay = [];
    this.network.heal();
    for (const s of this.#slots) {
      this.network.setIngressLoss(s.address, this.profile.lossProbability);
    }
    this.receiver.mode = "ok";
    for (const s of this.#slots) if (s.diskFault === "failed") this.#crash(s);
    const down = this.#slots.filter((s) => s.stack === undefined);
    const stayDown = this.profile.downAfterHeal;
    // Keep `stayDown` nodes down: those already down first, else crash some now.
    for (const s of down.slice(0, stayDown)) s.permanent = true;
    let more = stayDown - down.length;
    for (const s of this.#slots) {
      if (more <= 0) break;
      if (s.stack !== undefined) {
        this.#crash(s);
        s.permanent = true;
        more--;
      }
    }
    for (const s of this.#slots) {
      if (s.stack === undefined && !s.permanent) {
        this.#stats.restarts++;
        this.#start(s);
      }
    }
    this.#traceLine(
      `heal; down for good: ${this.#slots.filter((s) => s.permanent).map((s) => s.nodeId)}`,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Workload
  // -------------------------------------------------------------------------------------------

  #scheduleWorkload(): void {
    const rng = this.#workRng;
    const exp = (mean: number) => -Math.log(1 - rng.next()) * mean;
    for (let t = 1_500 + exp(this.profile.submitIntervalMs); t < this.#chaosMs;) {
      const nodeRoll = rng.next();
      const kindRoll = rng.next();
      const pickRoll = rng.next();
      this.scheduler.at(t, () => this.#submitOne(nodeRoll, kindRoll, pickRoll));
      t += exp(this.profile.submitIntervalMs);
    }
  }

  #newBody(key: string | undefined, variantRoll: number): BodySpec {
    const bodyId = this.bodies.length;
    const rng = this.#workRng;
    const secretBytes = new Uint8Array(24);
    for (let i = 0; i < secretBytes.length; i++) secretBytes[i] = (bodyId * 31 + i * 7) & 0xff;
    const request: SubmitRequest = {
      url: `http://r${bodyId % 3}.receiver.sim/hook`,
      payload: JSON.stringify({ body: bodyId, key: key ?? null, v: variantRoll.toFixed(3) }),
      ...(rng.next() < 0.5 ? { secret: "whsec_" + btoa(String.fromCharCode(...secretBytes)) } : {}),
      ...(rng.next() < 0.2 ? { maxAttempts: 2 + rng.int(2) } : {}),
      ...(rng.next() < 0.1 ? { timeoutMs: 300 } : {}),
      ...(key !== undefined ? { idempotencyKey: key } : {}),
    };
    const body: BodySpec = {
      bodyId,
      request,
      bodyHash: key !== undefined ? submitBodyHash(request) : "",
    };
    this.bodies.push(body);
    return body;
  }

  #submitOne(nodeRoll: number, kindRoll: number, pickRoll: number): void {
    const live = this.#slots.filter((s) => s.store !== undefined);
    if (live.length === 0) return;
    let body: BodySpec;
    const keyed = this.bodies.filter((b) => b.request.idempotencyKey !== undefined);
    if (kindRoll < 0.7 || (kindRoll < 0.85 && keyed.length === 0)) {
      body = this.#newBody(undefined, pickRoll);
    } else if (kindRoll < 0.85) {
      body = this.#newBody(`key-${this.bodies.length}`, pickRoll);
    } else if (kindRoll < 0.97 || keyed.length === 0) {
      // The same keyed body again, most likely to another node (a client's retry).
      body = keyed.length > 0
        ? keyed[Math.floor(pickRoll * keyed.length)]!
        : this.#newBody(`key-${this.bodies.length}`, pickRoll);
    } else {
      const earlier = keyed[Math.floor(pickRoll * keyed.length)]!;
      body = this.#newBody(earlier.request.idempotencyKey, pickRoll);
    }
    const slot = live[Math.floor(nodeRoll * live.length)]!;
    const store = slot.store!;
    const log: SubmitLog = {
      serial: this.submits.length,
      bodyId: body.bodyId,
      node: slot.nodeId,
      life: slot.life,
      atMs: this.scheduler.nowMs,
      answeredAtMs: undefined,
      outcome: undefined,
      durableOn: [],
    };
    this.submits.push(log);
    this.#traceLine(`submit #${log.serial} body ${body.bodyId} to ${slot.nodeId}/${slot.life}`);
    store.submit(body.request).then((outcome) => {
      log.answeredAtMs = this.scheduler.nowMs;
      log.outcome = outcome;
      if (outcome.ok) {
        // Invariant 1, checked at the instant of the acknowledgement: on which disks would
        // the job survive a crash of every node right now?
        const bodyHash = body.request.idempotencyKey !== undefined ? body.bodyHash : "";
        for (const s of this.#slots) {
          if (this.probe.holds(s.disk, outcome.id, bodyHash)) log.durableOn.push(s.nodeId);
        }
        if (!outcome.existing) this.#springAckTrap(slot, log.life);
      }
      this.#traceLine(
        `answer #${log.serial} ${
          outcome.ok ? `ok ${outcome.id}${outcome.existing ? " existing" : ""}` : outcome.code
        } durable on ${log.durableOn.length}`,
      );
    });
  }

  // -------------------------------------------------------------------------------------------
  // The run
  // -------------------------------------------------------------------------------------------

  /** Acknowledged job ids with the body each was acknowledged with. */
  ackedJobs(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.submits) {
      if (s.outcome?.ok === true && !out.has(s.outcome.id)) out.set(s.outcome.id, s.bodyId);
    }
    return out;
  }

  /**
   * Every acknowledged job got a 2xx at the receiver or is a dead letter on some node, and the
   * cluster knows it is over: a live node holds it delivered or dead, or none holds a committed
   * copy still to deliver (compacted everywhere; an uncommitted leftover is garbage, counted).
   * A 2xx the node saw as a timeout leaves the job pending; its owner tries again (after the
   * retry time by its own, maybe skewed, wall clock).
   */
  #drained(): boolean {
    const got2xx = new Set<string>();
    for (const r of this.receiver.requests) {
      if (r.status >= 200 && r.status < 300) got2xx.add(r.jobId);
    }
    for (const id of this.ackedJobs().keys()) {
      const phases = this.phases(id);
      const dead = phases.some((p) => isDeadPhase(p.phase));
      if (!got2xx.has(id) && !dead) return false;
      const over = phases.some((p) => isFinishedPhase(p.phase)) ||
        !phases.some((p) => p.phase === "pending") || this.compactedAfterDone(id);
      if (!over) return false;
    }
    return true;
  }

  /**
   * A node recorded `jobId` delivered (it saw the 2xx) longer ago than the retention window:
   * it may have compacted the job since, and a copy that missed the DONE is then a zombie.
   */
  compactedAfterDone(jobId: string): boolean {
    const retentionMs = this.profile.jobs.finishedRetentionMs ?? jobsDefaults.finishedRetentionMs;
    return this.receiver.requests.some((r) =>
      r.jobId === jobId && r.status >= 200 && r.status < 300 && r.nodeSaw === "response" &&
      r.nodeSawAtMs! + retentionMs < this.scheduler.nowMs
    );
  }

  /** Every up node holds every up node alive and every down node dead. */
  #membershipConverged(): boolean {
    for (const observer of this.#slots) {
      const stack = observer.stack;
      if (stack === undefined || observer.store === undefined) continue;
      for (const other of this.#slots) {
        if (other === observer) continue;
        const up = other.store !== undefined;
        if (up && stack.core.member(other.nodeId)?.state !== "alive") return false;
        if (!up && !stack.core.isDead(other.nodeId)) return false;
      }
    }
    return true;
  }

  /**
   * Phase of `jobId` on every up node: absent (never held, or compacted), a stub (records but
   * no SUBMIT, with the phase they gave it), uncommitted (a body no majority confirmed, maybe
   * a losing keyed body).
   */
  phases(jobId: string): Array<{ node: string; phase: SimJobPhase }> {
    const out: Array<{ node: string; phase: SimJobPhase }> = [];
    for (const s of this.#slots) {
      const store = s.store;
      if (store === undefined) continue;
      const entry = store.core.table.get(jobId);
      out.push({
        node: s.nodeId,
        phase: entry === undefined
          ? "absent"
          : entry.spec === undefined
          ? `stub:${entry.phase}`
          : !entry.committed
          ? "uncommitted"
          : entry.phase,
      });
    }
    return out;
  }

  async run(): Promise<ClusterSimReport> {
    let result: CheckResult | undefined;
    try {
      result = await this.#run();
    } catch (error) {
      // A livelock (the event budget ran out) or an exception escaping a node: the run is
      // over, and the seed replays it.
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      this.violations.push(
        `the simulation stopped at ${this.scheduler.nowMs.toFixed(3)} ms: ` +
          message.split("\n").slice(0, 6).join(" | "),
      );
    }
    await this.#close();
    return this.#report(result);
  }

  /** Runs to `untilMs` in virtual seconds, each with a bounded number of events. */
  async #runTo(untilMs: number): Promise<void> {
    while (this.scheduler.nowMs < untilMs) {
      await this.scheduler.runUntilAsync(
        Math.min(untilMs, this.scheduler.nowMs + 1_000),
        undefined,
        EVENTS_PER_VIRTUAL_SECOND_MAX,
      );
    }
  }

  async #run(): Promise<CheckResult> {
    for (const slot of this.#slots) this.#start(slot);
    this.#scheduleFaults();
    this.#scheduleWorkload();
    await this.#runTo(this.#chaosMs);
    this.#heal();
    const healedAtMs = this.scheduler.nowMs;
    const limitMs = healedAtMs + this.#drainLimitMs;
    let drained = false;
    while (this.scheduler.nowMs < limitMs) {
      await this.#runTo(Math.min(limitMs, this.scheduler.nowMs + 1_000));
      if (this.#drained()) {
        drained = true;
        break;
      }
    }
    this.#drainMs = this.scheduler.nowMs - healedAtMs;
    // Let DONE/DEAD records spread before the replicas are compared: membership must have
    // merged again (a node cut off for long can take SWIM a while to readmit), then a few
    // anti-entropy rounds (each node syncs every 0.5-1.5 intervals) must pass.
    while (this.scheduler.nowMs < limitMs && !this.#membershipConverged()) {
      await this.#runTo(this.scheduler.nowMs + 500);
    }
    await this.#runTo(this.scheduler.nowMs + 4 * 1.5 * jobsDefaults.antiEntropyIntervalMs);
    this.#traceLine(`end drained=${drained}`);
    this.beforeClose?.();
    return checkRun(this, drained);
  }

  async #close(): Promise<void> {
    for (const s of this.#slots) {
      s.store?.halt();
      s.store = undefined;
      if (s.stack !== undefined) this.#closing.push(s.stack.crash());
      s.stack = undefined;
    }
    await Promise.all(this.#closing);
  }

  #report(checked: CheckResult | undefined): ClusterSimReport {
    const result = checked ?? {
      violations: [],
      jobsAcked: 0,
      delivered: 0,
      deadLettered: 0,
      duplicates: {},
      duplicateOwnership: {},
      duplicateDetails: [],
      leftoverUncommitted: 0,
      zombies: 0,
    };
    const violations = [...this.violations, ...result.violations];
    if (this.probe.undecodable > 0) {
      violations.push(`${this.probe.undecodable} WAL batches on the disks did not decode`);
    }
    const refused: Record<string, number> = {};
    let acked = 0;
    let ackedExisting = 0;
    let unanswered = 0;
    for (const s of this.submits) {
      if (s.outcome === undefined) unanswered++;
      else if (s.outcome.ok) {
        acked++;
        if (s.outcome.existing) ackedExisting++;
      } else refused[s.outcome.code] = (refused[s.outcome.code] ?? 0) + 1;
    }
    return {
      seed: this.seed,
      ok: violations.length === 0,
      violations,
      profile: this.profile,
      stats: {
        submits: this.submits.length,
        acked,
        ackedExisting,
        refused,
        unanswered,
        jobsAcked: result.jobsAcked,
        delivered: result.delivered,
        deadLettered: result.deadLettered,
        attempts: this.receiver.requests.length,
        duplicates: result.duplicates,
        duplicateOwnership: result.duplicateOwnership,
        duplicateDetails: result.duplicateDetails,
        leftoverUncommitted: result.leftoverUncommitted,
        zombies: result.zombies,
        ...this.#stats,
        virtualMs: Math.round(this.scheduler.nowMs),
        drainMs: Math.round(this.#drainMs),
        events: this.scheduler.eventsRun,
      },
      traceHash: this.#trace.hex,
    };
  }

  /** Nodes that were up at the end (their stores open), with their replication phase. */
  upNodes(): Array<{ node: string; phase: string }> {
    return this.#slots.flatMap((s) =>
      s.store !== undefined ? [{ node: s.nodeId, phase: s.store.core.phase }] : []
    );
  }

  /** Nodes meant to be up at the end (not left down after the heal). */
  expectedUp(): string[] {
    return this.#slots.filter((s) => !s.permanent).map((s) => s.nodeId);
  }

  get submitTimeoutMs(): number {
    return this.profile.jobs.submitTimeoutMs ?? jobsDefaults.submitTimeoutMs;
  }
}

/** Runs one seed. */
export async function runClusterSim(options: ClusterSimOptions): Promise<ClusterSimReport> {
  return await new ClusterSim(options).run();
}

/** The one command that replays a run exactly. */
export function replayCommand(options: ClusterSimOptions): string {
  const extra = [
    options.chaosMs !== undefined ? ` --chaos-ms ${options.chaosMs}` : "",
    options.drainLimitMs !== undefined ? ` --drain-ms ${options.drainLimitMs}` : "",
  ].join("");
  return `deno task hookd sim --seed ${options.seed}${extra} --trace`;
}
