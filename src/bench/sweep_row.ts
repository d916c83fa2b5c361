/**
 * One sweep step's row (`SweepRow`, as `--json` prints it and the CSV holds it) and how it is
 * made from what the harness gathered about the step (`StepRecord`): `completed` within the
 * step plus the grace, `lost` as accepted and never received, duplicates as the sink's extra
 * receipts, latency from each job's scheduled time, per-job costs from the window's counters
 * and every process's CPU, and a note whenever the step is not a clean measurement.
 *
 * With `--fanout K` a submit is an event that makes K jobs (one per bench endpoint): the
 * submit columns (`asked` … `errors`, `offered_per_s`) count events, the delivery columns
 * (`completed`, `lost`, `duplicates`, latencies, goodput, costs per job) count jobs, and
 * `submits`, `fanout` and `jobs_made` say so. Without it a submit is one job and every column
 * means what it always did.
 *
 * Owns the row's shape and its pure construction (no I/O, no clock). The harness (sweep.ts)
 * gathers the records and the reports (sweep_report.ts) read the rows; both import this
 * module and neither imports the other's way back.
 */

import { assert } from "../lib/assert.ts";
import { round } from "../lib/round.ts";
import { Histogram } from "../metrics/histogram.ts";
import {
  type ClusterCounters,
  type NodeMemory,
  threadCores,
  type ThreadCpuMs,
} from "./bench_cluster.ts";
import type { AcceptedSubmit, GeneratorProcess } from "../process/generator_protocol.ts";
import type { SinkReceipt } from "../process/sink.ts";
import type { ClockOffset } from "./clock_offset.ts";

/** One step of a sweep, as `--json` prints it and the CSV holds it. */
export interface SweepRow {
  /** Which sweep: "rate" or "loss". */
  sweep: "rate" | "loss";
  /** Submits/s asked for: jobs/s, or events/s with `--fanout`. */
  rate: number;
  /** Ingress loss on every node. */
  loss: number;
  submit_via: "http" | "udp";
  /**
   * What ran as nodes: "hookd", or "skeleton" (`--skeleton`: a job's necessary work and
   * nothing else, skeleton_node.ts), the runtime's floor for the same path.
   */
  nodes_kind: "hookd" | "skeleton";
  /** WAL mode of the nodes: batched (group commit) or per-append (--compare-unbatched). */
  wal_sync: "batched" | "per-append";
  duration_s: number;
  /**
   * Seconds of warm-up (at `WARMUP_RATE` jobs/s, sweep.ts) the cluster had before its first
   * step, not counted in any row.
   */
  warmup_s: number;
  warmup_rate: number;
  /**
   * What a submit is: "jobs" (`POST /v1/jobs`, one job each) or "events" (`--fanout`:
   * `POST /v1/events`, each fanned out to `fanout` endpoints). The columns from `asked` to
   * `errors` count submits; from `completed` on they count jobs.
   */
  submits: "jobs" | "events";
  /** Jobs each accepted submit is to make: the endpoints of an event; 1 for a job. */
  fanout: number;
  /** Submits the step asked for (rate × duration). */
  asked: number;
  /** Submits really sent. */
  offered: number;
  /**
   * What was really offered per second: `offered` over the step, or over the generator's send
   * window when it took longer (a starved generator that sends everything late did not offer
   * the rate).
   */
  offered_per_s: number;
  /** The generator's send window, s (its start to its last send). */
  send_s: number;
  /** Submits answered 202. */
  accepted: number;
  /**
   * Jobs the accepted submits made, by their 202s: `accepted` for jobs; for events the sum of
   * each 202's `jobs`, which is `accepted × fanout` unless a node fanned out to fewer endpoints.
   */
  jobs_made: number;
  /** 503s (or their UDP equivalents). */
  rejected: number;
  /** Timeouts, connection errors, other statuses. */
  errors: number;
  /** Refused and failed submits by cause (`http_503_overloaded`, `timeout`, …). */
  refusals: Record<string, number>;
  /**
   * Jobs of this step's accepted submits received by the sink within the step plus the grace
   * (an event's job: its delivery to one endpoint).
   */
  completed: number;
  /**
   * Jobs of this step's accepted submits never received, checked after the cluster drained
   * (an event counts `fanout` jobs, also those its fan-out did not make).
   */
  lost: number;
  /** Receipts of this step's jobs after their first (for an event: at the same endpoint). */
  duplicates: number;
  /**
   * Submit (scheduled) to first receipt, over every job of this step the sink received (also
   * those that came after the grace; an event's jobs each from the event's submit); null when
   * none completed within the step and the grace.
   */
  p50_ms: number | null;
  p90_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  /**
   * The sink's and the generator's clocks minus the sweep's, ms, measured before the step: a
   * latency joins a time of each, so both are moved onto the sweep's clock (clock_offset.ts).
   */
  sink_clock_offset_ms: number;
  generator_clock_offset_ms: number;
  /** Cluster-wide over the step's window, per job made (`jobs_made`). */
  fsyncs_per_job: number | null;
  datagrams_per_job: number | null;
  /** Of those, datagrams that carried only an acknowledgement. */
  ack_only_datagrams_per_job: number | null;
  /** Timer wake-ups the nodes' shells asked for, cluster-wide, per job made. */
  timer_wakeups_per_job: number | null;
  /**
   * Times the nodes' main threads went to sleep and were woken (voluntary context switches),
   * cluster-wide, per job made: timers, datagrams, fsyncs and HTTP each wake a thread.
   */
  wakeups_per_job: number | null;
  /** All processes (nodes, sink, generator) over the step's window, per job made. */
  cpu_ms_per_job: number | null;
  /** Jobs received per second of the step (completed / duration). */
  goodput_per_s: number;
  /** Submit to acknowledgement (202), p99, ms. */
  ack_p99_ms: number | null;
  /** Sent to refused (a 503 and the like), p99, ms: how fast the excess is answered. */
  refusal_p99_ms: number | null;
  /** CPU of each process over the window, in cores (1 = one core busy). */
  cpu_cores: Record<string, number>;
  /**
   * The nodes' CPU over the window by thread, in cores summed over the nodes: JavaScript
   * threads, V8's workers (parallel scavenges, concurrent marking, compilation: what a CPU
   * profile of the main thread never sees), the rest; null when unread.
   */
  node_cpu_cores_by_thread: ReturnType<typeof threadCores> | null;
  /**
   * A node's resident memory, V8 heap in use and memory outside the heap once the step
   * drained, MB, the mean of the nodes (`/metrics`); null when the nodes do not report it.
   */
  node_rss_mb: number | null;
  node_heap_used_mb: number | null;
  node_external_mb: number | null;
  /** The filesystem the nodes' WALs were on (`tmpfs` makes every fsync free); "unknown". */
  wal_fs: string;
  /** Why the row is not a clean measurement (empty when it is). */
  note: string;
}

