/**
 * `hookd sim`: runs the whole-cluster deterministic simulation (src/sim/cluster_sim.ts) for a
 * range of seeds, or one seed to replay it exactly (`--trace` prints every event of the run).
 *
 * Owns flag parsing and the report: one line per seed on stderr, every violation of a failed
 * seed with the one command that replays it, and with `--json` one JSON object as the last
 * stdout line. Exits 1 when any seed failed.
 */

import {
  booleanFlag,
  type CommandSpec,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { printJsonLine } from "../process/process_io.ts";
import {
  type ClusterSimOptions,
  type ClusterSimReport,
  replayCommand,
  runClusterSim,
} from "../sim/cluster_sim.ts";

const spec: CommandSpec = {
  name: "sim",
  summary: "Run the whole-cluster deterministic simulation over a range of seeds",
  flags: {
    seeds: {
      type: "string",
      valueName: "A..B",
      help: "Seeds to run, inclusive (e.g. 1..1000)",
      default: "1..100",
    },
    seed: { type: "string", valueName: "N", help: "Run (replay) this one seed only" },
    events: {
      type: "boolean",
      help: "The workload also creates endpoints and sends events to them (checked too)",
    },
    revives: {
      type: "boolean",
      help: "The workload also retries dead letters by hand, kept seconds only (checked too)",
    },
    "chaos-ms": {
      type: "string",
      valueName: "MS",
      help: "Virtual ms of workload and faults before the cluster heals (default 30000)",
    },
    "drain-ms": {
      type: "string",
      valueName: "MS",
      help: "Longest virtual ms the healed cluster gets to finish every job (default 120000)",
    },
    trace: { type: "boolean", help: "Print every trace line of the run on stdout" },
    json: { type: "boolean", help: "Print a JSON summary as the last stdout line" },
  },
};

function parseRange(text: string): [number, number] {
  const m = /^(\d+)\.\.(\d+)$/.exec(text.trim());
  if (m === null) throw new UsageError(`--seeds ${JSON.stringify(text)} must look like A..B`);
  const a = Number(m[1]);
  const b = Number(m[2]);
  if (!(Number.isSafeInteger(a) && Number.isSafeInteger(b) && a <= b)) {
    throw new UsageError(`--seeds ${JSON.stringify(text)}: need A <= B`);
  }
  return [a, b];
}

export const simCommand: LeafCommand = {
  spec,
  async run(args) {
    const single = stringFlag(args.values, "seed");
    let [first, last] = parseRange(stringFlag(args.values, "seeds")!);
    if (single !== undefined) {
      const n = numberFlag(args.values, "seed", 0, { min: 0, integer: true });
      first = n;
      last = n;
    }
    const chaosRaw = stringFlag(args.values, "chaos-ms");
    const drainRaw = stringFlag(args.values, "drain-ms");
    const base: Omit<ClusterSimOptions, "seed"> = {
      ...(booleanFlag(args.values, "events") ? { events: true } : {}),
      ...(booleanFlag(args.values, "revives") ? { revives: true } : {}),
      ...(chaosRaw !== undefined
        ? { chaosMs: numberFlag(args.values, "chaos-ms", 0, { min: 1_000, integer: true }) }
        : {}),
      ...(drainRaw !== undefined
        ? { drainLimitMs: numberFlag(args.values, "drain-ms", 0, { min: 1_000, integer: true }) }
        : {}),
    };
    const trace = booleanFlag(args.values, "trace");
    const json = booleanFlag(args.values, "json");
    const failed: Array<{ seed: number; replay: string; violations: readonly string[] }> = [];
    const duplicates: Record<string, number> = {};
    const ownership: Record<
      string,
      { after_ownership_change: number; no_ownership_change: number }
    > = {};
    const totals = {
      acked: 0,
      delivered: 0,
      deadLettered: 0,
      attempts: 0,
      virtualMs: 0,
      zombies: 0,
      leftoverUncommitted: 0,
      revives: 0,
      revivesAcked: 0,
    };
    const started = performance.now();
    for (let seed = first; seed <= last; seed++) {
      const options: ClusterSimOptions = {
        ...base,
        seed,
        ...(trace ? { onTrace: (line: string) => console.log(line) } : {}),
      };
      const t0 = performance.now();
      const report: ClusterSimReport = await runClusterSim(options);
      const s = report.stats;
      totals.acked += s.jobsAcked;
      totals.delivered += s.delivered;
      totals.deadLettered += s.deadLettered;
      totals.attempts += s.attempts;
      totals.virtualMs += s.virtualMs;
      totals.zombies += s.zombies;
      totals.leftoverUncommitted += s.leftoverUncommitted;
      totals.revives += s.revives;
      totals.revivesAcked += s.revivesAcked;
      for (const [cause, n] of Object.entries(s.duplicates)) {
        duplicates[cause] = (duplicates[cause] ?? 0) + n;
      }
      for (const [cause, split] of Object.entries(s.duplicateOwnership)) {
        const sum = ownership[cause] ??= { after_ownership_change: 0, no_ownership_change: 0 };
        sum.after_ownership_change += split.after_ownership_change;
        sum.no_ownership_change += split.no_ownership_change;
      }
      if (trace) {
        for (const d of s.duplicateDetails) console.log(`duplicate, no ownership change: ${d}`);
      }
      console.error(
        `seed ${seed}: ${report.ok ? "ok" : "FAILED"} ` +
          `(${s.jobsAcked} jobs acked, ${s.delivered} delivered, ${s.deadLettered} dead, ` +
          `${s.duplicates.total ?? 0} duplicates ` +
          `(${s.duplicateOwnership.total?.no_ownership_change ?? 0} with no ownership change), ` +
          `${s.crashes} crashes, ` +
          (s.zombies > 0 ? `${s.zombies} zombies, ` : "") +
          (s.leftoverUncommitted > 0 ? `${s.leftoverUncommitted} uncommitted leftovers, ` : "") +
          (s.revives > 0 ? `${s.revivesAcked} of ${s.revives} retries acked, ` : "") +
          `${(s.virtualMs / 1000).toFixed(0)} s simulated in ${
            Math.round(performance.now() - t0)
          } ms, trace ${report.traceHash})`,
      );
      if (!report.ok) {
        const replay = replayCommand({ ...base, seed });
        for (const v of report.violations) console.error(`  ${v}`);
        console.error(`  profile: ${JSON.stringify(report.profile)}`);
        console.error(`  replay: ${replay}`);
        failed.push({ seed, replay, violations: report.violations });
      }
    }
    const realMs = Math.round(performance.now() - started);
    console.error(
      `${last - first + 1} seeds, ${failed.length} failed, ${realMs} ms` +
        (failed.length > 0 ? `; failed seeds: ${failed.map((f) => f.seed).join(",")}` : ""),
    );
    if (json) {
      printJsonLine({
        seeds: `${first}..${last}`,
        runs: last - first + 1,
        failed: failed.map((f) => ({ seed: f.seed, replay: f.replay, violations: f.violations })),
        ok: failed.length === 0,
        real_ms: realMs,
        virtual_s: Math.round(totals.virtualMs / 1000),
        jobs_acked: totals.acked,
        delivered: totals.delivered,
        dead_lettered: totals.deadLettered,
        attempts: totals.attempts,
        duplicates,
        duplicates_by_ownership: ownership,
        zombies: totals.zombies,
        leftover_uncommitted: totals.leftoverUncommitted,
        ...(base.revives === true
          ? { revives: totals.revives, revives_acked: totals.revivesAcked }
          : {}),
      });
    }
    return failed.length === 0 ? EXIT_OK : EXIT_FAILURE;
  },
};
