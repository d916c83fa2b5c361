/**
 * `hookd bench flood`: how large a flood of junk datagrams a node survives without its healthy
 * peers declaring it dead. Starts `--nodes` real `hookd node` processes (through
 * `LocalCluster`), waits until every node holds every other alive, then, for each rate of
 * `--rates` in turn, starts a flooder process that sends random datagrams (random bytes and
 * lengths, from one local socket, as a new user would try) at the first node for `--seconds`,
 * waits `--settle-seconds` for suspicions to run out, and records every membership event the
 * nodes printed meanwhile. A rate "survived" when no node was declared dead (or left).
 *
 * Owns the sweep and the flooder (`--role flooder`); the nodes are hookd's own, unchanged.
 */

import { encodeHex } from "../lib/hex.ts";
import { readLines } from "../lib/lines.ts";
import { round } from "../lib/round.ts";
import { booleanFlag, listFlag, numberFlag, stringFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { hookdCommand } from "../process/self_command.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
  waitUntil,
} from "../cluster/local_cluster.ts";
import { parseAddress } from "../transport/mod.ts";
import { udpSocketDrops } from "./udp_drops.ts";

/** The sweep's default rates: up to the ~120,000 datagrams/s that once killed a node. */
export const DEFAULT_RATES = [20_000, 40_000, 60_000, 80_000, 120_000];

export interface FloodStep {
  /** Datagrams per second asked of the flooder. */
  rate_offered: number;
  /** Datagrams per second it managed to send. */
  rate_sent: number;
  seconds: number;
  /** Nodes some node declared dead (or left) during the flood or the settling after it. */
  declared_dead: string[];
  /** Suspicions raised, of any node, by any node. */
  suspicions: number;
  /** Datagrams the kernel dropped at the flooded node's socket (its buffer was full). */
  target_kernel_drops: number | null;
  /** Whether every node held every other alive again before the next step. */
  recovered: boolean;
}

export interface FloodBenchResult {
  nodes: number;
  target: string;
  steps: FloodStep[];
  /** The highest rate of the sweep below the first one with a false death; null if none. */
  survived_rate_max: number | null;
  /** The lowest rate with a false death; null if every rate was survived. */
  first_failing_rate: number | null;
}

export interface FloodBenchOptions {
  nodes: number;
  rates: number[];
  seconds: number;
  settleSeconds: number;
  log: (line: string) => void;
}

export async function runFloodBench(options: FloodBenchOptions): Promise<FloodBenchResult> {
  const { log } = options;
  const specs = localNodeSpecs(options.nodes, "127.0.0.1", freeUdpPortRange(options.nodes));
  const ids = specs.map((s) => s.id);
  const target = specs[0]!;
  const events: NodeEventLine[] = [];
  const cluster = new LocalCluster({
    nodes: specs,
    clusterKey: encodeHex(crypto.getRandomValues(new Uint8Array(32))),
    onEvent: (e) => void events.push(e),
    onStderr: () => {},
  });
  const steps: FloodStep[] = [];
  try {
    cluster.startAll();
    if (!await waitUntil(() => cluster.everyViewHolds(ids, ids, "member-alive"), 60_000)) {
      throw new Error("the cluster did not converge within 60 s");
    }
    log(`flood bench: ${options.nodes} nodes up, flooding ${target.id} at ${target.address}`);
    const port = parseAddress(target.address);
    if (!port.ok) throw new Error(port.reason);
    for (const rate of options.rates) {
      const from = events.length;
      const dropsBefore = udpSocketDrops(port.value.port);
      const sent = await runFlooder(target.address, rate, options.seconds);
      await new Promise((resolve) => setTimeout(resolve, options.settleSeconds * 1000));
      const dropsAfter = udpSocketDrops(port.value.port);
      const during = events.slice(from);
      const dead = new Set(
        during.filter((e) => e.event === "member-dead" || e.event === "member-left")
          .map((e) => String(e.node)),
      );
      const recovered = await waitUntil(
        () => cluster.everyViewHolds(ids, ids, "member-alive"),
        30_000,
      );
      const step: FloodStep = {
        rate_offered: rate,
        rate_sent: round(sent, 0) ?? 0,
        seconds: options.seconds,
        declared_dead: [...dead].sort(),
        suspicions: during.filter((e) => e.event === "member-suspect").length,
        target_kernel_drops: dropsBefore === undefined || dropsAfter === undefined
          ? null
          : dropsAfter - dropsBefore,
        recovered,
      };
      steps.push(step);
      log(
        `flood ${rate}/s (sent ${step.rate_sent}/s): dead [${step.declared_dead}], ` +
          `${step.suspicions} suspicions, ${step.target_kernel_drops} kernel drops at the target`,
      );
      if (!recovered) break;
    }
  } finally {
    await cluster.stopAll();
  }
  const failing = steps.find((s) => s.declared_dead.length > 0);
  const survived = steps.filter((s) =>
    s.declared_dead.length === 0 && (failing === undefined || s.rate_offered < failing.rate_offered)
  );
  return {
    nodes: options.nodes,
    target: target.id,
    steps,
    survived_rate_max: survived.length > 0
      ? Math.max(...survived.map((s) => s.rate_offered))
      : null,
    first_failing_rate: failing?.rate_offered ?? null,
  };
}

