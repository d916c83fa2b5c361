/**
 * `hookd bench <name>`: the benchmarks, one module each under src/bench/.
 *
 * Owns only the list of benches. Each prints progress on stderr and, with `--json`, one JSON
 * object as its last stdout line.
 */

import type { Command } from "../process/command.ts";
import { deliveryBenchCommand } from "../bench/delivery_bench.ts";
import { membershipBenchCommand } from "../bench/membership_bench.ts";
import { walBench } from "../bench/wal_bench.ts";
import { transportBenchCommand } from "../bench/transport_bench.ts";
import { floodBenchCommand } from "../bench/flood_bench.ts";
import { replicationBenchCommand } from "../bench/replication_bench.ts";
import { generatorCommand } from "../bench/load_generator.ts";
import { sweepCommand } from "../bench/sweep.ts";
import { costBenchCommand } from "../bench/cost_bench.ts";
import { skeletonNodeCommand } from "../bench/skeleton_node.ts";

export const benchCommand: Command = {
  spec: {
    name: "bench",
    summary: "Run a benchmark (hookd bench --help lists them; hookd bench --rates …|--loss … " +
      "runs the sweeps)",
  },
  subcommands: [
    deliveryBenchCommand,
    walBench,
    membershipBenchCommand,
    transportBenchCommand,
    floodBenchCommand,
    replicationBenchCommand,
    costBenchCommand,
    sweepCommand,
    generatorCommand,
    skeletonNodeCommand,
  ],
  // `hookd bench --rates …` / `hookd bench --loss …` are the sweeps, as issue 10 names them.
  flagsCommand: sweepCommand,
};
