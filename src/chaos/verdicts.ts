/**
 * The chaos run's verdicts, as pure functions of what the run observed (no I/O, no clock): which
 * acknowledged jobs were delivered, dead-lettered or lost, which faults explain a duplicate,
 * who owned a job over time, how fast kills and stops were detected and which deaths nothing
 * explains, whether every freeze was long enough to be detected and was noticed by the frozen
 * node, and what a SIGSTOPped node did once resumed.
 *
 * Owns the observation types and the judging; chaos_run.ts gathers the observations and
 * reports.
 */

import { assert } from "../lib/assert.ts";
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
  /**
   * What the fault measurably did, once it ended: datagrams its nodes dropped for it
   * (partitions, loss bursts), requests the receiver refused, held or reset (outages), 1 for a
   * process really killed or stopped; 0 when it did nothing; undefined when not measured.
   */
  effect?: number;
}

/** One acknowledged job's receipt at the sink: its first arrival and the arrivals after it. */
export interface Receipt {
  readonly at: number;
  readonly duplicates: number;
}

/** What became of the acknowledged jobs. */
export interface DeliveryVerdict {
  /** Acknowledged jobs the sink received. */
  readonly delivered: number;
  /** Acknowledged, never received and not dead-lettered: each one fails the run. */
  readonly lostIds: string[];
  /** Acknowledged, never received, dead-lettered by its retry policy. */
  readonly deadLetteredIds: string[];
  /** Received more than once: id and receipt. */
  readonly duplicateJobs: Array<[string, Receipt]>;
  /** Receipts after the first, over the acknowledged jobs. */
  readonly duplicates: number;
}

/**
 * Joins every acknowledged id (all of them, in order) with its receipt (`receipts[i]` is
 * `ackedIds[i]`'s, null when never received) and the dead letters the nodes list.
 */
export function deliveryVerdict(
  ackedIds: readonly string[],
  receipts: ReadonlyArray<Receipt | null>,
  deadLettered: ReadonlySet<string>,
): DeliveryVerdict {
  assert(
    receipts.length === ackedIds.length,
    `deliveryVerdict: ${receipts.length} receipts for ${ackedIds.length} acknowledged jobs`,
  );
  const lostIds: string[] = [];
  const deadLetteredIds: string[] = [];
  const duplicateJobs: Array<[string, Receipt]> = [];
  let delivered = 0;
  let duplicates = 0;
  ackedIds.forEach((id, i) => {
    const r = receipts[i];
    if (r === null || r === undefined) {
      (deadLettered.has(id) ? deadLetteredIds : lostIds).push(id);
      return;
    }
    delivered++;
    duplicates += r.duplicates;
    if (r.duplicates > 0) duplicateJobs.push([id, r]);
  });
  return { delivered, lostIds, deadLetteredIds, duplicateJobs, duplicates };
}

/** How far before a duplicate's first attempt or receipt a fault may have begun to explain it. */
export const DUPLICATE_LOOKBACK_MS = 15_000;
/** How far after its last attempt or receipt. */
export const DUPLICATE_LOOKAHEAD_MS = 1_000;

/** Why a job reached the receiver more than once, as far as the observations tell. */
export interface DuplicateJudgement {
  /** Nodes that reported an attempt of it. */
  readonly nodes: string[];
  /** Faults around it that explain it (`explainsDuplicate`). */
  readonly around: FaultLog[];
  /**
   * The extra receipts are accounted for by attempts that failed (timeout, network error)
   * although the receiver had the request: at most one attempt succeeded, and the succeeded
   * and failed attempts together are at least the receipts. Two successful attempts are two
   * deliveries, which only a fault explains.
   */
  readonly lostAnswer: boolean;
  readonly explained: boolean;
}

