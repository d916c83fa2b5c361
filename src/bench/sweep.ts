/**
 * `hookd bench --rates …` and `hookd bench --loss … --rate R` (also `hookd bench sweep …`):
 * the write-up's two experiments, run its way so the figures read side by side. Separate
 * processes on loopback: N `hookd node`s with fresh data directories, one `hookd sink`, and a
 * load-generator process (`hookd bench generator`) — none of them this harness.
 *
 * - Rate sweep: one cluster; each step offers `rate` jobs/s open loop for `--duration` s,
 *   spread round-robin over every node (HTTP `POST /v1/jobs`, or `--submit-via udp`), latency
 *   from each job's scheduled time to its receipt at the sink (no coordinated omission).
 * - Loss sweep: a fresh cluster per step, with ingress loss `--loss` on every node, at
 *   `--rate` (200) jobs/s.
 * - `--fanout K` (either sweep, HTTP submits): each cluster first gets K endpoints taking one
 *   event type, each at its own path on the sink (fanout_endpoints.ts), and the generator
 *   sends events of that type (`POST /v1/events`) instead of jobs: the rates are events/s, and
 *   each accepted event is to reach the sink K times, once per path. Its rows count events
 *   offered and accepted, and jobs made, delivered, lost and duplicated, with latency from the
 *   event's scheduled submit to each job's receipt (sweep_row.ts).
 * - `--skeleton` (HTTP submits, loss 0): the same steps against the skeleton cluster
 *   (skeleton_cluster.ts, skeleton_node.ts), which does a job's necessary work and nothing
 *   else; its rows (`nodes_kind` "skeleton") are the floor hookd's rows are read against.
 *
 * After each step the backlog drains (bounded by `--drain-limit`) before the next step, so
 * one step's backlog does not pollute the next one's latencies; a row says when it could not.
 * Each row (`SweepRow`) joins what the generator had acknowledged with the sink's receipts
 * (first arrival and duplicates per path and webhook-id), and divides the nodes' /metrics deltas and
 * every process's CPU (/proc/<pid>/stat) over the step's window by the jobs it accepted.
 * `lost` is checked after the cluster has drained: accepted and never received.
 *
 * Owns the harness: processes, phases and joins. Rows and their notes are sweep_row.ts;
 * reports are sweep_report.ts (CSV, markdown) and sweep_charts.ts (SVG).
 */

