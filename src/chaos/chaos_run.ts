/**
 * A chaos run: five `hookd node` processes (with `--fault-injection`), a `hookd sink` (with
 * `--faults`) and an open-loop load, while a seeded schedule (schedule.ts) kills, stops,
 * partitions and starves the nodes and takes the receiver down. At the end it heals
 * everything, drains (bounded) and checks what the design promises:
 *
 * - every acknowledged job reached the receiver (or was dead-lettered by its retry policy):
 *   `lost` must be 0, and each lost job is printed with its preference list, its owners over
 *   time as the faults made them, every node's view of it and the faults around it;
 * - duplicates (at-least-once) are counted and each is shown with the failovers or receiver
 *   outages that explain it;
 * - a SIGSTOPped node, once resumed, must not start new attempts of jobs it lost meanwhile on
 *   stale state (`stale_attempts`: an attempt it started after SIGCONT of a job its
 *   replacement had already delivered); attempts it had in flight when stopped may finish
 *   (`inflight_at_stop`);
 * - failure detection: the slowest time from a SIGKILL/SIGSTOP to a live node's member-dead
 *   (`max_detect_ms`), and member-dead notices no kill, stop or partition explains
 *   (`false_dead`);
 * - no node exited on its own, no commit conflict (`hookd_jobs_commit_conflicts_total`).
 *
 * Owns the processes it starts (stopped in every path), the load loop, carrying out the
 * schedule and every verdict. Load is built here on `fetch` until the bench's generator
 * process can stream accepted ids while it runs.
 */

import { hookdCommand } from "../cli/self_command.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
  waitUntil,
} from "../cluster/local_cluster.ts";
import type { ChaosConfig } from "../config.ts";
import { preferenceList } from "../jobs/preference.ts";
import { readLines } from "../lib/lines.ts";
import { GeneratorProcess, readIdsFile } from "../bench/bench_cluster.ts";
import { Sfc32 } from "../lib/rng.ts";
import {
  describeFault,
  type Fault,
  FAULT_KINDS,
  type FaultKind,
  impairedBy,
  planFaults,
} from "./schedule.ts";

export interface ChaosOptions {
  readonly durationMs: number;
  readonly seed: number;
  readonly config: ChaosConfig;
  /** Progress and diagnostics (stderr). */
  readonly log: (line: string) => void;
  readonly nodes?: number;
}

/** The last stdout line of `hookd chaos --json`. */
export interface ChaosReport {
  seed: number;
  duration_s: number;
  rate: number;
  offered: number;
  acked: number;
  rejected: number;
  submit_errors: number;
  /** Refused and failed submits by cause (`http_503_no_quorum`, `timeout`, `connection`, …). */
  submit_codes: Record<string, number>;
  delivered: number;
  lost: number;
  dead_lettered: number;
  duplicates: number;
  duplicate_jobs: number;
  duplicates_unexplained: number;
  /** Duplicated jobs per kind of fault around them (one job may count under several). */
  duplicate_causes: Record<string, number>;
  unacked_but_delivered: number;
  faults: Record<FaultKind, number>;
  max_detect_ms: number | null;
  detections: number;
  false_dead: number;
  stale_attempts: number;
  /** Freezes nodes noticed (a `stalled` log line: they stopped delivering and caught up). */
  resyncs: number;
  resumed_attempts_of_lost_jobs: number;
  /** Attempts of already-delivered jobs a resumed node made after catching up (see stopFigures). */
  overlap_after_resync: number;
  inflight_at_stop: number;
  commit_conflicts: number;
  unexpected_exits: number;
  drain_ms: number;
  drained: boolean;
  receiver: Record<string, number>;
  problems: string[];
}

interface AckedJob {
  /** When the generator scheduled the submit (wall ms). */
  readonly sentAtMs: number;
  readonly ackAtMs: number;
}

interface Attempt {
  readonly node: string;
  readonly kind: string;
  readonly startedAtMs: number;
  readonly latencyMs: number;
  readonly outcome: string;
}

interface MemberNotice {
  readonly observer: string;
  readonly subject: string;
  readonly event: string;
  readonly atMs: number;
}

interface FaultLog {
  readonly fault: Fault;
  /** Wall-clock ms it really began and ended (carrying out a fault takes time). */
  startedAtMs: number;
  endedAtMs: number;
}

