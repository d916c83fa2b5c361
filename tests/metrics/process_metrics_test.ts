/**
 * The process's memory gauges (process_metrics.ts), read at each scrape, and the sweep's mean
 * of them over the nodes (bench_cluster.ts's `nodeMemoryMb`).
 */

import { assertEquals } from "../assert.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { registerProcessMetrics } from "../../src/metrics/process_metrics.ts";
import { nodeMemoryMb } from "../../src/bench/bench_cluster.ts";

Deno.test("process memory gauges are read at each scrape, and the sweep averages them over the nodes", () => {
  let rss = 100_000_000;
  const registry = new MetricsRegistry();
  registerProcessMetrics(registry, () => ({
    rss,
    heapUsed: 30_000_000,
    heapTotal: 40_000_000,
    external: 5_000_000,
  }), () => 33_554_432);
  const scrape = () => {
    const samples = new Map<string, number>();
    for (const line of registry.renderPrometheus().split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const space = line.lastIndexOf(" ");
      samples.set(line.slice(0, space), Number(line.slice(space + 1)));
    }
    return samples;
  };
  const first = scrape();
  assertEquals(first.get("process_resident_memory_bytes"), 100_000_000);
  assertEquals(first.get("hookd_v8_heap_used_bytes"), 30_000_000);
  assertEquals(first.get("hookd_v8_young_generation_bytes"), 33_554_432);
  rss = 120_000_000;
  const second = scrape();
  assertEquals(second.get("process_resident_memory_bytes"), 120_000_000, "read again");
  assertEquals(nodeMemoryMb([first, second, new Map()]), {
    rss_mb: 110,
    heap_used_mb: 30,
    external_mb: 5,
  });
  assertEquals(nodeMemoryMb([new Map()]), null, "nodes that do not report it (the skeleton)");
});