import {
  booleanFlag,
  type CommandSpec,
  listFlag,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { hookdCommand } from "../process/self_command.ts";
import { encodeHex } from "../lib/hex.ts";
import { readLines } from "../lib/lines.ts";
import { round } from "../lib/round.ts";
import {
  cpuMsOf,
  loadAverage,
  mainThreadWakeupsOf,
  nodeMemoryMb,
  scrapeAll,
  startBenchNodes,
  type SweepNodes,
  threadCpuBetween,
  threadCpuMsOf,
  toggleProfiles,
  waitForProfiles,
  windowCounters,
} from "./bench_cluster.ts";
import { startSkeletonNodes } from "./skeleton_cluster.ts";
import {
  type AcceptedSubmit,
  GeneratorProcess,
  readIdsFile,
} from "../process/generator_protocol.ts";
import { RECEIPT_IDS_PER_REQUEST_MAX, type SinkReceipt, type SinkStats } from "../process/sink.ts";
import { generatorRuntime } from "./load_generator.ts";
import type { Runtime } from "../lib/runtime.ts";
import { writeSweepReports } from "./sweep_report.ts";
import { memoryFilesystemRefusal, probeWalFilesystem, SET_TMPDIR } from "./filesystem.ts";
import {
  backlogIn,
  jobReceiptIndex,
  onSweepClock,
  type StepRecord,
  type SweepRow,
  sweepRow,
  type SweepRowOptions,
} from "./sweep_row.ts";
import { measureClockOffset } from "./clock_offset.ts";
import {
  createFanoutEndpoints,
  FANOUT_EVENT_TYPE,
  FANOUT_MAX,
  fanoutPaths,
} from "./fanout_endpoints.ts";
import { SINK_JOB_PATH } from "../process/sink.ts";

/**
 * Every fresh cluster first takes this many seconds of jobs at `WARMUP_RATE`, drained and not
 * counted: a first step that pays for JIT compilation, cold keep-alive connections and the
 * first transport sessions measures the start, not the steady state.
 *
 * V8 tiers a function up by its own call count: Maglev at 400, TurboFan at 3,000
 * (`--invocation-count-for-turbofan`), and the nodes share the submits. With 5 s at 100/s
 * (100 submits a node) every node's per-submit code reached Maglev inside the first measured
 * step, all five at the same job count: some 120 compilations a node within half a second, V8's
 * workers at up to 0.9 of the two cores, and that second's p99 at 90–118 ms; 30 s fixed that
 * (bench/results/session31/jit_wave, warmup_ab). At 100/s, 30 s is 600 submits a node: the
 * TurboFan wave then came inside the first step, 140 compilations a node over an 800/s step
 * (bench/results/session45/tail800/tiers_timeline_800.txt), and at 200/s the step's CPU a job
 * was 6–17 % above a cluster warmed 180 s, its V8 workers' time twice as high
 * (bench/results/session45/warmup/). Hence 500/s: 15,000 jobs, 3,000 through each of five
 * nodes' HTTP path. More nodes, or events to K endpoints (sent at `WARMUP_RATE`/K a second),
 * give each node fewer: raise `--warmup` or `--warmup-rate` to match.
 */
export const WARMUP_S_DEFAULT = 30;
/**
 * Jobs/s of the warm-up: about a sixth of what the 2-core machine accepted in session 45's
 * rate sweep (2,889 a second at 3,200 asked), so the warm-up does not load it.
 */
export const WARMUP_RATE = 500;

const spec: CommandSpec = {
  name: "bench sweep",
  summary: "The write-up's rate and loss sweeps (also: hookd bench --rates … | --loss …)",
  flags: {
    rates: {
      type: "string",
      valueName: "R1,R2,…",
      help: "Rate sweep: offered jobs/s of each step",
    },
    loss: {
      type: "string",
      valueName: "P1,P2,…",
      help: "Loss sweep: ingress loss on every node at each step (a fresh cluster per step)",
    },
    rate: {
      type: "string",
      valueName: "R",
      help: "Offered jobs/s of the loss sweep",
      default: "200",
    },
    duration: { type: "string", valueName: "S", help: "Seconds of each step", default: "20" },
    warmup: {
      type: "string",
      valueName: "S",
      help: "Seconds of --warmup-rate jobs/s on each fresh cluster before its first step, not " +
        "counted (JIT, connections); 0 for none",
      default: String(WARMUP_S_DEFAULT),
    },
    "warmup-rate": {
      type: "string",
      valueName: "R",
      help: "Jobs/s of the warm-up (events/s: R / --fanout)",
      default: String(WARMUP_RATE),
    },
    nodes: { type: "string", valueName: "N", help: "Node processes", default: "5" },
    fanout: {
      type: "string",
      valueName: "K",
      help: `Send events (POST /v1/events) of one type to K endpoints (1-${FANOUT_MAX}) ` +
        "instead of jobs: rates are events/s, rows count events and jobs (HTTP submits)",
    },
    "submit-via": {
      type: "string",
      valueName: "HOW",
      help: "http, udp (hookd's transport, so loss hits the submit too), or http,udp for both",
      default: "http",
    },
    "compare-unbatched": {
      type: "boolean",
      help: "Run the sweep again with the WAL in one-fsync-per-append mode",
    },
    "latencies-out": {
      type: "string",
      help:
        "Write one line per accepted job to this TSV, started afresh (step, rate, loss, id, scheduled, acknowledged and received epoch ms, received empty if never; sent epoch ms, later than scheduled when the generator was late; the node that took the submit): where a step's tail comes from",
      valueName: "FILE",
    },
    out: {
      type: "string",
      valueName: "DIR",
      help: "Write CSV, a markdown table and SVG charts here",
    },
    "drain-limit": {
      type: "string",
      valueName: "S",
      help: "Longest wait for the backlog to drain after a step",
      default: "30",
    },
    grace: {
      type: "string",
      valueName: "S",
      help: "A job received this long after its step ended still counts as completed",
      default: "2",
    },
    "payload-bytes": {
      type: "string",
      valueName: "N",
      help: "Bytes of each job's JSON payload",
      default: "128",
    },
    "in-flight": {
      type: "string",
      valueName: "N",
      help: "Most submits the generator keeps waiting for answers",
      default: "1024",
    },
    "datagram-bytes": {
      type: "string",
      valueName: "N",
      help: "Largest datagram the nodes build (default: the transport's)",
    },
    skeleton: {
      type: "boolean",
      help: "Run the steps against the skeleton cluster instead of hookd: a job's necessary " +
        "work and nothing else (hookd bench skeleton-node), the runtime's floor for the same " +
        "path; HTTP submits at loss 0 only",
    },
    "allow-tmpfs": {
      type: "boolean",
      help: "Run even when the nodes' WALs would land on a memory filesystem (tmpfs), where " +
        "fsync is free; every row's note then says so",
    },
    json: { type: "boolean", help: "Print every row as one JSON array on the last stdout line" },
  },
};

const log = (line: string) => console.error(`bench sweep: ${line}`);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const wallNow = () => performance.timeOrigin + performance.now();
/** The last wait for stragglers before `lost` is judged (a retry backs off up to 10 s). */
const FINAL_DRAIN_MS = 60_000;
/** How often a drain asks the sink about the ids still missing. */
const DRAIN_POLL_MS = 200;
/** Longest the `--fanout` endpoints may take to be created and listed by every node, ms. */
const FANOUT_SETUP_LIMIT_MS = 60_000;

/**
 * One job as the sink knows it: the `webhook-id` it carries (the job's id, or its event's) and
 * the path it is delivered to (`/hook`, or its endpoint's `/hook/k`).
 */
export interface JobKey {
  readonly id: string;
  readonly path: string;
}

/** The jobs of accepted submit `id`: one at `/hook`, or one per endpoint path of an event. */
export function jobKeysOf(id: string, paths: readonly string[]): JobKey[] {
  return paths.map((path) => ({ id, path }));
}

/**
 * Waits until the sink has received every id of `ids`, or `deadlineMs` passes; returns the
 * ids still missing. It asks about these very ids (only those still missing, each poll): a
 * count of the sink's receipts would also count jobs the generator never saw accepted (a
 * submit that timed out but was stored and delivered), and could end the wait early.
 */
export async function waitForReceipts<T>(
  ids: readonly T[],
  receipts: (ids: readonly T[]) => Promise<ReadonlyArray<SinkReceipt | null>>,
  options: { readonly deadlineMs: number; readonly pollMs: number; readonly runtime: Runtime },
): Promise<T[]> {
  let missing = [...ids];
  // Bounded by the deadline: each pass waits pollMs (> 0) of the runtime's clock.
  for (;;) {
    if (missing.length === 0) return missing;
    const got = await receipts(missing);
    missing = missing.filter((_, i) => got[i] === null || got[i] === undefined);
    if (missing.length === 0 || options.runtime.nowMs() >= options.deadlineMs) return missing;
    await new Promise<void>((resolve) => options.runtime.setTimer(options.pollMs, resolve));
  }
}

export interface SweepOptions {
  sweep: "rate" | "loss";
  rates: number[];
  losses: number[];
  durationS: number;
  /** Seconds of `warmupRate` jobs/s before the first step of each cluster, not counted. */
  warmupS: number;
  /** Jobs/s of the warm-up (`WARMUP_RATE` unless `--warmup-rate`). */
  warmupRate: number;
  nodes: number;
  /** Endpoints each event goes to (`--fanout`): events instead of jobs. Absent: jobs. */
  fanout?: number;
  via: Array<"http" | "udp">;
  walModes: Array<"batched" | "per-append">;
  drainLimitS: number;
  graceS: number;
  payloadBytes: number;
  inFlight: number;
  datagramBytes?: number;
  /**
   * Profile every node over each step's window (start to drained: what its CPU figures
   * cover), one `.cpuprofile` per node and step written here (`hookd node --cpu-profile-dir`,
   * toggled by SIGUSR2; `hookd bench cost`).
   */
  cpuProfileDir?: string;
  /**
   * As `cpuProfileDir`, for a sample of every allocation (`hookd node --alloc-profile-dir`):
   * one `.heapprofile` per node and step.
   */
  allocProfileDir?: string;
  /**
   * Drive the skeleton cluster (skeleton_node.ts) instead of hookd's nodes: what the same
   * steps cost when the nodes do a job's necessary work and nothing else.
   */
  skeleton?: boolean;
  /** Write each accepted job's times here as TSV (`latencyLines`), for tail analysis. */
  latenciesOut?: string;
  /**
   * Run even when the nodes' WALs would be on a memory filesystem (`--allow-tmpfs`); without
   * it `runSweep` refuses (`MemoryFilesystemRefused`), as `hookd bench wal` does.
   */
  allowTmpfs?: boolean;
}

/** `runSweep` would put the nodes' WALs on a memory filesystem without `allowTmpfs`. */
export class MemoryFilesystemRefused extends Error {
  override name = "MemoryFilesystemRefused";
}

export const sweepCommand: LeafCommand = {
  spec,
  async run(args) {
    const options = sweepOptionsFromFlags(args.values);
    const out = stringFlag(args.values, "out");
    const json = booleanFlag(args.values, "json");
    const started = new Date();
    const loadBefore = await loadAverage();
    let rows: SweepRow[];
    try {
      rows = await runSweep(options);
    } catch (error) {
      log(
        error instanceof MemoryFilesystemRefused
          ? error.message
          : `failed: ${error instanceof Error ? error.stack : String(error)}`,
      );
      return EXIT_FAILURE;
    }
    const loadAfter = await loadAverage();
    if (out !== undefined) {
      const files = await writeSweepReports(out, rows, {
        command: `hookd bench ${Deno.args.slice(1).join(" ")}`.trim(),
        started: started.toISOString(),
        finished: new Date().toISOString(),
        machine: await machineDescription(),
        loadBefore,
        loadAfter,
      });
      log(`wrote ${files.join(", ")}`);
    }
    for (const row of rows) {
      const events = row.submits === "events";
      log(
        `${row.sweep} ${row.nodes_kind === "skeleton" ? "skeleton " : ""}` +
          `${row.submit_via}/${row.wal_sync} rate ${row.rate}` +
          `${events ? ` events/s to ${row.fanout} endpoints` : ""} loss ${row.loss}: ` +
          `offered ${row.offered}/${row.asked} accepted ${row.accepted}` +
          `${events ? ` (${row.jobs_made} jobs)` : ""} completed ${row.completed} ` +
          `lost ${row.lost} dup ${row.duplicates} p50 ${row.p50_ms} p99 ${row.p99_ms} ms` +
          (row.rejected > 0
            ? `; ${row.rejected} refused, answered in p99 ${row.refusal_p99_ms} ms`
            : "") +
          (row.note !== "" ? ` — ${row.note}` : ""),
      );
    }
    console.log(json ? JSON.stringify(rows) : JSON.stringify(rows, null, 2));
    return rows.every((r) => r.lost === 0) ? EXIT_OK : EXIT_FAILURE;
  },
};

export function sweepOptionsFromFlags(values: Record<string, unknown>): SweepOptions {
  const v = values as Parameters<typeof stringFlag>[0];
  const ratesRaw = listFlag(v, "rates");
  const lossRaw = listFlag(v, "loss");
  if ((ratesRaw.length > 0) === (lossRaw.length > 0)) {
    throw new UsageError("give exactly one of --rates R1,R2,… or --loss P1,P2,…");
  }
  const number = (raw: string, name: string, min: number, max: number): number => {
    const x = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(x) || x < min || x > max) {
      throw new UsageError(`--${name}: ${JSON.stringify(raw)} is not a number in [${min}, ${max}]`);
    }
    return x;
  };
  const via = listFlag(v, "submit-via");
  for (const x of via) {
    if (x !== "http" && x !== "udp") throw new UsageError(`--submit-via: http or udp, got ${x}`);
  }
  const datagram = stringFlag(v, "datagram-bytes");
  const fanout = stringFlag(v, "fanout") === undefined
    ? undefined
    : numberFlag(v, "fanout", 1, { min: 1, max: FANOUT_MAX, integer: true });
  if (fanout !== undefined && via.includes("udp")) {
    throw new UsageError("--fanout sends events, which go over HTTP only: leave --submit-via udp");
  }
  const skeleton = booleanFlag(v, "skeleton");
  const latenciesOut = stringFlag(v, "latencies-out");
  if (skeleton) {
    // The skeleton has no transport of hookd's, no endpoints, one WAL mode, and no
    // retransmission: a lost datagram would lose its job's vote, not measure a floor.
    if (via.some((x) => x !== "http")) throw new UsageError("--skeleton takes HTTP submits only");
    if (fanout !== undefined) throw new UsageError("--skeleton has no endpoints: leave --fanout");
    if (booleanFlag(v, "compare-unbatched")) {
      throw new UsageError("--skeleton has one WAL mode: leave --compare-unbatched");
    }
    if (lossRaw.some((p) => Number(p) !== 0)) {
      throw new UsageError("--skeleton runs at loss 0 only: it never retransmits");
    }
  }
  return {
    sweep: ratesRaw.length > 0 ? "rate" : "loss",
    rates: ratesRaw.length > 0
      ? ratesRaw.map((r) => number(r, "rates", 1, 1_000_000))
      : [numberFlag(v, "rate", 200, { min: 1, max: 1_000_000 })],
    losses: lossRaw.length > 0 ? lossRaw.map((p) => number(p, "loss", 0, 0.9)) : [0],
    durationS: numberFlag(v, "duration", 20, { min: 0.5, max: 3600 }),
    warmupS: numberFlag(v, "warmup", WARMUP_S_DEFAULT, { min: 0, max: 600 }),
    warmupRate: numberFlag(v, "warmup-rate", WARMUP_RATE, { min: 1, max: 100_000 }),
    nodes: numberFlag(v, "nodes", 5, { min: 1, max: 15, integer: true }),
    ...(fanout !== undefined ? { fanout } : {}),
    via: (via.length > 0 ? via : ["http"]) as Array<"http" | "udp">,
    walModes: booleanFlag(v, "compare-unbatched") ? ["batched", "per-append"] : ["batched"],
    drainLimitS: numberFlag(v, "drain-limit", 30, { min: 0, max: 3600 }),
    graceS: numberFlag(v, "grace", 2, { min: 0, max: 600 }),
    payloadBytes: numberFlag(v, "payload-bytes", 128, { min: 16, max: 1_000_000, integer: true }),
    inFlight: numberFlag(v, "in-flight", 1024, { min: 1, max: 100_000, integer: true }),
    ...(datagram !== undefined
      ? { datagramBytes: numberFlag(v, "datagram-bytes", 1400, { min: 512, max: 65000 }) }
      : {}),
    ...(skeleton ? { skeleton } : {}),
    ...(latenciesOut !== undefined ? { latenciesOut } : {}),
    ...(booleanFlag(v, "allow-tmpfs") ? { allowTmpfs: true } : {}),
  };
}

