/**
 * `hookd bench generator`: the load-generator process the sweeps and `bench replication`
 * start (never the harness itself, so the harness's own work is not in the figures). It
 * submits jobs to every node — over HTTP (`POST /v1/jobs`) or over hookd's transport as a
 * UDP client (src/jobs/udp_client.ts) — spread round-robin, or, with `--event-type T`, events
 * of type T over HTTP (`POST /v1/events`, which each node fans out to the endpoints that take
 * T: `hookd bench --fanout`), and answers its harness's commands, one JSON line each way
 * (commands on stdin, results and progress on stdout):
 *
 * - `{"op":"open","step":S,"rate":R,"seconds":T}`: open loop. Submit i is scheduled at
 *   start + i/R by the clock and latency runs from that scheduled time (no coordinated
 *   omission: a generator or node that falls behind shows up as latency). At most
 *   `--in-flight` submits wait for answers; a due submit past that waits its turn (its wait
 *   counts in its latency), and one still unsent when the step's time is up was never
 *   offered: `offered` is what was really sent.
 * - `{"op":"max","step":S,"seconds":T,"outstanding":N}`: closed loop at the maximum rate,
 *   keeping N submits outstanding; a slot whose submit was refused (503) pauses 20 ms first.
 * - `{"op":"exit"}`.
 *
 * After a step every submit has its answer (or timed out), its accepted ids go to
 * `<ids-dir>/<step>.tsv` (`id`; scheduled, acknowledged and sent wall-clock ms; the target's
 * index: generator_protocol.ts's `AcceptedSubmit`), and one
 * `{"op":"done",…}` line reports the counts and the submit→ack latency. Every second of a
 * step a `{"op":"progress",…}` line reports counts so far. Times are wall-clock epoch ms from
 * `performance.timeOrigin + performance.now()`, the clock the sink stamps receipts with
 * (`runStep` takes them, and its timers, from an injected `Runtime`, so tests run it on a
 * virtual clock).
 *
 * Owns the submit loop and its bookkeeping; the harnesses (replication_bench.ts, sweep.ts)
 * own the nodes, the sink and every verdict.
 */

import { setImmediate } from "node:timers";
import { type CommandSpec, listFlag, numberFlag, stringFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { readLines } from "../lib/lines.ts";
import {
  formatIdsLine,
  type GeneratorCommand,
  type ProgressLine,
  type StepReport,
} from "../process/generator_protocol.ts";
import { round } from "../lib/round.ts";
import { Histogram } from "../metrics/histogram.ts";
import { UdpJobsClient } from "../jobs/udp_client.ts";
import type { SubmitRequest } from "../jobs/service.ts";
import { CLUSTER_KEY_ENV, clusterKeyFrom } from "../transport/mod.ts";
import process from "node:process";
import type { TransportConfig } from "../config/transport.ts";
import type { Runtime } from "../lib/runtime.ts";

/** Refusal codes that mean "503, come back later" (the API's unavailable codes). */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  "no_quorum",
  "overloaded",
  "not_ready",
  "storage_failed",
  "shutting_down",
]);

/** How one submit ended, as the generator counts it. */
export type SubmitResult =
  /** `jobs`: the jobs an event's 202 says it made (absent for a job, which is one). */
  | { readonly kind: "accepted"; readonly id: string; readonly jobs?: number }
  /** A 503 (or its UDP equivalent): the cluster said no, early and clearly. */
  | { readonly kind: "rejected"; readonly code: string }
  /** Anything else: a timeout, a connection error, an unexpected status. */
  | { readonly kind: "error"; readonly code: string };

/** A way to submit one job to target `index` (a node). */
export interface Submitter {
  readonly targets: number;
  submit(index: number, request: SubmitRequest): Promise<SubmitResult>;
  close(): Promise<void>;
}

