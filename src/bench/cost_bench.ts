/**
 * `hookd bench cost [--rates 200,1600] [--duration S] [--idle S] [--json]`: what a job must cost
 * and what it costs. First the floors of the runtime primitives a job uses, measured here
 * (cost_floors.ts); then what a fresh five-node cluster costs taking no jobs (CPU % of a core
 * per node, timer wake-ups and datagrams per second); then, for each rate, a fresh five-node cluster driven open loop by the
 * sweep's generator (sweep.ts): CPU µs per job of each process, and, from a second fresh
 * cluster at the same rate with every node profiled over the step's window (`hookd node
 * --cpu-profile-dir`, toggled by SIGUSR2), the nodes' CPU split per component (cpu_profile.ts:
 * the profile's shares applied to the unprofiled run's CPU, since profiling costs CPU itself),
 * datagrams, fsyncs and timer wake-ups per job, and beside them the necessary cost — the
 * floors times the operations: the operations this run made, and the fewest a lone job needs.
 * The profiled run also samples every node's allocations (`--alloc-profile-dir`,
 * alloc_profile.ts): the bytes a job makes on a node, garbage included, per component and per
 * site — the GC's work, which grows with them.
 *
 * Owns the cost model and its report. Must not change how the sweep measures.
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
import { round } from "../lib/round.ts";
import { transportDefaults } from "../config/transport.ts";
import { type Floor, measureFloors } from "./cost_floors.ts";
import { perfTaskClockMs } from "./perf_task_clock.ts";
import { COMPONENTS, type ComponentTimes, profileDirTimes } from "./cpu_profile.ts";
import { allocationDirSums, type AllocationSums, topSites } from "./alloc_profile.ts";
import {
  machineDescription,
  runSweep,
  sweepOptionsFromFlags,
  WARMUP_RATE,
  WARMUP_S_DEFAULT,
} from "./sweep.ts";
import type { SweepRow } from "./sweep_row.ts";
import { memoryFilesystemRefusal, probeWalFilesystem, SET_TMPDIR } from "./filesystem.ts";
import {
  type BenchNodes,
  cpuMsOf,
  loadAverage,
  mainThreadWakeupsOf,
  scrapeAll,
  startBenchNodes,
  windowCounters,
} from "./bench_cluster.ts";
import { encodeHex } from "../lib/hex.ts";

/** A lone job's fewest operations: the formula the "lone job" floor multiplies. */
export const LONE_JOB_OPERATIONS = {
  /** A SUBMIT to each of 4 peers and an ACK back from each (COMMIT rides on later traffic). */
  datagrams: 8,
  /** One append made durable on each of the 5 nodes (the SUBMIT; COMMIT/DONE ride later). */
  fsyncs: 5,
  /** The submit into the API and the delivery to the receiver: one request each. */
  httpRequests: 2,
  /**
   * Times a node's thread must wake for a lone job, nothing to share a wake-up with: the
   * coordinator for the submit's request, its own fsync, two votes (the majority) and the
   * receiver's answer (5); each of the four peers for the SUBMIT and its fsync, then for the
   * COMMIT and DONE (one lazy batch) and that batch's fsync (4 × 4 = 16).
   */
  wakeups: 21,
} as const;

