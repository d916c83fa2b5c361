import { assert, assertEquals, assertThrows } from "../assert.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { Histogram } from "../../src/metrics/histogram.ts";

Deno.test("MetricsRegistry returns the same metric for the same name and labels", () => {
  const registry = new MetricsRegistry();
  const a = registry.counter("hookd_x_total", "x", { peer: "a" });
  a.inc(2);
  assertEquals(registry.counter("hookd_x_total", "x", { peer: "a" }).value, 2);
  assertEquals(registry.counter("hookd_x_total", "x", { peer: "b" }).value, 0);
});

Deno.test("MetricsRegistry refuses one name registered as two kinds", () => {
  const registry = new MetricsRegistry();
  registry.counter("hookd_y", "y");
  assertThrows(() => registry.gauge("hookd_y", "y"), TypeError);
  assertThrows(() => registry.histogram("hookd_y", "y", { peer: "a" }), TypeError);
});

Deno.test("MetricsRegistry renders each family once, its samples together", () => {
  const registry = new MetricsRegistry();
  registry.counter("hookd_a_total", "first\nline \\ two", { peer: "p1" }).inc();
  registry.gauge("hookd_b", "b").set(7);
  registry.counter("hookd_a_total", "first", { peer: 'p"2' }).inc(3);
  registry.histogram("hookd_c_ms", "c").record(1.5);
  const text = registry.renderPrometheus();
  const lines = text.trimEnd().split("\n");
  assertEquals(lines.slice(0, 4), [
    "# HELP hookd_a_total first\\nline \\\\ two",
    "# TYPE hookd_a_total counter",
    'hookd_a_total{peer="p1"} 1',
    'hookd_a_total{peer="p\\"2"} 3',
  ]);
  assertEquals(lines.filter((l) => l.startsWith("# TYPE")).length, 3);
  assert(lines.includes("# TYPE hookd_c_ms summary"));
  assert(lines.includes('hookd_c_ms{quantile="0.99"} 1.5'));
  assert(lines.includes("hookd_c_ms_count 1"));
  assertEquals(registry.snapshot()["hookd_b"], 7);
});

Deno.test("Histogram keeps sub-millisecond values and ignores non-finite ones", () => {
  const h = new Histogram();
  for (const v of [0.05, 0.05, 0.2, 10, Number.NaN, -1, Infinity]) h.record(v);
  const s = h.summary();
  assertEquals(s.count, 4);
  assert(Math.abs(s.min - 0.05) < 0.001, `min ${s.min}`);
  assert(Math.abs(s.max - 10) < 0.01, `max ${s.max}`);
  assert(Math.abs(s.mean - 10.3 / 4) < 1e-9, `mean ${s.mean}`);
  h.reset();
  assertEquals(h.summary().count, 0);
});

Deno.test("onCollect copies outside figures into metrics before every render and snapshot", () => {
  const registry = new MetricsRegistry();
  const fired = registry.counter("t_total", "help");
  let outside = 3;
  registry.onCollect(() => {
    fired.value = outside;
  });
  assert(registry.renderPrometheus().includes("t_total 3"));
  outside = 5;
  assertEquals(registry.snapshot()["t_total"], 5);
});
