/**
 * `hookd bench membership`: failure detection on the simulator (virtual time, so ten simulated
 * minutes take seconds). Repeatedly crashes a random node, measures the time until every live
 * member holds it dead, restarts it with a higher incarnation, waits until every view is whole
 * again, and repeats; any node declared dead while it was up counts as false_dead.
 *
 * Owns the bench loop and its report only; the protocol is src/membership/ with the defaults of
 * src/config.ts unless a flag overrides one.
 */

import { type MembershipConfig, membershipDefaults } from "../config.ts";
import { numberFlag } from "../cli/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../cli/command.ts";
import { Sfc32 } from "../lib/rng.ts";
import { SimCluster } from "../sim/swim_cluster.ts";
import { detectionBoundMs } from "../membership/suspicion_math.ts";

export interface MembershipBenchOptions {
  nodes: number;
  lossProbability: number;
  minutes: number;
  seed: number;
  probeIntervalMs?: number;
  /** Further overrides of the membership defaults (for tuning sweeps). */
  config?: Partial<MembershipConfig>;
  /** Progress lines (stderr in the CLI). */
  log?: (line: string) => void;
}

export interface MembershipBenchResult {
  nodes: number;
  loss: number;
  minutes: number;
  seed: number;
  crashes: number;
  /** Crashes not confirmed dead everywhere within 60 s (counted, excluded from latencies). */
  undetected: number;
  /** Restarts after which the views were not whole again within 60 s (the next crash went ahead). */
  not_rejoined: number;
  false_dead: number;
  detection_p50_ms: number;
  detection_p99_ms: number;
  detection_max_ms: number;
  detection_bound_ms: number;
  messages_per_node_per_s: number;
  /** Suspicions (per observer) of a node that was up: refuted, or they would be false_dead. */
  false_suspicions: number;
}

const WARMUP_MS = 10_000;
const DETECT_LIMIT_MS = 60_000;
const REJOIN_LIMIT_MS = 60_000;

export function runMembershipBench(options: MembershipBenchOptions): MembershipBenchResult {
  const config: Partial<MembershipConfig> = {
    ...options.config,
    ...(options.probeIntervalMs === undefined ? {} : { probeIntervalMs: options.probeIntervalMs }),
  };
  const cluster = new SimCluster({
    seed: options.seed,
    nodes: options.nodes,
    lossProbability: options.lossProbability,
    config,
  });
  const rng = new Sfc32(options.seed ^ 0x5eed);
  let falseDead = 0;
  let falseSuspicions = 0;
  cluster.onEvent = (e) => {
    if (e.type === "member-dead" && cluster.isUp(e.nodeId)) falseDead++;
    if (e.type === "member-suspect" && cluster.isUp(e.nodeId)) falseSuspicions++;
  };
  cluster.runUntil(() => cluster.converged(), WARMUP_MS);
  cluster.runFor(Math.max(0, WARMUP_MS - cluster.nowMs));
  const startMs = cluster.nowMs;
  const sentAtStart = cluster.network.stats.sent;
  const endMs = startMs + options.minutes * 60_000;
  // A few hundred samples: kept exactly (an HDR histogram reports bucket edges, so its p99
  // could exceed the max it reports).
  const detectionMs: number[] = [];
  let crashes = 0;
  let undetected = 0;
  let notRejoined = 0;
  let lastLogMs = startMs;
  while (cluster.nowMs < endMs) {
    const ids = cluster.upNodeIds();
    const victim = ids[rng.int(ids.length)]!;
    const incarnation = cluster.core(victim).incarnation;
    cluster.crash(victim);
    crashes++;
    const crashedAt = cluster.nowMs;
    if (cluster.runUntil(() => cluster.allSeeDead(victim), DETECT_LIMIT_MS)) {
      detectionMs.push(cluster.nowMs - crashedAt);
    } else {
      undetected++;
    }
    // A restarted process starts above its previous incarnation (the node uses wall-clock
    // seconds for this).
    cluster.start(victim, incarnation + 1);
    if (!cluster.runUntil(() => cluster.converged(), REJOIN_LIMIT_MS)) notRejoined++;
    cluster.runFor(1_000 + rng.next() * 2_000);
    if (cluster.nowMs - lastLogMs >= 60_000) {
      lastLogMs = cluster.nowMs;
      options.log?.(
        `membership: ${((cluster.nowMs - startMs) / 60_000).toFixed(1)} simulated min, ` +
          `${crashes} crashes, p99 ${
            percentile(detectionMs, 99).toFixed(0)
          } ms, false_dead ${falseDead}`,
      );
    }
  }
  const elapsedS = (cluster.nowMs - startMs) / 1000;
  return {
    nodes: options.nodes,
    loss: options.lossProbability,
    minutes: options.minutes,
    seed: options.seed,
    crashes,
    undetected,
    not_rejoined: notRejoined,
    false_dead: falseDead,
    detection_p50_ms: round(percentile(detectionMs, 50)),
    detection_p99_ms: round(percentile(detectionMs, 99)),
    detection_max_ms: round(percentile(detectionMs, 100)),
    detection_bound_ms: detectionBoundMs(options.nodes, {
      ...membershipDefaults,
      ...config,
    }),
    messages_per_node_per_s: round(
      (cluster.network.stats.sent - sentAtStart) / options.nodes / elapsedS,
    ),
    false_suspicions: falseSuspicions,
  };
}