export interface CostRow {
  rate: number;
  accepted: number;
  p99_ms: number | null;
  /** CPU µs per accepted job, per process (n1…n5, sink, generator) and summed over nodes. */
  cpu_us_per_job: Record<string, number>;
  nodes_cpu_us_per_job: number | null;
  all_cpu_us_per_job: number | null;
  datagrams_per_job: number | null;
  fsyncs_per_job: number | null;
  timer_wakeups_per_job: number | null;
  /** The nodes' main threads' wake-ups (voluntary context switches), cluster-wide. */
  wakeups_per_job: number | null;
  /** The timer wake-up floor × `wakeups_per_job`: what the wake-ups alone cost at the floor. */
  wakeup_floor_us_as_run: number | null;
  /** The timer wake-up floor × a lone job's fewest wake-ups (LONE_JOB_OPERATIONS.wakeups). */
  wakeup_floor_us_lone_job: number;
  /**
   * The nodes' CPU per job split by component: the profile's shares (a profile samples the
   * main thread) × the main threads' part of nodes_cpu_us_per_job, when the row has the
   * split by thread (else × all of it).
   */
  components_us_per_job: Record<string, number> | null;
  /**
   * The nodes' CPU per job on their other threads, which no profile sees: V8's workers
   * (parallel scavenges, concurrent marking and sweeping, compilation) and the rest (the
   * runtime's I/O threads). Null: the row has no split by thread.
   */
  threads_us_per_job: { v8_workers: number; other: number } | null;
  /** Floors × the operations this run made per job (datagrams, fsyncs, HTTP), whole stack. */
  necessary_us_as_run: number | null;
  /** Floors × a lone job's fewest operations (LONE_JOB_OPERATIONS), whole stack. */
  necessary_us_lone_job: number;
  profile_files: number;
  /**
   * KB allocated per job on a node (mean of the nodes), garbage included, from the profiled
   * run's allocation samples over its own jobs. Null: not profiled.
   */
  alloc_kb_per_job_node: number | null;
  /** The same split by component (the CPU split's rules). */
  alloc_kb_per_job_node_by_component: Record<string, number> | null;
  /** The sites that allocated most, KB per job per node, most first. */
  alloc_top_sites: Array<{ site: string; kb_per_job_node: number }> | null;
  note: string;
}

/** Sites the report lists. */
export const ALLOC_SITES_LISTED = 12;

/** A fresh five-node cluster taking no jobs: what being up costs (issue 19: ~1 % of a core). */
export interface IdleCost {
  seconds: number;
  /** CPU of each node over the window, % of one core. */
  cpu_pct_per_node: Record<string, number>;
  cpu_pct_mean: number;
  /**
   * The same mean from `perf stat`'s task clock over the window (perf_task_clock.ts): the
   * scheduler's exact run time, where `/proc` counts 10-ms ticks and reads high for processes
   * that wake often. Null where perf is missing or may not count the nodes.
   */
  cpu_pct_mean_perf: number | null;
  /** Timer wake-ups each node's shells asked for, per second, averaged over the nodes. */
  timer_wakeups_per_s_per_node: number;
  /** Datagrams each node sent per second (SWIM's probes and acks, anti-entropy), averaged. */
  datagrams_out_per_s_per_node: number;
  /**
   * Times each node's main thread slept and woke per second, averaged: the timers above, the
   * datagrams in, and the runtime's own wake-ups (its timer wheel wakes twice for a timer
   * 64 ms to 4 s away).
   */
  main_thread_wakeups_per_s_per_node: number;
  /** Seconds the cluster ran before the window, so its code had reached V8's optimizing tiers. */
  settle_s: number;
}

export interface CostReport {
  command: string;
  machine: Record<string, string | number>;
  load_before: number[];
  load_after: number[];
  /** Seconds of warm-up each rate's fresh clusters had before they were measured. */
  warmup_s: number;
  warmup_rate: number;
  floors: Floor[];
  idle: IdleCost | null;
  rows: CostRow[];
  /** The filesystem the clusters' WALs were on (`tmpfs` makes their fsyncs free). */
  wal_filesystem: string;
  /** The filesystem the fsync floor was measured on (the current directory's). */
  fsync_floor_filesystem: string;
  /** Set when either was a memory filesystem (`--allow-tmpfs`): what every figure carries. */
  warning?: string;
}

/**
 * Measures a five-node cluster that takes no jobs, for `seconds`, after it ran `settleS`
 * seconds. An idle node's code runs only some 45 times a second, so V8 takes about a minute
 * to compile it to its optimizing tiers: measured 5 s after start, a node used 1.97 % of a
 * core, 90 s after 1.39 % (bench/results/cost/idle_settle_*.txt).
 */
