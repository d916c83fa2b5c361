/**
 * `hookd bench membership` as a function: a short run measures what the issue asks (detection
 * over repeated crashes of random nodes, false deaths, messages per node) and its figures are
 * consistent.
 */

import { assert, assertEquals } from "../assert.ts";
import { runMembershipBench } from "../../src/bench/membership_bench.ts";

Deno.test("runMembershipBench measures detection over repeated crashes and counts false deaths", () => {
  const r = runMembershipBench({ nodes: 5, lossProbability: 0.2, minutes: 1, seed: 7 });
  assert(r.crashes >= 5, `only ${r.crashes} crashes in a simulated minute`);
  assertEquals(r.undetected, 0);
  assertEquals(r.not_rejoined, 0);
  assertEquals(r.false_dead, 0);
  assertEquals(r.stopped_early, false);
  const { detection_p50_ms: p50, detection_p99_ms: p99, detection_max_ms: max } = r;
  assert(
    p50 !== null && p99 !== null && max !== null && 0 < p50 && p50 <= p99 && p99 <= max &&
      max <= r.detection_bound_ms && r.detection_bound_unstretched_ms <= r.detection_bound_ms,
    `inconsistent figures ${JSON.stringify(r)}`,
  );
  const rate = r.messages_per_node_per_s;
  const busiest = r.messages_per_node_per_s_max;
  assert(rate !== null && busiest !== null && 0 < rate && rate <= busiest);
  // Same seed, same figures: the bench is a pure function of its arguments.
  assertEquals(runMembershipBench({ nodes: 5, lossProbability: 0.2, minutes: 1, seed: 7 }), r);
});

Deno.test("runMembershipBench stops at its wall-clock budget and says so", () => {
  const r = runMembershipBench({
    nodes: 5,
    lossProbability: 0,
    minutes: 60,
    seed: 1,
    wallSecondsMax: 0.2,
  });
  assertEquals(r.stopped_early, true);
  assert(r.simulated_minutes !== null && r.simulated_minutes < 60, JSON.stringify(r));
});

Deno.test("runMembershipBench pools the samples of several seeds", () => {
  const options = { nodes: 5, lossProbability: 0.2, minutes: 0.5 };
  const a = runMembershipBench({ ...options, seed: 3 });
  const b = runMembershipBench({ ...options, seed: 4 });
  const both = runMembershipBench({ ...options, seed: 3, seeds: 2 });
  assertEquals(both.seeds, 2);
  assertEquals(both.crashes, a.crashes + b.crashes);
  assertEquals(both.detection_samples, a.detection_samples + b.detection_samples);
  assertEquals(both.false_suspicions, a.false_suspicions + b.false_suspicions);
  assertEquals(both.detection_max_ms, Math.max(a.detection_max_ms!, b.detection_max_ms!));
});
