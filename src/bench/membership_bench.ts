/**
 * `hookd bench membership`: failure detection on the simulator (virtual time, so ten simulated
 * minutes of five nodes take a second). Repeatedly crashes a random node, measures the time
 * until every live member holds it dead, restarts it with a higher incarnation, waits until
 * every view is whole again, and repeats; any node declared dead while it was up counts as
 * false_dead, and every packet a node sends counts towards its message rate. Several cluster
 * sizes run one after another (`--nodes 5,50,200`), each over one or more seeds whose samples are
 * pooled (`--seeds`); `--wall-seconds` bounds each size in real time. `--processes` measures the
 * same on real node processes instead (membership_process_bench.ts).
 *
 * Owns the bench loop and its report only; the protocol is src/membership/ with the defaults of
 * src/config.ts unless a flag overrides one.
 */

import { type MembershipConfig, membershipDefaults } from "../config/membership.ts";
import { listFlag, numberFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { Sfc32 } from "../lib/rng.ts";
import { round } from "../lib/round.ts";
import { detectionBoundMs } from "../membership/suspicion_math.ts";
import { SimCluster } from "../sim/swim_cluster.ts";
import { runMembershipProcessBench } from "./membership_process_bench.ts";

export interface MembershipBenchOptions {
  nodes: number;
  lossProbability: number;
  minutes: number;
  seed: number;
  /**
   * Seeds run one after another (seed, seed + 1, …), their samples pooled: a p99 over one
   * seed's few hundred crashes is its second-largest sample. @default 1
   */
  seeds?: number;
  probeIntervalMs?: number;
  /** Further overrides of the membership defaults (for tuning sweeps). */
  config?: Partial<MembershipConfig>;
  /**
   * Wall-clock budget, seconds: past it no new crash starts and the result says how many
   * simulated minutes ran (`stopped_early`). Without it a run is a pure function of its
   * options. @default unlimited
   */
  wallSecondsMax?: number;
  /** Progress lines (stderr in the CLI). */
  log?: (line: string) => void;
}

export interface MembershipBenchResult {
  nodes: number;
  loss: number;
  minutes: number;
  seed: number;
  /** Seeds run (the first is `seed`); the figures pool all of them. */
  seeds: number;
  /** Simulated minutes of crashes actually run, all seeds (short only when stopped early). */
  simulated_minutes: number | null;
  /** The wall-clock budget ran out before `minutes` of simulated time. */
  stopped_early: boolean;
  crashes: number;
  /** Crashes not confirmed dead everywhere within 60 s (counted, excluded from latencies). */
  undetected: number;
  /**
   * Restarts after which the node was not back within 60 s (alive or suspect in every view,
   * every other node so in its own view); the next crash went ahead anyway.
   */
  not_rejoined: number;
  false_dead: number;
  /** Detection times measured (crashes confirmed everywhere), all seeds. */
  detection_samples: number;
  detection_p50_ms: number | null;
  detection_p99_ms: number | null;
  detection_max_ms: number | null;
  /** The formula bound with Lifeguard's awareness stretching at its maximum (no loss). */
  detection_bound_ms: number;
  /** The same bound when no node's awareness is raised. */
  detection_bound_unstretched_ms: number;
  /** Membership packets sent per node per simulated second, mean over all nodes. */
  messages_per_node_per_s: number | null;
  /** The same for the busiest node. */
  messages_per_node_per_s_max: number | null;
  /** Suspicions (per observer) of a node that was up: refuted, or they would be false_dead. */
  false_suspicions: number;
}

const WARMUP_MS = 10_000;
const DETECT_LIMIT_MS = 60_000;
const REJOIN_LIMIT_MS = 60_000;
/**
 * Convergence and rejoins cost N² or N to check, so they are checked every this many virtual
 * ms instead of after every event; they only gate the next crash, they are not reported as
 * times.
 */
const CONVERGED_POLL_MS = 100;

/** What one seed's run measured, before pooling. */
interface SeedRun {
  crashes: number;
  undetected: number;
  notRejoined: number;
  falseDead: number;
  falseSuspicions: number;
  detectionMs: number[];
  elapsedS: number;
  /** Packets per simulated second, one per node. */
  rates: number[];
  stoppedEarly: boolean;
}

export function runMembershipBench(options: MembershipBenchOptions): MembershipBenchResult {
  const config: Partial<MembershipConfig> = {
    ...options.config,
    ...(options.probeIntervalMs === undefined ? {} : { probeIntervalMs: options.probeIntervalMs }),
  };
  const seeds = options.seeds ?? 1;
  if (!(Number.isInteger(seeds) && seeds >= 1)) {
    throw new RangeError(`seeds must be a whole number >= 1, got ${seeds}`);
  }
  const wallLimitMs = options.wallSecondsMax === undefined
    ? Infinity
    : performance.now() + options.wallSecondsMax * 1000;
  const runs: SeedRun[] = [];
  for (let i = 0; i < seeds; i++) {
    if (runs.length > 0 && performance.now() >= wallLimitMs) break;
    runs.push(runSeed(options, options.seed + i, config, wallLimitMs));
  }
  const detectionMs = runs.flatMap((r) => r.detectionMs);
  const rates = runs.flatMap((r) => r.rates);
  const sum = (f: (r: SeedRun) => number) => runs.reduce((a, r) => a + f(r), 0);
  const merged = { ...membershipDefaults, ...config };
  return {
    nodes: options.nodes,
    loss: options.lossProbability,
    minutes: options.minutes,
    seed: options.seed,
    seeds: runs.length,
    simulated_minutes: round(sum((r) => r.elapsedS) / 60, 2),
    stopped_early: runs.length < seeds || runs.some((r) => r.stoppedEarly),
    crashes: sum((r) => r.crashes),
    undetected: sum((r) => r.undetected),
    not_rejoined: sum((r) => r.notRejoined),
    false_dead: sum((r) => r.falseDead),
    detection_samples: detectionMs.length,
    detection_p50_ms: percentileOrNull(detectionMs, 50),
    detection_p99_ms: percentileOrNull(detectionMs, 99),
    detection_max_ms: percentileOrNull(detectionMs, 100),
    detection_bound_ms: detectionBoundMs(options.nodes, merged),
    detection_bound_unstretched_ms: detectionBoundMs(options.nodes, merged, { awarenessScore: 0 }),
    messages_per_node_per_s: round(rates.reduce((a, b) => a + b, 0) / rates.length, 1),
    messages_per_node_per_s_max: round(Math.max(...rates), 1),
    false_suspicions: sum((r) => r.falseSuspicions),
  };
}

function runSeed(
  options: MembershipBenchOptions,
  seed: number,
  config: Partial<MembershipConfig>,
  wallLimitMs: number,
): SeedRun {
  const cluster = new SimCluster({
    seed,
    nodes: options.nodes,
    lossProbability: options.lossProbability,
    config,
  });
  const rng = new Sfc32(seed ^ 0x5eed);
  let falseDead = 0;
  let falseSuspicions = 0;
  /** Up observers that hold the current victim dead: allSeeDead without an N-wide scan. */
  let victim: string | undefined;
  const victimDeadAt = new Set<string>();
  cluster.onEvent = (e) => {
    if (e.type === "member-dead" && cluster.isUp(e.nodeId)) falseDead++;
    if (e.type === "member-suspect" && cluster.isUp(e.nodeId)) falseSuspicions++;
    if (e.nodeId === victim && (e.type === "member-dead" || e.type === "member-left")) {
      victimDeadAt.add(e.observer);
    }
  };
  const convergedWithin = (limitMs: number): boolean => {
    const until = cluster.nowMs + limitMs;
    while (!cluster.converged()) {
      if (cluster.nowMs >= until) return false;
      cluster.runFor(Math.min(CONVERGED_POLL_MS, until - cluster.nowMs));
    }
    return true;
  };
  /**
   * Back in the cluster: every up node holds `id` alive or suspect at its new life, and `id`
   * holds every up node so. Not "every view whole": at 20 % loss and 200 nodes some view holds
   * a passing suspicion (refuted within a few hundred ms) at almost any instant.
   */
  const rejoinedWithin = (id: string, incarnation: number, limitMs: number): boolean => {
    const rejoined = () => {
      const up = cluster.upNodeIds();
      const self = cluster.core(id);
      return up.every((o) => {
        if (o === id) return true;
        const m = cluster.core(o).member(id);
        return m !== undefined && m.incarnation >= incarnation && cluster.core(o).isAlive(id) &&
          self.isAlive(o);
      });
    };
    const until = cluster.nowMs + limitMs;
    while (!rejoined()) {
      if (cluster.nowMs >= until) return false;
      cluster.runFor(Math.min(CONVERGED_POLL_MS, until - cluster.nowMs));
    }
    return true;
  };
  convergedWithin(WARMUP_MS);
  cluster.runFor(Math.max(0, WARMUP_MS - cluster.nowMs));
  const startMs = cluster.nowMs;
  const sentAtStart = new Map(cluster.nodeIds().map((id) => [id, cluster.packetsSent(id)]));
  const endMs = startMs + options.minutes * 60_000;
  // A few hundred samples: kept exactly (an HDR histogram reports bucket edges, so its p99
  // could exceed the max it reports).
  const detectionMs: number[] = [];
  let crashes = 0;
  let undetected = 0;
  let notRejoined = 0;
  let stoppedEarly = false;
  let lastLogMs = startMs;
  while (cluster.nowMs < endMs) {
    if (performance.now() >= wallLimitMs) {
      stoppedEarly = true;
      break;
    }
    const ids = cluster.upNodeIds();
    victim = ids[rng.int(ids.length)]!;
    victimDeadAt.clear();
    // A view that already (falsely) holds it dead sends no new event.
    for (const id of ids) {
      if (id !== victim && cluster.core(id).isDead(victim)) victimDeadAt.add(id);
    }
    const incarnation = cluster.core(victim).incarnation;
    cluster.crash(victim);
    crashes++;
    const crashedAt = cluster.nowMs;
    const others = ids.length - 1;
    if (cluster.runUntil(() => victimDeadAt.size >= others, DETECT_LIMIT_MS)) {
      detectionMs.push(cluster.nowMs - crashedAt);
    } else {
      undetected++;
    }
    // A restarted process starts above its previous incarnation (the node uses wall-clock
    // seconds for this).
    cluster.start(victim, incarnation + 1);
    if (!rejoinedWithin(victim, incarnation + 1, REJOIN_LIMIT_MS)) notRejoined++;
    victim = undefined;
    cluster.runFor(1_000 + rng.next() * 2_000);
    if (cluster.nowMs - lastLogMs >= 60_000) {
      lastLogMs = cluster.nowMs;
      options.log?.(
        `membership: ${options.nodes} nodes, seed ${seed}, ${
          ((cluster.nowMs - startMs) / 60_000).toFixed(1)
        } simulated min, ${crashes} crashes, p99 ${
          percentile(detectionMs, 99).toFixed(0)
        } ms, false_dead ${falseDead}`,
      );
    }
  }
  const elapsedS = (cluster.nowMs - startMs) / 1000;
  const rates = cluster.nodeIds().map((id) =>
    (cluster.packetsSent(id) - (sentAtStart.get(id) ?? 0)) / elapsedS
  );
  return {
    crashes,
    undetected,
    notRejoined,
    falseDead,
    falseSuspicions,
    detectionMs,
    elapsedS,
    rates,
    stoppedEarly,
  };
}

/** Nearest-rank percentile of `values` (0 when empty). */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** A percentile for the report: null when nothing was measured, not a 0 that looks like one. */
function percentileOrNull(values: readonly number[], p: number): number | null {
  return values.length === 0 ? null : round(percentile(values, p), 1);
}

/** `--minutes 10` for every size, or `--minutes 10,10,2`: one value per size. */
function minutesPerSize(values: Record<string, unknown>, sizes: number): number[] {
  const raw = listFlag(values as Parameters<typeof listFlag>[0], "minutes");
  if (raw.length === 0) return new Array(sizes).fill(10);
  if (raw.length !== 1 && raw.length !== sizes) {
    throw new UsageError(`--minutes gives ${raw.length} values for ${sizes} sizes of --nodes`);
  }
  const minutes = raw.map((item) => {
    const m = Number(item);
    if (!(m >= 0.1 && m <= 1440)) {
      throw new UsageError(`--minutes ${JSON.stringify(item)} must be from 0.1 to 1440`);
    }
    return m;
  });
  return raw.length === 1 ? new Array(sizes).fill(minutes[0]) : minutes;
}

/** `--nodes 5,50,200`: each size checked like a single numeric flag. */
function nodeCounts(values: Record<string, unknown>): number[] {
  const raw = listFlag(values as Parameters<typeof listFlag>[0], "nodes");
  if (raw.length === 0) return [5];
  return raw.map((item) => {
    const n = Number(item);
    if (!Number.isInteger(n) || n < 3 || n > 1000) {
      throw new UsageError(
        `--nodes ${JSON.stringify(item)} must be a whole number from 3 to 1000`,
      );
    }
    return n;
  });
}

export const membershipBenchCommand: LeafCommand = {
  spec: {
    name: "bench membership",
    summary:
      "SWIM failure detection on the simulator: repeated crashes, detection time, false deaths, messages per node",
    flags: {
      nodes: {
        type: "string",
        help: "Cluster size, or a comma list of sizes run one after another (5,50,200)",
        valueName: "N[,N...]",
        default: "5",
      },
      loss: {
        type: "string",
        help: "Ingress loss probability on every node",
        valueName: "P",
        default: "0.2",
      },
      minutes: {
        type: "string",
        help: "Simulated minutes of crashes per size, or one value per size (10,10,2)",
        valueName: "M[,M...]",
        default: "10",
      },
      seed: { type: "string", help: "Simulator seed", valueName: "SEED", default: "1" },
      seeds: {
        type: "string",
        help: "Seeds per size (SEED, SEED+1, …), samples pooled: a steadier p99",
        valueName: "K",
        default: "1",
      },
      "wall-seconds": {
        type: "string",
        help: "Wall-clock budget per size (all its seeds); past it a run stops early and says so",
        valueName: "S",
        default: "300",
      },
      "probe-interval-ms": {
        type: "string",
        help: `Override the probe interval (default ${membershipDefaults.probeIntervalMs})`,
        valueName: "MS",
      },
      processes: {
        type: "boolean",
        help: "Measure on real hookd node processes on loopback instead (one size, --crashes)",
      },
      crashes: {
        type: "string",
        help: "With --processes: nodes SIGKILLed (one at a time, each restarted)",
        valueName: "K",
        default: "20",
      },
      json: {
        type: "boolean",
        help: 'Print one JSON object as the last stdout line ({"runs": [...]} for several sizes)',
      },
    },
  },
  async run(args) {
    const sizes = nodeCounts(args.values);
    const loss = numberFlag(args.values, "loss", 0.2, { min: 0, max: 0.9 });
    const minutesList = minutesPerSize(args.values, sizes.length);
    const seed = numberFlag(args.values, "seed", 1, { min: 0, max: 0xffffffff, integer: true });
    const wallSeconds = numberFlag(args.values, "wall-seconds", 300, { min: 1 });
    const seeds = numberFlag(args.values, "seeds", 1, { min: 1, max: 1000, integer: true });
    const probe = args.values["probe-interval-ms"] === undefined
      ? undefined
      : numberFlag(args.values, "probe-interval-ms", membershipDefaults.probeIntervalMs, {
        min: 10,
        integer: true,
      });
    if (args.values.processes === true) {
      if (sizes.length !== 1 || sizes[0]! > 16) {
        throw new UsageError("--processes runs one cluster size of at most 16 nodes");
      }
      const crashes = numberFlag(args.values, "crashes", 20, { min: 1, max: 1000, integer: true });
      const wallStart = performance.now();
      const result = await runMembershipProcessBench({
        nodes: sizes[0]!,
        lossProbability: loss,
        crashes,
        seed,
        log: (line) => console.error(line),
      });
      console.error(
        `membership processes: ${result.crashes} crashes of ${result.nodes} node processes ` +
          `(${((performance.now() - wallStart) / 1000).toFixed(1)} s wall)`,
      );
      if (args.values.json === true) console.log(JSON.stringify(result));
      else for (const [k, v] of Object.entries(result)) console.log(`${k.padEnd(32)} ${v}`);
      return result.undetected === 0 && result.not_rejoined === 0 ? EXIT_OK : EXIT_FAILURE;
    }
    const results: MembershipBenchResult[] = [];
    for (const [i, nodes] of sizes.entries()) {
      const minutes = minutesList[i]!;
      const wallStart = performance.now();
      const result = runMembershipBench({
        nodes,
        lossProbability: loss,
        minutes,
        seed,
        seeds,
        wallSecondsMax: wallSeconds,
        ...(probe === undefined ? {} : { probeIntervalMs: probe }),
        log: (line) => console.error(line),
      });
      console.error(
        `membership: ${nodes} nodes, ${result.seeds} seed(s), ${result.crashes} crashes in ${result.simulated_minutes} ` +
          `simulated min (${((performance.now() - wallStart) / 1000).toFixed(1)} s wall)` +
          (result.stopped_early ? `, stopped early by --wall-seconds ${wallSeconds}` : ""),
      );
      results.push(result);
      if (args.values.json !== true) {
        for (const [k, v] of Object.entries(result)) console.log(`${k.padEnd(32)} ${v}`);
        console.log("");
      }
    }
    if (args.values.json === true) {
      console.log(JSON.stringify(results.length === 1 ? results[0] : { runs: results }));
    }
    const failed = results.some((r) => r.undetected > 0 || r.not_rejoined > 0);
    return failed ? EXIT_FAILURE : EXIT_OK;
  },
};
