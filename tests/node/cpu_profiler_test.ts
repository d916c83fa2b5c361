/**
 * The node's on-demand CPU profiler (`hookd node --cpu-profile-dir`): a start and a stop give a
 * V8 profile that the cost model's parser reads and that holds this test's own work.
 */

import { assert } from "../assert.ts";
import { CpuProfiler } from "../../src/node/cpu_profiler.ts";
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