/** Runs every variant (submit path × WAL mode) of the sweep; returns every row. */
export async function runSweep(options: SweepOptions): Promise<SweepRow[]> {
  // Each cluster's WALs go under the system's temp directory (`TMPDIR`): ask what it is first.
  const placement = await probeWalFilesystem();
  log(placement.description);
  if (placement.memory !== undefined && options.allowTmpfs !== true) {
    throw new MemoryFilesystemRefused(memoryFilesystemRefusal(placement, SET_TMPDIR));
  }
  if (placement.warning !== undefined) log(`WARNING: ${placement.warning}`);
  const clusterOptions: ClusterOptions = {
    ...options,
    walFs: placement.fsType,
    ...(placement.warning !== undefined ? { walFsWarning: placement.warning } : {}),
  };
  if (options.latenciesOut !== undefined) {
    await Deno.writeTextFile(options.latenciesOut, LATENCY_TSV_HEADER);
  }
  const sink = await SinkProcess.start();
  const rows: SweepRow[] = [];
  try {
    for (const walSync of options.walModes) {
      for (const via of options.via) {
        if (options.sweep === "rate") {
          rows.push(...await runCluster(clusterOptions, sink, via, walSync, 0, options.rates));
        } else {
          for (const loss of options.losses) {
            rows.push(
              ...await runCluster(clusterOptions, sink, via, walSync, loss, options.rates),
            );
          }
        }
      }
    }
  } finally {
    await sink.close();
  }
  return rows;
}

