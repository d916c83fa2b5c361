/**
 * The chaos run's fault schedule: a pure function of (seed, duration, nodes, config), so a run
 * that found a bug replays the same faults at the same offsets with `--seed`.
 *
 * Owns the kinds of fault, their timing and the rules that keep a run meaningful: at most
 * `impairedMax` nodes impaired at once (killed, stopped, or the cut-off side of a partition,
 * so a majority of three can always form), every fault over before the load ends, and every
 * kind present early when the run is long enough (the first faults walk a shuffled list of
 * all kinds). Must not do I/O: the harness (chaos_run.ts) carries the schedule out.
 */

import type { ChaosConfig, Range } from "./chaos_config.ts";
import type { Rng } from "../lib/rng.ts";

export type FaultKind =
  | "kill"
  | "stop"
  | "partition_oneway"
  | "partition_split"
  | "loss_burst"
  | "receiver_outage";

export const FAULT_KINDS: readonly FaultKind[] = [
  "kill",
  "stop",
  "partition_oneway",
  "partition_split",
  "loss_burst",
  "receiver_outage",
];

export type OutageMode = "500" | "503" | "slow" | "reset";

interface FaultBase {
  /** Offset from the start of the load, ms. */
  readonly atMs: number;
  /** When it ends (restart, SIGCONT, heal), ms from the start of the load. */
  readonly endMs: number;
}

export type Fault =
  /** SIGKILL `node`, restart it at `endMs`. */
  | FaultBase & { readonly kind: "kill"; readonly node: string }
  /** SIGSTOP `node`, SIGCONT it at `endMs`. */
  | FaultBase & { readonly kind: "stop"; readonly node: string }
  /** `node` drops every datagram from `from` (they still hear it). */
  | FaultBase & {
    readonly kind: "partition_oneway";
    readonly node: string;
    readonly from: readonly string[];
  }
  /** `minority` and the rest drop each other's datagrams. */
  | FaultBase & { readonly kind: "partition_split"; readonly minority: readonly string[] }
  | FaultBase & {
    readonly kind: "loss_burst";
    readonly nodes: readonly string[];
    readonly probability: number;
  }
  | FaultBase & { readonly kind: "receiver_outage"; readonly mode: OutageMode };

export interface PlanOptions {
  readonly rng: Rng;
  /** How long the load runs, ms; every fault ends by then. */
  readonly durationMs: number;
  /** Node ids, at least 5 (the rules assume a majority of three survives two impaired). */
  readonly nodes: readonly string[];
  readonly config: ChaosConfig;
}

/** The nodes a fault impairs (a majority cannot count on them while it lasts). */
export function impairedBy(fault: Fault): readonly string[] {
  switch (fault.kind) {
    case "kill":
    case "stop":
    case "partition_oneway":
      return [fault.node];
    case "partition_split":
      return fault.minority;
    case "loss_burst":
    case "receiver_outage":
      return [];
  }
}