/** Runs a flooder process; returns the rate it reached (datagrams per second). */
async function runFlooder(target: string, rate: number, seconds: number): Promise<number> {
  const child = hookdCommand([
    "bench",
    "flood",
    "--role",
    "flooder",
    "--target",
    target,
    "--rate",
    String(rate),
    "--seconds",
    String(seconds),
  ], { stdout: "piped", stderr: "inherit" }).spawn();
  let achieved = 0;
  for await (const line of readLines(child.stdout)) {
    const m = /^sent (\d+(?:\.\d+)?)$/.exec(line);
    if (m !== null) achieved = Number(m[1]);
  }
  const status = await child.status;
  if (!status.success) throw new Error(`flooder exited with ${status.code}`);
  return achieved;
}

/**
 * The flooder: random datagrams (1 to 1,400 random bytes) at `rate` per second for `seconds`
 * from one socket, sent in batches paced against the clock. Prints `sent <rate>` at the end.
 */
export async function flood(target: string, rate: number, seconds: number): Promise<void> {
  const to = parseAddress(target);
  if (!to.ok) throw new UsageError(`--target: ${to.reason}`);
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const addr: Deno.NetAddr = { transport: "udp", hostname: to.value.hostname, port: to.value.port };
  // A pool of random datagrams, reused: generating 120,000 a second would be the bottleneck.
  const pool = Array.from(
    { length: 256 },
    () => crypto.getRandomValues(new Uint8Array(1 + Math.floor(Math.random() * 1400))),
  );
  let sent = 0;
  const startMs = performance.now();
  const endMs = startMs + seconds * 1000;
  try {
    while (performance.now() < endMs) {
      const due = Math.min(rate * seconds, ((performance.now() - startMs) / 1000) * rate);
      const batch: Promise<number>[] = [];
      while (sent < due && batch.length < 512) {
        batch.push(conn.send(pool[sent % pool.length]!, addr).catch(() => 0));
        sent++;
      }
      await Promise.all(batch);
      if (sent >= due) await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    conn.close();
  }
  console.log(`sent ${(sent / ((performance.now() - startMs) / 1000)).toFixed(0)}`);
}

export const floodBenchCommand: LeafCommand = {
  spec: {
    name: "bench flood",
    summary:
      "Junk datagrams at one node of a local cluster: the rate it survives without a false death",
    flags: {
      nodes: { type: "string", valueName: "N", default: "3", help: "Node processes (2-9)" },
      rates: {
        type: "string",
        valueName: "R,R,...",
        help: "Flood rates to try in turn, datagrams per second " +
          `(default: ${DEFAULT_RATES.join(",")})`,
      },
      seconds: { type: "string", valueName: "S", default: "5", help: "Length of each flood" },
      "settle-seconds": {
        type: "string",
        valueName: "S",
        default: "5",
        help: "Time after each flood for suspicions to be refuted or confirmed",
      },
      json: { type: "boolean", help: "Print the result as one JSON line" },
      role: { type: "string", valueName: "ROLE", help: "Internal: 'flooder'" },
      target: { type: "string", valueName: "HOST:PORT", help: "Internal (flooder): where to" },
      rate: { type: "string", valueName: "N", help: "Internal (flooder): datagrams per second" },
    },
  },
  async run(parsed) {
    const v = parsed.values;
    const seconds = numberFlag(v, "seconds", 5, { min: 0.5, max: 600 });
    const role = stringFlag(v, "role");
    if (role === "flooder") {
      const target = stringFlag(v, "target");
      if (target === undefined) throw new UsageError("flooder: --target is required");
      await flood(target, numberFlag(v, "rate", 1000, { min: 1, max: 10_000_000 }), seconds);
      return EXIT_OK;
    }
    if (role !== undefined) throw new UsageError(`--role ${JSON.stringify(role)}: only 'flooder'`);
    const given = listFlag(v, "rates");
    const rates = (given.length > 0 ? given : DEFAULT_RATES.map(String)).map((r) => {
      const n = Number(r);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--rates: ${JSON.stringify(r)}`);
      return n;
    }).sort((a, b) => a - b);
    const result = await runFloodBench({
      nodes: numberFlag(v, "nodes", 3, { min: 2, max: 9, integer: true }),
      rates,
      seconds,
      settleSeconds: numberFlag(v, "settle-seconds", 5, { min: 0, max: 600 }),
      log: (line) => console.error(line),
    });
    if (booleanFlag(v, "json")) console.log(JSON.stringify(result));
    else console.log(JSON.stringify(result, null, 2));
    return result.first_failing_rate === null ? EXIT_OK : EXIT_FAILURE;
  },
};