/** Nearest-rank percentile of `values` (0 when empty). */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

export const membershipBenchCommand: LeafCommand = {
  spec: {
    name: "bench membership",
    summary:
      "SWIM failure detection on the simulator: repeated crashes, detection time, false deaths",
    flags: {
      nodes: { type: "string", help: "Cluster size", valueName: "N", default: "5" },
      loss: {
        type: "string",
        help: "Ingress loss probability on every node",
        valueName: "P",
        default: "0.2",
      },
      minutes: {
        type: "string",
        help: "Simulated minutes of crashes",
        valueName: "M",
        default: "10",
      },
      seed: { type: "string", help: "Simulator seed", valueName: "SEED", default: "1" },
      "probe-interval-ms": {
        type: "string",
        help: `Override the probe interval (default ${membershipDefaults.probeIntervalMs})`,
        valueName: "MS",
      },
      json: { type: "boolean", help: "Print one JSON object as the last stdout line" },
    },
  },
  run(args) {
    const nodes = numberFlag(args.values, "nodes", 5, { min: 3, max: 1000, integer: true });
    const loss = numberFlag(args.values, "loss", 0.2, { min: 0, max: 0.9 });
    const minutes = numberFlag(args.values, "minutes", 10, { min: 0.1, max: 1440 });
    const seed = numberFlag(args.values, "seed", 1, { min: 0, max: 0xffffffff, integer: true });
    const probe = args.values["probe-interval-ms"] === undefined
      ? undefined
      : numberFlag(args.values, "probe-interval-ms", membershipDefaults.probeIntervalMs, {
        min: 10,
        integer: true,
      });
    const wallStart = performance.now();
    const result = runMembershipBench({
      nodes,
      lossProbability: loss,
      minutes,
      seed,
      ...(probe === undefined ? {} : { probeIntervalMs: probe }),
      log: (line) => console.error(line),
    });
    console.error(
      `membership: ${result.crashes} crashes in ${minutes} simulated min ` +
        `(${((performance.now() - wallStart) / 1000).toFixed(1)} s wall)`,
    );
    if (args.values.json === true) {
      console.log(JSON.stringify(result));
    } else {
      for (const [k, v] of Object.entries(result)) console.log(`${k.padEnd(24)} ${v}`);
    }
    return Promise.resolve(
      result.undetected === 0 && result.not_rejoined === 0 ? EXIT_OK : EXIT_FAILURE,
    );
  },
};
