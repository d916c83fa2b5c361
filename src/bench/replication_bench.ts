/**
 * `hookd bench replication`: the replicated job store's own ceiling, without HTTP and without
 * delivery. Five `hookd node --no-deliver` processes with fresh data directories, and a
 * generator process (`hookd bench generator --via udp`) that submits over hookd's transport as
 * a UDP client (src/jobs/udp_client.ts), spread over every node:
 *
 * 1. warm-up: one second at the maximum rate (JIT, sessions), not measured;
 * 2. max rate: `--outstanding` submits kept outstanding for `--seconds`; `commits_per_s` is
 *    the submits acknowledged (majority-durable) per second of that window, cluster-wide,
 *    counting only the acknowledgements that came inside it, from the first one on
 *    (`closedLoopCommitsPerS`);
 * 3. fixed rate: `--rate` (1,000/s) open loop for `--seconds`; `p50_ms`/`p99_ms` run from
 *    each submit's scheduled send time to its acknowledgement.
 *
 * Per-commit costs come from the nodes' /metrics deltas over each phase, CPU from
 * /proc/<pid>/stat of every process. Then every node is stopped gracefully and its WAL read
 * back read-only (wal_census.ts): `lost` counts acknowledged jobs (every phase, the warm-up
 * included) held on fewer than a majority of the disks.
 *
 * Owns the harness; nodes, generator and census are their own modules.
 */

import { booleanFlag, type CommandSpec, numberFlag } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { memoryFilesystemRefusal, probeWalFilesystem, SET_TMPDIR } from "./filesystem.ts";
import { round } from "../lib/round.ts";
import {
  type BenchNodes,
  type ClusterCounters,
  cpuMsOf,
  loadAverage,
  scrapeAll,
  startBenchNodes,
  threadCores,
  threadCpuBetween,
  type ThreadCpuMs,
  threadCpuMsOf,
  toggleProfiles,
  waitForProfiles,
  windowCounters,
} from "./bench_cluster.ts";
import { COMPONENTS, type ComponentTimes, profileDirTimes } from "./cpu_profile.ts";
import { allocationDirSums } from "./alloc_profile.ts";
import { allocationFields } from "./cost_bench.ts";
import { GeneratorProcess, readIdsFile, type StepReport } from "../process/generator_protocol.ts";
import { walCensus } from "./wal_census.ts";
import { encodeHex } from "../lib/hex.ts";

const spec: CommandSpec = {
  name: "bench replication",
  summary: "Replicated job store alone: commits/s and submit→majority-durable latency, 5 nodes",
  flags: {
    seconds: {
      type: "string",
      valueName: "S",
      help: "Length of each measured phase",
      default: "5",
    },
    loss: {
      type: "string",
      valueName: "P",
      help: "Ingress loss on every node (submits, replication, acks, probes)",
      default: "0",
    },
    rate: {
      type: "string",
      valueName: "N",
      help: "Submits per second of the fixed-rate phase",
      default: "1000",
    },
    outstanding: {
      type: "string",
      valueName: "N",
      help: "Submits kept outstanding in the maximum-rate phase",
      default: "1000",
    },
    nodes: { type: "string", valueName: "N", help: "Node processes", default: "5" },
    "payload-bytes": {
      type: "string",
      valueName: "N",
      help: "Bytes of each job's payload",
      default: "128",
    },
    "datagram-bytes": {
      type: "string",
      valueName: "N",
      help: "Largest datagram the nodes and the client build (default: the transport's)",
    },
    "wal-sync": {
      type: "string",
      valueName: "MODE",
      help: "batched (group commit) or per-append",
      default: "batched",
    },
    "profiles-out": {
      type: "string",
      valueName: "DIR",
      help: "Also run the maximum-rate phase once more with every node's CPU profile on " +
        "and allocation sampler on (hookd node --cpu-profile-dir DIR --alloc-profile-dir DIR), " +
        "not counted in commits_per_s: the nodes' CPU and allocations per commit, by component " +
        "(max_rate_profiled); the profiles are left in DIR",
    },
    "allow-tmpfs": {
      type: "boolean",
      help: "Run even when the nodes' WALs would land on a memory filesystem (tmpfs), where " +
        "fsync is free; the JSON then carries a warning",
    },
    json: { type: "boolean", help: "Print one JSON object as the last stdout line" },
  },
};

