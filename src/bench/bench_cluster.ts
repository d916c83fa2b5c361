/**
 * What the cluster benches share (`bench replication`, the rate and loss sweeps): node
 * processes on loopback with fresh data directories, Prometheus
 * scrapes of every node, CPU time of every process, and the counters a run is judged by.
 *
 * Owns process plumbing and measurement only; each harness owns its phases and verdicts.
 * Nodes are started through `LocalCluster`, so a bench works both compiled
 * and under `deno run`. CPU time comes from /proc/<pid>/stat (utime + stime, read with `cat`:
 * Deno 2 lets a program read another process's /proc files only under --allow-all, and the
 * hookd task grants --allow-run).
 */

import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
  waitUntil,
} from "../cluster/local_cluster.ts";
import { round } from "../lib/round.ts";
// Moved to src/process/generator_protocol.ts; re-exported for src/bench/sweep.ts, which another
// branch owns (import them from there once it does).

/** Prometheus samples of one scrape: `name{labels}` (as rendered) → value. */
export type Samples = Map<string, number>;

export interface BenchNodes {
  readonly cluster: LocalCluster;
  /** UDP addresses, n1…nN. */
  readonly addresses: string[];
  /** HTTP API base URLs, n1…nN. */
  readonly httpUrls: string[];
  readonly ids: string[];
  readonly dataRoot: string;
  /** Nodes that exited without being asked to, with their status. */
  readonly unexpectedExits: string[];
}

/** What a sweep needs of its node processes: hookd's (`LocalCluster`) or the skeleton's. */
export interface NodeProcesses {
  pid(id: string): number | undefined;
  /** SIGTERM to every node, SIGKILL to any still running after `graceMs`. */
  stopAll(graceMs?: number): Promise<void>;
}

/** The nodes a sweep drives: hookd's, or the skeleton cluster's (skeleton_cluster.ts). */
export type SweepNodes = Omit<BenchNodes, "cluster"> & { readonly cluster: NodeProcesses };

export interface StartNodesOptions {
  readonly nodes: number;
  readonly clusterKey: string;
  /** Extra `hookd node` flags for every node. */
  readonly extraArgs: readonly string[];
  /** Where the data directories go (kept: the harness reads and removes them). */
  readonly dataRoot: string;
  readonly log: (line: string) => void;
  /** Longest the nodes may take to listen and report ready. @default 60_000 */
  readonly readyLimitMs?: number;
}

/**
 * The bench's log line for a node's event, or undefined for the events it leaves out. A healthy
 * bench sees no node suspected or declared dead; when one is, its row's tail and any duplicate
 * deliveries (a job handed to another owner) have their cause in the log beside the row. A
 * graceful `member-left` is every step's shutdown, so it is left out.
 */
export function membershipLogLine(line: NodeEventLine): string | undefined {
  if (line.event !== "member-suspect" && line.event !== "member-dead") return undefined;
  const node = typeof line.node === "string" ? line.node : "?";
  return `[${line.observer}] ${line.event} ${node}`;
}