/**
 * A step offered its rate when it sent at least this share of it per second (and of its
 * submits): a generator that falls behind by more is noted, and its step is not a knee.
 */
export const OFFERED_SHARE_MIN = 0.99;

/** What of the sweep's options a row reports or judges by (sweep.ts's `SweepOptions` has them). */
export interface SweepRowOptions {
  sweep: "rate" | "loss";
  /** Endpoints each submitted event goes to (`--fanout`); absent: plain jobs. */
  fanout?: number;
  durationS: number;
  warmupS: number;
  warmupRate: number;
  drainLimitS: number;
  inFlight: number;
  /** The nodes were the skeleton cluster's (`--skeleton`). */
  skeleton?: boolean;
  /** The filesystem the nodes' WALs were on (`probeWalFilesystem`); absent: not known. */
  walFs?: string;
  /** Set when that filesystem is a memory one: every row's note carries it. */
  walFsWarning?: string;
}

/** What the harness gathered about one step: the input of `sweepRow`. */
export interface StepRecord {
  step: string;
  rate: number;
  report: Awaited<ReturnType<GeneratorProcess["run"]>>;
  startMs: number;
  stepEndMs: number;
  graceEndMs: number;
  /** From the step's start to the end of its drain, s: what the counters and CPU cover. */
  windowS: number;
  counters: ClusterCounters;
  cpuMs: Record<string, number>;
  /** Voluntary context switches of the nodes' main threads over the window; null: unread. */
  nodeWakeups: number | null;
  /** The nodes' CPU over the window by thread (`threadCpuBetween`); null: unread. */
  nodeThreadCpuMs: ThreadCpuMs | null;
  /** Jobs accepted so far that had not reached the sink when the drain gave up. */
  undrained: number;
  drainS: number;
  /** Nodes whose /metrics did not answer at the start or the end of the window (left out). */
  silent: string[];
  ids: AcceptedSubmit[];
  /** The nodes' mean memory once the step drained; null: the nodes do not report it. */
  memory: NodeMemory | null;
  /**
   * The sink's and the generator's clocks against the sweep's, measured before the step
   * (bench/clock_offset.ts). `ids` holds the generator's own times; receipts are moved onto
   * the sweep's clock before they reach `sweepRow` (`onSweepClock`).
   */
  sinkClock: ClockOffset;
  generatorClock: ClockOffset;
}

