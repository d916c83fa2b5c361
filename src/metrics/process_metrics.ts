/**
 * The process's memory as Prometheus gauges, read at each scrape: resident set size (the
 * name every Prometheus client library uses), and V8's heap and the memory it holds outside
 * the heap (ArrayBuffers: datagrams, WAL batches, the catch-up log's slabs).
 *
 * Owns these gauges only; must not keep state of its own. A scrape costs one
 * `Deno.memoryUsage()` (a read of the process's own statistics).
 */

import type { MetricsRegistry } from "./registry.ts";

/** Where the figures come from (injectable for tests). */
export type MemoryUsageSource = () => Deno.MemoryUsage;

export function registerProcessMetrics(
  registry: MetricsRegistry,
  source: MemoryUsageSource = () => Deno.memoryUsage(),
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
  registry.onCollect(() => {
    const usage = source();
    rss.value = usage.rss;
    heapUsed.value = usage.heapUsed;
    heapTotal.value = usage.heapTotal;
    external.value = usage.external;
  });
}