export async function measureIdle(seconds: number, settleS: number): Promise<IdleCost> {
  const dataRoot = await Deno.makeTempDir({ prefix: "hookd-cost-idle-" });
  const clusterKey = encodeHex(crypto.getRandomValues(new Uint8Array(24)));
  let nodes: BenchNodes | undefined;
  try {
    nodes = await startBenchNodes({ nodes: 5, clusterKey, dataRoot, extraArgs: [], log });
    await new Promise((resolve) => setTimeout(resolve, settleS * 1000));
    const pids = nodes.ids.map((id) => nodes!.cluster.pid(id)!);
    const scrape0 = await scrapeAll(nodes.httpUrls);
    const cpu0 = await cpuMsOf(pids);
    const wakeups0 = await mainThreadWakeupsOf(pids);
    const startMs = performance.now();
    // perf counts over the window and returns once it has passed (or at once, without perf).
    const perfMs = await perfTaskClockMs(pids, seconds);
    const cpu1 = await cpuMsOf(pids);
    const wakeups1 = await mainThreadWakeupsOf(pids);
    const windowS = (performance.now() - startMs) / 1000;
    const { counters } = windowCounters(scrape0, await scrapeAll(nodes.httpUrls), nodes.ids);
    let mainThreadWakeups = 0;
    for (const pid of pids) {
      mainThreadWakeups += (wakeups1.get(pid) ?? 0) - (wakeups0.get(pid) ?? 0);
    }
    return idleCost(nodes.ids, pids, { cpu0, cpu1, perfMs }, windowS, {
      ...counters,
      mainThreadWakeups,
    }, settleS);
  } finally {
    await nodes?.cluster.stopAll(15_000).catch(() => {});
    await Deno.remove(dataRoot, { recursive: true }).catch(() => {});
  }
}

/** The idle figures from two CPU readings and the counters' change over `windowS`. */
export function idleCost(
  ids: readonly string[],
  pids: readonly number[],
  cpu: {
    cpu0: ReadonlyMap<number, number>;
    cpu1: ReadonlyMap<number, number>;
    /** perf's task clock of all the nodes over the window, ms (undefined: not measured). */
    perfMs?: number | undefined;
  },
  windowS: number,
  counters: { timersFired: number; datagramsOut: number; mainThreadWakeups: number },
  settleS: number,
): IdleCost {
  const { cpu0, cpu1 } = cpu;
  const perNode: Record<string, number> = {};
  let sum = 0;
  ids.forEach((id, i) => {
    const a = cpu0.get(pids[i]!);
    const b = cpu1.get(pids[i]!);
    if (a === undefined || b === undefined) return;
    const pct = ((b - a) / 1000 / windowS) * 100;
    perNode[id] = round(pct, 2)!;
    sum += pct;
  });
  const measured = Object.keys(perNode).length;
  return {
    seconds: round(windowS, 1)!,
    cpu_pct_per_node: perNode,
    cpu_pct_mean: measured > 0 ? round(sum / measured, 2)! : 0,
    cpu_pct_mean_perf: cpu.perfMs === undefined || ids.length === 0
      ? null
      : round((cpu.perfMs / 1000 / windowS / ids.length) * 100, 2)!,
    timer_wakeups_per_s_per_node: round(counters.timersFired / windowS / ids.length, 1)!,
    datagrams_out_per_s_per_node: round(counters.datagramsOut / windowS / ids.length, 1)!,
    main_thread_wakeups_per_s_per_node: round(
      counters.mainThreadWakeups / windowS / ids.length,
      1,
    )!,
    settle_s: settleS,
  };
}

/** The idle CPU by perf's task clock, or why there is none. */
export function idlePerfText(idle: IdleCost): string {
  return idle.cpu_pct_mean_perf === null
    ? "no perf reading (perf missing or not allowed)"
    : `${idle.cpu_pct_mean_perf} % by perf's task clock`;
}