const CLUSTER_KEY_BYTES = 32;
const wallNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Bounded lists in the report. */
const LISTED_MAX = 20;

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { config, log } = options;
  const nodeCount = options.nodes ?? 5;
  const problems: string[] = [];
  const key = Array.from(crypto.getRandomValues(new Uint8Array(CLUSTER_KEY_BYTES)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  // Fixed HTTP ports: a restarted node keeps its API address, so the generator's targets stay
  // right for the whole run.
  const httpPorts = freeTcpPorts(nodeCount);
  const specs = localNodeSpecs(nodeCount, "127.0.0.1", freeUdpPortRange(nodeCount)).map((s, i) => ({
    ...s,
    http: `127.0.0.1:${httpPorts[i]}`,
  }));
  const ids = specs.map((s) => s.id);
  const addressOf = new Map(specs.map((s) => [s.id, s.address]));
  const idOfAddress = new Map(specs.map((s) => [s.address, s.id]));
  const voters = specs.map((s) => s.address).sort();
  const faults = planFaults({
    rng: new Sfc32(options.seed),
    durationMs: options.durationMs,
    nodes: ids,
    config,
  });
  log(`chaos: seed ${options.seed}, ${faults.length} faults planned over ${options.durationMs} ms`);
  for (const f of faults) log(`  ${describeFault(f)}`);

  // ---- observations --------------------------------------------------------------------
  const control = new Map<string, { faultsUrl: string; pid: number }>();
  const attempts = new Map<string, Attempt[]>();
  const notices: MemberNotice[] = [];
  const unexpectedExits: string[] = [];
  const resyncs: Array<{ node: string; event: string; fields: NodeEventLine }> = [];
  const onEvent = (line: NodeEventLine) => {
    switch (line.event) {
      case "listening":
        if (typeof line.faults === "string" && typeof line.pid === "number") {
          control.set(line.observer, { faultsUrl: line.faults, pid: line.pid });
        }
        return;
      case "attempt": {
        if (typeof line.job !== "string" || typeof line.startedAtMs !== "number") return;
        let list = attempts.get(line.job);
        if (list === undefined) attempts.set(line.job, list = []);
        list.push({
          node: line.observer,
          kind: String(line.kind),
          startedAtMs: line.startedAtMs,
          latencyMs: Number(line.latencyMs ?? 0),
          outcome: String(line.outcome ?? ""),
        });
        return;
      }
      case "stalled":
      case "resynced":
        resyncs.push({ node: line.observer, event: line.event, fields: line });
        log(`chaos: ${line.observer} ${line.event} ${JSON.stringify(line)}`);
        return;
      case "member-dead":
      case "member-alive":
      case "member-suspect":
      case "member-left": {
        const atMs = typeof line.time === "string" ? Date.parse(line.time) : wallNow();
        if (typeof line.node === "string") {
          notices.push({ observer: line.observer, subject: line.node, event: line.event, atMs });
        }
        return;
      }
    }
  };

  const sink = await startSinkProcess(log, config.slowReceiverMs);
  const cluster = new LocalCluster({
    nodes: specs,
    clusterKey: key,
    extraArgs: () => [
      "--fault-injection",
      "--allow-private-targets",
      "--retry-schedule",
      config.retryScheduleMs.join(","),
    ],
    onEvent,
    onStderr: (id, line) => log(`[${id}] ${line}`),
    onUnexpectedExit: (id, status) => {
      unexpectedExits.push(
        `${id} exited on its own (code ${status.code}, signal ${status.signal})`,
      );
      log(`chaos: node ${id} exited on its own (code ${status.code})`);
    },
  });
  const stopped = new Set<string>();
  const idsDir = await Deno.makeTempDir({ prefix: "hookd-chaos-ids-" });
  let generator: GeneratorProcess | undefined;
  try {
    cluster.startAll();
    await waitReady(cluster, ids, control, config.readyLimitMs);
    generator = GeneratorProcess.start(
      [
        "--via",
        "http",
        "--targets",
        specs.map((s) => `http://${s.http}`).join(","),
        "--job-url",
        `${sink.url}/hook`,
        "--ids-dir",
        idsDir,
        "--in-flight",
        String(config.submitsInFlightMax),
        "--request-timeout-ms",
        String(config.submitTimeoutMs),
        "--job-max-attempts",
        String(config.jobMaxAttempts),
        "--job-timeout-ms",
        String(config.jobTimeoutMs),
      ],
      {},
      log,
    );
    log("chaos: cluster ready; load and faults start");

    // ---- load: the bench's generator process, one open-loop step for the whole run -------
    const loadStartMs = wallNow();
    const step = generator.run(
      { op: "open", step: "chaos", rate: config.rate, seconds: options.durationMs / 1000 },
      (p) => {
        if (Math.round(p.elapsed_s) % 10 === 0) {
          log(
            `chaos: ${p.elapsed_s}s ${p.offered} offered, ${p.accepted} acked, ` +
              `${p.rejected} refused, ${p.errors} errors`,
          );
        }
      },
    );

    // ---- faults --------------------------------------------------------------------------
    const faultLogs: FaultLog[] = [];
    const active = new Set<Fault>();
    const pushAll = () => Promise.all(ids.map((id) => pushNodeFaults(id)));
    /** Sends node `id` the partition and loss its active faults add up to. */
    const pushNodeFaults = async (id: string): Promise<void> => {
      const target = control.get(id);
      if (target === undefined || !cluster.isRunning(id) || stopped.has(id)) return;
      const from = new Set<string>();
      let probability = 0;
      let untilMs = 0;
      for (const f of active) {
        const remaining = loadStartMs + f.endMs - wallNow() + 2_000;
        if (f.kind === "partition_oneway" && f.node === id) {
          for (const peer of f.from) from.add(addressOf.get(peer)!);
          untilMs = Math.max(untilMs, remaining);
        } else if (f.kind === "partition_split") {
          const inMinority = f.minority.includes(id);
          for (const peer of ids) {
            if (peer !== id && f.minority.includes(peer) !== inMinority) {
              from.add(addressOf.get(peer)!);
            }
          }
          untilMs = Math.max(untilMs, remaining);
        } else if (f.kind === "loss_burst" && f.nodes.includes(id)) {
          probability = Math.max(probability, f.probability);
        }
      }
      const lossMs = Math.max(
        0,
        ...[...active].flatMap((f) =>
          f.kind === "loss_burst" && f.nodes.includes(id)
            ? [loadStartMs + f.endMs - wallNow() + 2_000]
            : []
        ),
      );
      await postJson(`${target.faultsUrl}/faults`, {
        op: "partition",
        from: [...from].sort(),
        ...(from.size > 0 ? { ms: Math.round(Math.max(0, untilMs)) } : {}),
      });
      await postJson(`${target.faultsUrl}/faults`, {
        op: "loss",
        probability,
        ...(probability > 0 ? { ms: Math.round(lossMs) } : {}),
      });
    };
    const begin = async (fault: Fault): Promise<void> => {
      const entry: FaultLog = { fault, startedAtMs: wallNow(), endedAtMs: Infinity };
      faultLogs.push(entry);
      active.add(fault);
      log(`chaos: + ${describeFault(fault)}`);
      switch (fault.kind) {
        case "kill":
          await cluster.kill(fault.node);
          control.delete(fault.node);
          return;
        case "stop": {
          const pid = control.get(fault.node)?.pid;
          if (pid === undefined || !cluster.isRunning(fault.node)) {
            problems.push(`could not SIGSTOP ${fault.node}: not running`);
            return;
          }
          Deno.kill(pid, "SIGSTOP");
          stopped.add(fault.node);
          return;
        }
        case "receiver_outage":
          await postJson(`${sink.faultsUrl}/faults`, {
            mode: fault.mode,
            ms: fault.endMs - fault.atMs + 2_000,
          });
          return;
        default:
          await pushAll();
      }
    };
    const end = async (fault: Fault): Promise<void> => {
      active.delete(fault);
      const entry = faultLogs.find((e) => e.fault === fault);
      log(`chaos: - ${describeFault(fault)}`);
      switch (fault.kind) {
        case "kill":
          cluster.start(fault.node);
          // Its control port is known once it prints `listening`; then it gets its faults.
          await waitUntil(() => control.has(fault.node), 30_000);
          await pushNodeFaults(fault.node);
          break;
        case "stop": {
          const pid = control.get(fault.node)?.pid;
          if (pid !== undefined) Deno.kill(pid, "SIGCONT");
          stopped.delete(fault.node);
          await pushNodeFaults(fault.node);
          break;
        }
        case "receiver_outage":
          await postJson(`${sink.faultsUrl}/faults`, { mode: "ok" });
          break;
        default:
          await pushAll();
      }
      if (entry !== undefined) entry.endedAtMs = wallNow();
    };
    const faultsDone = Promise.all(faults.map(async (fault) => {
      await sleep(Math.max(0, loadStartMs + fault.atMs - wallNow()));
      await begin(fault);
      await sleep(Math.max(0, loadStartMs + fault.endMs - wallNow()));
      await end(fault);
    }));

    const load = await step;
    await faultsDone;
    const acked = new Map<string, AckedJob>();
    for (const [id, scheduledMs, ackMs] of await readIdsFile(load.ids_file)) {
      acked.set(id, { sentAtMs: scheduledMs, ackAtMs: ackMs });
    }
    log(
      `chaos: load done: ${load.offered} offered, ${acked.size} acked, ${load.rejected} ` +
        `refused (503), ${load.errors} errors ${JSON.stringify(load.codes)}`,
    );

    // ---- heal and drain ------------------------------------------------------------------
    await healEverything(cluster, ids, control, stopped, sink.faultsUrl);
    const drainStartMs = wallNow();
    await waitReady(cluster, ids, control, config.readyLimitMs).catch((error) => {
      problems.push(`after the heal: ${error instanceof Error ? error.message : error}`);
    });
    const ackedIds = [...acked.keys()];
    let receipts = await sinkReceipts(sink.url, ackedIds);
    const drained = await (async () => {
      const deadline = wallNow() + config.drainMsMax;
      for (;;) {
        const missing = ackedIds.filter((_, i) => receipts[i] === null).length;
        if (missing === 0) return true;
        if (wallNow() > deadline) return false;
        log(`chaos: draining, ${missing} acknowledged jobs not delivered yet`);
        await sleep(2_000);
        receipts = await sinkReceipts(sink.url, ackedIds);
      }
    })();
    const drainMs = wallNow() - drainStartMs;

    // ---- checks --------------------------------------------------------------------------
    const receivedAt = new Map<string, { at: number; duplicates: number }>();
    ackedIds.forEach((id, i) => {
      const r = receipts[i];
      if (r !== null && r !== undefined) receivedAt.set(id, r);
    });
    const stats = await sinkStats(sink.url);
    const deadIds = await deadLetterIds(cluster, ids);
    const undelivered = ackedIds.filter((id) => !receivedAt.has(id));
    const deadLettered = undelivered.filter((id) => deadIds.has(id));
    const lostIds = undelivered.filter((id) => !deadIds.has(id));
    const delivered = receivedAt.size;
    const duplicateJobs = [...receivedAt.entries()].filter(([, r]) => r.duplicates > 0);
    const duplicates = Number(stats.duplicates ?? 0);

    const window = (fromMs: number, toMs: number) =>
      faultLogs.filter((e) => e.startedAtMs <= toMs && fromMs <= e.endedAtMs);
    const rel = (ms: number) => `${((ms - loadStartMs) / 1000).toFixed(1)}s`;

    // Lost jobs: everything that could explain them.
    for (const id of lostIds.slice(0, LISTED_MAX)) {
      const job = acked.get(id)!;
      const prefs = preferenceList(id, voters).map((a) => idOfAddress.get(a) ?? a);
      const views = await jobViews(cluster, ids, id);
      // The coordinator mints an unkeyed id it ranks first for: it is the first owner.
      log(`LOST ${id}: acked by ${prefs[0]} at ${rel(job.ackAtMs)}; preference ${prefs.join(">")}`);
      log(`  owners over time (by the schedule): ${ownersOverTime(prefs, faultLogs, job, rel)}`);
      for (const [node, view] of views) log(`  ${node} holds: ${view}`);
      for (const a of attempts.get(id) ?? []) {
        log(`  attempt by ${a.node} at ${rel(a.startedAtMs)}: ${a.kind} ${a.outcome}`);
      }
      for (const e of window(job.sentAtMs - 15_000, Infinity)) {
        log(`  fault ${describeFault(e.fault)} (real ${rel(e.startedAtMs)}-${rel(e.endedAtMs)})`);
      }
    }

    // Duplicates: the failovers and outages around each one.
    let unexplained = 0;
    const causes: Record<string, number> = {};
    for (const [index, [id, receipt]] of duplicateJobs.entries()) {
      const tries = attempts.get(id) ?? [];
      const nodes = [...new Set(tries.map((a) => a.node))];
      const first = Math.min(receipt.at, ...tries.map((a) => a.startedAtMs));
      const last = Math.max(receipt.at, ...tries.map((a) => a.startedAtMs + a.latencyMs));
      const prefs = preferenceList(id, voters).map((a) => idOfAddress.get(a) ?? a);
      const around = window(first - 15_000, last + 1_000).filter((e) =>
        explainsDuplicate(e.fault, nodes, prefs)
      );
      // An attempt that failed (timeout, connection error) although the receiver had it: its
      // answer was lost or late, as at-least-once allows, with or without a fault.
      const lostAnswer = tries.some((a) =>
        (a.outcome === "timeout" || a.outcome === "network_error") && a.startedAtMs <= receipt.at
      );
      if (lostAnswer) causes.lost_answer = (causes.lost_answer ?? 0) + 1;
      if (around.length === 0 && !lostAnswer) unexplained++;
      for (const kind of new Set(around.map((e) => e.fault.kind))) {
        causes[kind] = (causes[kind] ?? 0) + 1;
      }
      if (around.length === 0 && !lostAnswer) {
        log(`  preference ${prefs.join(">")}, first receipt ${rel(receipt.at)}`);
        for (const a of tries) {
          log(`  attempt by ${a.node} at ${rel(a.startedAtMs)}: ${a.kind} ${a.outcome}`);
        }
        for (const e of window(first - 15_000, last + 1_000)) {
          log(`  fault ${describeFault(e.fault)}`);
        }
      }
      if (index < 5) {
        const times = tries.map((a) => `${a.node}@${rel(a.startedAtMs)} ${a.kind}/${a.outcome}`);
        log(`  first receipt ${rel(receipt.at)}; attempts ${times.join(", ")}`);
      }
      if (index < LISTED_MAX || (around.length === 0 && !lostAnswer)) {
        log(
          `duplicate ${id} (${receipt.duplicates + 1} receipts) attempted by ${nodes.join(",")}: ` +
            (around.length > 0
              ? around.map((e) => describeFault(e.fault)).join("; ")
              : lostAnswer
              ? "an attempt failed although the receiver had the job (lost answer)"
              : "UNEXPLAINED"),
        );
      }
    }
    if (duplicateJobs.length > 0) {
      log(`chaos: duplicates by the faults around them: ${JSON.stringify(causes)}`);
    }

    // Detection and false deaths.
    const detection = detectionFigures(faultLogs, notices, ids, config.deadExplainedMs);
    if (detection.slowest !== undefined) log(`chaos: slowest detection: ${detection.slowest}`);
    // A stopped node must not start attempts of jobs it lost, on stale state, once resumed.
    const stops = stopFigures(
      faultLogs,
      attempts,
      receivedAt,
      resyncs.map((r) => ({
        node: r.node,
        event: r.event,
        atMs: typeof r.fields.time === "string" ? Date.parse(r.fields.time) : 0,
      })),
    );
    for (const line of stops.details) log(`stale attempt: ${line}`);
    const conflicts = await commitConflicts(cluster, ids);

    if (lostIds.length > 0) problems.push(`${lostIds.length} acknowledged jobs lost`);
    if (conflicts > 0) problems.push(`${conflicts} commit conflicts`);
    problems.push(...unexpectedExits);
    if (!drained) problems.push(`not drained within ${config.drainMsMax} ms`);
    if (stops.stale > 0) problems.push(`${stops.stale} stale attempts after SIGCONT`);
    const counts = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    for (const e of faultLogs) counts[e.fault.kind]++;
    return {
      seed: options.seed,
      duration_s: options.durationMs / 1000,
      rate: config.rate,
      offered: load.offered,
      acked: acked.size,
      rejected: load.rejected,
      submit_errors: load.errors,
      submit_codes: load.codes,
      delivered,
      lost: lostIds.length,
      dead_lettered: deadLettered.length,
      duplicates,
      duplicate_jobs: duplicateJobs.length,
      duplicates_unexplained: unexplained,
      duplicate_causes: causes,
      unacked_but_delivered: Math.max(0, Number(stats.unique ?? 0) - delivered),
      faults: counts,
      max_detect_ms: detection.maxMs,
      detections: detection.count,
      false_dead: detection.falseDead,
      stale_attempts: stops.stale,
      resyncs: resyncs.filter((r) => r.event === "stalled").length,
      resumed_attempts_of_lost_jobs: stops.resumedOfLost,
      overlap_after_resync: stops.afterResync,
      inflight_at_stop: stops.inflightAtStop,
      commit_conflicts: conflicts,
      unexpected_exits: unexpectedExits.length,
      drain_ms: Math.round(drainMs),
      drained,
      receiver: await receiverCounts(sink.faultsUrl),
      problems,
    };
  } finally {
    for (const id of stopped) {
      const pid = control.get(id)?.pid;
      if (pid !== undefined) {
        try {
          Deno.kill(pid, "SIGCONT");
        } catch {
          // Gone.
        }
      }
    }
    await generator?.close();
    await cluster.stopAll();
    await sink.close();
    await Deno.remove(idsDir, { recursive: true }).catch(() => {});
  }
}

/** Free TCP ports on loopback: bound, read and released (a small race, fine locally). */
function freeTcpPorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}

