/**
 * The node's on-demand profilers (`hookd node --cpu-profile-dir`, `--alloc-profile-dir`): a
 * start and a stop give a V8 profile that the cost model's parser reads and that holds this
 * test's own work (its CPU, its allocations).
 */

import { assert } from "../assert.ts";
import { AllocationSampler, CpuProfiler } from "../../src/node/cpu_profiler.ts";
import { addAllocations, emptySums, parseHeapProfile } from "../../src/bench/alloc_profile.ts";
import { componentTimes, parseCpuProfile } from "../../src/bench/cpu_profile.ts";

Deno.test("CpuProfiler records a window that the cost model's parser reads", async () => {
  const profiler = new CpuProfiler();
  try {
    await profiler.start();
    assert(profiler.running);
    let x = 0;
    const until = performance.now() + 50;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    const text = await profiler.stop();
    assert(!profiler.running);
    const profile = parseCpuProfile(text);
    assert(profile.samples.length > 10, `${profile.samples.length} samples in 50 ms of work`);
    const times = componentTimes(profile);
    const sampledUs = Object.values(times).reduce((a, b) => a + b, 0);
    assert(sampledUs > 20_000, `${sampledUs} µs sampled of 50 ms of work`);
    assert(x > 0);
  } finally {
    profiler.close();
  }
});

/** Short-lived garbage: each array is dropped at once, so minor GCs collect them meanwhile. */
function makeGarbage(arrays: number): number {
  let kept = 0;
  for (let i = 0; i < arrays; i++) {
    const a = new Array<number>(256).fill(i);
    kept += a[i % 256]!;
  }
  return kept;
}

Deno.test("AllocationSampler counts the garbage a window made, not only what it left alive", async () => {
  const sampler = new AllocationSampler();
  try {
    await sampler.start();
    assert(sampler.running);
    // 20,000 arrays of 256 numbers: about 40 MB, far more than the young generation holds,
    // so most of it is collected before the sampler stops.
    const kept = makeGarbage(20_000);
    const text = await sampler.stop();
    assert(!sampler.running);
    const sums = addAllocations(parseHeapProfile(text), emptySums());
    const site = [...sums.sites].find(([name]) => name.startsWith("makeGarbage"));
    assert(site !== undefined, `no makeGarbage site among ${[...sums.sites.keys()].join(", ")}`);
    assert(site[1] > 20_000_000, `makeGarbage sampled at ${site[1]} bytes of about 40 MB`);
    assert(kept > 0);
  } finally {
    sampler.close();
  }
});
