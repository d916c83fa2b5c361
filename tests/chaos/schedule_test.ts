/**
 * The chaos schedule: a pure function of its seed that keeps every run meaningful — never more
 * than `impairedMax` nodes impaired at one instant (so a majority of three can always form),
 * every fault over before the load ends, every kind present in a 60 s run.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  describeFault,
  type Fault,
  FAULT_KINDS,
  impairedBy,
  planFaults,
} from "../../src/chaos/schedule.ts";
import { chaosDefaults } from "../../src/chaos/chaos_config.ts";
import { Sfc32 } from "../../src/lib/rng.ts";

const NODES = ["n1", "n2", "n3", "n4", "n5"];

function plan(seed: number, durationMs: number): Fault[] {
  return planFaults({ rng: new Sfc32(seed), durationMs, nodes: NODES, config: chaosDefaults });
}

/** The most nodes impaired at any one instant. */
function maxImpaired(faults: readonly Fault[]): number {
  let worst = 0;
  for (const f of faults) {
    // The count can only rise at a fault's start.
    const at = f.atMs;
    const impaired = new Set(
      faults.filter((g) => g.atMs <= at && at < g.endMs).flatMap((g) => impairedBy(g)),
    );
    worst = Math.max(worst, impaired.size);
  }
  return worst;
}

Deno.test("planFaults replays exactly from its seed", () => {
  assertEquals(plan(1, 60_000), plan(1, 60_000));
  assert(JSON.stringify(plan(1, 60_000)) !== JSON.stringify(plan(2, 60_000)));
});

Deno.test("planFaults keeps every run within its rules, for any seed and length", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 10, max: 900 }), (
      seed,
      seconds,
    ) => {
      const durationMs = seconds * 1000;
      const faults = plan(seed, durationMs);
      for (const f of faults) {
        assert(f.atMs >= chaosDefaults.warmupMs, describeFault(f));
        assert(f.endMs <= durationMs && f.endMs > f.atMs, describeFault(f));
        if (f.kind === "partition_oneway") assert(!f.from.includes(f.node));
        if (f.kind === "partition_split") assertEquals(f.minority.length, 2);
        if (f.kind === "loss_burst") assert(f.probability >= 0.2 && f.probability <= 0.5);
      }
      assert(maxImpaired(faults) <= chaosDefaults.impairedMax, `seed ${seed}`);
      // A node is never killed or stopped twice at once.
      for (const f of faults) {
        if (f.kind !== "kill" && f.kind !== "stop") continue;
        const overlapping = faults.filter((g) =>
          g !== f && (g.kind === "kill" || g.kind === "stop") && g.node === f.node &&
          g.atMs < f.endMs && f.atMs < g.endMs
        );
        assertEquals(overlapping.length, 0, describeFault(f));
      }
    }),
    { numRuns: 300 },
  );
});

Deno.test("planFaults puts every kind of fault into a 60 s run", () => {
  for (let seed = 1; seed <= 50; seed++) {
    const kinds = new Set(plan(seed, 60_000).map((f) => f.kind));
    assertEquals([...kinds].sort(), [...FAULT_KINDS].sort(), `seed ${seed}`);
  }
});