/** A sweep's options with what `runSweep` learned of where the WALs go. */
type ClusterOptions = SweepOptions & Pick<SweepRowOptions, "walFs" | "walFsWarning">;

/** One cluster, its generator, and its steps (every rate at one loss). */
async function runCluster(
  options: ClusterOptions,
  sink: SinkProcess,
  via: "http" | "udp",
  walSync: "batched" | "per-append",
  loss: number,
  rates: readonly number[],
): Promise<SweepRow[]> {
  const clusterKey = encodeHex(crypto.getRandomValues(new Uint8Array(24)));
  const dataRoot = await Deno.makeTempDir({ prefix: "hookd-sweep-" });
  const idsDir = `${dataRoot}/ids`;
  await Deno.mkdir(idsDir);
  let nodes: SweepNodes | undefined;
  let generator: GeneratorProcess | undefined;
  const label = `${options.skeleton === true ? "skeleton " : ""}${via}/${walSync} loss ${loss}`;
  try {
    log(`${label}: starting ${options.nodes} nodes`);
    nodes = options.skeleton === true
      ? await startSkeletonNodes({
        nodes: options.nodes,
        clusterKey,
        dataRoot,
        ...(options.datagramBytes !== undefined ? { datagramBytes: options.datagramBytes } : {}),
        log,
      })
      : await startBenchNodes({
        nodes: options.nodes,
        clusterKey,
        dataRoot,
        extraArgs: [
          "--allow-private-targets",
          // The sink answers at once; a retry only follows a timeout or a refused connection.
          "--retry-schedule",
          "200,1000,5000,10000",
          "--loss",
          String(loss),
          "--wal-sync",
          walSync,
          ...(options.datagramBytes !== undefined
            ? ["--datagram-bytes", String(options.datagramBytes)]
            : []),
          ...(options.cpuProfileDir !== undefined
            ? ["--cpu-profile-dir", options.cpuProfileDir]
            : []),
          ...(options.allocProfileDir !== undefined
            ? ["--alloc-profile-dir", options.allocProfileDir]
            : []),
        ],
        log,
      });
    // Where each accepted submit's jobs arrive: `/hook`, or each bench endpoint's own path.
    const paths = options.fanout === undefined ? [SINK_JOB_PATH] : fanoutPaths(options.fanout);
    if (options.fanout !== undefined) {
      await createFanoutEndpoints({
        httpUrls: nodes.httpUrls,
        sinkUrl: sink.url,
        fanout: options.fanout,
        limitMs: FANOUT_SETUP_LIMIT_MS,
        log: (line) => log(`${label}: ${line}`),
      });
    }
    generator = GeneratorProcess.start(
      [
        "--via",
        via,
        "--targets",
        (via === "http" ? nodes.httpUrls : nodes.addresses).join(","),
        ...(options.fanout === undefined
          ? ["--job-url", `${sink.url}${SINK_JOB_PATH}`]
          : ["--event-type", FANOUT_EVENT_TYPE]),
        "--payload-bytes",
        String(options.payloadBytes),
        "--ids-dir",
        idsDir,
        "--in-flight",
        String(options.inFlight),
        ...(options.datagramBytes !== undefined
          ? ["--datagram-bytes", String(options.datagramBytes)]
          : []),
      ],
      { HOOKD_CLUSTER_KEY: clusterKey },
      log,
    );
    const pids: Record<string, number> = { generator: generator.pid, sink: sink.pid };
    for (const id of nodes.ids) pids[id] = nodes.cluster.pid(id)!;
    // The node processes alone: profiles, main-thread wake-ups and CPU by thread are theirs.
    const nodePidsById = new Map(nodes.ids.map((id) => [id, pids[id]!] as const));
    const nodePids = [...nodePidsById.values()];

    const steps: StepRecord[] = [];
    const rows: SweepRow[] = [];
    /** Jobs of the accepted submits so far that the sink has not received yet. */
    let pending: JobKey[] = [];
    const receiptsOf = (keys: readonly JobKey[]) => sink.receipts(keys);
    const jobsOf = (ids: ReadonlyArray<AcceptedSubmit>) =>
      ids.flatMap(([id]) => jobKeysOf(id, paths));
    const unit = options.fanout === undefined ? "jobs/s" : "events/s";
    if (options.warmupS > 0) {
      // The same jobs/s as a warm-up of plain jobs: an event is `fanout` jobs.
      const warmRate = Math.max(1, Math.round(options.warmupRate / (options.fanout ?? 1)));
      log(`${label}: warm-up: ${warmRate} ${unit} for ${options.warmupS} s, not counted`);
      const warm = await generator.run(
        { op: "open", step: "warmup", rate: warmRate, seconds: options.warmupS },
        () => {},
      );
      const left = await waitForReceipts(
        jobsOf(await readIdsFile(warm.ids_file)),
        receiptsOf,
        {
          deadlineMs: wallNow() + options.drainLimitS * 1000,
          pollMs: DRAIN_POLL_MS,
          runtime: generatorRuntime,
        },
      );
      log(
        `${label}: warm-up: ${warm.accepted} of ${warm.offered} accepted, ` +
          `${left.length} not delivered yet`,
      );
    }
    for (const [index, rate] of rates.entries()) {
      const step = `s${index + 1}-r${rate}`;
      log(
        `${label}: step ${index + 1}/${rates.length}: ${rate} ${unit} for ${options.durationS} s`,
      );
      const scrape0 = await scrapeAll(nodes.httpUrls);
      const profiling = options.cpuProfileDir !== undefined ||
        options.allocProfileDir !== undefined;
      if (profiling) toggleProfiles(nodePidsById, log);
      const cpu0 = await cpuMsOf(Object.values(pids));
      const wakeups0 = await mainThreadWakeupsOf(nodePids);
      const threads0 = await threadCpuMsOf(nodePids);
      // The latencies join the generator's times with the sink's: both onto our clock.
      const running = generator;
      const sinkClock = await measureClockOffset(() => sink.clock(), wallNow);
      const generatorClock = await measureClockOffset(() => running.clock(), wallNow);
      const startMs = wallNow();
      const report = await generator.run(
        { op: "open", step, rate, seconds: options.durationS },
        (p) => {
          void sink.stats().then((s) =>
            log(
              `${label} rate ${rate}: ${p.elapsed_s} s offered ${p.offered} accepted ` +
                `${p.accepted} rejected ${p.rejected} errors ${p.errors}; sink has ` +
                `${s.unique} in all`,
            )
          ).catch(() => {});
        },
      );
      const stepEndMs = startMs + options.durationS * 1000;
      const graceEndMs = stepEndMs + options.graceS * 1000;
      const ids = await readIdsFile(report.ids_file);
      // Checked now, not when the latency lines are written after the whole run has drained.
      const nodeCount = nodes.ids.length;
      const strayTarget = ids.find(([, , , , target]) => target >= nodeCount);
      if (strayTarget !== undefined) {
        throw new Error(
          `the generator logged ${strayTarget[0]} as sent to target ${strayTarget[4]} of ` +
            `${nodeCount}`,
        );
      }
      // The grace, then the drain: every job accepted so far reaches the sink (bounded). By
      // id: the sink's count of ids would also count jobs the generator never saw accepted.
      const graceLeft = graceEndMs - wallNow();
      if (graceLeft > 0) await sleep(graceLeft);
      const drainStart = wallNow();
      pending = await waitForReceipts([...pending, ...jobsOf(ids)], receiptsOf, {
        deadlineMs: drainStart + options.drainLimitS * 1000,
        pollMs: DRAIN_POLL_MS,
        runtime: generatorRuntime,
      });
      const undrained = pending.length;
      const windowEndMs = wallNow();
      const scrape1 = await scrapeAll(nodes.httpUrls);
      const { counters, silent } = windowCounters(scrape0, scrape1, nodes.ids);
      const cpu1 = await cpuMsOf(Object.values(pids));
      const wakeups1 = await mainThreadWakeupsOf(nodePids);
      const threads1 = await threadCpuMsOf(nodePids);
      if (profiling) {
        toggleProfiles(nodePidsById, log);
        const count = nodes.ids.length * (index + 1);
        if (options.cpuProfileDir !== undefined) {
          await waitForProfiles(options.cpuProfileDir, ".cpuprofile", count, log);
        }
        if (options.allocProfileDir !== undefined) {
          await waitForProfiles(options.allocProfileDir, ".heapprofile", count, log);
        }
      }
      const cpuMs: Record<string, number> = {};
      for (const [name, pid] of Object.entries(pids)) {
        const a = cpu0.get(pid);
        const b = cpu1.get(pid);
        if (a !== undefined && b !== undefined) cpuMs[name] = b - a;
      }
      steps.push({
        step,
        rate,
        report,
        startMs,
        stepEndMs,
        graceEndMs,
        windowS: (windowEndMs - startMs) / 1000,
        counters,
        cpuMs,
        nodeWakeups: wakeupsBetween(wakeups0, wakeups1),
        nodeThreadCpuMs: threads0.size > 0 && threads1.size > 0
          ? threadCpuBetween(threads0, threads1, nodePids)
          : null,
        undrained,
        drainS: (windowEndMs - drainStart) / 1000,
        silent,
        ids,
        memory: nodeMemoryMb(scrape1),
        sinkClock,
        generatorClock,
      });
      if (nodes.unexpectedExits.length > 0) {
        throw new Error(`a node exited during the sweep: ${nodes.unexpectedExits.join("; ")}`);
      }
    }
    // `lost` is judged once the whole run drained: a final, longer wait for stragglers.
    await waitForReceipts(pending, receiptsOf, {
      deadlineMs: wallNow() + Math.max(FINAL_DRAIN_MS, options.drainLimitS * 1000),
      pollMs: DRAIN_POLL_MS,
      runtime: generatorRuntime,
    });
    // Every job of every accepted submit of every step, joined with the sink's receipts once
    // all drained: `paths.length` per submit, in the order sweepRow reads them.
    const receipts = onSweepClock(
      steps,
      await sink.receipts(steps.flatMap((s) => jobsOf(s.ids))),
      paths.length,
    );
    let offset = 0;
    const windows = steps.map((s) => ({ from: s.startMs, to: s.graceEndMs }));
    for (const [index, s] of steps.entries()) {
      const jobs = s.ids.length * paths.length;
      const mine = receipts.slice(offset, offset + jobs);
      offset += jobs;
      rows.push(
        sweepRow(
          options,
          { via, walSync, loss },
          s,
          mine,
          backlogIn(steps, receipts, index, windows, paths.length),
        ),
      );
      if (options.latenciesOut !== undefined) {
        const text = latencyLines(s, mine, paths.length, loss, nodes.ids).join("");
        await Deno.writeTextFile(options.latenciesOut, text, { append: true });
      }
    }
    return rows;
  } finally {
    await generator?.close().catch(() => {});
    await nodes?.cluster.stopAll(15_000).catch(() => {});
    await Deno.remove(dataRoot, { recursive: true }).catch(() => {});
  }
}

