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
 * Owns the run: the processes it starts (stopped in every path), carrying out the schedule,
 * gathering what the nodes report, and the report. Load is the bench's generator process;
 * the judging is verdicts.ts, the requests to the processes cluster_io.ts.
 */

import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
  waitUntil,
} from "../cluster/local_cluster.ts";
import { type ChaosConfig, validateChaosConfig } from "./chaos_config.ts";
import { preferenceList } from "../jobs/preference.ts";
import { GeneratorProcess, readIdsFile } from "../process/generator_protocol.ts";
import { Sfc32 } from "../lib/rng.ts";
import { describeFault, type Fault, FAULT_KINDS, type FaultKind, planFaults } from "./schedule.ts";
import {
  type AckedJob,
  type Attempt,
  deliveryVerdict,
  detectionFigures,
  type FaultLog,
  judgeDuplicate,
  LISTED_MAX,
  type MemberNotice,
  ownershipChanged,
  type OwnershipSplit,
  ownersOverTime,
  stopFigures,
  stopsNoticed,
  undetectedStops,
} from "./verdicts.ts";
import type { FaultState } from "../node/fault_injection.ts";
import {
  commitConflicts,
  deadLetterIds,
  freeTcpPorts,
  getJson,
  healEverything,
  jobViews,
  postJson,
  postJsonForJson,
  receiverCounts,
  scheduledJobs,
  sinkReceipts,
  sinkStats,
  startSinkProcess,
  waitReady,
} from "./cluster_io.ts";

/** Lines of each node's stderr kept to report with an unexpected exit. */
const STDERR_LINES_KEPT = 8;

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
  /**
   * Duplicated jobs per kind of fault around them (and `lost_answer`, `unexplained`), split by
   * whether an ownership change preceded them (`ownershipChanged`: a member-dead, member-left or
   * return about a node that could own the job, in any node's view).
   */
  duplicate_causes_by_ownership: Record<string, OwnershipSplit>;
  /** Extra receipts of acknowledged jobs after an ownership change. */
  duplicates_after_ownership_change: number;
  /** Extra receipts of acknowledged jobs no ownership change preceded. */
  duplicates_no_ownership_change: number;
  /** Receipts after the first of jobs whose submit was never acknowledged (not judged). */
  duplicates_of_unacked: number;
  unacked_but_delivered: number;
  /** Faults begun, by kind. */
  faults: Record<FaultKind, number>;
  /**
   * Faults that measurably did what they are for, by kind: a process killed or stopped (and,
   * for a stop, detected by a live node), datagrams dropped by a partition or loss burst on
   * the nodes it involves, receiver requests refused, held or reset by an outage.
   */
  faults_effective: Record<FaultKind, number>;
  /** The first faults that did nothing measurable, described. */
  faults_without_effect: string[];
  /** Fault-control pushes a running node did not confirm with the asked state. */
  faults_unconfirmed: number;
  max_detect_ms: number | null;
  detections: number;
  false_dead: number;
  /** Stops during which no live node declared the stopped one dead (each is a problem). */
  stops_undetected: number;
  /** Stops the frozen node never logged as a freeze (each is a problem). */
  stops_unnoticed: number;
  /** Freezes logged that no stop explains (a starved host). */
  false_stalls: number;
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
  /**
   * Jobs the nodes still held for delivery (`hookd_jobs_scheduled`) once the drain ended, also
   * unacknowledged ones: must be 0; null when a node did not answer.
   */
  still_scheduled: number | null;
  receiver: Record<string, number>;
  problems: string[];
}