export function judgeDuplicate(
  receipt: Receipt,
  tries: readonly Attempt[],
  prefs: readonly string[],
  faultLogs: readonly FaultLog[],
): DuplicateJudgement {
  const nodes = [...new Set(tries.map((a) => a.node))];
  const first = Math.min(receipt.at, ...tries.map((a) => a.startedAtMs));
  const last = Math.max(receipt.at, ...tries.map((a) => a.startedAtMs + a.latencyMs));
  const around = faultLogs.filter((e) =>
    e.startedAtMs <= last + DUPLICATE_LOOKAHEAD_MS &&
    first - DUPLICATE_LOOKBACK_MS <= e.endedAtMs && explainsDuplicate(e.fault, nodes, prefs)
  );
  const succeeded = tries.filter((a) => a.outcome === "success").length;
  const failed = tries.filter((a) => a.outcome === "timeout" || a.outcome === "network_error")
    .length;
  const lostAnswer = succeeded <= 1 && succeeded + failed >= receipt.duplicates + 1;
  return { nodes, around, lostAnswer, explained: lostAnswer || around.length > 0 };
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

/**
 * Whether an ownership change preceded a duplicate: some node's view of a voter that could own
 * the job (one that attempted it, or ranks at or above the last that did: `explainsDuplicate`'s
 * `involved`) changed from `DUPLICATE_LOOKBACK_MS` before its first attempt or receipt to
 * `DUPLICATE_LOOKAHEAD_MS` after its last: a `member-dead` or `member-left` (rightly or not),
 * or a `member-alive` after the same observer held it dead (it came back). Without one, every
 * node agreed on the owner all along, and only the owner itself (a retry after a lost answer,
 * a restart that lost a lazily written `done`) or a bug can have delivered it twice.
 * `notices` must be in time order.
 */
export function ownershipChanged(
  receipt: Receipt,
  tries: readonly Attempt[],
  prefs: readonly string[],
  notices: readonly MemberNotice[],
): boolean {
  const nodes = [...new Set(tries.map((a) => a.node))];
  const lastOwner = nodes.length === 0
    ? prefs.length
    : Math.max(...nodes.map((n) => prefs.indexOf(n)));
  const involved = (n: string) => nodes.includes(n) || prefs.indexOf(n) <= lastOwner;
  const first = Math.min(receipt.at, ...tries.map((a) => a.startedAtMs));
  const last = Math.max(receipt.at, ...tries.map((a) => a.startedAtMs + a.latencyMs));
  const fromMs = first - DUPLICATE_LOOKBACK_MS;
  const toMs = last + DUPLICATE_LOOKAHEAD_MS;
  const down = (event: string) => event === "member-dead" || event === "member-left";
  /** Per observer and subject: whether the observer held the subject down. */
  const held = new Map<string, boolean>();
  for (const n of notices) {
    if (n.atMs > toMs) break;
    const key = `${n.observer}>${n.subject}`;
    const wasDown = held.get(key) === true;
    held.set(key, down(n.event));
    if (n.atMs < fromMs || !involved(n.subject)) continue;
    if (down(n.event) || (n.event === "member-alive" && wasDown)) return true;
  }
  return false;
}

/** Duplicates of one kind: jobs after an ownership change, and jobs with none. */
export interface OwnershipSplit {
  after_ownership_change: number;
  no_ownership_change: number;
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
    // Caught up again: `resynced`, or `caught-up` when it was frozen while catching up after a
    // restart (that catch-up starts over and ends as a restart's).
    const resyncedAtMs = resyncs.find((r) =>
      r.node === node && (r.event === "resynced" || r.event === "caught-up") &&
      r.atMs >= e.endedAtMs - 1_000
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

/** A stop that did not do what it is for, or was not noticed by the node it froze. */
export interface StopMiss {
  readonly fault: FaultLog;
  readonly why: string;
}

/**
 * Stops no live node detected: a SIGSTOP is meant to last until the others declare the node
 * dead and take its jobs over. Detected means a node sent a member-dead or member-left about
 * it during the stop while itself up (not killed or stopped at that instant), or a node up the
 * whole stop already held it dead (a partition just before). A stop with no other node up the
 * whole time is not judged.
 */
export function undetectedStops(
  faultLogs: readonly FaultLog[],
  notices: readonly MemberNotice[],
  ids: readonly string[],
): StopMiss[] {
  const out: StopMiss[] = [];
  for (const e of faultLogs) {
    if (e.fault.kind !== "stop") continue;
    const subject = e.fault.node;
    const observers = ids.filter((o) =>
      o !== subject &&
      !faultLogs.some((k) =>
        (k.fault.kind === "kill" || k.fault.kind === "stop") && k.fault.node === o &&
        k.startedAtMs < e.endedAtMs && e.startedAtMs < k.endedAtMs
      )
    );
    if (observers.length === 0) continue;
    const dead = (event: string) => event === "member-dead" || event === "member-left";
    const downAt = (node: string, atMs: number) =>
      faultLogs.some((k) =>
        (k.fault.kind === "kill" || k.fault.kind === "stop") && k.fault.node === node &&
        k.startedAtMs <= atMs && atMs < k.endedAtMs
      );
    // A node killed or stopped later in the stop judges too while it is up: its member-dead
    // is a takeover all the same (the 12.4-s miss of the first long run counted only the one
    // node that stayed up, itself restarted 1.8 s before, not the two that were up for the
    // stop's first 6 s). Only a node up the whole stop makes the stop judged.
    const detected = ids.filter((o) => o !== subject).some((o) => {
      const about = notices.filter((n) => n.observer === o && n.subject === subject);
      if (
        about.some((n) =>
          dead(n.event) && n.atMs >= e.startedAtMs && n.atMs <= e.endedAtMs && !downAt(o, n.atMs)
        )
      ) {
        return true;
      }
      if (!observers.includes(o)) return false;
      const prior = about.filter((n) => n.atMs < e.startedAtMs).at(-1);
      return prior !== undefined && dead(prior.event);
    });
    if (!detected) {
      // What every node said of the subject around the stop, so the miss can be traced.
      const said = notices
        .filter((n) =>
          n.subject === subject && n.atMs >= e.startedAtMs - 2_000 && n.atMs <= e.endedAtMs
        )
        .map((n) => `${n.observer} ${n.event} at +${Math.round(n.atMs - e.startedAtMs)} ms`);
      out.push({
        fault: e,
        why:
          `${describeFault(e.fault)}: no live node declared ${subject} dead during the ${
            Math.round(e.endedAtMs - e.startedAtMs)
          } ms stop (judged by ${observers.join(", ")}, the nodes neither killed nor stopped ` +
          `meanwhile; said of ${subject} from 2 s before: ${said.join("; ") || "nothing"})`,
      });
    }
  }
  return out;
}

/** How long after SIGCONT the resumed node has to log its freeze (`stalled`). */
export const STALL_NOTICE_MS = 30_000;

/**
 * Stops the frozen process never noticed: no `stalled` line from that node between SIGCONT
 * (less a second of clock difference) and `STALL_NOTICE_MS` after it. A stop followed by a
 * kill of the same node before it could log is not judged. Also counts `stalled` lines no stop
 * explains (a false freeze on a starved host).
 */
export function stopsNoticed(
  faultLogs: readonly FaultLog[],
  stalls: ReadonlyArray<{ node: string; atMs: number }>,
): { unnoticed: StopMiss[]; falseStalls: number } {
  const matched = new Set<number>();
  const unnoticed: StopMiss[] = [];
  for (const e of faultLogs) {
    if (e.fault.kind !== "stop") continue;
    const node = e.fault.node;
    const from = e.endedAtMs - 1_000;
    const killedAtMs = faultLogs.find((k) =>
      k.fault.kind === "kill" && k.fault.node === node && k.startedAtMs >= from
    )?.startedAtMs ?? Infinity;
    const until = Math.min(e.endedAtMs + STALL_NOTICE_MS, killedAtMs);
    const index = stalls.findIndex((s, i) =>
      !matched.has(i) && s.node === node && s.atMs >= from && s.atMs <= until
    );
    if (index >= 0) {
      matched.add(index);
    } else if (killedAtMs > e.endedAtMs + 2_000) {
      unnoticed.push({ fault: e, why: `${describeFault(e.fault)}: ${node} never logged a freeze` });
    }
  }
  return { unnoticed, falseStalls: stalls.length - matched.size };
}
