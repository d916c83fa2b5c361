/**
 * `hookd bench delivery`: the delivery engine with an in-memory store against a sink in its
 * own process (spawned through `hookdCommand`), in two phases of `--seconds` each:
 *
 * 1. fixed rate: jobs offered open-loop at `--rate`/s; latency is measured from each job's
 *    scheduled offer time (not from when the generator got round to it, so a stalled
 *    generator shows up as latency) to the engine's `delivered` report;
 * 2. maximum rate: a backlog of jobs is kept offered (refilled on every delivery) so the
 *    engine is never idle; throughput is deliveries in the window / window length.
 *
 * CPU per delivery comes from `process.cpuUsage()` (node:process; user + system of all threads, getrusage) of this process
 * (the engine: `cpu_ms_per_delivery`) and of the sink process, which reports its own on
 * GET /stats (`sink_cpu_ms_per_delivery`), over the maximum-rate window. (/proc/<pid>/stat
 * would need --allow-all under Deno 2.) Progress goes to stderr; with --json the last stdout line is
 * one JSON object. Owns the harness only; the engine and sink are used as they are.
 *
 * Counts are kept per phase from the engine's own reports, and the sink's counters are taken
 * as a difference from the moment the warm-up drained, so the warm-up (cold connections, JIT)
 * is in no count. Figures of a run in which anything went wrong are not figures: the bench
 * still prints them, lists what went wrong under `problems`, and exits 1 when any job was
 * rejected, left undelivered, or an attempt failed, or the sink saw a duplicate, a bad
 * signature, a missing id or an oversized body.
 */

import { booleanFlag, type CommandSpec, numberFlag } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { hookdCommand } from "../process/self_command.ts";
import { deliveryDefaults } from "../config/delivery.ts";
import { unreachable } from "../lib/assert.ts";
import { readLines } from "../lib/lines.ts";
import { round } from "../lib/round.ts";
import { Histogram } from "../metrics/histogram.ts";
import { DeliveryEngine } from "../delivery/engine.ts";
import { MemoryDeliveryStore } from "../delivery/memory_store.ts";
import type { DeliveryJob } from "../delivery/types.ts";
import process from "node:process";
import type { SinkStats } from "../process/sink.ts";

const spec: CommandSpec = {
  name: "bench delivery",
  summary: "Delivery engine throughput and latency against a local sink process",
  flags: {
    seconds: { type: "string", valueName: "S", help: "Length of each phase", default: "5" },
    rate: {
      type: "string",
      valueName: "JOBS_PER_S",
      help: "Offered rate of the fixed-rate phase",
      default: "2000",
    },
    concurrency: {
      type: "string",
      valueName: "N",
      // Measured: 32 in flight saturates a local sink on 2 cores; 64 and 128 only queue
      // (more CPU per delivery in the engine, longer tails).
      help: "Attempts in flight to the sink (originConcurrencyMax)",
      default: "32",
    },
    "payload-bytes": {
      type: "string",
      valueName: "BYTES",
      help: "Payload size of each job",
      default: "256",
    },
    verify: { type: "boolean", help: "Have the sink verify every signature (costs sink CPU)" },
    json: { type: "boolean", help: "Print one JSON object as the last stdout line" },
  },
};

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** Jobs kept offered in the maximum-rate phase, per unit of concurrency. */
const BACKLOG_PER_SLOT = 4;
/** The longest a phase may take to drain after its offers stop. */
const DRAIN_LIMIT_MS = 20_000;