const spec: CommandSpec = {
  name: "bench generator",
  summary: "Internal: the load-generator process of the sweeps and bench replication",
  flags: {
    via: { type: "string", help: "http or udp", valueName: "HOW", default: "http" },
    targets: {
      type: "string",
      help: "Nodes: HTTP base URLs (--via http) or UDP host:port (--via udp), comma-separated",
      valueName: "A,B",
      multiple: true,
    },
    "job-url": { type: "string", help: "Where the jobs are to be delivered", valueName: "URL" },
    "event-type": {
      type: "string",
      help: "Submit events of this type (POST /v1/events, --via http) instead of jobs",
      valueName: "TYPE",
    },
    "payload-bytes": {
      type: "string",
      help: "Bytes of each job's JSON payload",
      valueName: "N",
      default: "128",
    },
    "in-flight": {
      type: "string",
      help: "Most open-loop submits waiting for answers at once",
      valueName: "N",
      default: "2048",
    },
    "ids-dir": { type: "string", help: "Where each step's accepted ids go", valueName: "DIR" },
    "cluster-key": {
      type: "string",
      help: `For --via udp; else $${CLUSTER_KEY_ENV}`,
      valueName: "KEY",
    },
    "datagram-bytes": {
      type: "string",
      help: "For --via udp: largest datagram the client's transport builds",
      valueName: "N",
    },
    "request-timeout-ms": {
      type: "string",
      help: "A submit with no answer after this long is an error",
      valueName: "MS",
      default: "5000",
    },
    "job-max-attempts": {
      type: "string",
      help: "Each job's maxAttempts (default: the node's)",
      valueName: "N",
    },
    "job-timeout-ms": {
      type: "string",
      help: "Each job's per-attempt timeoutMs (default: the node's)",
      valueName: "MS",
    },
  },
};

/**
 * The generator's clock: epoch ms on `performance`'s clock (fractional, and the one the sink
 * stamps receipts with), both as `nowMs` and `wallMs`, so every time it writes joins with them.
 */
export const generatorRuntime: Runtime = Object.freeze({
  nowMs: () => performance.timeOrigin + performance.now(),
  wallMs: () => performance.timeOrigin + performance.now(),
  setTimer(delayMs: number, fn: () => void): () => void {
    const handle = setTimeout(fn, Math.max(0, delayMs));
    return () => clearTimeout(handle);
  },
  defer(fn: () => void): void {
    setImmediate(fn);
  },
});
/** How long a closed-loop slot waits after a refusal (503) before it submits again. */
const CLOSED_LOOP_REFUSAL_PAUSE_MS = 20;