const spec: CommandSpec = {
  name: "bench cost",
  summary:
    "The cost model: the runtime's floors beside what a job costs, per process and component",
  flags: {
    rates: {
      type: "string",
      valueName: "R1,R2,…",
      help: "Offered jobs/s, one fresh cluster each",
      default: "200,1600",
    },
    duration: { type: "string", valueName: "S", help: "Seconds of each rate", default: "10" },
    warmup: {
      type: "string",
      valueName: "S",
      help: "Seconds of --warmup-rate jobs/s on each fresh cluster before it is measured, not " +
        "counted (the sweep's --warmup)",
      default: String(WARMUP_S_DEFAULT),
    },
    "warmup-rate": {
      type: "string",
      valueName: "R",
      help: "Jobs/s of the warm-up (the sweep's --warmup-rate)",
      default: String(WARMUP_RATE),
    },
    "floor-ops": {
      type: "string",
      valueName: "N",
      help: "Operations per fast primitive floor (fsync, HTTP and timers take a tenth)",
      default: "20000",
    },
    idle: {
      type: "string",
      valueName: "S",
      help: "Seconds a five-node cluster is measured taking no jobs (0: skip)",
      default: "20",
    },
    "idle-settle": {
      type: "string",
      valueName: "S",
      help: "Seconds the idle cluster runs before it is measured (V8 tiers its code up meanwhile)",
      default: "60",
    },
    "no-profile": {
      type: "boolean",
      help:
        "Do not profile the nodes (no split by component, no allocations; the profilers cost some CPU while they sample)",
    },
    "profiles-out": {
      type: "string",
      valueName: "DIR",
      help:
        "Keep the nodes' .cpuprofile and .heapprofile files here, one folder per rate (Chrome DevTools opens them)",
    },
    "allow-tmpfs": {
      type: "boolean",
      help: "Run even when the nodes' WALs would land on a memory filesystem (tmpfs), where " +
        "fsync is free (the sweeps' rows then say so)",
    },
    json: { type: "boolean", help: "Print the report as one JSON object on the last stdout line" },
  },
};

const log = (line: string) => console.error(`bench cost: ${line}`);

function floorOf(floors: readonly Floor[], name: string): number {
  const f = floors.find((x) => x.name === name);
  if (f === undefined) throw new Error(`no floor ${name}`);
  return f.cpuUs;
}

/** CPU µs of one datagram end to end: send, seal, receive, open. */
export function datagramFloorUs(floors: readonly Floor[]): number {
  return floorOf(floors, "udp_send") + floorOf(floors, "aead_seal") +
    floorOf(floors, "udp_receive") + floorOf(floors, "aead_open");
}

/** The floors times `ops`: whole stack CPU µs a job with those operations must spend. */
export function necessaryUs(
  floors: readonly Floor[],
  ops: { datagrams: number; fsyncs: number; httpRequests: number },
): number {
  return round(
    ops.datagrams * datagramFloorUs(floors) + ops.fsyncs * floorOf(floors, "fsync") +
      ops.httpRequests * floorOf(floors, "http_request"),
    1,
  )!;
}

/** A sweep row and its nodes' profiles as a cost row. */
export function costRow(
  row: SweepRow,
  floors: readonly Floor[],
  profile: { times: ComponentTimes; files: number } | undefined,
  allocations?: { sums: AllocationSums; nodes: number; jobs: number },
): CostRow {
  const coresTotal = Object.values(row.cpu_cores).reduce((a, b) => a + b, 0);
  const allUs = row.cpu_ms_per_job === null ? null : row.cpu_ms_per_job * 1000;
  const perProcess: Record<string, number> = {};
  let nodesUs = 0;
  for (const [name, cores] of Object.entries(row.cpu_cores)) {
    const us = allUs === null || coresTotal === 0 ? 0 : (allUs * cores) / coresTotal;
    perProcess[name] = round(us, 1)!;
    if (/^n\d+$/.test(name)) nodesUs += us;
  }
  // The profile sees the main thread only: its shares split the main threads' CPU, and the
  // other threads' CPU is given as it is.
  const threads = row.node_cpu_cores_by_thread ?? null;
  const threadsTotal = threads === null
    ? 0
    : (threads.main ?? 0) + (threads.v8_workers ?? 0) + (threads.other ?? 0);
  const shareOf = (cores: number | null) =>
    threads === null || threadsTotal === 0 ? 0 : (cores ?? 0) / threadsTotal;
  const mainUs = threads === null || threadsTotal === 0 ? nodesUs : nodesUs * shareOf(threads.main);
  let components: Record<string, number> | null = null;
  if (profile !== undefined && allUs !== null) {
    const sampled = COMPONENTS.reduce((a, c) => a + profile.times[c], 0);
    if (sampled > 0) {
      components = {};
      for (const c of COMPONENTS) {
        components[c] = round((mainUs * profile.times[c]) / sampled, 1)!;
      }
    }
  }
  const threadsUs = threads === null || threadsTotal === 0 || allUs === null ? null : {
    v8_workers: round(nodesUs * shareOf(threads.v8_workers), 1)!,
    other: round(nodesUs * shareOf(threads.other), 1)!,
  };
  const asRun = row.datagrams_per_job === null || row.fsyncs_per_job === null
    ? null
    : necessaryUs(floors, {
      datagrams: row.datagrams_per_job,
      fsyncs: row.fsyncs_per_job,
      httpRequests: LONE_JOB_OPERATIONS.httpRequests,
    });
  return {
    rate: row.rate,
    accepted: row.accepted,
    p99_ms: row.p99_ms,
    cpu_us_per_job: perProcess,
    nodes_cpu_us_per_job: allUs === null ? null : round(nodesUs, 1),
    all_cpu_us_per_job: allUs === null ? null : round(allUs, 1),
    datagrams_per_job: row.datagrams_per_job,
    fsyncs_per_job: row.fsyncs_per_job,
    timer_wakeups_per_job: row.timer_wakeups_per_job,
    components_us_per_job: components,
    threads_us_per_job: threadsUs,
    necessary_us_as_run: asRun,
    necessary_us_lone_job: necessaryUs(floors, LONE_JOB_OPERATIONS),
    wakeups_per_job: row.wakeups_per_job,
    wakeup_floor_us_as_run: row.wakeups_per_job === null
      ? null
      : round(row.wakeups_per_job * floorOf(floors, "timer_wakeup"), 1),
    wakeup_floor_us_lone_job: round(
      LONE_JOB_OPERATIONS.wakeups * floorOf(floors, "timer_wakeup"),
      1,
    )!,
    profile_files: profile?.files ?? 0,
    ...allocationFields(allocations),
    note: row.note,
  };
}

