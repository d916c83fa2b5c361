import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { parsePrometheusText, sampleValue, sumSamples } from "../../src/metrics/prometheus_text.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";

Deno.test("parsePrometheusText reads back what the registry renders, histograms included", () => {
  const registry = new MetricsRegistry();
  registry.counter("hookd_api_jobs_total", "jobs", { outcome: "accepted" }).inc(7);
  registry.counter("hookd_api_jobs_total", "jobs", { outcome: "rejected", reason: "invalid" })
    .inc(2);
  registry.counter("hookd_api_jobs_total", "jobs", { outcome: "rejected", reason: "overloaded" })
    .inc(3);
  registry.gauge("hookd_odd", 'a label with "quotes", a \\ and\na newline', {
    path: 'a"b\\c\nd',
  }).set(-1.5);
  const latency = registry.histogram("hookd_delivery_latency_ms", "latency");
  for (let ms = 1; ms <= 100; ms++) latency.record(ms);

  const parsed = parsePrometheusText(registry.renderPrometheus());
  assertEquals(parsed.malformedLines, 0);
  assertEquals(sampleValue(parsed, "hookd_api_jobs_total", { outcome: "accepted" }), 7);
  assertEquals(sumSamples(parsed, "hookd_api_jobs_total", { outcome: "rejected" }), 5);
  assertEquals(sampleValue(parsed, "hookd_odd", { path: 'a"b\\c\nd' }), -1.5);
  assertEquals(sampleValue(parsed, "hookd_delivery_latency_ms_count"), 100);
  const p99 = sampleValue(parsed, "hookd_delivery_latency_ms", { quantile: "0.99" })!;
  assert(p99 >= 98 && p99 <= 100, `p99 ${p99}`);
  assertEquals(sampleValue(parsed, "hookd_missing"), undefined);
  assertEquals(sumSamples(parsed, "hookd_missing"), undefined);
});

Deno.test("parsePrometheusText reads special values and timestamps, and counts what it cannot read", () => {
  const parsed = parsePrometheusText(
    [
      "# HELP a something",
      "a +Inf",
      'b{x="1",} -Inf 1700000000000',
      "c NaN",
      "d 1e3",
      "",
      "bad line here",
      "e{x=1} 2",
      'f{x="unterminated} 2',
      'g{x="1"}',
      "h 12abc",
      "9starts_with_digit 1",
    ].join("\n"),
  );
  assertEquals(sampleValue(parsed, "a"), Infinity);
  assertEquals(sampleValue(parsed, "b", { x: "1" }), -Infinity);
  assert(Number.isNaN(sampleValue(parsed, "c")));
  assertEquals(sampleValue(parsed, "d"), 1000);
  assertEquals(parsed.samples.length, 4);
  assertEquals(parsed.malformedLines, 6);
});

Deno.test("parsePrometheusText bounds its work by linesMax", () => {
  const text = Array.from({ length: 50 }, (_, i) => `m${i} ${i}`).join("\n");
  const parsed = parsePrometheusText(text, { linesMax: 10 });
  assertEquals(parsed.samples.length, 10);
  assertEquals(parsed.skippedLines, 40);
});

Deno.test("parsePrometheusText never throws on hostile text, and a label named like a prototype key is a label", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 400 }), (text) => {
      const parsed = parsePrometheusText(text);
      return parsed.samples.length + parsed.malformedLines <= text.split("\n").length;
    }),
    { numRuns: 500 },
  );
  const parsed = parsePrometheusText('x{constructor="1",__proto__="2"} 3');
  // JSON.parse makes `__proto__` an own key, as a hostile label would be.
  assertEquals(sampleValue(parsed, "x", JSON.parse('{"constructor":"1","__proto__":"2"}')), 3);
  assertEquals(sampleValue(parsed, "x", { toString: "y" }), undefined);
});