const log = (line: string) => console.error(`bench replication: ${line}`);

export const replicationBenchCommand: LeafCommand = {
  spec,
  async run(args) {
    const seconds = numberFlag(args.values, "seconds", 5, { min: 0.5, max: 3600 });
    const loss = numberFlag(args.values, "loss", 0, { min: 0, max: 0.9 });
    const rate = numberFlag(args.values, "rate", 1000, { min: 1, max: 1_000_000 });
    const outstanding = numberFlag(args.values, "outstanding", 1000, {
      min: 1,
      max: 100_000,
      integer: true,
    });
    const nodeCount = numberFlag(args.values, "nodes", 5, { min: 1, max: 15, integer: true });
    const payloadBytes = numberFlag(args.values, "payload-bytes", 128, {
      min: 16,
      max: 1_000_000,
      integer: true,
    });
    const datagramFlag = args.values["datagram-bytes"];
    const walSync = String(args.values["wal-sync"] ?? "batched");
    const json = booleanFlag(args.values, "json");
    const profilesOut = args.values["profiles-out"];
    // The nodes' data directories go under the system's temp directory (`TMPDIR`).
    const placement = await probeWalFilesystem();
    log(placement.description);
    if (placement.memory !== undefined && !booleanFlag(args.values, "allow-tmpfs")) {
      log(memoryFilesystemRefusal(placement, SET_TMPDIR));
      return EXIT_FAILURE;
    }
    if (placement.warning !== undefined) log(`WARNING: ${placement.warning}`);
    const result = await runReplicationBench({
      seconds,
      loss,
      rate,
      outstanding,
      nodeCount,
      payloadBytes,
      walSync,
      ...(typeof datagramFlag === "string" ? { datagramBytes: Number(datagramFlag) } : {}),
      ...(typeof profilesOut === "string" ? { profileDir: profilesOut } : {}),
    });
    result.wal_filesystem = placement.fsType;
    if (placement.warning !== undefined) result.warning = placement.warning;
    console.log(json ? JSON.stringify(result) : JSON.stringify(result, null, 2));
    // Said again last: the figures above are what a reader copies.
    if (placement.warning !== undefined) log(`WARNING: ${placement.warning}`);
    return result.problems.length === 0 ? EXIT_OK : EXIT_FAILURE;
  },
};

export interface ReplicationBenchOptions {
  seconds: number;
  loss: number;
  rate: number;
  outstanding: number;
  nodeCount: number;
  payloadBytes: number;
  walSync: string;
  datagramBytes?: number;
  /** Profile the nodes over a second maximum-rate phase; their `.cpuprofile`s go here. */
  profileDir?: string;
}

/**
 * A closed loop's acknowledgements per second: those that came inside the send window, over
 * the window from the first one (the pipeline full) to the last send. Counting every answer
 * over the window instead would add the `outstanding` answers that come after it (an
 * overestimate of outstanding / window, by Little's law the same as the fill at the start).
 */
export function closedLoopCommitsPerS(
  report: Pick<StepReport, "accepted_by_send_end" | "send_seconds" | "first_ack_seconds">,
): number | null {
  if (report.first_ack_seconds === null) return null;
  const seconds = report.send_seconds - report.first_ack_seconds;
  return seconds > 0 ? round(report.accepted_by_send_end / seconds, 1) : null;
}

interface PhaseFigures {
  report: StepReport;
  counters: ClusterCounters;
  cpuMs: Record<string, number>;
  /** The nodes' CPU ms summed, by thread (`threadCpuMsOf`). */
  nodeThreadCpuMs: ThreadCpuMs;
  wallS: number;
}