/** KB per job per node: `bytes` summed over `nodes` nodes that took `jobs` jobs. */
function kbPerJobNode(bytes: number, nodes: number, jobs: number): number {
  return round(bytes / 1000 / nodes / jobs, 2)!;
}

/** A run's allocation profiles as a cost row's fields (also `bench replication`'s, a commit a job). */
export function allocationFields(
  a: { sums: AllocationSums; nodes: number; jobs: number } | undefined,
): Pick<
  CostRow,
  "alloc_kb_per_job_node" | "alloc_kb_per_job_node_by_component" | "alloc_top_sites"
> {
  if (a === undefined || a.nodes === 0 || a.jobs === 0 || a.sums.bytes === 0) {
    return {
      alloc_kb_per_job_node: null,
      alloc_kb_per_job_node_by_component: null,
      alloc_top_sites: null,
    };
  }
  const kb = (bytes: number) => kbPerJobNode(bytes, a.nodes, a.jobs);
  return {
    alloc_kb_per_job_node: kb(a.sums.bytes),
    alloc_kb_per_job_node_by_component: Object.fromEntries(
      COMPONENTS.map((c) => [c, kb(a.sums.components[c])]),
    ),
    alloc_top_sites: topSites(a.sums, ALLOC_SITES_LISTED).map(([site, bytes]) => ({
      site,
      kb_per_job_node: kb(bytes),
    })),
  };
}

