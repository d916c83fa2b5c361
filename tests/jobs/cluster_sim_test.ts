/**
 * The whole-cluster deterministic simulation (src/sim/cluster_sim.ts) over many seeds: five
 * complete node stacks (real transport and SWIM on the simulated network, the job store on the
 * real WAL over a crashing SimDisk, the delivery engine against a simulated receiver) with
 * crashes and restarts, loss, duplication, reordering, partitions both ways and one way,
 * stalls, skewed wall clocks and receiver outages; the checker's invariants must hold for
 * every seed. A failure lists each failing seed with the one command that replays it.
 *
 * `HOOKD_SIM_SEED=S` runs only seed S; `HOOKD_SIM_SEEDS=A..B` runs that range. Thousands of
 * longer runs: `deno task sim --seeds 1..2000`.
 */

import { assert, assertEquals } from "../assert.ts";
import { type ClusterSimOptions, replayCommand, runClusterSim } from "../../src/sim/cluster_sim.ts";

/** Virtual ms of faults and workload per seed in CI: ~0.2 s of CPU a seed (40 s for the file). */
const CI_CHAOS_MS = 6_000;
const CI_SEEDS: [number, number] = [1, 200];

function seedRange(): [number, number] {
  const only = Deno.env.get("HOOKD_SIM_SEED");
  if (only !== undefined) return [Number(only), Number(only)];
  const range = /^(\d+)\.\.(\d+)$/.exec(Deno.env.get("HOOKD_SIM_SEEDS") ?? "");
  return range !== null ? [Number(range[1]), Number(range[2])] : CI_SEEDS;
}

Deno.test("the whole-cluster simulation keeps every invariant over 200 seeds", async () => {
  const [first, last] = seedRange();
  const failures: string[] = [];
  let acked = 0;
  let delivered = 0;
  let crashes = 0;
  for (let seed = first; seed <= last; seed++) {
    const options: ClusterSimOptions = { seed, chaosMs: CI_CHAOS_MS };
    const report = await runClusterSim(options);
    acked += report.stats.jobsAcked;
    delivered += report.stats.delivered;
    crashes += report.stats.crashes;
    if (!report.ok) {
      failures.push(
        `seed ${seed}:\n    ${report.violations.join("\n    ")}\n` +
          `  replay: ${replayCommand(options)}`,
      );
    }
  }
  assertEquals(failures, [], `failing seeds:\n${failures.join("\n")}`);
  // The runs did something: jobs were acknowledged and delivered, nodes crashed.
  if (last - first >= 50) {
    assert(acked > 1_000 && delivered > 1_000 && crashes > 20, `${acked} ${delivered} ${crashes}`);
  }
});

Deno.test("a seed replays exactly: the same trace, the same figures", async () => {
  const options: ClusterSimOptions = { seed: 7, chaosMs: CI_CHAOS_MS };
  const first = await runClusterSim(options);
  const second = await runClusterSim(options);
  assertEquals(second.traceHash, first.traceHash);
  assertEquals(second.stats, first.stats);
  const other = await runClusterSim({ ...options, seed: 8 });
  assert(other.traceHash !== first.traceHash, "another seed is another run");
});