/** The header of `--latencies-out`'s TSV (`runSweep` writes it first, truncating the file). */
export const LATENCY_TSV_HEADER =
  "step\trate\tloss\tid\tscheduled_ms\tacked_ms\treceived_ms\tsent_ms\tnode\n";

/**
 * One TSV line per job of a step's accepted submits (an event's jobs one each): the raw
 * times a row's percentiles summarize, all on the sweep's clock (the generator's moved by its
 * measured offset; `receipts` moved already, `onSweepClock`), so a tail can be placed in time,
 * told apart from the generator's own lateness (`sent_ms` after `scheduled_ms`) and laid at the
 * node that took the submit (`targets`: node ids in the generator's `--targets` order).
 * `receipts` as `sweepRow` takes them.
 */
export function latencyLines(
  s: Pick<StepRecord, "step" | "rate" | "ids" | "generatorClock">,
  receipts: ReadonlyArray<SinkReceipt | null>,
  fanout: number,
  loss: number,
  targets: readonly string[],
): string[] {
  const lines: string[] = [];
  // The generator's times onto the sweep's clock, where the receipts are already.
  const g = s.generatorClock.offsetMs;
  const at = (ms: number) => round(ms - g, 3);
  s.ids.forEach(([id, scheduledMs, ackedMs, sentMs, target], i) => {
    const node = targets[target];
    if (node === undefined) throw new Error(`latencyLines: ${id} went to target ${target}`);
    for (let k = 0; k < fanout; k++) {
      const r = receipts[jobReceiptIndex(i, k, fanout)];
      lines.push(
        `${s.step}\t${s.rate}\t${loss}\t${id}\t${at(scheduledMs)}\t${at(ackedMs)}\t${r?.at ?? ""}` +
          `\t${at(sentMs)}\t${node}\n`,
      );
    }
  });
  return lines;
}