/** The report as a markdown table, for the README and bench/results/. */
export function costMarkdown(report: CostReport): string {
  const lines = [
    ...(report.warning !== undefined ? [`WARNING: ${report.warning}`, ""] : []),
    "| primitive | what | CPU µs | wall µs |",
    "|---|---|---|---|",
    ...report.floors.map((f) => `| ${f.name} | ${f.what} | ${f.cpuUs} | ${f.wallUs} |`),
    "",
    `| per job | ${report.rows.map((r) => `${r.rate}/s`).join(" | ")} |`,
    `|---|${report.rows.map(() => "---").join("|")}|`,
  ];
  const row = (label: string, f: (r: CostRow) => number | string | null | undefined) =>
    lines.push(`| ${label} | ${report.rows.map((r) => String(f(r) ?? "–")).join(" | ")} |`);
  row("CPU µs, five nodes", (r) => r.nodes_cpu_us_per_job);
  row("CPU µs, all processes", (r) => r.all_cpu_us_per_job);
  for (const c of COMPONENTS) row(`  nodes: ${c}`, (r) => r.components_us_per_job?.[c]);
  row("  nodes: V8 worker threads (GC, compilation)", (r) => r.threads_us_per_job?.v8_workers);
  row("  nodes: other threads", (r) => r.threads_us_per_job?.other);
  row("datagrams", (r) => r.datagrams_per_job);
  row("fsyncs", (r) => r.fsyncs_per_job);
  row("timer wake-ups", (r) => r.timer_wakeups_per_job);
  row("nodes' main-thread wake-ups", (r) => r.wakeups_per_job);
  row("wake-up floor µs × wake-ups as run", (r) => r.wakeup_floor_us_as_run);
  row("wake-up floor µs × a lone job's fewest", (r) => r.wakeup_floor_us_lone_job);
  row("necessary µs, operations as run", (r) => r.necessary_us_as_run);
  row("necessary µs, a lone job's fewest", (r) => r.necessary_us_lone_job);
  row("p99 ms", (r) => r.p99_ms);
  row("KB allocated a job on a node", (r) => r.alloc_kb_per_job_node);
  for (const c of COMPONENTS) {
    row(`  allocations: ${c}`, (r) => r.alloc_kb_per_job_node_by_component?.[c]);
  }
  for (const r of report.rows) {
    if (r.alloc_top_sites === null) continue;
    lines.push(
      "",
      `Where a job's allocations come from at ${r.rate}/s, KB per job per node (garbage included):`,
      "",
      ...r.alloc_top_sites.map((s) => `- ${s.kb_per_job_node} ${s.site}`),
    );
  }
  if (report.idle !== null) {
    const idle = report.idle;
    lines.push(
      "",
      `Idle, five nodes over ${idle.seconds} s: ${idle.cpu_pct_mean} % of a core per node ` +
        `by /proc (${
          Object.entries(idle.cpu_pct_per_node).map(([id, p]) => `${id} ${p}`).join(", ")
        }), ${idlePerfText(idle)}, ` +
        `${idle.timer_wakeups_per_s_per_node} timer wake-ups, ` +
        `${idle.main_thread_wakeups_per_s_per_node} main-thread wake-ups and ` +
        `${idle.datagrams_out_per_s_per_node} datagrams out per second per node.`,
    );
  }
  return lines.join("\n") + "\n";
}