export const generatorCommand: LeafCommand = {
  spec,
  async run(args) {
    const via = stringFlag(args.values, "via") ?? "http";
    if (via !== "http" && via !== "udp") {
      throw new UsageError(`--via must be http or udp, got ${via}`);
    }
    const targets = listFlag(args.values, "targets");
    if (targets.length === 0) throw new UsageError("--targets is required");
    const eventType = stringFlag(args.values, "event-type");
    const jobUrl = stringFlag(args.values, "job-url");
    if ((jobUrl === undefined) === (eventType === undefined)) {
      throw new UsageError("give exactly one of --job-url URL (jobs) or --event-type T (events)");
    }
    if (eventType !== undefined && via !== "http") {
      throw new UsageError("--event-type submits over HTTP only (--via http)");
    }
    const idsDir = stringFlag(args.values, "ids-dir");
    if (idsDir === undefined) throw new UsageError("--ids-dir is required");
    const payloadBytes = numberFlag(args.values, "payload-bytes", 128, {
      min: 16,
      max: 1_000_000,
      integer: true,
    });
    const inFlightMax = numberFlag(args.values, "in-flight", 2048, {
      min: 1,
      max: 1_000_000,
      integer: true,
    });
    const timeoutMs = numberFlag(args.values, "request-timeout-ms", 5000, {
      min: 10,
      max: 600_000,
    });
    let submitter: Submitter;
    if (via === "http") {
      submitter = new HttpSubmitter(targets, timeoutMs, eventType);
    } else {
      const clusterKey = clusterKeyFrom(
        stringFlag(args.values, "cluster-key"),
        (n) => Deno.env.get(n),
      );
      if (clusterKey === undefined) throw new UsageError(`--via udp needs a cluster key`);
      const datagram = stringFlag(args.values, "datagram-bytes");
      submitter = new UdpSubmitter(targets, clusterKey, timeoutMs, {
        ...(datagram !== undefined
          ? {
            datagramBytes: numberFlag(args.values, "datagram-bytes", 1400, {
              min: 512,
              max: 65000,
              integer: true,
            }),
          }
          : {}),
      });
    }
    const payload = JSON.stringify({ bench: "x".repeat(Math.max(0, payloadBytes - 12)) });
    const maxAttempts = stringFlag(args.values, "job-max-attempts") === undefined
      ? undefined
      : numberFlag(args.values, "job-max-attempts", 0, { min: 1, integer: true });
    const jobTimeoutMs = stringFlag(args.values, "job-timeout-ms") === undefined
      ? undefined
      : numberFlag(args.values, "job-timeout-ms", 0, { min: 1, integer: true });
    const request: SubmitRequest = {
      // An event's jobs go to its endpoints' URLs: the url is unused then.
      url: jobUrl ?? "",
      payload,
      ...(maxAttempts !== undefined ? { maxAttempts } : {}),
      ...(jobTimeoutMs !== undefined ? { timeoutMs: jobTimeoutMs } : {}),
    };
    try {
      for await (const line of readLines(Deno.stdin.readable)) {
        if (line.trim() === "") continue;
        const command = JSON.parse(line) as GeneratorCommand;
        if (command.op === "exit") break;
        if (command.op === "clock") {
          console.log(JSON.stringify({ op: "clock", now_ms: generatorRuntime.nowMs() }));
          continue;
        }
        const report = await runStep(submitter, request, command, {
          inFlightMax,
          idsDir,
          emit: (value) => console.log(JSON.stringify(value)),
        });
        console.log(JSON.stringify(report));
      }
      return EXIT_OK;
    } catch (error) {
      console.error(`bench generator: ${error instanceof Error ? error.stack : String(error)}`);
      return EXIT_FAILURE;
    } finally {
      await submitter.close();
    }
  },
};

export interface StepOptions {
  readonly inFlightMax: number;
  readonly idsDir: string;
  readonly emit: (line: ProgressLine) => void;
  /** Clock and timers. @default generatorRuntime */
  readonly runtime?: Runtime;
}

