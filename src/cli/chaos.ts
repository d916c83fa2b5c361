/**
 * `hookd chaos --duration S [--rate R] [--seed N] [--json]`: a chaos run (src/chaos/chaos_run.ts)
 * against five local node processes, a sink and an open-loop load. Progress and diagnostics go
 * to stderr; with `--json` the last stdout line is one JSON object (`acked`, `delivered`,
 * `lost`, `duplicates`, `unacked_but_delivered`, `faults`, `max_detect_ms`, `false_dead`, …).
 * Exits 1 when the run found a problem (a lost job above all), 0 otherwise.
 *
 * Owns flag parsing and the verdict's exit code only.
 */

import { booleanFlag, type CommandSpec, numberFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { chaosDefaults } from "../chaos/chaos_config.ts";
import { runChaos } from "../chaos/chaos_run.ts";

const spec: CommandSpec = {
  name: "chaos",
  summary: "Run five nodes under seeded faults (kills, stops, partitions, loss, receiver " +
    "outages) and check that no acknowledged job is lost",
  flags: {
    duration: {
      type: "string",
      valueName: "S",
      help: "Seconds of load and faults (then heal, drain and check)",
      default: "60",
    },
    rate: {
      type: "string",
      valueName: "R",
      help: "Submits per second, open loop",
      default: String(chaosDefaults.rate),
    },
    seed: {
      type: "string",
      valueName: "N",
      help: "Seed of the fault schedule (the same seed replays the same faults)",
      default: "1",
    },
    json: { type: "boolean", help: "Print the report as one JSON line (the last stdout line)" },
  },
};

export const chaosCommand: LeafCommand = {
  spec,
  async run(args) {
    const durationS = numberFlag(args.values, "duration", 60, { min: 10, max: 86_400 });
    const rate = numberFlag(args.values, "rate", chaosDefaults.rate, { min: 1, max: 10_000 });
    const seed = numberFlag(args.values, "seed", 1, { min: 0, max: 2 ** 32 - 1, integer: true });
    if (durationS * 1000 <= chaosDefaults.warmupMs) {
      throw new UsageError(
        `--duration must be longer than the ${chaosDefaults.warmupMs} ms warm-up`,
      );
    }
    const report = await runChaos({
      durationMs: Math.round(durationS * 1000),
      seed,
      config: { ...chaosDefaults, rate },
      log: (line) => console.error(line),
    });
    if (booleanFlag(args.values, "json")) {
      console.log(JSON.stringify(report));
    } else {
      for (const [key, value] of Object.entries(report)) {
        console.log(`${key.padEnd(32)} ${JSON.stringify(value)}`);
      }
    }
    return report.problems.length === 0 ? EXIT_OK : EXIT_FAILURE;
  },
};