const clock = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const deliveryBenchCommand: LeafCommand = {
  spec,
  async run(args) {
    const seconds = numberFlag(args.values, "seconds", 5, { min: 0.5, max: 3600 });
    const rate = numberFlag(args.values, "rate", 2000, { min: 1, max: 1_000_000 });
    const concurrency = numberFlag(args.values, "concurrency", 32, {
      min: 1,
      max: 4096,
      integer: true,
    });
    const payloadBytes = numberFlag(args.values, "payload-bytes", 256, {
      min: 32,
      max: deliveryDefaults.payloadBytesMax,
      integer: true,
    });
    const verify = booleanFlag(args.values, "verify");
    const json = booleanFlag(args.values, "json");

    const sinkArgs = ["sink", "--listen", "127.0.0.1:0", ...(verify ? ["--secret", SECRET] : [])];
    const sinkProcess = hookdCommand(sinkArgs, { stdout: "piped", stderr: "inherit" }).spawn();
    const sinkLines = readLines(sinkProcess.stdout);
    try {
      const first = await sinkLines.next();
      if (first.done) throw new Error("sink exited before it listened");
      const listening = (JSON.parse(first.value) as { listening: string }).listening;
      const url = `http://${listening}/hook`;
      progress(`sink pid ${sinkProcess.pid} listening on ${listening}`);

      // Valid JSON of exactly payloadBytes bytes.
      const envelope = JSON.stringify({ type: "bench", data: "" }).length;
      const payload = JSON.stringify({
        type: "bench",
        data: "x".repeat(Math.max(0, payloadBytes - envelope)),
      });
      const result = await runPhases({
        url,
        seconds,
        rate,
        concurrency,
        payload,
        statsUrl: `http://${listening}/stats`,
      });

      const sinkEnd = await sinkStats(`http://${listening}/stats`);
      const sink = sinkCountsSince(result.sinkAfterWarmup, sinkEnd);
      const fixedCounts = result.fixed.counts;
      const maxCounts = result.maxRate.counts;
      const problems = benchProblems({
        warmup: result.warmup,
        fixed: fixedCounts,
        maxRate: maxCounts,
        sink,
      });
      const out = {
        deliveries_per_s: round(result.maxRate.deliveriesPerS, 2),
        p50_ms: round(result.fixed.latency.percentile(50), 2),
        p99_ms: round(result.fixed.latency.percentile(99), 2),
        cpu_ms_per_delivery: round(result.maxRate.engineCpuMsPerDelivery, 4),
        sink_cpu_ms_per_delivery: round(result.maxRate.sinkCpuMsPerDelivery, 4),
        fixed_rate_offered_per_s: rate,
        fixed_rate_delivered_per_s: round(result.fixed.deliveriesPerS, 2),
        fixed_rate_p90_ms: round(result.fixed.latency.percentile(90), 2),
        fixed_rate_max_ms: round(result.fixed.latency.summary().max, 2),
        fixed_rate_offered: fixedCounts.offered,
        fixed_rate_rejected: fixedCounts.rejected,
        fixed_rate_delivered: fixedCounts.delivered,
        fixed_rate_undelivered: undelivered(fixedCounts),
        fixed_rate_failed_attempts: fixedCounts.failedAttempts,
        max_rate_p50_ms: round(result.maxRate.latency.percentile(50), 2),
        max_rate_p99_ms: round(result.maxRate.latency.percentile(99), 2),
        max_rate_offered: maxCounts.offered,
        max_rate_rejected: maxCounts.rejected,
        max_rate_delivered: maxCounts.delivered,
        max_rate_undelivered: undelivered(maxCounts),
        max_rate_failed_attempts: maxCounts.failedAttempts,
        // The sink's counters over both measured phases, the warm-up left out.
        sink_received: sink.received,
        sink_duplicates: sink.duplicates,
        sink_signature_failures: sink.signature_failures,
        sink_missing_id: sink.missing_id,
        sink_too_large: sink.too_large,
        warmup_jobs_excluded: result.warmup.offered,
        problems,
        seconds_per_phase: seconds,
        concurrency,
        payload_bytes: payloadBytes,
        cpu_source:
          "process.cpuUsage() (getrusage) user+system of the engine (this) and sink processes",
      };
      progress(
        `max rate ${out.deliveries_per_s}/s, fixed ${rate}/s p50 ${out.p50_ms} ms p99 ${out.p99_ms} ms, ` +
          `cpu ${out.cpu_ms_per_delivery} ms/delivery (sink ${out.sink_cpu_ms_per_delivery})`,
      );
      console.log(json ? JSON.stringify(out) : JSON.stringify(out, null, 2));
      for (const problem of problems) progress(`FAILED: ${problem}`);
      return problems.length === 0 ? EXIT_OK : EXIT_FAILURE;
    } catch (error) {
      console.error(`bench delivery: ${error instanceof Error ? error.message : String(error)}`);
      return EXIT_FAILURE;
    } finally {
      try {
        sinkProcess.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      for await (const _ of sinkLines) { /* drain the final stats line */ }
      await sinkProcess.status;
    }
  },
};

interface PhaseOptions {
  url: string;
  seconds: number;
  rate: number;
  concurrency: number;
  payload: string;
  statsUrl: string;
}

/** What happened to the jobs one phase offered, from the engine's reports. */
export interface PhaseCounts {
  offered: number;
  /** `schedule` said no (the engine was full). */
  rejected: number;
  delivered: number;
  /** Attempts that did not end in a 2xx (each `retry` report, and a `dead` one's last). */
  failedAttempts: number;
  /** Jobs that became dead letters. */
  dead: number;
}

function noCounts(): PhaseCounts {
  return { offered: 0, rejected: 0, delivered: 0, failedAttempts: 0, dead: 0 };
}

/** Jobs accepted but not delivered by the end of the phase's drain: dead or still held. */
export function undelivered(counts: PhaseCounts): number {
  return counts.offered - counts.rejected - counts.delivered;
}

/** The sink counters the verdict reads, as differences over the measured phases. */
export type SinkCounts = Pick<
  SinkStats,
  "received" | "duplicates" | "signature_failures" | "missing_id" | "too_large"
>;

function sinkCountsSince(before: SinkStats, after: SinkStats): SinkCounts {
  return {
    received: after.received - before.received,
    duplicates: after.duplicates - before.duplicates,
    signature_failures: after.signature_failures - before.signature_failures,
    missing_id: after.missing_id - before.missing_id,
    too_large: after.too_large - before.too_large,
  };
}

/**
 * Everything that makes a run's figures untrustworthy, one line each; empty for a clean run.
 * The warm-up's failed attempts do not count (a cold start may fail once), but a warm-up that
 * never drained does: its jobs would run into the measured phases.
 */
export function benchProblems(run: {
  warmup: PhaseCounts;
  fixed: PhaseCounts;
  maxRate: PhaseCounts;
  sink: SinkCounts;
}): string[] {
  const problems: string[] = [];
  const warmupLeft = undelivered(run.warmup);
  if (warmupLeft > 0) problems.push(`${warmupLeft} warm-up jobs were not delivered`);
  for (const [name, counts] of [["fixed-rate", run.fixed], ["max-rate", run.maxRate]] as const) {
    if (counts.rejected > 0) problems.push(`${name}: ${counts.rejected} jobs rejected`);
    const left = undelivered(counts);
    if (left > 0) problems.push(`${name}: ${left} jobs not delivered (${counts.dead} dead)`);
    if (counts.failedAttempts > 0) {
      problems.push(`${name}: ${counts.failedAttempts} attempts failed`);
    }
  }
  const sink = run.sink;
  if (sink.duplicates > 0) problems.push(`sink: ${sink.duplicates} duplicate deliveries`);
  if (sink.signature_failures > 0) {
    problems.push(`sink: ${sink.signature_failures} signatures failed to verify`);
  }
  if (sink.missing_id > 0) problems.push(`sink: ${sink.missing_id} requests without webhook-id`);
  if (sink.too_large > 0) problems.push(`sink: ${sink.too_large} bodies too large`);
  return problems;
}

interface PhaseResult {
  deliveriesPerS: number;
  latency: Histogram;
  counts: PhaseCounts;
  engineCpuMsPerDelivery: number;
  sinkCpuMsPerDelivery: number;
}

type PhaseName = "warmup" | "fixed" | "max";

async function runPhases(options: PhaseOptions): Promise<{
  warmup: PhaseCounts;
  sinkAfterWarmup: SinkStats;
  fixed: PhaseResult;
  maxRate: PhaseResult;
}> {
  const store = new MemoryDeliveryStore();
  let latency = new Histogram();
  const counts: Record<PhaseName, PhaseCounts> = {
    warmup: noCounts(),
    fixed: noCounts(),
    max: noCounts(),
  };
  // A job's phase is in its id, so a late report (after a drain timed out) still lands in the
  // phase that offered the job.
  const phaseOf = (jobId: string): PhaseName => jobId.split("_")[2] as PhaseName;
  let onDelivered: (() => void) | undefined;
  const engine = new DeliveryEngine({
    config: {
      ...deliveryDefaults,
      allowPrivateTargets: true,
      retryScheduleMs: [100, 200, 400, 800],
      attemptTimeoutMs: 5_000,
      originConcurrencyMax: options.concurrency,
      concurrentDeliveriesMax: Math.max(
        options.concurrency,
        deliveryDefaults.concurrentDeliveriesMax,
      ),
    },
    store,
    clock,
    onReport: (report, job) => {
      const phase = counts[phaseOf(job.id)];
      switch (report.kind) {
        case "delivered":
          phase.delivered++;
          latency.record(clock() - job.submittedAtMs!);
          onDelivered?.();
          return;
        case "retry":
          phase.failedAttempts++;
          return;
        case "dead":
          phase.dead++;
          if (report.attempt !== undefined) phase.failedAttempts++;
          return;
        default:
          unreachable(report, "delivery report");
      }
    },
  });
  let seq = 0;
  const offer = (phase: PhaseName, submittedAtMs: number): void => {
    counts[phase].offered++;
    const job: DeliveryJob = {
      id: `msg_bench_${phase}_${seq++}`,
      url: options.url,
      payload: options.payload,
      secrets: [SECRET],
      submittedAtMs,
    };
    if (!engine.schedule(job).ok) counts[phase].rejected++;
  };
  const drain = async () => {
    const limitMs = clock() + DRAIN_LIMIT_MS;
    while (engine.jobCount > 0 && clock() < limitMs) await sleep(5);
  };

  try {
    // Warm-up: connections, JIT, key import.
    const warmEnd = clock() + Math.min(1_000, options.seconds * 200);
    while (clock() < warmEnd) {
      for (let i = 0; i < 64; i++) offer("warmup", clock());
      await sleep(10);
    }
    await drain();
    const sinkAfterWarmup = await sinkStats(options.statsUrl);

    // Phase 1: open-loop at a fixed rate.
    progress(`fixed rate: ${options.rate} jobs/s for ${options.seconds} s`);
    latency = new Histogram();
    const startMs = clock();
    const endMs = startMs + options.seconds * 1000;
    const intervalMs = 1000 / options.rate;
    let offered = 0;
    while (clock() < endMs) {
      const due = Math.min(
        Math.floor((clock() - startMs) / intervalMs) + 1,
        Math.ceil(options.seconds * options.rate),
      );
      for (; offered < due; offered++) offer("fixed", startMs + offered * intervalMs);
      await sleep(1);
    }
    await drain();
    const fixedElapsedS = (clock() - startMs) / 1000;
    const fixed: PhaseResult = {
      deliveriesPerS: counts.fixed.delivered / Math.max(fixedElapsedS, options.seconds),
      latency,
      counts: counts.fixed,
      engineCpuMsPerDelivery: NaN,
      sinkCpuMsPerDelivery: NaN,
    };
    progress(
      `fixed rate: ${counts.fixed.delivered} of ${counts.fixed.offered} delivered, ` +
        `${counts.fixed.rejected} rejected`,
    );

    // Phase 2: maximum rate, a bounded backlog refilled on every delivery.
    progress(`max rate: ${options.seconds} s, backlog ${options.concurrency * BACKLOG_PER_SLOT}`);
    latency = new Histogram();
    let running = true;
    onDelivered = () => {
      if (running) offer("max", clock());
    };
    const backlog = options.concurrency * BACKLOG_PER_SLOT;
    for (let i = 0; i < backlog; i++) offer("max", clock());
    await sleep(200);
    const cpu0 = { self: processCpuMs(), sink: (await sinkStats(options.statsUrl)).cpu_ms };
    const delivered0 = counts.max.delivered;
    const t0 = clock();
    await sleep(options.seconds * 1000);
    const window = counts.max.delivered - delivered0;
    const t1 = clock();
    const cpu1 = { self: processCpuMs(), sink: (await sinkStats(options.statsUrl)).cpu_ms };
    running = false;
    await drain();
    const perDelivery = (a?: number, b?: number) =>
      a === undefined || b === undefined || window === 0 ? NaN : (b - a) / window;
    const maxRate: PhaseResult = {
      deliveriesPerS: window / ((t1 - t0) / 1000),
      latency,
      counts: counts.max,
      engineCpuMsPerDelivery: perDelivery(cpu0.self, cpu1.self),
      sinkCpuMsPerDelivery: perDelivery(cpu0.sink, cpu1.sink),
    };
    progress(`max rate: ${window} delivered in ${((t1 - t0) / 1000).toFixed(2)} s`);
    return { warmup: counts.warmup, sinkAfterWarmup, fixed, maxRate };
  } finally {
    await engine.close();
  }
}

/** User + system CPU of this process (all threads), ms: `process.cpuUsage` is getrusage. */
function processCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

async function sinkStats(statsUrl: string): Promise<SinkStats> {
  const response = await fetch(statsUrl);
  return await response.json() as SinkStats;
}

function progress(message: string): void {
  console.error(`bench delivery: ${message}`);
}