// ---- helpers -------------------------------------------------------------------------------

async function postJson(url: string, body: unknown): Promise<boolean> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(2_000),
    });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

async function getJson(url: string, timeoutMs = 5_000): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return await response.json();
}

async function waitReady(
  cluster: LocalCluster,
  ids: readonly string[],
  control: ReadonlyMap<string, unknown>,
  limitMs: number,
): Promise<void> {
  const deadline = performance.now() + limitMs;
  for (const id of ids) {
    for (;;) {
      const url = cluster.httpUrls.get(id);
      const ready = url !== undefined && control.has(id) &&
        await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
          async (r) => (await r.body?.cancel(), r.status === 200),
          () => false,
        );
      if (ready) break;
      if (performance.now() > deadline) {
        throw new Error(`node ${id} not ready within ${limitMs} ms`);
      }
      await sleep(100);
    }
  }
}

async function healEverything(
  cluster: LocalCluster,
  ids: readonly string[],
  control: Map<string, { faultsUrl: string; pid: number }>,
  stopped: Set<string>,
  sinkFaultsUrl: string,
): Promise<void> {
  for (const id of stopped) {
    const pid = control.get(id)?.pid;
    if (pid !== undefined) Deno.kill(pid, "SIGCONT");
  }
  stopped.clear();
  for (const id of ids) if (!cluster.isRunning(id)) cluster.start(id);
  await waitUntil(() => ids.every((id) => control.has(id) && cluster.httpUrls.has(id)), 30_000);
  await Promise.all(ids.map((id) => {
    const url = control.get(id)?.faultsUrl;
    return url === undefined ? false : postJson(`${url}/faults`, { op: "heal" });
  }));
  await postJson(`${sinkFaultsUrl}/faults`, { mode: "ok" });
}

