/**
 * The whole-cluster deterministic simulation (VOPR-style): five complete hookd node stacks in
 * virtual time under one seed. Each node is a `SimNodeStack` (the real `UdpTransport` on a
 * simulated socket, the real `MembershipService` around a `SwimCore`, stalls through its gate)
 * with a real `JobStore` on top: the real WAL on the node's own `SimDisk` (fsyncs take seeded
 * virtual time; a crash loses what was not synced), replication, ownership, catch-up, and the
 * real delivery engine attempting against a simulated receiver (sim_receiver.ts). A seeded
 * workload (sim_workload.ts) submits to random live nodes; a seeded fault schedule
 * (sim_faults.ts) crashes and restarts nodes, partitions the network, loses, duplicates and
 * reorders packets, stalls event loops, skews wall clocks and takes the receiver down. Then the
 * cluster heals and drains, and cluster_sim_checker.ts judges the recorded history
 * (sim_history.ts).
 *
 * Owns the run: the simulated nodes' lives (start, crash, restart on the same disk), the
 * order in which the seed's generators are forked and handed out, the drain and settle, the
 * record of what happened, the report and the trace hash that proves a replay is exact. The
 * profile a seed draws is sim_profile.ts's. Must not reach into a node's state to help it: the
 * checker may read tables and disks, the harness only talks to nodes as a client, a network
 * and a disk would. Never reads the wall clock or `Math.random`: a run is a pure function of
 * its options.
 */

import { jobsDefaults } from "../config/jobs.ts";
import { type Rng, Sfc32 } from "../lib/rng.ts";
import type { Runtime } from "../lib/runtime.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import type { MemberEvent } from "../membership/swim_core.ts";
import { JobStore, type MemberRow } from "../jobs/job_store.ts";
import { deliveryEngineFor } from "../delivery/engine.ts";
import type { WalFile, WalFs } from "../wal/wal_fs.ts";
import { SimDisk } from "./disk.ts";
import { DurabilityProbe } from "./durability_probe.ts";
import { SimNetwork } from "./network.ts";
import { SimScheduler } from "./scheduler.ts";
import { SimNodeStack } from "./sim_node_stack.ts";
import { SimReceiver } from "./sim_receiver.ts";
import { type CheckResult, checkRun, type OwnershipSplit } from "./cluster_sim_checker.ts";
import {
  type BodySpec,
  type DeadReport,
  type EventLog,
  isDeadPhase,
  isFinishedPhase,
  type LifeLog,
  type MemberLog,
  type ReadyLog,
  type ReviveLog,
  type RotationLog,
  type SimEndpoint,
  type SimHistory,
  type SimJobPhase,
  type StallLog,
  type SubmitLog,
  type WalFailureLog,
} from "./sim_history.ts";
import { profileFor, SIM_DELIVERY, SIM_NODES, type SimProfile } from "./sim_profile.ts";
import { type FaultStats, SimFaults } from "./sim_faults.ts";
import type { Slot } from "./sim_slot.ts";
import { SimWorkload } from "./sim_workload.ts";
import {
  endpointUrl,
  eventsProfile,
  GONE_HOST,
  orderedFailures,
  SimEventWorkload,
} from "./sim_events.ts";
import { doomedUntilRevived, revivesProfile, SimReviveWorkload } from "./sim_revives.ts";
import { endpointOfJob } from "../jobs/event_model.ts";
import type { EndpointState } from "../jobs/endpoint_model.ts";

const CLUSTER_KEY = "cluster-sim-key-0123456789abcdef";
const DATA_DIR = "/var/lib/hookd";
/**
 * Events one virtual second may take before the run counts as a livelock (a timer re-armed at
 * the instant it fires). A busy second of this simulation runs a few thousand.
 */
const EVENTS_PER_VIRTUAL_SECOND_MAX = 1_000_000;

export interface ClusterSimOptions {
  seed: number;
  /** Virtual ms of workload and faults before the heal. @default 30_000 */
  chaosMs?: number;
  /** Longest the healed cluster gets to deliver or dead-letter every job, ms. @default 120_000 */
  drainLimitMs?: number;
  /** Every trace line, as it happens (for `hookd sim --trace`). */
  onTrace?: (line: string) => void;
  /**
   * Runs this profile instead of the seed's: a fault-free one measures what the cores cost with
   * no syscalls, sockets or other processes in the figure (bench/results/cost/sim_cost_probe.ts).
   */
  profile?: SimProfile;
  /** The workload also sends events to endpoints (`SimProfile.events`). @default false */
  events?: boolean;
  /** The workload also retries dead letters by hand (`SimProfile.revives`). @default false */
  revives?: boolean;
}