/** Starts N nodes, waits until each listens and answers /readyz with 200. */
export async function startBenchNodes(options: StartNodesOptions): Promise<BenchNodes> {
  const specs = localNodeSpecs(options.nodes, "127.0.0.1", freeUdpPortRange(options.nodes));
  const unexpectedExits: string[] = [];
  const cluster = new LocalCluster({
    nodes: specs,
    clusterKey: options.clusterKey,
    dataRoot: options.dataRoot,
    extraArgs: () => [...options.extraArgs],
    onStderr: (id, line) => options.log(`[${id}] ${line}`),
    onEvent: (line) => {
      const text = membershipLogLine(line);
      if (text !== undefined) options.log(text);
    },
    onUnexpectedExit: (id, status) => {
      unexpectedExits.push(`${id} exited with code ${status.code} signal ${status.signal}`);
      options.log(`node ${id} exited unexpectedly (code ${status.code})`);
    },
  });
  cluster.startAll();
  const limitMs = options.readyLimitMs ?? 60_000;
  const listening = await waitUntil(() => cluster.httpUrls.size === specs.length, limitMs);
  if (!listening) {
    await cluster.stopAll();
    throw new Error(`only ${cluster.httpUrls.size} of ${specs.length} nodes listened`);
  }
  const httpUrls = specs.map((s) => cluster.httpUrls.get(s.id)!);
  const deadline = performance.now() + limitMs;
  for (const url of httpUrls) {
    for (;;) {
      const ready = await fetch(`${url}/readyz`).then(
        async (r) => (await r.body?.cancel(), r.status === 200),
        () => false,
      );
      if (ready) break;
      if (performance.now() > deadline) {
        await cluster.stopAll();
        throw new Error(`node ${url} was not ready within ${limitMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    cluster,
    addresses: specs.map((s) => s.address),
    httpUrls,
    ids: specs.map((s) => s.id),
    dataRoot: options.dataRoot,
    unexpectedExits,
  };
}

/** Parses Prometheus text into samples; lines that are not samples are skipped. */
export function parsePrometheus(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    if (space < 0) continue;
    const value = Number(line.slice(space + 1));
    if (Number.isFinite(value)) out.set(line.slice(0, space), value);
  }
  return out;
}

/** One scrape of every node's /metrics (a node that does not answer gives no samples). */
export async function scrapeAll(httpUrls: readonly string[]): Promise<Samples[]> {
  return await Promise.all(httpUrls.map(async (url) => {
    try {
      const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
      return parsePrometheus(await response.text());
    } catch {
      return new Map();
    }
  }));
}

/** The sum over every node of samples named `name` whose labels include every `labels` pair. */
export function total(
  scrape: readonly Samples[],
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const samples of scrape) {
    for (const [key, value] of samples) {
      const brace = key.indexOf("{");
      const metric = brace < 0 ? key : key.slice(0, brace);
      if (metric !== name) continue;
      if (wanted.every((pair) => key.includes(pair))) sum += value;
    }
  }
  return sum;
}

/** The cluster-wide counters every bench divides by its jobs. */
export interface ClusterCounters {
  fsyncs: number;
  walAppends: number;
  datagramsOut: number;
  datagramsIn: number;
  /** Datagrams out that carried only an acknowledgement. */
  ackOnlyOut: number;
  retransmits: number;
  dropsInjected: number;
  /** Timer wake-ups the nodes' shells asked for (`hookd_runtime_timers_total{event="fired"}`). */
  timersFired: number;
}

export function clusterCounters(scrape: readonly Samples[]): ClusterCounters {
  return {
    fsyncs: total(scrape, "hookd_wal_fsyncs_total"),
    walAppends: total(scrape, "hookd_wal_appends_total"),
    datagramsOut: total(scrape, "hookd_transport_datagrams_total", { direction: "out" }),
    datagramsIn: total(scrape, "hookd_transport_datagrams_total", { direction: "in" }),
    ackOnlyOut: total(scrape, "hookd_transport_ack_only_datagrams_total"),
    retransmits: total(scrape, "hookd_transport_retransmits_total"),
    dropsInjected: total(scrape, "hookd_transport_drops_injected_total"),
    timersFired: total(scrape, "hookd_runtime_timers_total", { event: "fired" }),
  };
}

/** Each node's memory at a scrape, MB, averaged over the nodes that reported it. */
export interface NodeMemory {
  rss_mb: number;
  heap_used_mb: number;
  external_mb: number;
}

/** The nodes' mean memory in one scrape (process_metrics.ts's gauges); null: none reported. */
export function nodeMemoryMb(scrape: readonly Samples[]): NodeMemory | null {
  const reporting = scrape.filter((s) => s.has("process_resident_memory_bytes"));
  if (reporting.length === 0) return null;
  const mean = (name: string) => Math.round(total(reporting, name) / reporting.length / 1e5) / 10;
  return {
    rss_mb: mean("process_resident_memory_bytes"),
    heap_used_mb: mean("hookd_v8_heap_used_bytes"),
    external_mb: mean("hookd_v8_external_bytes"),
  };
}

export function counterDelta(before: ClusterCounters, after: ClusterCounters): ClusterCounters {
  return {
    fsyncs: after.fsyncs - before.fsyncs,
    walAppends: after.walAppends - before.walAppends,
    datagramsOut: after.datagramsOut - before.datagramsOut,
    datagramsIn: after.datagramsIn - before.datagramsIn,
    ackOnlyOut: after.ackOnlyOut - before.ackOnlyOut,
    retransmits: after.retransmits - before.retransmits,
    dropsInjected: after.dropsInjected - before.dropsInjected,
    timersFired: after.timersFired - before.timersFired,
  };
}

/**
 * The counters' change over a window from a scrape at each end, over the nodes that answered
 * both (a node silent at the start would otherwise add its whole lifetime's counts), and the
 * nodes that did not (`silent`), for the row to name.
 */
export function windowCounters(
  before: readonly Samples[],
  after: readonly Samples[],
  ids: readonly string[],
): { counters: ClusterCounters; silent: string[] } {
  const answered = ids.map((_, i) => (before[i]?.size ?? 0) > 0 && (after[i]?.size ?? 0) > 0);
  const only = (scrape: readonly Samples[]) => scrape.filter((_, i) => answered[i] === true);
  return {
    counters: counterDelta(clusterCounters(only(before)), clusterCounters(only(after))),
    silent: ids.filter((_, i) => answered[i] !== true),
  };
}

const CLOCK_TICKS_PER_S = 100;

/**
 * User + system CPU of each process, ms (utime + stime from /proc/<pid>/stat, in clock ticks
 * of 10 ms). A process that is gone reads as undefined.
 */
export async function cpuMsOf(pids: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (pids.length === 0) return out;
  const result = await new Deno.Command("cat", {
    args: pids.map((p) => `/proc/${p}/stat`),
    stdout: "piped",
    stderr: "null",
  }).output();
  for (const line of new TextDecoder().decode(result.stdout).split("\n")) {
    const stat = parseStat(line);
    if (stat !== undefined) out.set(Number(stat.prefix), stat.cpuMs);
  }
  return out;
}

/**
 * A /proc `stat` line (a process's or a thread's): the words before its name (the pid, and
 * whatever a caller printed first), the name, and its user + system CPU in ms; undefined for a
 * line that is not one.
 */
function parseStat(line: string): { prefix: string; name: string; cpuMs: number } | undefined {
  // The name is in parentheses and may hold spaces: split after the last ")".
  const open = line.indexOf("(");
  const close = line.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const fields = line.slice(close + 2).split(" ");
  // Fields after the name start at field 3 (state); utime and stime are fields 14 and 15.
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  if (!Number.isFinite(cpuMs)) return undefined;
  return { prefix: line.slice(0, open).trim(), name: line.slice(open + 1, close), cpuMs };
}

/** CPU ms of a process by thread: its JavaScript thread, V8's worker pool, and the rest. */
export interface ThreadCpuMs {
  /** The main thread (tid = pid): JavaScript, and the GC work V8 does on it. */
  main: number;
  /**
   * V8's platform workers ("V8 DefaultWorke…"): parallel scavenges, concurrent marking and
   * sweeping, background compilation. A CPU profile of the main thread never sees it.
   */
  v8Workers: number;
  /**
   * Everything else the process spent: the runtime's I/O threads, threads already gone. In one
   * reading it may come out a tick below 0 (10-ms ticks); differences are what count.
   */
  other: number;
}

/** Threads whose name says they are V8's worker pool (`/proc/<pid>/task/<tid>/stat`). */
const V8_WORKER_THREAD = /^V8 /;

/**
 * `cpuMsOf`, split by thread (`ThreadCpuMs`), from /proc/<pid>/task/<tid>/stat. A process
 * that is gone is left out.
 */
export async function threadCpuMsOf(pids: readonly number[]): Promise<Map<number, ThreadCpuMs>> {
  const out = new Map<number, ThreadCpuMs>();
  if (pids.length === 0) return out;
  // One shell reads each process's total and its threads at one moment (so "other", the
  // difference, is not skewed by two readings apart). `cat` as in `cpuMsOf`: Deno reads
  // another process's /proc only under -A. Lines: "T <pid> <stat>" for the process, then
  // "<pid> <thread's stat>" for each thread.
  const script = pids.map((p) =>
    `printf 'T ${p} '; cat /proc/${p}/stat; ` +
    `for f in /proc/${p}/task/*/stat; do printf '${p} '; cat "$f"; done`
  ).join("; ");
  const result = await new Deno.Command("sh", {
    args: ["-c", script],
    stdout: "piped",
    stderr: "null",
  }).output();
  const split = new Map<number, { total: number; main: number; v8Workers: number }>();
  for (const line of new TextDecoder().decode(result.stdout).split("\n")) {
    const stat = parseStat(line);
    if (stat === undefined) continue;
    const words = stat.prefix.split(" ");
    const isTotal = words[0] === "T";
    const pid = Number(isTotal ? words[1] : words[0]);
    const tid = Number(isTotal ? words[2] : words[1]);
    if (!Number.isFinite(pid)) continue;
    const entry = split.get(pid) ?? { total: NaN, main: 0, v8Workers: 0 };
    if (isTotal) entry.total = stat.cpuMs;
    else if (tid === pid) entry.main += stat.cpuMs;
    else if (V8_WORKER_THREAD.test(stat.name)) entry.v8Workers += stat.cpuMs;
    split.set(pid, entry);
  }
  for (const [pid, entry] of split) {
    if (Number.isNaN(entry.total)) continue;
    // Unclamped: a reading's "other" is only meaningful as a difference of two (the caller's).
    out.set(pid, {
      main: entry.main,
      v8Workers: entry.v8Workers,
      other: entry.total - entry.main - entry.v8Workers,
    });
  }
  return out;
}

/**
 * The CPU `pids` spent between two `threadCpuMsOf` readings, summed by thread kind; a process
 * missing from either reading is left out.
 */
export function threadCpuBetween(
  before: ReadonlyMap<number, ThreadCpuMs>,
  after: ReadonlyMap<number, ThreadCpuMs>,
  pids: readonly number[],
): ThreadCpuMs {
  const sum: ThreadCpuMs = { main: 0, v8Workers: 0, other: 0 };
  for (const pid of pids) {
    const a = before.get(pid);
    const b = after.get(pid);
    if (a === undefined || b === undefined) continue;
    sum.main += b.main - a.main;
    sum.v8Workers += b.v8Workers - a.v8Workers;
    sum.other += b.other - a.other;
  }
  // Threads that ended between the readings took their CPU out of the per-thread sums but not
  // out of the process's: "other" absorbs it, and is never below 0.
  sum.other = Math.max(0, sum.other);
  return sum;
}

/** `ThreadCpuMs` over a window of `windowS` seconds, in cores (1 = one core busy). */
export function threadCores(
  ms: ThreadCpuMs,
  windowS: number,
): { main: number | null; v8_workers: number | null; other: number | null } {
  return {
    main: round(ms.main / 1000 / windowS, 3),
    v8_workers: round(ms.v8Workers / 1000 / windowS, 3),
    other: round(ms.other / 1000 / windowS, 3),
  };
}

/**
 * Voluntary context switches of each process's main thread (the JavaScript thread): how often
 * it went to sleep and was woken again, from /proc/<pid>/status. A process that is gone is
 * left out.
 */
export async function mainThreadWakeupsOf(pids: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  // Through `cat`, as `cpuMsOf`: Deno refuses /proc/<pid>/ reads to anything less than -A.
  for (const pid of pids) {
    const result = await new Deno.Command("cat", {
      args: [`/proc/${pid}/status`],
      stdout: "piped",
      stderr: "null",
    }).output();
    const match = /^voluntary_ctxt_switches:\s+(\d+)/m.exec(
      new TextDecoder().decode(result.stdout),
    );
    if (match !== null) out.set(pid, Number(match[1]));
  }
  return out;
}

/** `uptime`'s load averages (1, 5, 15 min), to say how busy the machine was. */
export async function loadAverage(): Promise<number[]> {
  try {
    const text = await new Deno.Command("cat", { args: ["/proc/loadavg"], stdout: "piped" })
      .output();
    return new TextDecoder().decode(text.stdout).split(" ").slice(0, 3).map(Number);
  } catch {
    return [];
  }
}

/**
 * Starts or stops the profiles of the node processes `pids` (`hookd node --cpu-profile-dir`,
 * `--alloc-profile-dir`: SIGUSR2 toggles them).
 */
export function toggleProfiles(
  pids: ReadonlyMap<string, number>,
  log: (line: string) => void,
): void {
  for (const [id, pid] of pids) {
    try {
      Deno.kill(pid, "SIGUSR2");
    } catch (error) {
      log(`could not signal ${id} (pid ${pid}) to toggle its profile: ${error}`);
    }
  }
}

/**
 * Waits (at most 30 s) until `count` profiles named `*extension` are in `dir`: each node
 * writes its own when its profile is toggled off.
 */
export async function waitForProfiles(
  dir: string,
  extension: string,
  count: number,
  log: (line: string) => void,
): Promise<void> {
  const deadline = performance.now() + 30_000;
  for (;;) {
    let n = 0;
    for await (const e of Deno.readDir(dir)) if (e.name.endsWith(extension)) n++;
    if (n >= count) return;
    if (performance.now() > deadline) {
      log(`only ${n} of ${count} ${extension} profiles were written within 30 s`);
      return;
    }
    await new Promise<void>((resolve) => setTimeout(resolve, 100));
  }
}
