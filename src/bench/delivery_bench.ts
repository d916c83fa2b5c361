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
 */

import { booleanFlag, type CommandSpec, numberFlag } from "../cli/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../cli/command.ts";
import { hookdCommand } from "../cli/self_command.ts";
import { deliveryDefaults } from "../config.ts";
import { Histogram } from "../metrics/histogram.ts";
import { DeliveryEngine } from "../delivery/engine.ts";
import { MemoryDeliveryStore } from "../delivery/memory_store.ts";
import type { DeliveryJob } from "../delivery/types.ts";
import process from "node:process";
import type { SinkStats } from "./sink.ts";

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
    const sinkLines = lines(sinkProcess.stdout);
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

      const sink = await sinkStats(`http://${listening}/stats`);
      const out = {
        deliveries_per_s: round(result.maxRate.deliveriesPerS),
        p50_ms: round(result.fixed.latency.percentile(50)),
        p99_ms: round(result.fixed.latency.percentile(99)),
        cpu_ms_per_delivery: round(result.maxRate.engineCpuMsPerDelivery, 4),
        sink_cpu_ms_per_delivery: round(result.maxRate.sinkCpuMsPerDelivery, 4),
        fixed_rate_offered_per_s: rate,
        fixed_rate_delivered_per_s: round(result.fixed.deliveriesPerS),
        fixed_rate_p90_ms: round(result.fixed.latency.percentile(90)),
        fixed_rate_max_ms: round(result.fixed.latency.summary().max),
        fixed_rate_rejected: result.fixed.rejected,
        max_rate_p50_ms: round(result.maxRate.latency.percentile(50)),
        max_rate_p99_ms: round(result.maxRate.latency.percentile(99)),
        failed_attempts: result.failedAttempts,
        sink_received: sink.received,
        sink_duplicates: sink.duplicates,
        sink_signature_failures: sink.signature_failures,
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
      return EXIT_OK;
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

interface PhaseResult {
  deliveriesPerS: number;
  latency: Histogram;
  rejected: number;
  engineCpuMsPerDelivery: number;
  sinkCpuMsPerDelivery: number;
}

async function runPhases(options: PhaseOptions): Promise<{
  fixed: PhaseResult;
  maxRate: PhaseResult;
  failedAttempts: number;
}> {
  const store = new MemoryDeliveryStore();
  let latency = new Histogram();
  let delivered = 0;
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
      if (report.kind !== "delivered") return;
      delivered++;
      latency.record(clock() - job.submittedAtMs!);
      onDelivered?.();
    },
  });
  let seq = 0;
  const makeJob = (submittedAtMs: number): DeliveryJob => ({
    id: `msg_bench_${seq++}`,
    url: options.url,
    payload: options.payload,
    secrets: [SECRET],
    submittedAtMs,
  });
  const drain = async () => {
    const limitMs = clock() + DRAIN_LIMIT_MS;
    while (engine.jobCount > 0 && clock() < limitMs) await sleep(5);
  };

  try {
    // Warm-up: connections, JIT, key import.
    const warmEnd = clock() + Math.min(1_000, options.seconds * 200);
    while (clock() < warmEnd) {
      for (let i = 0; i < 64; i++) engine.schedule(makeJob(clock()));
      await sleep(10);
    }
    await drain();

    // Phase 1: open-loop at a fixed rate.
    progress(`fixed rate: ${options.rate} jobs/s for ${options.seconds} s`);
    latency = new Histogram();
    delivered = 0;
    let rejected = 0;
    const startMs = clock();
    const endMs = startMs + options.seconds * 1000;
    const intervalMs = 1000 / options.rate;
    let offered = 0;
    while (clock() < endMs) {
      const due = Math.min(
        Math.floor((clock() - startMs) / intervalMs) + 1,
        Math.ceil(options.seconds * options.rate),
      );
      while (offered < due) {
        const scheduledAtMs = startMs + offered * intervalMs;
        if (!engine.schedule(makeJob(scheduledAtMs)).ok) rejected++;
        offered++;
      }
      await sleep(1);
    }
    await drain();
    const fixedElapsedS = (clock() - startMs) / 1000;
    const fixed: PhaseResult = {
      deliveriesPerS: delivered / Math.max(fixedElapsedS, options.seconds),
      latency,
      rejected,
      engineCpuMsPerDelivery: NaN,
      sinkCpuMsPerDelivery: NaN,
    };
    progress(`fixed rate: ${delivered} delivered, ${rejected} rejected`);

    // Phase 2: maximum rate, a bounded backlog refilled on every delivery.
    progress(`max rate: ${options.seconds} s, backlog ${options.concurrency * BACKLOG_PER_SLOT}`);
    latency = new Histogram();
    delivered = 0;
    let running = true;
    onDelivered = () => {
      if (running) engine.schedule(makeJob(clock()));
    };
    const backlog = options.concurrency * BACKLOG_PER_SLOT;
    for (let i = 0; i < backlog; i++) engine.schedule(makeJob(clock()));
    await sleep(200);
    const cpu0 = { self: processCpuMs(), sink: (await sinkStats(options.statsUrl)).cpu_ms };
    const delivered0 = delivered;
    const t0 = clock();
    await sleep(options.seconds * 1000);
    const window = delivered - delivered0;
    const t1 = clock();
    const cpu1 = { self: processCpuMs(), sink: (await sinkStats(options.statsUrl)).cpu_ms };
    running = false;
    await drain();
    const perDelivery = (a?: number, b?: number) =>
      a === undefined || b === undefined || window === 0 ? NaN : (b - a) / window;
    const maxRate: PhaseResult = {
      deliveriesPerS: window / ((t1 - t0) / 1000),
      latency,
      rejected: 0,
      engineCpuMsPerDelivery: perDelivery(cpu0.self, cpu1.self),
      sinkCpuMsPerDelivery: perDelivery(cpu0.sink, cpu1.sink),
    };
    progress(`max rate: ${window} delivered in ${((t1 - t0) / 1000).toFixed(2)} s`);
    const snapshot = engine.metrics.snapshot();
    const failedAttempts = Object.entries(snapshot)
      .filter(([k]) => k.startsWith("hookd_delivery_attempts_total") && !k.includes("success"))
      .reduce((sum, [, v]) => sum + (v as number), 0);
    return { fixed, maxRate, failedAttempts };
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

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
    }
  }
  if (buffer !== "") yield buffer;
}

function progress(message: string): void {
  console.error(`bench delivery: ${message}`);
}

function round(value: number, digits = 2): number | null {
  if (!Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