/** What a run counted; the faults' counts are `FaultStats`'s. */
export interface SimStats extends FaultStats {
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
  /** Events acknowledged, and the jobs they made (0 unless the run sends events). */
  eventsAcked: number;
  eventJobsAcked: number;
  /** Dead letters retried by hand, and those retries acknowledged (0 unless asked for). */
  revives: number;
  revivesAcked: number;
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

export class ClusterSim implements SimHistory {
  readonly seed: number;
  readonly profile: SimProfile;
  readonly scheduler = new SimScheduler();
  readonly network: SimNetwork<Uint8Array>;
  readonly receiver: SimReceiver;
  readonly probe = new DurabilityProbe();
  readonly bodies: BodySpec[] = [];
  readonly submits: SubmitLog[] = [];
  readonly endpoints: SimEndpoint[] = [];
  readonly events: EventLog[] = [];
  readonly rotations: RotationLog[] = [];
  readonly revives: ReviveLog[] = [];
  /** When an owner reported each job dead (its `dead-letter` log), and the generation. */
  readonly #deadReports = new Map<string, DeadReport[]>();
  readonly lives: LifeLog[] = [];
  readonly stallLog: StallLog[] = [];
  /** Every node's membership events: the views from which the checker derives ownership. */
  readonly memberLog: MemberLog[] = [];
  /** When each life's store became ready (caught up after its start): it delivers from then. */
  readonly readyLog: ReadyLog[] = [];
  /** When a node's WAL failed (an injected disk fault): it must acknowledge nothing after. */
  readonly walFailures: WalFailureLog[] = [];
  readonly violations: string[] = [];
  readonly #slots: Slot[] = [];
  readonly #rng: Rng;
  readonly #faultRng: Rng;
  readonly #chaosMs: number;
  readonly #drainLimitMs: number;
  readonly #trace = new TraceHash();
  readonly #onTrace: ((line: string) => void) | undefined;
  readonly #closing: Promise<void>[] = [];
  readonly #faults: SimFaults;
  readonly #workload: SimWorkload;
  readonly #eventWorkload: SimEventWorkload | undefined;
  readonly #reviveWorkload: SimReviveWorkload | undefined;
  #drainMs = 0;
  /** Debugging hook: runs after the settle time, before the checks and the shutdown. */
  beforeClose: (() => void) | undefined;