/** Runs one open- or closed-loop step to the last answer. */
export async function runStep(
  submitter: Submitter,
  request: SubmitRequest,
  command: Exclude<GeneratorCommand, { op: "exit" | "clock" }>,
  options: StepOptions,
): Promise<StepReport> {
  const runtime = options.runtime ?? generatorRuntime;
  const wallNow = () => runtime.nowMs();
  const sleep = (ms: number) => new Promise<void>((resolve) => runtime.setTimer(ms, resolve));
  const cpu0 = cpuMs();
  const ack = new Histogram();
  const refusal = new Histogram();
  const ackTimesMs: number[] = [];
  const codes: Record<string, number> = {};
  const accepted: string[] = [];
  let offered = 0;
  let acceptedCount = 0;
  let jobsMade = 0;
  let rejected = 0;
  let errors = 0;
  let inFlight = 0;
  let sentLate = 0;
  let target = 0;
  let lastAnswerMs = 0;
  const answered: Array<() => void> = [];
  const startMs = wallNow();

  const send = (scheduledMs: number): void => {
    offered++;
    inFlight++;
    if (wallNow() - scheduledMs > 1) sentLate++;
    const index = target;
    target = (target + 1) % submitter.targets;
    const sentMs = wallNow();
    submitter.submit(index, request).then((result) => {
      const nowMs = wallNow();
      lastAnswerMs = nowMs;
      switch (result.kind) {
        case "accepted":
          acceptedCount++;
          jobsMade += result.jobs ?? 1;
          ack.record(nowMs - scheduledMs);
          ackTimesMs.push(nowMs);
          accepted.push(formatIdsLine([result.id, scheduledMs, nowMs, sentMs, index]));
          break;
        case "rejected":
          rejected++;
          refusal.record(nowMs - sentMs);
          codes[result.code] = (codes[result.code] ?? 0) + 1;
          break;
        case "error":
          errors++;
          codes[result.code] = (codes[result.code] ?? 0) + 1;
          break;
      }
      const release = () => {
        inFlight--;
        answered.shift()?.();
      };
      // A closed loop that resubmits a refused slot at once only spins on refusals (a client
      // honours Retry-After); it waits a little instead, so the nodes keep their CPU for the
      // submits they take.
      if (result.kind === "rejected" && command.op === "max") {
        runtime.setTimer(CLOSED_LOOP_REFUSAL_PAUSE_MS, release);
      } else release();
    });
  };
  const waitForAnswer = () => new Promise<void>((resolve) => answered.push(resolve));

  let nextProgressMs = startMs + 1000;
  const progress = (nowMs: number) => {
    if (nowMs < nextProgressMs) return;
    nextProgressMs += 1000;
    options.emit({
      op: "progress",
      step: command.step,
      elapsed_s: round((nowMs - startMs) / 1000, 1)!,
      offered,
      accepted: acceptedCount,
      rejected,
      errors,
    });
  };

  const endMs = startMs + command.seconds * 1000;
  let asked = 0;
  if (command.op === "open") {
    const intervalMs = 1000 / command.rate;
    asked = Math.round(command.rate * command.seconds);
    let next = 0;
    while (next < asked) {
      const nowMs = wallNow();
      const due = Math.min(Math.floor((nowMs - startMs) / intervalMs) + 1, asked);
      while (next < due && inFlight < options.inFlightMax) send(startMs + (next++) * intervalMs);
      progress(nowMs);
      if (next < due) {
        // Held by the in-flight bound. Past the step's end what it still holds was never
        // offered; a timer that woke a little late is not a reason to drop anything.
        if (nowMs >= endMs) break;
        await waitForAnswer();
      } else if (next < asked) {
        // Sleep until the next submit is due (timers fire late: that shows as latency).
        await sleep(Math.max(0, Math.min(50, startMs + next * intervalMs - wallNow())));
      }
    }
  } else {
    for (;;) {
      const nowMs = wallNow();
      if (nowMs >= endMs) break;
      while (inFlight < command.outstanding) send(wallNow());
      progress(nowMs);
      await waitForAnswer();
    }
  }
  const sendEndMs = wallNow();
  while (inFlight > 0) await waitForAnswer();
  const path = `${options.idsDir}/${command.step}.tsv`;
  await Deno.writeTextFile(path, accepted.length > 0 ? accepted.join("\n") + "\n" : "");
  const sendSeconds = (sendEndMs - startMs) / 1000;
  const has = ack.count > 0;
  return {
    op: "done",
    step: command.step,
    asked,
    offered,
    accepted: acceptedCount,
    jobs_made: jobsMade,
    rejected,
    errors,
    codes,
    send_seconds: round(sendSeconds, 3)!,
    seconds: round((Math.max(lastAnswerMs, sendEndMs) - startMs) / 1000, 3)!,
    accepted_per_s: round(acceptedCount / sendSeconds, 1),
    accepted_by_send_end: ackTimesMs.filter((t) => t <= sendEndMs).length,
    // Answers are handled in the order they come: the first one pushed is the earliest.
    first_ack_seconds: ackTimesMs.length > 0 ? round((ackTimesMs[0]! - startMs) / 1000, 3) : null,
    ack_p50_ms: has ? round(ack.percentile(50), 3) : null,
    ack_p90_ms: has ? round(ack.percentile(90), 3) : null,
    ack_p99_ms: has ? round(ack.percentile(99), 3) : null,
    ack_max_ms: has ? round(ack.summary().max, 3) : null,
    refusal_p50_ms: refusal.count > 0 ? round(refusal.percentile(50), 3) : null,
    refusal_p99_ms: refusal.count > 0 ? round(refusal.percentile(99), 3) : null,
    sent_late: sentLate,
    ids_file: path,
    cpu_ms: round(cpuMs() - cpu0, 1)!,
  };
}