const CLUSTER_KEY_BYTES = 32;
const wallNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Sends `sig` to `pid`; false when the process is gone. */
function signal(pid: number, sig: Deno.Signal): boolean {
  try {
    Deno.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { log } = options;
  const config = validateChaosConfig(options.config);
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
  const lastStderr = new Map<string, string[]>();
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
      // A node frozen while it caught up after a restart ends that catch-up with `caught-up`.
      case "caught-up":
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
    onStderr: (id, line) => {
      log(`[${id}] ${line}`);
      // Kept per node, so that a node that exits on its own is reported with its last words
      // (the run's own log is long, and a caller shows only its tail).
      const lines = lastStderr.get(id) ?? [];
      lines.push(line);
      if (lines.length > STDERR_LINES_KEPT) lines.shift();
      lastStderr.set(id, lines);
    },
    onUnexpectedExit: (id, status) => {
      unexpectedExits.push(
        `${id} exited on its own (code ${status.code}, signal ${status.signal})`,
      );
      const said = (lastStderr.get(id) ?? []).map((l) => `\n  [${id}] ${l}`).join("");
      log(`chaos: node ${id} exited on its own (code ${status.code})${said}`);
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
    const rel = (ms: number) => `${((ms - loadStartMs) / 1000).toFixed(1)}s`;
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
    const logOf = new Map<Fault, FaultLog>();
    /**
     * Each partition's or loss burst's drop counters at its start, per node it involves and
     * process (pid): at its end the nodes' counters give what it really dropped (its effect).
     */
    const dropBaselines = new Map<Fault, Map<string, { pid: number; dropped: number }>>();
    const dropsInvolve = (f: Fault, id: string): boolean =>
      f.kind === "partition_oneway"
        ? f.node === id
        : f.kind === "partition_split"
        ? true
        : f.kind === "loss_burst" && f.nodes.includes(id);
    const dropReason = (f: Fault): "partition" | "loss" =>
      f.kind === "loss_burst" ? "loss" : "partition";
    /** A node's confirmed state is the start of every active fault's count on that process. */
    const noteBaselines = (id: string, pid: number, state: FaultState): void => {
      for (const f of active) {
        if (!dropsInvolve(f, id)) continue;
        let baselines = dropBaselines.get(f);
        if (baselines === undefined) dropBaselines.set(f, baselines = new Map());
        if (baselines.get(id)?.pid !== pid) {
          baselines.set(id, { pid, dropped: state.dropped[dropReason(f)] });
        }
      }
    };
    /** What `fault` dropped so far on the processes whose start we saw (a lower bound). */
    const measureDrops = async (fault: Fault): Promise<number> => {
      let dropped = 0;
      for (const [id, base] of dropBaselines.get(fault) ?? []) {
        const target = control.get(id);
        if (target === undefined || target.pid !== base.pid || stopped.has(id)) continue;
        const state = await getJson(`${target.faultsUrl}/faults`, 2_000).catch(() => undefined) as
          | FaultState
          | undefined;
        if (state !== undefined) dropped += state.dropped[dropReason(fault)] - base.dropped;
      }
      return dropped;
    };
    const unconfirmed: string[] = [];
    // One push at a time per node, each computed when it runs: two pushes whose requests
    // crossed on the way could otherwise leave a node with the older of two states.
    const pushChains = new Map<string, Promise<unknown>>();
    const pushAll = () => Promise.all(ids.map((id) => pushNodeFaults(id)));
    const pushNodeFaults = (id: string): Promise<FaultState | undefined> => {
      const next = (pushChains.get(id) ?? Promise.resolve()).then(() => pushNow(id));
      pushChains.set(id, next.catch(() => {}));
      return next;
    };
    /** Sends node `id` the partition and loss its active faults add up to; its confirmed state. */
    const pushNow = async (id: string): Promise<FaultState | undefined> => {
      const target = control.get(id);
      if (target === undefined || !cluster.isRunning(id) || stopped.has(id)) return undefined;
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
      const wanted = [...from].sort();
      await postJsonForJson(`${target.faultsUrl}/faults`, {
        op: "partition",
        from: wanted,
        ...(from.size > 0 ? { ms: Math.round(Math.max(0, untilMs)) } : {}),
      });
      const state = await postJsonForJson(`${target.faultsUrl}/faults`, {
        op: "loss",
        probability,
        ...(probability > 0 ? { ms: Math.round(lossMs) } : {}),
      }) as FaultState | undefined;
      // The node's answer is its state after both commands: it must be what was asked.
      const confirmed = state !== undefined &&
        JSON.stringify(state.partitionFrom) === JSON.stringify(wanted) &&
        state.lossProbability === probability;
      if (!confirmed) {
        // A node killed or stopped meanwhile gets its faults again when it is back.
        if (cluster.isRunning(id) && !stopped.has(id) && control.get(id)?.pid === target.pid) {
          unconfirmed.push(`${id} at ${rel(wallNow())}: ${JSON.stringify(state ?? null)}`);
          log(`chaos: ${id} did not confirm its faults: ${JSON.stringify(state ?? null)}`);
        }
        return undefined;
      }
      noteBaselines(id, target.pid, state);
      return state;
    };
    const receiverCount = (mode: string, counts: Record<string, number>): number =>
      counts[mode === "slow" ? "slowed" : mode === "reset" ? "resets" : "refused"] ?? NaN;
    const receiverAtStart = new Map<Fault, number>();
    const begin = async (fault: Fault): Promise<void> => {
      const entry: FaultLog = { fault, startedAtMs: wallNow(), endedAtMs: Infinity };
      faultLogs.push(entry);
      logOf.set(fault, entry);
      active.add(fault);
      log(`chaos: + ${describeFault(fault)}`);
      switch (fault.kind) {
        case "kill": {
          const killed = cluster.isRunning(fault.node);
          await cluster.kill(fault.node);
          control.delete(fault.node);
          entry.effect = killed ? 1 : 0;
          return;
        }
        case "stop": {
          // A node restarted a moment ago may not have printed its pid yet.
          await waitUntil(() => control.has(fault.node), 30_000);
          const pid = control.get(fault.node)?.pid;
          if (pid === undefined || !cluster.isRunning(fault.node) || !signal(pid, "SIGSTOP")) {
            problems.push(`could not SIGSTOP ${fault.node}: not running`);
            entry.effect = 0;
            return;
          }
          stopped.add(fault.node);
          entry.effect = 1;
          return;
        }
        case "receiver_outage":
          receiverAtStart.set(
            fault,
            receiverCount(fault.mode, await receiverCounts(sink.faultsUrl)),
          );
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
      const entry = logOf.get(fault);
      switch (fault.kind) {
        case "kill":
          active.delete(fault);
          cluster.start(fault.node);
          // The fault ends here, not once the node has printed `listening` and taken its
          // faults: on a loaded host that can take seconds, and the verdicts read the end as
          // the moment the node runs again.
          if (entry !== undefined) entry.endedAtMs = wallNow();
          // Its control port is known once it prints `listening`; then it gets its faults.
          await waitUntil(() => control.has(fault.node), 30_000);
          await pushNodeFaults(fault.node);
          break;
        case "stop": {
          active.delete(fault);
          const pid = control.get(fault.node)?.pid;
          if (pid !== undefined) signal(pid, "SIGCONT");
          // The stop ends at SIGCONT, not after the push below: on a loaded host the resumed
          // node answers it seconds later, and its `stalled` line, logged meanwhile, then fell
          // before the end and counted as "never logged a freeze" (the long run of 8320918).
          if (entry !== undefined) entry.endedAtMs = wallNow();
          stopped.delete(fault.node);
          await pushNodeFaults(fault.node);
          break;
        }
        case "receiver_outage": {
          active.delete(fault);
          const after = receiverCount(fault.mode, await receiverCounts(sink.faultsUrl));
          await postJson(`${sink.faultsUrl}/faults`, { mode: "ok" });
          const before = receiverAtStart.get(fault) ?? NaN;
          if (entry !== undefined && Number.isFinite(after - before)) entry.effect = after - before;
          break;
        }
        default: {
          // What it dropped, read before the push that ends it.
          const dropped = await measureDrops(fault);
          if (entry !== undefined) entry.effect = dropped;
          active.delete(fault);
          await pushAll();
        }
      }
      if (entry !== undefined && entry.endedAtMs === Infinity) entry.endedAtMs = wallNow();
      log(`chaos: - ${describeFault(fault)}: effect ${entry?.effect ?? "not measured"}`);
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
    const drainDeadlineMs = wallNow() + config.drainMsMax;
    const drained = await (async () => {
      const deadline = drainDeadlineMs;
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
    // Jobs a node still holds for delivery once every acknowledged one arrived: committed jobs
    // whose submit was never acknowledged (the client gave up, or the answer was lost) are
    // judged here, since no acknowledged id names them. Bounded by the drain's deadline.
    let stillScheduled = await scheduledJobs(cluster, ids);
    while (stillScheduled !== 0 && wallNow() < drainDeadlineMs) {
      await sleep(1_000);
      stillScheduled = await scheduledJobs(cluster, ids);
    }

    // ---- checks --------------------------------------------------------------------------
    const stats = await sinkStats(sink.url);
    const deadIds = await deadLetterIds(cluster, ids);
    // Every acknowledged job, joined with its receipt: none is left out.
    const verdict = deliveryVerdict(ackedIds, receipts, deadIds);
    const { lostIds, duplicateJobs } = verdict;
    const receivedAt = new Map<string, { at: number; duplicates: number }>();
    ackedIds.forEach((id, i) => {
      const r = receipts[i];
      if (r !== null && r !== undefined) receivedAt.set(id, r);
    });
    const window = (fromMs: number, toMs: number) =>
      faultLogs.filter((e) => e.startedAtMs <= toMs && fromMs <= e.endedAtMs);

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
    const causesByOwnership: Record<string, OwnershipSplit> = {};
    const extraByOwnership: OwnershipSplit = { after_ownership_change: 0, no_ownership_change: 0 };
    const noticesInOrder = [...notices].sort((a, b) => a.atMs - b.atMs);
    let noOwnershipListed = 0;
    for (const [index, [id, receipt]] of duplicateJobs.entries()) {
      const tries = attempts.get(id) ?? [];
      const prefs = preferenceList(id, voters).map((a) => idOfAddress.get(a) ?? a);
      const judged = judgeDuplicate(receipt, tries, prefs, faultLogs);
      if (judged.lostAnswer) causes.lost_answer = (causes.lost_answer ?? 0) + 1;
      const kinds = new Set(judged.around.map((e) => e.fault.kind));
      for (const kind of kinds) causes[kind] = (causes[kind] ?? 0) + 1;
      const changed = ownershipChanged(receipt, tries, prefs, noticesInOrder);
      const side = changed ? "after_ownership_change" : "no_ownership_change";
      if (!changed && noOwnershipListed++ < LISTED_MAX) {
        // What every node said of the nodes that could own it, so the duplicate can be traced.
        const first = Math.min(receipt.at, ...tries.map((a) => a.startedAtMs));
        const said = noticesInOrder.filter((n) =>
          prefs.includes(n.subject) && n.atMs >= first - 30_000 && n.atMs <= first + 30_000
        ).map((n) => `${n.observer} ${n.event} ${n.subject} at ${rel(n.atMs)}`);
        log(
          `duplicate ${id} with no ownership change: preference ${prefs.join(">")}; attempts ` +
            tries.map((a) => `${a.node}@${rel(a.startedAtMs)} ${a.kind}/${a.outcome}`).join(", ") +
            `; receipt ${rel(receipt.at)}; said within 30 s: ${said.join("; ") || "nothing"}`,
        );
      }
      extraByOwnership[side] += receipt.duplicates;
      const keys: string[] = [...kinds];
      if (judged.lostAnswer) keys.push("lost_answer");
      if (!judged.explained) keys.push("unexplained");
      for (const key of keys) {
        const split = causesByOwnership[key] ??= {
          after_ownership_change: 0,
          no_ownership_change: 0,
        };
        split[side]++;
      }
      if (!judged.explained) {
        unexplained++;
        log(`  preference ${prefs.join(">")}, first receipt ${rel(receipt.at)}`);
        for (const a of tries) {
          log(`  attempt by ${a.node} at ${rel(a.startedAtMs)}: ${a.kind} ${a.outcome}`);
        }
        for (const e of window(receipt.at - 15_000, receipt.at + 15_000)) {
          log(`  fault ${describeFault(e.fault)}`);
        }
      }
      if (index < 5) {
        const times = tries.map((a) => `${a.node}@${rel(a.startedAtMs)} ${a.kind}/${a.outcome}`);
        log(`  first receipt ${rel(receipt.at)}; attempts ${times.join(", ")}`);
      }
      if (index < LISTED_MAX || !judged.explained) {
        log(
          `duplicate ${id} (${receipt.duplicates + 1} receipts) attempted by ` +
            `${judged.nodes.join(",")}: ` +
            (judged.around.length > 0
              ? judged.around.map((e) => describeFault(e.fault)).join("; ")
              : judged.lostAnswer
              ? "an attempt failed although the receiver had the job (lost answer)"
              : "UNEXPLAINED"),
        );
      }
    }
    if (duplicateJobs.length > 0) {
      log(`chaos: duplicates by the faults around them: ${JSON.stringify(causes)}`);
      log(`chaos: duplicates by ownership change: ${JSON.stringify(causesByOwnership)}`);
    }

    // Detection and false deaths.
    const detection = detectionFigures(faultLogs, notices, ids, config.deadExplainedMs);
    if (detection.slowest !== undefined) log(`chaos: slowest detection: ${detection.slowest}`);
    for (const n of detection.falseDeaths) {
      log(`chaos: false death: ${n.observer} declared ${n.subject} dead at ${rel(n.atMs)}`);
    }
    // Each stop must last until the others declare the node dead, and the node must notice it.
    const resyncTimes = resyncs.map((r) => ({
      node: r.node,
      event: r.event,
      atMs: typeof r.fields.time === "string" ? Date.parse(r.fields.time) : 0,
    }));
    const undetected = undetectedStops(faultLogs, notices, ids);
    const noticed = stopsNoticed(faultLogs, resyncTimes.filter((r) => r.event === "stalled"));
    for (const miss of [...undetected, ...noticed.unnoticed]) log(`chaos: stop: ${miss.why}`);
    // A stopped node must not start attempts of jobs it lost, on stale state, once resumed.
    const stops = stopFigures(faultLogs, attempts, receivedAt, resyncTimes);
    for (const line of stops.details) log(`stale attempt: ${line}`);
    const conflicts = await commitConflicts(cluster, ids);

    // What the faults really did (a fault that did nothing tested nothing).
    const counts = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    const effective = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<
      FaultKind,
      number
    >;
    const withoutEffect: string[] = [];
    for (const e of faultLogs) {
      counts[e.fault.kind]++;
      const undetectedStop = undetected.some((m) => m.fault === e);
      if ((e.effect ?? 0) > 0 && !undetectedStop) effective[e.fault.kind]++;
      else withoutEffect.push(`${describeFault(e.fault)}: effect ${e.effect ?? "not measured"}`);
    }
    for (const line of withoutEffect) log(`chaos: fault without effect: ${line}`);

    if (lostIds.length > 0) problems.push(`${lostIds.length} acknowledged jobs lost`);
    if (conflicts > 0) problems.push(`${conflicts} commit conflicts`);
    problems.push(...unexpectedExits);
    if (!drained) problems.push(`not drained within ${config.drainMsMax} ms`);
    if (stillScheduled === undefined) {
      problems.push("after the drain, a node did not say how many jobs it still holds");
    } else if (stillScheduled > 0) {
      problems.push(`${stillScheduled} jobs still held for delivery after the drain`);
    }
    if (stops.stale > 0) problems.push(`${stops.stale} stale attempts after SIGCONT`);
    problems.push(...undetected.map((m) => m.why), ...noticed.unnoticed.map((m) => m.why));
    return {
      seed: options.seed,
      duration_s: options.durationMs / 1000,
      rate: config.rate,
      offered: load.offered,
      acked: acked.size,
      rejected: load.rejected,
      submit_errors: load.errors,
      submit_codes: load.codes,
      delivered: verdict.delivered,
      lost: lostIds.length,
      dead_lettered: verdict.deadLetteredIds.length,
      duplicates: verdict.duplicates,
      duplicate_jobs: duplicateJobs.length,
      duplicates_unexplained: unexplained,
      duplicate_causes: causes,
      duplicate_causes_by_ownership: causesByOwnership,
      duplicates_after_ownership_change: extraByOwnership.after_ownership_change,
      duplicates_no_ownership_change: extraByOwnership.no_ownership_change,
      duplicates_of_unacked: Math.max(0, Number(stats.duplicates ?? 0) - verdict.duplicates),
      unacked_but_delivered: Math.max(0, Number(stats.unique ?? 0) - verdict.delivered),
      faults: counts,
      faults_effective: effective,
      faults_without_effect: withoutEffect.slice(0, LISTED_MAX),
      faults_unconfirmed: unconfirmed.length,
      max_detect_ms: detection.maxMs,
      detections: detection.count,
      false_dead: detection.falseDead,
      stops_undetected: undetected.length,
      stops_unnoticed: noticed.unnoticed.length,
      false_stalls: noticed.falseStalls,
      stale_attempts: stops.stale,
      resyncs: resyncs.filter((r) => r.event === "stalled").length,
      resumed_attempts_of_lost_jobs: stops.resumedOfLost,
      overlap_after_resync: stops.afterResync,
      inflight_at_stop: stops.inflightAtStop,
      commit_conflicts: conflicts,
      unexpected_exits: unexpectedExits.length,
      drain_ms: Math.round(drainMs),
      still_scheduled: stillScheduled ?? null,
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