/** A process clock further than this from the sweep's is named in the row's note, ms. */
const CLOCK_OFFSET_NOTE_MS = 1;

/**
 * The sink's receipts (`fanout` per accepted submit of every step, in order) moved onto the
 * sweep's clock, each by its step's measured sink offset: the step windows they are judged
 * against are the sweep's.
 */
export function onSweepClock(
  steps: readonly Pick<StepRecord, "ids" | "sinkClock">[],
  receipts: ReadonlyArray<SinkReceipt | null>,
  fanout = 1,
): Array<SinkReceipt | null> {
  const out: Array<SinkReceipt | null> = [];
  let i = 0;
  for (const s of steps) {
    const offsetMs = s.sinkClock.offsetMs;
    for (let n = s.ids.length * fanout; n > 0; n--, i++) {
      const r = receipts[i];
      out.push(r === null || r === undefined ? null : { ...r, at: r.at - offsetMs });
    }
  }
  assert(i === receipts.length, `onSweepClock: ${receipts.length} receipts for ${i} jobs`);
  return out;
}

/**
 * Jobs of earlier steps that arrived inside step `index`'s window (backlog). `receipts` holds
 * `fanout` receipts per accepted submit of every step, in order (`jobReceiptIndex`).
 */
export function backlogIn(
  steps: readonly StepRecord[],
  receipts: ReadonlyArray<SinkReceipt | null>,
  index: number,
  windows: ReadonlyArray<{ from: number; to: number }>,
  fanout = 1,
): number {
  let offset = 0;
  let count = 0;
  const w = windows[index]!;
  for (let i = 0; i < index; i++) {
    const jobs = steps[i]!.ids.length * fanout;
    for (let j = 0; j < jobs; j++) {
      const r = receipts[offset + j];
      if (r !== null && r !== undefined && r.at >= w.from && r.at <= w.to) count++;
    }
    offset += jobs;
  }
  return count;
}

/** Where job `k` (0-based endpoint) of accepted submit `i` is in a step's receipts. */
export function jobReceiptIndex(i: number, k: number, fanout: number): number {
  return i * fanout + k;
}

/**
 * One step's row, from what was gathered (pure: no I/O, no clock). `receipts` holds, for each
 * accepted submit of `s.ids` in order, the receipt of each of its jobs: one for a plain job,
 * `options.fanout` for an event (`jobReceiptIndex`).
 */