/** The sink process, shared by every cluster of a run. */
class SinkProcess {
  readonly url: string;
  readonly pid: number;
  readonly #child: Deno.ChildProcess;
  readonly #rest: Promise<void>;

  private constructor(url: string, child: Deno.ChildProcess, rest: Promise<void>) {
    this.url = url;
    this.pid = child.pid;
    this.#child = child;
    this.#rest = rest;
  }

  static async start(): Promise<SinkProcess> {
    const child = hookdCommand(["sink", "--listen", "127.0.0.1:0"], { stderr: "inherit" }).spawn();
    const lines = readLines(child.stdout);
    const first = await lines.next();
    if (first.done) throw new Error("the sink exited before it listened");
    const listening = (JSON.parse(first.value) as { listening: string }).listening;
    const rest = (async () => {
      for await (const _ of lines) { /* its final stats line */ }
    })();
    return new SinkProcess(`http://${listening}`, child, rest);
  }

  /** The sink's clock now (GET /clock): the one its receipts are read on. */
  async clock(): Promise<number> {
    const response = await fetch(`${this.url}/clock`, { signal: AbortSignal.timeout(10_000) });
    return (await response.json() as { now_ms: number }).now_ms;
  }

  async stats(): Promise<SinkStats> {
    const response = await fetch(`${this.url}/stats`, { signal: AbortSignal.timeout(10_000) });
    return await response.json() as SinkStats;
  }