/** User + system CPU of this process, ms (getrusage through node:process). */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * `POST /v1/jobs` to each node's HTTP API; with an event type, `POST /v1/events` of that type
 * with the request's payload instead (the request's url and limits are then unused: the
 * endpoints' own apply).
 */
export class HttpSubmitter implements Submitter {
  readonly #urls: string[];
  readonly #timeoutMs: number;
  readonly #eventType: string | undefined;

  constructor(baseUrls: readonly string[], timeoutMs: number, eventType?: string) {
    const route = eventType === undefined ? "/v1/jobs" : "/v1/events";
    this.#urls = baseUrls.map((u) => `${u.replace(/\/$/, "")}${route}`);
    this.#timeoutMs = timeoutMs;
    this.#eventType = eventType;
  }

  get targets(): number {
    return this.#urls.length;
  }

  async submit(index: number, request: SubmitRequest): Promise<SubmitResult> {
    const limits =
      (request.maxAttempts !== undefined ? `,"maxAttempts":${request.maxAttempts}` : "") +
      (request.timeoutMs !== undefined ? `,"timeoutMs":${request.timeoutMs}` : "");
    const body = this.#eventType !== undefined
      ? `{"type":${JSON.stringify(this.#eventType)},"payload":${request.payload}}`
      : `{"url":${JSON.stringify(request.url)},"payload":${request.payload}${limits}}`;
    try {
      const response = await fetch(this.#urls[index]!, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      const text = await response.text();
      if (response.status === 202) {
        const answer = JSON.parse(text) as { id?: unknown; jobs?: unknown };
        if (typeof answer.id !== "string") return { kind: "error", code: "no_id_in_202" };
        if (this.#eventType === undefined) return { kind: "accepted", id: answer.id };
        // An event's 202 says how many jobs it made (N = 0 is a valid answer).
        return typeof answer.jobs === "number" && Number.isInteger(answer.jobs) && answer.jobs >= 0
          ? { kind: "accepted", id: answer.id, jobs: answer.jobs }
          : { kind: "error", code: "no_jobs_in_202" };
      }
      if (response.status === 503) {
        // The node's own reason (no_quorum, not_ready, overloaded, …) says why it refused.
        let reason = "";
        try {
          const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
          if (typeof code === "string" && /^[a-z_]{1,32}$/.test(code)) reason = `_${code}`;
        } catch {
          // Not the API's JSON: the bare status says enough.
        }
        return { kind: "rejected", code: `http_503${reason}` };
      }
      return { kind: "error", code: `http_${response.status}` };
    } catch (error) {
      const name = error instanceof Error ? error.name : "error";
      return { kind: "error", code: name === "TimeoutError" ? "timeout" : "connection" };
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** `client-submit` over hookd's transport (src/jobs/udp_client.ts). */
export class UdpSubmitter implements Submitter {
  readonly #addresses: string[];
  readonly #client: UdpJobsClient;

  constructor(
    addresses: readonly string[],
    clusterKey: string,
    timeoutMs: number,
    transport: Partial<TransportConfig> = {},
  ) {
    this.#addresses = [...addresses];
    this.#client = UdpJobsClient.start({
      nodeId: `generator-${Deno.pid}`,
      clusterKey,
      config: { requestTimeoutMs: Math.round(timeoutMs) },
      transport,
    });
  }

  get targets(): number {
    return this.#addresses.length;
  }

  async submit(index: number, request: SubmitRequest): Promise<SubmitResult> {
    const outcome = await this.#client.submit(this.#addresses[index]!, request);
    if (outcome.ok) return { kind: "accepted", id: outcome.id };
    return UNAVAILABLE_CODES.has(outcome.code)
      ? { kind: "rejected", code: outcome.code }
      : { kind: "error", code: outcome.code };
  }

  close(): Promise<void> {
    return this.#client.close();
  }
}