export function planFaults(options: PlanOptions): Fault[] {
  const { rng, durationMs, nodes, config } = options;
  if (nodes.length < 5) throw new RangeError(`chaos needs at least 5 nodes, got ${nodes.length}`);
  const faults: Fault[] = [];
  const draw = (range: Range) => range[0] + rng.next() * (range[1] - range[0]);
  const drawMs = (range: Range) => Math.round(draw(range));
  const pick = <T>(items: readonly T[]): T => items[rng.int(items.length)]!;
  const sample = <T>(items: readonly T[], count: number): T[] => {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < count && pool.length > 0) {
      out.push(pool.splice(rng.int(pool.length), 1)[0]!);
    }
    return out;
  };
  /** Nodes impaired at any moment of [fromMs, toMs). */
  const impairedDuring = (fromMs: number, toMs: number): Set<string> => {
    const out = new Set<string>();
    for (const f of faults) {
      if (f.atMs < toMs && fromMs < f.endMs) { for (const n of impairedBy(f)) out.add(n); }
    }
    return out;
  };
  /** Whether adding `extra` impaired nodes over [fromMs, toMs) keeps within the bound. */
  const fits = (fromMs: number, toMs: number, extra: readonly string[]): boolean => {
    if (extra.length === 0) return true;
    // The bound must hold at every instant; checking the union over the window is stricter
    // (and simpler): it never lets two faults that merely touch the window stack up.
    const union = impairedDuring(fromMs, toMs);
    for (const n of extra) union.add(n);
    return union.size <= config.impairedMax;
  };
  const overlapsKind = (kind: FaultKind, fromMs: number, toMs: number) =>
    faults.some((f) => f.kind === kind && f.atMs < toMs && fromMs < f.endMs);

  const tryPlace = (kind: FaultKind, atMs: number): Fault | undefined => {
    const healthy = (fromMs: number, toMs: number) =>
      nodes.filter((n) => !impairedDuring(fromMs, toMs).has(n));
    switch (kind) {
      case "kill":
      case "stop": {
        const endMs = atMs + drawMs(kind === "kill" ? config.killDownMs : config.stopMs);
        if (endMs > durationMs) return undefined;
        const candidates = healthy(atMs, endMs);
        if (candidates.length === 0) return undefined;
        const node = pick(candidates);
        return fits(atMs, endMs, [node]) ? { kind, atMs, endMs, node } : undefined;
      }
      case "partition_oneway": {
        const endMs = atMs + drawMs(config.onewayMs);
        if (endMs > durationMs) return undefined;
        const candidates = healthy(atMs, endMs);
        if (candidates.length === 0) return undefined;
        const node = pick(candidates);
        const from = sample(nodes.filter((n) => n !== node), 1 + rng.int(2));
        return fits(atMs, endMs, [node])
          ? { kind, atMs, endMs, node, from: from.sort() }
          : undefined;
      }
      case "partition_split": {
        const endMs = atMs + drawMs(config.splitMs);
        if (endMs > durationMs || overlapsKind("partition_split", atMs, endMs)) return undefined;
        const minority = sample(nodes, 2).sort();
        return fits(atMs, endMs, minority) ? { kind, atMs, endMs, minority } : undefined;
      }
      case "loss_burst": {
        const endMs = atMs + drawMs(config.lossMs);
        if (endMs > durationMs) return undefined;
        const probability = Math.round(draw(config.lossProbability) * 100) / 100;
        return {
          kind,
          atMs,
          endMs,
          nodes: sample(nodes, 1 + rng.int(3)).sort(),
          probability,
        };
      }
      case "receiver_outage": {
        const endMs = atMs + drawMs(config.outageMs);
        if (endMs > durationMs || overlapsKind("receiver_outage", atMs, endMs)) return undefined;
        const mode = pick<OutageMode>(["500", "503", "slow", "reset"]);
        return { kind, atMs, endMs, mode };
      }
    }
  };

  // Every kind once, in a seeded order, then kinds at random.
  const firstRound = sample(FAULT_KINDS, FAULT_KINDS.length);
  let atMs = config.warmupMs;
  // Bounded: each step advances time by at least gapMs[0] > 0, or places the fault.
  while (atMs < durationMs) {
    const fromFirstRound = firstRound.length > 0;
    const preferred = firstRound.shift() ?? pick(FAULT_KINDS);
    // Try the preferred kind first, then the others, so a crowded moment still gets a fault.
    const order = [preferred, ...sample(FAULT_KINDS.filter((k) => k !== preferred), 5)];
    let placed: Fault | undefined;
    for (const kind of order) {
      placed = tryPlace(kind, atMs);
      if (placed !== undefined) break;
    }
    if (placed !== undefined) {
      faults.push(placed);
      const waiting = firstRound.indexOf(placed.kind);
      if (waiting >= 0) firstRound.splice(waiting, 1);
    }
    // A first-round kind that did not fit now gets the next turn.
    if (fromFirstRound && placed?.kind !== preferred) firstRound.unshift(preferred);
    atMs += Math.max(1, drawMs(config.gapMs));
  }
  return faults.sort((a, b) => a.atMs - b.atMs);
}

/** A fault in one line, for logs and reports. */
export function describeFault(fault: Fault): string {
  const span = `${(fault.atMs / 1000).toFixed(1)}-${(fault.endMs / 1000).toFixed(1)}s`;
  switch (fault.kind) {
    case "kill":
      return `${span} SIGKILL ${fault.node}, restart`;
    case "stop":
      return `${span} SIGSTOP ${fault.node}, SIGCONT`;
    case "partition_oneway":
      return `${span} ${fault.node} deaf to ${fault.from.join(",")}`;
    case "partition_split":
      return `${span} partition ${fault.minority.join(",")} | rest`;
    case "loss_burst":
      return `${span} ${Math.round(fault.probability * 100)}% ingress loss on ${
        fault.nodes.join(",")
      }`;
    case "receiver_outage":
      return `${span} receiver ${fault.mode}`;
  }
}
