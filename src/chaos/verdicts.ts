/**
 * The chaos run's verdicts, as pure functions of what the run observed (no I/O, no clock): which
 * faults explain a duplicate, who owned a job over time, how fast kills and stops were detected
 * and which deaths nothing explains, and what a SIGSTOPped node did once resumed.
 *
 * Owns the observation types and the judging; chaos_run.ts gathers the observations and
 * reports.
 */

import { describeFault, type Fault, impairedBy } from "./schedule.ts";

/** Bounded lists in the report. */
export const LISTED_MAX = 20;

export interface AckedJob {
  /** When the generator scheduled the submit (wall ms). */
  readonly sentAtMs: number;
  readonly ackAtMs: number;
}

export interface Attempt {
  readonly node: string;
  readonly kind: string;
  readonly startedAtMs: number;
  readonly latencyMs: number;
  readonly outcome: string;
}

export interface MemberNotice {
  readonly observer: string;
  readonly subject: string;
  readonly event: string;
  readonly atMs: number;
}

export interface FaultLog {
  readonly fault: Fault;
  /** Wall-clock ms it really began and ended (carrying out a fault takes time). */
  startedAtMs: number;
  endedAtMs: number;
}

/**
 * Whether `fault` can explain a duplicate delivery by `nodes` (the nodes that reported an
 * attempt): a failover (kill, stop, partition, loss) on a node that attempted the job or could
 * have owned it before them (`prefs`, its preference list: a SIGKILLed node never reports the
 * attempt it had in flight), or a receiver outage that answers late or cuts connections after
 * the request may have been handled.
 */
export function explainsDuplicate(
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
export function ownersOverTime(
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
export function detectionFigures(
  faultLogs: readonly FaultLog[],
  notices: readonly MemberNotice[],
  ids: readonly string[],
  explainedMs: number,
): {
  maxMs: number | null;
  count: number;
  falseDead: number;
  slowest: string | undefined;
  /** The first false deaths. */
  falseDeaths: MemberNotice[];
} {
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
  const falseDeaths: MemberNotice[] = [];
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
    if (!explained) {
      falseDead++;
      if (falseDeaths.length < LISTED_MAX) {
        falseDeaths.push(n);
      }
    }
  }
  return { maxMs, count, falseDead, slowest, falseDeaths };
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
export function stopFigures(
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