interface SinkProcess {
  readonly url: string;
  readonly faultsUrl: string;
  close(): Promise<void>;
}

async function startSinkProcess(log: (line: string) => void, slowMs: number): Promise<SinkProcess> {
  const child = hookdCommand([
    "sink",
    "--listen",
    "127.0.0.1:0",
    "--faults",
    "--slow-ms",
    String(slowMs),
  ]).spawn();
  const lines = readLines(child.stdout);
  const stderr = (async () => {
    for await (const line of readLines(child.stderr)) if (line !== "") log(`[sink] ${line}`);
  })();
  const first = await lines.next();
  if (first.done) throw new Error("the sink exited before it listened");
  const listening = JSON.parse(first.value) as { listening: string; faults: string };
  const rest = (async () => {
    for await (const _ of lines) { /* final stats line */ }
  })();
  return {
    url: `http://${listening.listening}`,
    faultsUrl: listening.faults,
    async close() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Gone.
      }
      await Promise.all([child.status, rest, stderr]);
    },
  };
}

type Receipt = { at: number; duplicates: number } | null;

async function sinkReceipts(sinkUrl: string, ids: readonly string[]): Promise<Receipt[]> {
  const out: Receipt[] = [];
  const chunk = 50_000;
  for (let i = 0; i < ids.length; i += chunk) {
    const response = await fetch(`${sinkUrl}/receipts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ids: ids.slice(i, i + chunk) }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = await response.json() as { receipts: Receipt[] };
    out.push(...body.receipts);
  }
  return out;
}

async function sinkStats(sinkUrl: string): Promise<Record<string, unknown>> {
  try {
    return await getJson(`${sinkUrl}/stats`) as Record<string, unknown>;
  } catch {
    return {};
  }
}

async function receiverCounts(faultsUrl: string): Promise<Record<string, number>> {
  try {
    const state = await getJson(`${faultsUrl}/faults`) as Record<string, unknown>;
    const out: Record<string, number> = {};
    for (const k of ["refused", "slowed", "resets"]) out[k] = Number(state[k]);
    return out;
  } catch {
    return {};
  }
}

async function deadLetterIds(cluster: LocalCluster, ids: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) continue;
    try {
      const page = await getJson(`${url}/v1/dead-letters?limit=1000`) as {
        items?: Array<{ id?: string }>;
      };
      for (const item of page.items ?? []) if (typeof item.id === "string") out.add(item.id);
    } catch {
      // A node that does not answer lists nothing.
    }
  }
  return out;
}

async function jobViews(
  cluster: LocalCluster,
  ids: readonly string[],
  jobId: string,
): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) continue;
    try {
      const response = await fetch(`${url}/v1/jobs/${jobId}`, {
        signal: AbortSignal.timeout(5_000),
      });
      const view = await response.json() as Record<string, unknown>;
      if (response.status !== 200) {
        out.push([id, `${response.status}`]);
        continue;
      }
      const history = Array.isArray(view.attempts) ? view.attempts.length : 0;
      out.push([id, `state ${view.state}, owner ${view.owner}, ${history} attempts recorded`]);
    } catch (error) {
      out.push([id, `no answer (${error instanceof Error ? error.message : error})`]);
    }
  }
  return out;
}

async function commitConflicts(cluster: LocalCluster, ids: readonly string[]): Promise<number> {
  let total = 0;
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) continue;
    try {
      const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) }))
        .text();
      for (const line of text.split("\n")) {
        if (line.startsWith("hookd_jobs_commit_conflicts_total")) {
          total += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
        }
      }
    } catch {
      // Counted as none; the run's other checks see a node that does not answer.
    }
  }
  return total;
}

/**
 * Whether `fault` can explain a duplicate delivery by `nodes` (the nodes that reported an
 * attempt): a failover (kill, stop, partition, loss) on a node that attempted the job or could
 * have owned it before them (`prefs`, its preference list: a SIGKILLed node never reports the
 * attempt it had in flight), or a receiver outage that answers late or cuts connections after
 * the request may have been handled.
 */
function explainsDuplicate(
  fault: Fault,
  nodes: readonly string[],
  prefs: readonly string[],
): boolean {
  const lastOwner = nodes.length === 0
    ? prefs.length
    : Math.max(...nodes.map((n) => prefs.indexOf(n)));
  const involved = (n: string) => nodes.includes(n) || prefs.indexOf(n) <= lastOwner;
  switch (fault.kind) {
    case "kill":
    case "stop":
      return involved(fault.node);
    case "partition_oneway":
      return involved(fault.node) || fault.from.some(involved);
    case "partition_split":
      return true;
    case "loss_burst":
      return fault.nodes.some(involved);
    case "receiver_outage":
      return fault.mode === "slow" || fault.mode === "reset";
  }
}

/** Who owned the job as the schedule impaired its preferred nodes (membership lags this). */
function ownersOverTime(
  prefs: readonly string[],
  faultLogs: readonly FaultLog[],
  job: AckedJob,
  rel: (ms: number) => string,
): string {
  const times = [job.sentAtMs];
  for (const e of faultLogs) {
    if (impairedBy(e.fault).length === 0) continue;
    for (const t of [e.startedAtMs, e.endedAtMs]) {
      if (t > job.sentAtMs && t < Infinity) times.push(t);
    }
  }
  times.sort((a, b) => a - b);
  const parts: string[] = [];
  let last = "";
  for (const t of times) {
    const impaired = new Set(
      faultLogs.filter((e) => e.startedAtMs <= t && t < e.endedAtMs).flatMap((e) =>
        impairedBy(e.fault)
      ),
    );
    const owner = prefs.find((n) => !impaired.has(n)) ?? "none";
    if (owner !== last) parts.push(`${rel(t)} ${owner}`);
    last = owner;
  }
  return parts.join(", ");
}

/** Detection time of kills and stops, and member-dead notices nothing explains. */
function detectionFigures(
  faultLogs: readonly FaultLog[],
  notices: readonly MemberNotice[],
  ids: readonly string[],
  explainedMs: number,
): { maxMs: number | null; count: number; falseDead: number; slowest: string | undefined } {
  let maxMs: number | null = null;
  let count = 0;
  let slowest: string | undefined;
  const downDuring = (node: string, fromMs: number, toMs: number) =>
    faultLogs.some((e) =>
      (e.fault.kind === "kill" || e.fault.kind === "stop") && e.fault.node === node &&
      e.startedAtMs < toMs && fromMs < e.endedAtMs
    );
  for (const e of faultLogs) {
    if (e.fault.kind !== "kill" && e.fault.kind !== "stop") continue;
    const subject = e.fault.node;
    for (const observer of ids) {
      if (observer === subject || downDuring(observer, e.startedAtMs, e.endedAtMs)) continue;
      // An observer that already held the subject dead (a partition or a fault just before)
      // has nothing to detect; a kill shorter than detection is never detected (the node is
      // back first): only a member-dead while the subject is really down counts.
      const about = notices.filter((n) => n.observer === observer && n.subject === subject);
      const prior = about.filter((n) => n.atMs < e.startedAtMs).at(-1);
      if (prior?.event === "member-dead" || prior?.event === "member-left") continue;
      const notice = about.find((n) =>
        n.event === "member-dead" && n.atMs >= e.startedAtMs && n.atMs <= e.endedAtMs
      );
      if (notice === undefined) continue;
      count++;
      const ms = Math.round(notice.atMs - e.startedAtMs);
      if (ms > (maxMs ?? -1)) {
        maxMs = ms;
        slowest = `${observer} declared ${subject} dead ${ms} ms after: ${describeFault(e.fault)}`;
      }
    }
  }
  let falseDead = 0;
  for (const n of notices) {
    if (n.event !== "member-dead") continue;
    const explained = faultLogs.some((e) => {
      if (!(e.startedAtMs <= n.atMs && n.atMs <= e.endedAtMs + explainedMs)) return false;
      const f = e.fault;
      switch (f.kind) {
        case "kill":
        case "stop":
          // The subject went down, or the observer did (it wakes to a stale view).
          return f.node === n.subject || f.node === n.observer;
        case "partition_oneway":
          return (f.node === n.observer && f.from.includes(n.subject)) ||
            (f.node === n.subject && f.from.includes(n.observer));
        case "partition_split":
          return f.minority.includes(n.observer) !== f.minority.includes(n.subject);
        default:
          return false;
      }
    });
    if (!explained) falseDead++;
  }
  return { maxMs, count, falseDead, slowest };
}

/**
 * What a SIGSTOPped node did once resumed with the jobs the others took over meanwhile (jobs
 * another node attempted during the stop). `stale`: an attempt it started after SIGCONT and
 * before it had caught up again (its `resynced` line), of a job the sink already had — acting
 * on the state it held when frozen. `afterResync`: such attempts once it had caught up: the
 * returning owner overlapping its replacement, whose `done` it could not know yet (the
 * replacement sends records only to members it holds alive); docs/replication.md names this
 * duplicate. `inflightAtStop`: attempts it had in flight when stopped (they may finish).
 */
function stopFigures(
  faultLogs: readonly FaultLog[],
  attempts: ReadonlyMap<string, readonly Attempt[]>,
  receivedAt: ReadonlyMap<string, { at: number }>,
  resyncs: ReadonlyArray<{ node: string; event: string; atMs: number }>,
): {
  stale: number;
  afterResync: number;
  resumedOfLost: number;
  inflightAtStop: number;
  details: string[];
} {
  let stale = 0;
  let afterResync = 0;
  const details: string[] = [];
  let resumedOfLost = 0;
  let inflightAtStop = 0;
  for (const e of faultLogs) {
    if (e.fault.kind !== "stop") continue;
    const node = e.fault.node;
    // Only the process that was stopped: a kill of the node after it resumed ends the watch.
    const untilMs = faultLogs.find((k) =>
      k.fault.kind === "kill" && k.fault.node === node && k.startedAtMs >= e.endedAtMs - 1_000
    )?.startedAtMs ?? Infinity;
    const resyncedAtMs = resyncs.find((r) =>
      r.node === node && r.event === "resynced" && r.atMs >= e.endedAtMs - 1_000
    )?.atMs ?? Infinity;
    for (const [jobId, list] of attempts) {
      const takenOver = list.some((a) =>
        a.node !== node && a.startedAtMs >= e.startedAtMs && a.startedAtMs < e.endedAtMs
      );
      for (const a of list) {
        if (a.node !== node) {
          continue;
        }
        if (a.startedAtMs < e.startedAtMs && a.startedAtMs + a.latencyMs > e.startedAtMs) {
          inflightAtStop++;
        }
        if (!takenOver || a.startedAtMs < e.endedAtMs || a.startedAtMs >= untilMs) {
          continue;
        }
        resumedOfLost++;
        const delivered = receivedAt.get(jobId);
        if (delivered === undefined || delivered.at >= a.startedAtMs) {
          continue;
        }
        if (a.startedAtMs >= resyncedAtMs) {
          afterResync++;
          continue;
        }
        stale++;
        if (details.length < LISTED_MAX) {
          const by = list.filter((b) =>
            b.node !== node
          ).map((b) =>
            `${b.node}@${Math.round(b.startedAtMs - e.endedAtMs)}ms ${b.kind}`
          );
          details.push(
            `${node} attempted ${jobId} ${Math.round(a.startedAtMs - e.endedAtMs)} ms after ` +
              `SIGCONT (${a.kind}), before it caught up; the sink had it ` +
              `${Math.round(a.startedAtMs - delivered.at)} ms before; others: ${by.join(", ")}`,
          );
        }
      }
    }
  }
  return { stale, afterResync, resumedOfLost, inflightAtStop, details };
}