export async function runReplicationBench(
  options: ReplicationBenchOptions,
): Promise<Record<string, unknown> & { problems: string[] }> {
  if (options.profileDir !== undefined) {
    // The split sums every profile in the directory: it must hold this run's only.
    await Deno.mkdir(options.profileDir, { recursive: true });
    for await (const entry of Deno.readDir(options.profileDir)) {
      if (entry.name.endsWith(".cpuprofile") || entry.name.endsWith(".heapprofile")) {
        throw new Error(`${options.profileDir} already holds profiles: give an empty directory`);
      }
    }
  }
  const clusterKey = encodeHex(crypto.getRandomValues(new Uint8Array(24)));
  const dataRoot = await Deno.makeTempDir({ prefix: "hookd-bench-repl-" });
  const idsDir = `${dataRoot}/ids`;
  await Deno.mkdir(idsDir);
  const transportArgs = options.datagramBytes !== undefined
    ? ["--datagram-bytes", String(options.datagramBytes)]
    : [];
  const problems: string[] = [];
  const loadBefore = await loadAverage();
  let nodes: BenchNodes | undefined;
  let generator: GeneratorProcess | undefined;
  try {
    log(`starting ${options.nodeCount} nodes (--no-deliver, loss ${options.loss})`);
    nodes = await startBenchNodes({
      nodes: options.nodeCount,
      clusterKey,
      dataRoot,
      extraArgs: [
        "--no-deliver",
        // The jobs name a loopback URL (never delivered): a UDP submit meets the API's rules,
        // so a node refuses it as a private target without this.
        "--allow-private-targets",
        "--loss",
        String(options.loss),
        "--wal-sync",
        options.walSync,
        ...transportArgs,
        ...(options.profileDir !== undefined
          ? ["--cpu-profile-dir", options.profileDir, "--alloc-profile-dir", options.profileDir]
          : []),
      ],
      log,
    });
    generator = GeneratorProcess.start(
      [
        "--via",
        "udp",
        "--targets",
        nodes.addresses.join(","),
        // Never delivered (--no-deliver); a valid URL all the same.
        "--job-url",
        "http://127.0.0.1:9/unused",
        "--payload-bytes",
        String(options.payloadBytes),
        "--ids-dir",
        idsDir,
        "--in-flight",
        String(Math.max(2048, options.outstanding)),
        ...transportArgs,
      ],
      { HOOKD_CLUSTER_KEY: clusterKey },
      log,
    );
    const pids: Record<string, number> = { generator: generator.pid };
    for (const id of nodes.ids) pids[id] = nodes.cluster.pid(id)!;

    const phase = async (
      command: Parameters<GeneratorProcess["run"]>[0],
    ): Promise<PhaseFigures> => {
      const before = await scrapeAll(nodes!.httpUrls);
      const nodePidList = nodes!.ids.map((id) => pids[id]!);
      const threadsBefore = await threadCpuMsOf(nodePidList);
      const cpuBefore = await cpuMsOf(Object.values(pids));
      const t0 = performance.now();
      const report = await generator!.run(command, (p) =>
        log(
          `${p.step} ${p.elapsed_s}s offered ${p.offered} accepted ${p.accepted} ` +
            `rejected ${p.rejected} errors ${p.errors}`,
        ));
      const wallS = (performance.now() - t0) / 1000;
      const cpuAfter = await cpuMsOf(Object.values(pids));
      const threadsAfter = await threadCpuMsOf(nodePidList);
      const nodeThreadCpuMs = threadCpuBetween(threadsBefore, threadsAfter, nodePidList);
      const { counters, silent } = windowCounters(
        before,
        await scrapeAll(nodes!.httpUrls),
        nodes!.ids,
      );
      if (silent.length > 0) {
        problems.push(`${command.step}: no /metrics answer from ${silent.join(", ")}`);
      }
      const cpuMs: Record<string, number> = {};
      for (const [name, pid] of Object.entries(pids)) {
        const a = cpuBefore.get(pid);
        const b = cpuAfter.get(pid);
        if (a !== undefined && b !== undefined) cpuMs[name] = b - a;
      }
      log(
        `${command.step}: ${report.accepted} acknowledged, ${report.rejected} rejected, ` +
          `${report.errors} errors in ${report.send_seconds} s; ack p99 ${report.ack_p99_ms} ms`,
      );
      return { report, counters, cpuMs, nodeThreadCpuMs, wallS };
    };

    log("warm-up: 1 s at the maximum rate");
    const warm = await phase({
      op: "max",
      step: "warmup",
      seconds: 1,
      outstanding: options.outstanding,
    });
    log(`max rate: ${options.seconds} s, ${options.outstanding} outstanding`);
    const max = await phase({
      op: "max",
      step: "max",
      seconds: options.seconds,
      outstanding: options.outstanding,
    });
    let profiled: Parameters<typeof profiledSplit>[0] | undefined;
    if (options.profileDir !== undefined) {
      log(`max rate again, profiled: ${options.seconds} s (not counted in commits_per_s)`);
      const nodePids = new Map(nodes.ids.map((id) => [id, pids[id]!] as const));
      toggleProfiles(nodePids, log);
      const phaseFigures = await phase({
        op: "max",
        step: "max-profiled",
        seconds: options.seconds,
        outstanding: options.outstanding,
      });
      toggleProfiles(nodePids, log);
      await waitForProfiles(options.profileDir, ".cpuprofile", nodePids.size, log);
      await waitForProfiles(options.profileDir, ".heapprofile", nodePids.size, log);
      const { times, files } = await profileDirTimes(options.profileDir);
      const allocations = await allocationDirSums(options.profileDir);
      profiled = {
        phase: phaseFigures,
        times,
        files: files.length,
        allocations: {
          sums: allocations.sums,
          nodes: allocations.files,
          jobs: phaseFigures.report.accepted,
        },
      };
    }
    log(`fixed rate: ${options.rate}/s for ${options.seconds} s`);
    const fixed = await phase({
      op: "open",
      step: "fixed",
      rate: options.rate,
      seconds: options.seconds,
    });
    const quorumScrape = await scrapeAll(nodes.httpUrls);
    await generator.close();
    generator = undefined;

    log("stopping the nodes gracefully, then reading every WAL back (read-only)");
    await nodes.cluster.stopAll(15_000);
    if (nodes.unexpectedExits.length > 0) problems.push(...nodes.unexpectedExits);
    const majority = Math.floor(options.nodeCount / 2) + 1;
    const censuses = [];
    for (const id of nodes.ids) censuses.push(await walCensus(nodes.cluster.dataDir(id)));
    let acknowledged = 0;
    let lost = 0;
    const holders = new Array<number>(options.nodeCount + 1).fill(0);
    const lostExamples: string[] = [];
    for (const step of [warm, max, fixed]) {
      for (const [id] of await readIdsFile(step.report.ids_file)) {
        acknowledged++;
        let held = 0;
        for (const c of censuses) if (c.jobIds.has(id)) held++;
        holders[held]!++;
        if (held < majority) {
          lost++;
          if (lostExamples.length < 5) lostExamples.push(`${id} on ${held}`);
        }
      }
    }
    const undecodable = censuses.reduce((s, c) => s + c.undecodable, 0);
    if (lost > 0) problems.push(`${lost} acknowledged jobs are on fewer than ${majority} disks`);
    if (undecodable > 0) problems.push(`${undecodable} WAL payloads did not decode`);
    if (fixed.report.accepted < fixed.report.offered) {
      problems.push(
        `fixed rate: ${fixed.report.offered - fixed.report.accepted} of ` +
          `${fixed.report.offered} submits not acknowledged (${
            JSON.stringify(fixed.report.codes)
          })`,
      );
    }

    const perCommit = (value: number, commits: number) =>
      commits > 0 ? round(value / commits, 3) : null;
    const cpuShare = (p: PhaseFigures) =>
      Object.fromEntries(
        Object.entries(p.cpuMs).map(([k, v]) => [k, round(v / 1000 / p.wallS, 3)]),
      );
    // Where the nodes' CPU ran: V8's worker threads are GC and compilation off the main thread.
    const nodeThreadCores = (p: PhaseFigures) => threadCores(p.nodeThreadCpuMs, p.wallS);
    const cpuPerCommitUs = (p: PhaseFigures) => {
      const sum = Object.values(p.cpuMs).reduce((a, b) => a + b, 0);
      return p.report.accepted > 0 ? round((sum * 1000) / p.report.accepted, 1) : null;
    };
    const loadAfter = await loadAverage();
    return {
      commits_per_s: closedLoopCommitsPerS(max.report),
      p50_ms: fixed.report.ack_p50_ms,
      p99_ms: fixed.report.ack_p99_ms,
      fsyncs_per_commit: perCommit(max.counters.fsyncs, max.report.accepted),
      datagrams_per_commit: perCommit(max.counters.datagramsOut, max.report.accepted),
      lost,
      loss: options.loss,
      seconds: options.seconds,
      nodes: options.nodeCount,
      acknowledged_total: acknowledged,
      // How many of the disks hold each acknowledged job: index = disks.
      acknowledged_by_disks_holding: holders,
      lost_examples: lostExamples,
      max_rate: {
        outstanding: options.outstanding,
        acknowledged: max.report.accepted,
        // Answers that came after the window (not in commits_per_s).
        acknowledged_after_window: max.report.accepted - max.report.accepted_by_send_end,
        first_ack_s: max.report.first_ack_seconds,
        window_s: max.report.send_seconds,
        rejected: max.report.rejected,
        errors: max.report.errors,
        codes: max.report.codes,
        ack_p50_ms: max.report.ack_p50_ms,
        ack_p99_ms: max.report.ack_p99_ms,
        fsyncs_per_commit: perCommit(max.counters.fsyncs, max.report.accepted),
        wal_appends_per_commit: perCommit(max.counters.walAppends, max.report.accepted),
        datagrams_out_per_commit: perCommit(max.counters.datagramsOut, max.report.accepted),
        datagrams_in_per_commit: perCommit(max.counters.datagramsIn, max.report.accepted),
        ack_only_datagrams_per_commit: perCommit(max.counters.ackOnlyOut, max.report.accepted),
        retransmits_per_commit: perCommit(max.counters.retransmits, max.report.accepted),
        cpu_cores_by_process: cpuShare(max),
        node_cpu_cores_by_thread: nodeThreadCores(max),
        cpu_us_per_commit_all_processes: cpuPerCommitUs(max),
      },
      fixed_rate: {
        rate: options.rate,
        offered: fixed.report.offered,
        acknowledged: fixed.report.accepted,
        rejected: fixed.report.rejected,
        errors: fixed.report.errors,
        codes: fixed.report.codes,
        sent_late: fixed.report.sent_late,
        p90_ms: fixed.report.ack_p90_ms,
        max_ms: fixed.report.ack_max_ms,
        fsyncs_per_commit: perCommit(fixed.counters.fsyncs, fixed.report.accepted),
        datagrams_per_commit: perCommit(fixed.counters.datagramsOut, fixed.report.accepted),
        ack_only_datagrams_per_commit: perCommit(fixed.counters.ackOnlyOut, fixed.report.accepted),
        retransmits_per_commit: perCommit(fixed.counters.retransmits, fixed.report.accepted),
        cpu_cores_by_process: cpuShare(fixed),
        node_cpu_cores_by_thread: nodeThreadCores(fixed),
        cpu_us_per_commit_all_processes: cpuPerCommitUs(fixed),
      },
      ...(profiled !== undefined ? { max_rate_profiled: profiledSplit(profiled, nodes.ids) } : {}),
      // The slowest node's figures over the whole run (the nodes' own histograms).
      node_quorum_wait_ms_whole_run: {
        p50: round(quantileMax(quorumScrape, "hookd_jobs_quorum_wait_ms", "0.5"), 3),
        p99: round(quantileMax(quorumScrape, "hookd_jobs_quorum_wait_ms", "0.99"), 3),
      },
      node_fsync_ms_whole_run: {
        p50: round(quantileMax(quorumScrape, "hookd_wal_fsync_ms", "0.5"), 3),
        p99: round(quantileMax(quorumScrape, "hookd_wal_fsync_ms", "0.99"), 3),
      },
      payload_bytes: options.payloadBytes,
      datagram_bytes: options.datagramBytes ?? "default",
      wal_sync: options.walSync,
      load_average_before: loadBefore,
      load_average_after: loadAfter,
      problems,
    };
  } finally {
    await generator?.close().catch(() => {});
    await nodes?.cluster.stopAll().catch(() => {});
    await Deno.remove(dataRoot, { recursive: true }).catch(() => {});
  }
}