export const costBenchCommand: LeafCommand = {
  spec,
  async run(args) {
    const v = args.values as Parameters<typeof numberFlag>[0];
    const rates = listFlag(v, "rates").map((r) => {
      const x = Number(r);
      if (!Number.isFinite(x) || x < 1) throw new UsageError(`--rates: ${r} is not a rate`);
      return x;
    });
    const durationS = numberFlag(v, "duration", 10, { min: 1, max: 600 });
    const warmupS = numberFlag(v, "warmup", WARMUP_S_DEFAULT, { min: 0, max: 600 });
    const warmupRate = numberFlag(v, "warmup-rate", WARMUP_RATE, { min: 1, max: 100_000 });
    const floorOps = numberFlag(v, "floor-ops", 20_000, {
      min: 100,
      max: 10_000_000,
      integer: true,
    });
    const idleS = numberFlag(v, "idle", 20, { min: 0, max: 3600 });
    const idleSettleS = numberFlag(v, "idle-settle", 60, { min: 1, max: 3600 });
    const profile = !booleanFlag(v, "no-profile");
    const profilesOut = stringFlag(v, "profiles-out");
    const json = booleanFlag(v, "json");
    const allowTmpfs = booleanFlag(v, "allow-tmpfs");
    // The clusters' data directories go under TMPDIR, the fsync floor's file under the
    // current directory: both are asked about, and refused on a memory filesystem, before
    // anything is measured.
    const placement = await probeWalFilesystem();
    const floorPlacement = await probeWalFilesystem(Deno.cwd());
    log(`clusters: ${placement.description}`);
    log(`fsync floor: ${floorPlacement.description}`);
    for (
      const [where, fix] of [
        [placement, SET_TMPDIR],
        [floorPlacement, "Run it from a directory on a disk-backed filesystem"],
      ] as const
    ) {
      if (where.memory !== undefined && !allowTmpfs) {
        log(memoryFilesystemRefusal(where, fix));
        return EXIT_FAILURE;
      }
    }
    const warning = placement.warning ?? floorPlacement.warning;
    if (warning !== undefined) log(`WARNING: ${warning}`);
    const loadBefore = await loadAverage();
    const scratch = await Deno.makeTempDir({ dir: Deno.cwd(), prefix: ".hookd-cost-" });
    try {
      log(`floors: ${floorOps} operations each (fsync, HTTP and timers ${floorOps / 10})`);
      const floors = await measureFloors({
        datagramBytes: transportDefaults.datagramBytes,
        ops: floorOps,
        fsyncDir: scratch,
      });
      for (const f of floors) {
        log(`  ${f.name}: ${f.cpuUs} µs CPU, ${f.wallUs} µs wall (${f.what})`);
      }
      let idle: IdleCost | null = null;
      if (idleS > 0) {
        log(`idle: a five-node cluster taking no jobs, ${idleS} s after ${idleSettleS} s`);
        idle = await measureIdle(idleS, idleSettleS);
        log(
          `idle: ${idle.cpu_pct_mean} % of a core per node by /proc, ${idlePerfText(idle)}, ` +
            `${idle.timer_wakeups_per_s_per_node} timer wake-ups/s and ` +
            `${idle.main_thread_wakeups_per_s_per_node} main-thread wake-ups/s per node`,
        );
      }
      const rows: CostRow[] = [];
      for (const rate of rates) {
        const dir = `${profilesOut ?? scratch}/profiles-${rate}`;
        await Deno.mkdir(dir, { recursive: true });
        // Two runs per rate when profiling: the profiler costs CPU of its own (starting it
        // stalls every node for a moment, and sampling slows it), so CPU, latency and the
        // operation counts come from an unprofiled run, and only the split by component from
        // a profiled one, its shares applied to the unprofiled CPU.
        // The sweep's own defaults (warm-up, drain, payload, in-flight), as `hookd bench
        // --rates R --duration S` would run it.
        const sweepOptions = sweepOptionsFromFlags({
          rates: String(rate),
          duration: String(durationS),
          warmup: String(warmupS),
          "warmup-rate": String(warmupRate),
        });
        const sweepAt = (profileDir: string | undefined) =>
          runSweep({
            ...sweepOptions,
            ...(allowTmpfs ? { allowTmpfs } : {}),
            ...(profileDir !== undefined
              ? { cpuProfileDir: profileDir, allocProfileDir: profileDir }
              : {}),
          });
        log(`${rate} jobs/s for ${durationS} s on a fresh cluster, unprofiled`);
        const [row] = await sweepAt(undefined);
        let profiledJobs = 0;
        if (profile) {
          log(
            `${rate} jobs/s for ${durationS} s on a fresh cluster, profiled ` +
              `(for the split and the allocations)`,
          );
          profiledJobs = (await sweepAt(dir))[0]?.jobs_made ?? 0;
        }
        if (row === undefined) throw new Error(`the sweep at ${rate}/s gave no row`);
        const times = profile ? await profileDirTimes(dir) : undefined;
        const allocations = profile ? await allocationDirSums(dir) : undefined;
        rows.push(
          costRow(
            row,
            floors,
            times === undefined ? undefined : { times: times.times, files: times.files.length },
            allocations === undefined
              ? undefined
              : { sums: allocations.sums, nodes: allocations.files, jobs: profiledJobs },
          ),
        );
      }
      const report: CostReport = {
        command: `hookd bench cost ${Deno.args.slice(2).join(" ")}`.trim(),
        machine: await machineDescription(),
        load_before: loadBefore,
        load_after: await loadAverage(),
        warmup_s: warmupS,
        warmup_rate: warmupRate,
        floors,
        idle,
        rows,
        wal_filesystem: placement.fsType,
        fsync_floor_filesystem: floorPlacement.fsType,
        ...(warning !== undefined ? { warning } : {}),
      };
      console.error(costMarkdown(report));
      if (json) console.log(JSON.stringify(report));
      // Said again last: the figures above are what a reader copies.
      if (warning !== undefined) log(`WARNING: ${warning}`);
      return rows.every((r) => r.accepted > 0) ? EXIT_OK : EXIT_FAILURE;
    } catch (error) {
      log(`failed: ${error instanceof Error ? error.stack : String(error)}`);
      return EXIT_FAILURE;
    } finally {
      await Deno.remove(scratch, { recursive: true }).catch(() => {});
    }
  },
};
