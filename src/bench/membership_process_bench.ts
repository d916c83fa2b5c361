/**
 * `hookd bench membership --processes`: failure detection measured on real `hookd node`
 * processes on loopback, where the simulator's figures (src/bench/membership_bench.ts) leave
 * out the real clock, the event loop and the kernel. SIGKILLs a random node, measures from the
 * kill until every other node has printed its `member-dead` line, restarts it on the same
 * address, waits until every view holds every node alive, and repeats. Any `member-dead` line
 * about a node that was running when it arrived counts as a false death, whoever printed it.
 *
 * Owns this loop and its report only; the processes are `LocalCluster`'s (src/cluster/).
 */

import { freeUdpPorts, LocalCluster, waitUntil } from "../cluster/local_cluster.ts";
import { membershipDefaults } from "../config/membership.ts";
import { encodeHex } from "../lib/hex.ts";
import { Sfc32 } from "../lib/rng.ts";
import { round } from "../lib/round.ts";
import { detectionBoundMs } from "../membership/suspicion_math.ts";

export interface MembershipProcessBenchOptions {
  nodes: number;
  /** Ingress loss injected in every node (`hookd node --loss`). */
  lossProbability: number;
  crashes: number;
  /** Picks the victims and seeds each node's loss. */
  seed: number;
  log?: (line: string) => void;
}

export interface MembershipProcessBenchResult {
  mode: "processes";
  nodes: number;
  loss: number;
  seed: number;
  crashes: number;
  /** Crashes not reported dead by every other node within 60 s. */
  undetected: number;
  /** Restarts after which not every view held every node alive within 60 s. */
  not_rejoined: number;
  false_dead: number;
  detection_samples: number;
  detection_p50_ms: number | null;
  detection_p99_ms: number | null;
  detection_max_ms: number | null;
  detection_bound_ms: number;
  detection_bound_unstretched_ms: number;
}

const DETECT_LIMIT_MS = 60_000;
const REJOIN_LIMIT_MS = 60_000;

export async function runMembershipProcessBench(
  options: MembershipProcessBenchOptions,
): Promise<MembershipProcessBenchResult> {
  const ids = Array.from({ length: options.nodes }, (_, i) => `n${i + 1}`);
  const addresses = freeUdpPorts(ids.length).map((p) => `127.0.0.1:${p}`);
  const rng = new Sfc32(options.seed);
  const key = new Uint8Array(24);
  crypto.getRandomValues(key);
  /** Node id → [start, end) performance.now() intervals when it was not running. */
  const down = new Map<string, Array<[number, number]>>();
  const deadAt = new Map<string, Map<string, number>>();
  const deaths: Array<{ observer: string; node: string; atMs: number }> = [];
  const cluster = new LocalCluster({
    nodes: ids.map((id, i) => ({ id, address: addresses[i]! })),
    clusterKey: encodeHex(key),
    extraArgs: (node) =>
      options.lossProbability > 0
        ? [
          "--loss",
          String(options.lossProbability),
          "--loss-seed",
          String(options.seed * 31 + Number(node.id.slice(1))),
        ]
        : [],
    onEvent: (line) => {
      if (line.event !== "member-dead") return;
      const node = String(line.node);
      const atMs = performance.now();
      deaths.push({ observer: line.observer, node, atMs });
      if (!deadAt.has(node)) deadAt.set(node, new Map());
      deadAt.get(node)!.set(line.observer, atMs);
    },
    onStderr: () => {},
  });
  const allAlive = () => cluster.everyViewHolds(ids, ids, "member-alive");
  const detectionMs: number[] = [];
  let undetected = 0;
  let notRejoined = 0;
  try {
    cluster.startAll();
    if (!await waitUntil(allAlive, 60_000)) throw new Error("the nodes never converged");
    for (let i = 0; i < options.crashes; i++) {
      const victim = ids[rng.int(ids.length)]!;
      const others = ids.filter((id) => id !== victim);
      deadAt.set(victim, new Map());
      const killedAt = performance.now();
      await cluster.kill(victim);
      const seen = () => others.every((o) => deadAt.get(victim)!.has(o));
      if (await waitUntil(seen, DETECT_LIMIT_MS, 5)) {
        detectionMs.push(Math.max(...others.map((o) => deadAt.get(victim)!.get(o)!)) - killedAt);
      } else {
        undetected++;
      }
      const restartedAt = performance.now();
      if (!down.has(victim)) down.set(victim, []);
      down.get(victim)!.push([killedAt, restartedAt]);
      cluster.start(victim);
      if (!await waitUntil(allAlive, REJOIN_LIMIT_MS)) notRejoined++;
      await new Promise((resolve) => setTimeout(resolve, 1_000 + rng.next() * 2_000));
      options.log?.(
        `membership processes: ${i + 1}/${options.crashes} crashes, last detection ${
          detectionMs.at(-1)?.toFixed(0) ?? "none"
        } ms`,
      );
    }
  } finally {
    await cluster.stopAll(2_000);
  }
  const wasDown = (node: string, atMs: number) =>
    (down.get(node) ?? []).some(([from, to]) => atMs >= from && atMs < to);
  const falseDead = deaths.filter((d) => !wasDown(d.node, d.atMs)).length;
  const sorted = [...detectionMs].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted.length === 0
      ? null
      : round(sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!, 1);
  return {
    mode: "processes",
    nodes: options.nodes,
    loss: options.lossProbability,
    seed: options.seed,
    crashes: options.crashes,
    undetected,
    not_rejoined: notRejoined,
    false_dead: falseDead,
    detection_samples: detectionMs.length,
    detection_p50_ms: pct(50),
    detection_p99_ms: pct(99),
    detection_max_ms: pct(100),
    detection_bound_ms: detectionBoundMs(options.nodes, membershipDefaults),
    detection_bound_unstretched_ms: detectionBoundMs(options.nodes, membershipDefaults, {
      awarenessScore: 0,
    }),
  };
}