/**
 * The profiled phase's node CPU per commit split by the profiles' shares (sampled time, idle
 * left out): what each component costs a commit, summed over the nodes.
 */
export function profiledSplit(
  profiled: {
    phase: {
      report: Pick<
        StepReport,
        "accepted" | "accepted_by_send_end" | "send_seconds" | "first_ack_seconds"
      >;
      cpuMs: Readonly<Record<string, number>>;
      /** The nodes' CPU by thread over the phase: the profile samples the main threads only. */
      nodeThreadCpuMs: ThreadCpuMs;
    };
    times: ComponentTimes;
    files: number;
    /** The phase's allocation profiles (`allocationFields`: a commit is a job). */
    allocations?: Parameters<typeof allocationFields>[0];
  },
  nodeIds: readonly string[],
): Record<string, unknown> {
  const { phase, times, files } = profiled;
  const nodeCpuMs = nodeIds.reduce((sum, id) => sum + (phase.cpuMs[id] ?? 0), 0);
  const threads = phase.nodeThreadCpuMs;
  const threadsMs = threads.main + threads.v8Workers + threads.other;
  // The profile's shares split the main threads' part of the nodes' CPU; the rest is given as
  // it is (V8's workers: GC and compilation; the others: the runtime's threads).
  const partOf = (ms: number) => threadsMs > 0 ? nodeCpuMs * (ms / threadsMs) : NaN;
  const sampledUs = COMPONENTS.reduce((sum, c) => sum + times[c], 0);
  const commits = phase.report.accepted;
  const perCommitUs = (ms: number) => commits > 0 ? round((ms * 1000) / commits, 1) : null;
  const split: Record<string, number | null> = {};
  for (const c of COMPONENTS) {
    split[c] = sampledUs > 0 ? perCommitUs(partOf(threads.main) * (times[c] / sampledUs)) : null;
  }
  return {
    profiles: files,
    acknowledged: commits,
    commits_per_s: closedLoopCommitsPerS(phase.report),
    node_cpu_us_per_commit: perCommitUs(nodeCpuMs),
    node_cpu_us_per_commit_by_component: split,
    node_cpu_us_per_commit_by_thread: {
      main: perCommitUs(partOf(threads.main)),
      v8_workers: perCommitUs(partOf(threads.v8Workers)),
      other: perCommitUs(partOf(threads.other)),
    },
    ...allocationFields(profiled.allocations),
  };
}

/** The largest of the nodes' `<name>{quantile=q}` (a summary over the whole run). */
function quantileMax(
  scrape: Awaited<ReturnType<typeof scrapeAll>>,
  name: string,
  q: string,
): number {
  let max = NaN;
  for (const samples of scrape) {
    for (const [key, value] of samples) {
      if (key.startsWith(`${name}{`) && key.includes(`quantile="${q}"`)) {
        max = Number.isNaN(max) ? value : Math.max(max, value);
      }
    }
  }
  return max;
}
