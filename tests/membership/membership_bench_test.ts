/**
 * `hookd bench membership` as a function: a short run measures what the issue asks (detection
 * over repeated crashes of random nodes, false deaths) and its figures are consistent.
 */

import { assert, assertEquals } from "../assert.ts";
import { runMembershipBench } from "../../src/bench/membership_bench.ts";

Deno.test("runMembershipBench measures detection over repeated crashes and counts false deaths", () => {
  const r = runMembershipBench({ nodes: 5, lossProbability: 0.2, minutes: 1, seed: 7 });
  assert(r.crashes >= 5, `only ${r.crashes} crashes in a simulated minute`);
  assertEquals(r.undetected, 0);
  assertEquals(r.not_rejoined, 0);
  assertEquals(r.false_dead, 0);
  assert(
    0 < r.detection_p50_ms && r.detection_p50_ms <= r.detection_p99_ms &&
      r.detection_p99_ms <= r.detection_max_ms && r.detection_max_ms <= r.detection_bound_ms,
    `inconsistent figures ${JSON.stringify(r)}`,
  );
  assert(r.messages_per_node_per_s > 0);
  // Same seed, same figures: the bench is a pure function of its arguments.
  assertEquals(runMembershipBench({ nodes: 5, lossProbability: 0.2, minutes: 1, seed: 7 }), r);
});