export function sweepRow(
  options: SweepRowOptions,
  variant: { via: "http" | "udp"; walSync: "batched" | "per-append"; loss: number },
  s: StepRecord,
  receipts: ReadonlyArray<SinkReceipt | null>,
  backlog: number,
): SweepRow {
  const events = options.fanout !== undefined;
  const fanout = options.fanout ?? 1;
  assert(
    receipts.length === s.ids.length * fanout,
    `sweepRow: ${receipts.length} receipts for ${s.ids.length} submits × ${fanout} jobs`,
  );
  const latency = new Histogram();
  let completed = 0;
  let lost = 0;
  let duplicates = 0;
  // The generator's times, moved onto the sweep's clock (the receipts are on it already).
  const generatorOffsetMs = s.generatorClock.offsetMs;
  s.ids.forEach(([, scheduledMs], i) => {
    for (let k = 0; k < fanout; k++) {
      const r = receipts[jobReceiptIndex(i, k, fanout)];
      if (r === null || r === undefined) {
        lost++;
        continue;
      }
      duplicates += r.duplicates;
      latency.record(Math.max(0, r.at - (scheduledMs - generatorOffsetMs)));
      if (r.at <= s.graceEndMs) completed++;
    }
  });
  const accepted = s.report.accepted;
  const jobsMade = s.report.jobs_made;
  const per = (x: number, digits: number) => jobsMade > 0 ? round(x / jobsMade, digits) : null;
  const unit = events ? "events" : "jobs";
  const cpuTotal = Object.values(s.cpuMs).reduce((a, b) => a + b, 0);
  // A step that completed nothing has no latency to draw: what arrived came in the drain.
  const has = latency.count > 0 && completed > 0;
  const sendS = s.report.send_seconds;
  const offeredPerS = round(s.report.offered / Math.max(options.durationS, sendS), 1)!;
  const notes: string[] = [];
  if (options.walFsWarning !== undefined) notes.push(options.walFsWarning);
  if (s.report.offered < s.report.asked * OFFERED_SHARE_MIN) {
    notes.push(
      `offered only ${s.report.offered} of ${s.report.asked}: the generator could not send at ` +
        `the rate (${s.report.sent_late} sent late, at most ${options.inFlight} in flight)`,
    );
  } else if (offeredPerS < s.rate * OFFERED_SHARE_MIN) {
    notes.push(
      `sent over ${round(sendS, 1)} s of a ${options.durationS} s step: ${offeredPerS} ${unit}/s ` +
        `really offered (${s.report.sent_late} sent late)`,
    );
  }
  if (events && jobsMade !== accepted * fanout) {
    notes.push(
      `${accepted} events made ${jobsMade} jobs, not ${accepted * fanout}: a node fanned out ` +
        `to other than the ${fanout} bench endpoints`,
    );
  }
  if (accepted > 0 && completed === 0) notes.push("nothing completed within the step");
  for (const [who, clock] of [["sink", s.sinkClock], ["generator", s.generatorClock]] as const) {
    // Corrected either way; said, since it is what made such rows wrong before.
    if (Math.abs(clock.offsetMs) > CLOCK_OFFSET_NOTE_MS) {
      notes.push(
        `the ${who}'s clock was ${round(clock.offsetMs, 1)} ms off the sweep's (corrected)`,
      );
    }
  }
  if (backlog > 0) {
    notes.push(`completions in this window include ${backlog} jobs of earlier steps`);
  }
  if (s.undrained > 0) {
    notes.push(
      `backlog not drained after ${options.drainLimitS} s (${s.undrained} jobs of accepted ` +
        `${unit} undelivered); the next step started with it`,
    );
  }
  if (s.silent.length > 0) {
    notes.push(`no /metrics answer from ${s.silent.join(", ")}: fsyncs and datagrams without them`);
  }
  if (lost > 0) {
    notes.push(
      events
        ? `${lost} jobs of accepted events never reached the sink`
        : `${lost} accepted jobs never reached the sink`,
    );
  }
  return {
    sweep: options.sweep,
    rate: s.rate,
    loss: variant.loss,
    submit_via: variant.via,
    nodes_kind: options.skeleton === true ? "skeleton" : "hookd",
    wal_sync: variant.walSync,
    duration_s: options.durationS,
    warmup_s: options.warmupS,
    warmup_rate: options.warmupRate,
    submits: events ? "events" : "jobs",
    fanout,
    asked: s.report.asked,
    offered: s.report.offered,
    offered_per_s: offeredPerS,
    send_s: round(sendS, 3)!,
    accepted,
    jobs_made: jobsMade,
    rejected: s.report.rejected,
    errors: s.report.errors,
    refusals: s.report.codes,
    completed,
    lost,
    duplicates,
    p50_ms: has ? round(latency.percentile(50), 2) : null,
    p90_ms: has ? round(latency.percentile(90), 2) : null,
    p99_ms: has ? round(latency.percentile(99), 2) : null,
    max_ms: has ? round(latency.summary().max, 2) : null,
    sink_clock_offset_ms: round(s.sinkClock.offsetMs, 3)!,
    generator_clock_offset_ms: round(s.generatorClock.offsetMs, 3)!,
    fsyncs_per_job: per(s.counters.fsyncs, 3),
    datagrams_per_job: per(s.counters.datagramsOut, 2),
    ack_only_datagrams_per_job: per(s.counters.ackOnlyOut, 2),
    timer_wakeups_per_job: per(s.counters.timersFired, 2),
    wakeups_per_job: s.nodeWakeups === null ? null : per(s.nodeWakeups, 2) ?? null,
    cpu_ms_per_job: per(cpuTotal, 3),
    goodput_per_s: round(completed / options.durationS, 1)!,
    ack_p99_ms: s.report.ack_p99_ms,
    refusal_p99_ms: s.report.refusal_p99_ms,
    cpu_cores: Object.fromEntries(
      Object.entries(s.cpuMs).map(([k, ms]) => [k, round(ms / 1000 / s.windowS, 2)!]),
    ),
    node_cpu_cores_by_thread: s.nodeThreadCpuMs === null
      ? null
      : threadCores(s.nodeThreadCpuMs, s.windowS),
    node_rss_mb: s.memory?.rss_mb ?? null,
    node_heap_used_mb: s.memory?.heap_used_mb ?? null,
    node_external_mb: s.memory?.external_mb ?? null,
    wal_fs: options.walFs ?? "unknown",
    note: notes.join("; "),
  };
}