  /**
   * First receipt and duplicates of each job (null: never received), in order. The sink
   * answers one path per request: the jobs are asked about path by path.
   */
  async receipts(keys: readonly JobKey[]): Promise<Array<SinkReceipt | null>> {
    const out = new Array<SinkReceipt | null>(keys.length);
    const byPath = new Map<string, number[]>();
    keys.forEach((key, i) => {
      let list = byPath.get(key.path);
      if (list === undefined) byPath.set(key.path, list = []);
      list.push(i);
    });
    for (const [path, indexes] of byPath) {
      for (let i = 0; i < indexes.length; i += RECEIPT_IDS_PER_REQUEST_MAX) {
        const chunk = indexes.slice(i, i + RECEIPT_IDS_PER_REQUEST_MAX);
        const response = await fetch(`${this.url}/receipts`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ids: chunk.map((j) => keys[j]!.id), path }),
          signal: AbortSignal.timeout(60_000),
        });
        const body = await response.json() as {
          receipts: Array<SinkReceipt | null>;
          ids_reset: number;
        };
        if (body.ids_reset > 0) throw new Error("the sink forgot ids (idsMax reached)");
        if (!Array.isArray(body.receipts) || body.receipts.length !== chunk.length) {
          throw new Error(`the sink answered ${response.status} without a receipt per id`);
        }
        chunk.forEach((j, n) => out[j] = body.receipts[n] ?? null);
      }
    }
    return out;
  }

  async close(): Promise<void> {
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await this.#rest;
    await this.#child.status;
  }
}

/** CPU model, cores, memory and kernel, for the results' README. */
export async function machineDescription(): Promise<Record<string, string | number>> {
  const read = async (path: string) => {
    try {
      const out = await new Deno.Command("cat", { args: [path], stdout: "piped", stderr: "null" })
        .output();
      return new TextDecoder().decode(out.stdout);
    } catch {
      return "";
    }
  };
  const cpuinfo = await read("/proc/cpuinfo");
  const meminfo = await read("/proc/meminfo");
  const model = /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1] ?? "unknown";
  const memKb = Number(/MemTotal:\s*(\d+)/.exec(meminfo)?.[1] ?? 0);
  return {
    cpu: model.trim(),
    cores: navigator.hardwareConcurrency,
    memory_gib: round(memKb / 1024 / 1024, 1)!,
    os: `${Deno.build.os} ${Deno.osRelease()}`,
    deno: Deno.version.deno,
  };
}

/** Wake-ups summed over the processes read both times; null when none was. */
function wakeupsBetween(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): number | null {
  let sum = 0;
  let read = 0;
  for (const [pid, b] of after) {
    const a = before.get(pid);
    if (a === undefined) continue;
    sum += b - a;
    read++;
  }
  return read > 0 ? sum : null;
}