  constructor(options: ClusterSimOptions) {
    this.seed = options.seed;
    const drawn = options.profile ?? profileFor(options.seed);
    const profile = options.revives === true ? revivesProfile(drawn, options.seed) : drawn;
    this.profile = options.events === true
      ? eventsProfile(profile, options.chaosMs ?? 30_000)
      : profile;
    this.#chaosMs = options.chaosMs ?? 30_000;
    this.#drainLimitMs = options.drainLimitMs ?? 120_000;
    this.#onTrace = options.onTrace;
    this.#rng = new Sfc32(options.seed);
    this.#faultRng = this.#rng.fork();
    const workRng = this.#rng.fork();
    this.network = new SimNetwork<Uint8Array>(this.scheduler, this.#rng.fork(), {
      lossProbability: this.profile.lossProbability,
      duplicateProbability: this.profile.duplicateProbability,
      delayMsMin: 0.05,
      delayMsMax: this.profile.delayMsMax,
    });
    this.receiver = new SimReceiver({ scheduler: this.scheduler, rng: this.#rng.fork() });
    // Retries by hand: a generator of its own, as the event workload's below.
    this.#reviveWorkload = this.profile.revives === true
      ? new SimReviveWorkload({
        scheduler: this.scheduler,
        profile: this.profile,
        probe: this.probe,
        rng: new Sfc32(options.seed ^ 0x7e71_0e5d),
        chaosMs: this.#chaosMs,
        slots: this.#slots,
        revives: this.revives,
        trace: (line) => this.#traceLine(line),
      })
      : undefined;
    if (this.#reviveWorkload !== undefined) {
      this.receiver.rejectWhen = doomedUntilRevived(this.#reviveWorkload.revived);
    }
    if (this.profile.events === true) this.receiver.failWhen = orderedFailures;
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
    const trace = (line: string) => this.#traceLine(line);
    this.#faults = new SimFaults({
      scheduler: this.scheduler,
      network: this.network,
      receiver: this.receiver,
      profile: this.profile,
      rng: this.#faultRng,
      chaosMs: this.#chaosMs,
      slots: this.#slots,
      stallLog: this.stallLog,
      walFailures: this.walFailures,
      violations: this.violations,
      trace,
      crash: (slot) => this.#crash(slot),
      start: (slot) => this.#start(slot),
    });
    this.#workload = new SimWorkload({
      scheduler: this.scheduler,
      profile: this.profile,
      probe: this.probe,
      rng: workRng,
      chaosMs: this.#chaosMs,
      slots: this.#slots,
      bodies: this.bodies,
      submits: this.submits,
      trace,
      acknowledged: (slot, life) => this.#faults.springAckTrap(slot, life),
    });
    // A generator of its own (not forked from the run's): forking would move every later
    // fork, and with them the runs without events.
    this.#eventWorkload = this.profile.events === true
      ? new SimEventWorkload({
        scheduler: this.scheduler,
        profile: this.profile,
        probe: this.probe,
        rng: new Sfc32(options.seed ^ 0x0e7e_47a1),
        chaosMs: this.#chaosMs,
        slots: this.#slots,
        endpoints: this.endpoints,
        events: this.events,
        rotations: this.rotations,
        trace,
      })
      : undefined;
    if (this.profile.events === true) this.receiver.goneUrls.add(endpointUrl(GONE_HOST));
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
      // Every other voter, as src/node/node.ts seeds membership: with the first three only, a
      // node restarted after it left (its WAL failed) while the other two seeds stayed down had
      // nobody to join through, and the others do not probe a member that left (seed 33531).
      seeds: this.#slots.filter((s) => s !== slot).map((s) => s.address),
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
    const metrics = new MetricsRegistry();
    const opening = JobStore.open({
      self: slot.address,
      nodeId: slot.nodeId,
      voters: this.voters,
      dataDir: DATA_DIR,
      fs: slowSyncFs(
        slot.disk.mount(),
        runtime,
        rng.fork(),
        () => this.#faults.springSyncTrap(slot, life),
      ),
      wal: this.profile.wal,
      jobs: this.profile.jobs,
      delivery: SIM_DELIVERY,
      transport: stack.transport,
      members: () => this.#members(slot, stack),
      runtime,
      rng: rng.fork(),
      // Forked here, after the store's: the draw order of a node's start is unchanged.
      scheduler: deliveryEngineFor({
        config: SIM_DELIVERY,
        runtime,
        rng: rng.fork(),
        metrics,
        transport: this.receiver.transportFor(
          slot.nodeId,
          life,
          runtime,
          // What the sender held of an event job's endpoint, for the event checker.
          this.profile.events === true
            ? (job) => {
              const endpointId = endpointOfJob(job.id);
              if (endpointId === undefined || slot.store === undefined) return undefined;
              return {
                wallMs: runtime.wallMs(),
                endpoint: slot.store.core.table.endpoints.get(endpointId),
              };
            }
            : undefined,
        ),
      }),
      metrics,
      onLog: (event, fields) => {
        if (
          event === "caught-up" || event === "wal-failed" || event === "wal-truncated" ||
          event === "pending-check-settled"
        ) {
          this.#traceLine(`log ${slot.nodeId}/${life} ${event} ${JSON.stringify(fields)}`);
        }
        if (event === "caught-up") {
          this.readyLog.push({ node: slot.nodeId, life, atMs: this.scheduler.nowMs });
        }
        if (event === "wal-failed") this.#faults.walFailed(slot, life, stack, fields);
        if (event === "dead-letter" && typeof fields.job === "string") {
          const report = {
            atMs: this.scheduler.nowMs,
            gen: typeof fields.gen === "number" ? fields.gen : 0,
          };
          const held = this.#deadReports.get(fields.job);
          if (held === undefined) this.#deadReports.set(fields.job, [report]);
          else held.push(report);
        }
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
    this.#faults.stats.crashes++;
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
  // The run
  // -------------------------------------------------------------------------------------------

  /** Acknowledged job ids with the body each was acknowledged with. */
  ackedJobs(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.submits) {
      if (s.outcome?.ok === true && !out.has(s.outcome.id)) out.set(s.outcome.id, s.bodyId);
    }
    for (const e of this.events) {
      if (e.outcome?.ok === true) { for (const jobId of e.jobIds) out.set(jobId, -1); }
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
      // A dead letter compacted (short retention in runs with retries) counts as dead, when an
      // owner reported it so: a tombstone alone may be a loss (a copy compacted as finished
      // elsewhere, the tombstone spread).
      const dead = phases.some((p) => isDeadPhase(p.phase)) ||
        (phases.some((p) => p.phase === "compacted") && this.deadReportsOf(id).length > 0);
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
    // Only while the life that saw the 2xx runs on: one that crashed may have lost its DONE
    // before it spread (and a node left down for good never spreads it), so the others hold
    // the job pending rightly and deliver it again; the drain waits for that (seed 34335).
    return this.receiver.requests.some((r) =>
      r.jobId === jobId && r.status >= 200 && r.status < 300 && r.nodeSaw === "response" &&
      r.nodeSawAtMs! + retentionMs < this.scheduler.nowMs &&
      this.#slot(r.node).store !== undefined && this.#slot(r.node).life === r.life
    );
  }

  /** Some acknowledged job is finished on one live node and pending on another. */
  #finishedPendingOnALiveNode(): boolean {
    for (const id of this.ackedJobs().keys()) {
      const phases = this.phases(id);
      if (
        phases.some((p) => isFinishedPhase(p.phase)) && phases.some((p) => p.phase === "pending")
      ) {
        return true;
      }
    }
    return false;
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
      const table = store.core.table;
      const entry = table.get(jobId);
      out.push({
        node: s.nodeId,
        phase: entry === undefined
          ? (table.goneTombstone(jobId) !== undefined || table.keyTombstone(jobId) !== undefined
            ? "compacted"
            : "absent")
          : entry.spec === undefined
          ? `stub:${entry.phase}`
          : !entry.committed
          ? "uncommitted"
          : entry.phase,
      });
    }
    return out;
  }

  deadReportsOf(jobId: string): readonly DeadReport[] {
    return this.#deadReports.get(jobId) ?? [];
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
    this.#faults.schedule();
    this.#workload.schedule();
    this.#eventWorkload?.schedule();
    this.#reviveWorkload?.schedule();
    await this.#runTo(this.#chaosMs);
    this.#faults.heal();
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
    // A replica can miss a DONE that no catch-up log holds any more (its node's restart voided
    // the seq after every holder's bounded log let the record go). Only pending checks repair
    // that, and they ask once the copy has not moved for `pendingCheckAfterMs`, at a walk, then
    // again after twice that wait. The loss a profile sets stays on after the heal, so one
    // question or answer can be lost: give them the first question, a second one, two walks
    // and the answer's spread before the checker judges. Runs without such a copy end as
    // before, so their traces do not change. (While it waits, another job's zombie copy can be
    // repaired by its own check and so pass; zombies outside this wait are judged as before.)
    const jobs = this.profile.jobs;
    const repairLimitMs = this.scheduler.nowMs +
      3 * (jobs.pendingCheckAfterMs ?? jobsDefaults.pendingCheckAfterMs) +
      2 * (jobs.pendingCheckIntervalMs ?? jobsDefaults.pendingCheckIntervalMs) +
      4 * 1.5 * jobsDefaults.antiEntropyIntervalMs;
    while (this.scheduler.nowMs < repairLimitMs && this.#finishedPendingOnALiveNode()) {
      await this.#runTo(Math.min(repairLimitMs, this.scheduler.nowMs + 1_000));
    }
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
        eventsAcked: this.events.filter((e) => e.outcome?.ok === true).length,
        eventJobsAcked: this.events.reduce(
          (n, e) => n + (e.outcome?.ok === true ? e.jobIds.length : 0),
          0,
        ),
        revives: this.revives.length,
        revivesAcked: this.revives.filter((r) => r.outcome?.ok === true).length,
        ...this.#faults.stats,
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

  endpointValues(id: string): Array<{ node: string; state: EndpointState | undefined }> {
    return this.#slots.flatMap((s) =>
      s.store !== undefined ? [{ node: s.nodeId, state: s.store.core.table.endpoints.get(id) }] : []
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
    options.events === true ? " --events" : "",
    options.revives === true ? " --revives" : "",
  ].join("");
  return `deno task hookd sim --seed ${options.seed}${extra} --trace`;
}
