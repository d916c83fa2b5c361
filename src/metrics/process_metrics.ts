/**
 * The process's memory as Prometheus gauges, read at each scrape: resident set size (the
 * name every Prometheus client library uses), V8's heap, its young generation's size (so an
 * operator sees whether the node runs with `HOOKD_V8_FLAGS`), and the memory V8 holds outside
 * the heap (ArrayBuffers: datagrams, WAL batches, the catch-up log's slabs).
 *
 * Owns these gauges only; must not keep state of its own. A scrape costs one
 * `Deno.memoryUsage()` and one read of V8's heap-space statistics.
 */

import v8 from "node:v8";
import type { MetricsRegistry } from "./registry.ts";

/** Where the figures come from (injectable for tests). */
export type MemoryUsageSource = () => Deno.MemoryUsage;

/**
 * Bytes V8's young generation can hold before a scavenge, used and free: one semi-space, which
 * `HOOKD_V8_FLAGS` sets to 16 MiB (the other half is where a scavenge copies survivors).
 */
export function youngGenerationBytes(): number {
  const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  return space === undefined ? 0 : space.space_used_size + space.space_available_size;
}

export function registerProcessMetrics(
  registry: MetricsRegistry,
  source: MemoryUsageSource = () => Deno.memoryUsage(),
  youngGeneration: () => number = youngGenerationBytes,
): void {
  const rss = registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes");
  const heapUsed = registry.gauge(
    "hookd_v8_heap_used_bytes",
    "Bytes of V8's heap in use (live objects and garbage not yet collected)",
  );
  const heapTotal = registry.gauge("hookd_v8_heap_total_bytes", "Bytes V8 reserved for its heap");
  const external = registry.gauge(
    "hookd_v8_external_bytes",
    "Bytes V8 accounts outside its heap: ArrayBuffers' contents and the like",
  );
  const young = registry.gauge(
    "hookd_v8_young_generation_bytes",
    "Bytes V8's young generation holds before a scavenge (one semi-space), used and free",
  );
  registry.onCollect(() => {
    young.value = youngGeneration();
    const usage = source();
    rss.value = usage.rss;
    heapUsed.value = usage.heapUsed;
    heapTotal.value = usage.heapTotal;
    external.value = usage.external;
  });
}
