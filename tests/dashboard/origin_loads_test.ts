/**
 * The read-only accessors the dashboard adds to shared modules: `DeliveryCore.originLoads`
 * lists each held origin with its attempts in flight, jobs held and breaker state (and when an
 * open breaker reopens), and forgets an origin with nothing held; `MetricsRegistry.sumCounters`
 * sums one counter family under a label filter.
 */

import { assertEquals } from "../assert.ts";
import { job, makeCore, split, status } from "../delivery/core_harness.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";

Deno.test("DeliveryCore.originLoads lists held origins with in-flight attempts and breaker state", () => {
  const { core } = makeCore({ breakerFailureThreshold: 2, originConcurrencyMax: 2 });
  const t = 1_000;
  for (const id of ["a1", "a2", "a3"]) core.schedule(t, job(id, "http://a.test"));
  core.schedule(t, job("b1", "http://b.test"));
  const started = split(core.takeOutputs()).attempts.map((a) => a.job.id).sort();
  assertEquals(started, ["a1", "a2", "b1"]);
  const byOrigin = () =>
    Object.fromEntries(core.originLoads().map((o) => [o.origin, { ...o, origin: undefined }]));
  assertEquals(byOrigin(), {
    "http://a.test": { origin: undefined, inflight: 2, jobsHeld: 3, breaker: "closed" },
    "http://b.test": { origin: undefined, inflight: 1, jobsHeld: 1, breaker: "closed" },
  });
  // Two failures in a row open a.test's breaker until breakerOpenMs from now; a3 took the
  // slot a1 freed while the breaker was still closed, so one attempt is in flight behind it.
  core.attemptDone(t + 5, "a1", status(500));
  core.attemptDone(t + 6, "a2", status(503));
  core.attemptDone(t + 7, "b1", status(204));
  core.takeOutputs();
  assertEquals(byOrigin(), {
    "http://a.test": {
      origin: undefined,
      inflight: 1,
      jobsHeld: 3,
      breaker: "open",
      reopenAtMs: t + 6 + 1_000,
    },
  });
});

Deno.test("MetricsRegistry.sumCounters sums one family, under a label filter when given", () => {
  const registry = new MetricsRegistry();
  registry.counter("hookd_x_total", "x", { kind: "a" }).inc(2);
  registry.counter("hookd_x_total", "x", { kind: "b" }).inc(3);
  registry.counter("hookd_y_total", "y", { kind: "a" }).inc(100);
  registry.gauge("hookd_z", "z").set(7);
  assertEquals(registry.sumCounters("hookd_x_total"), 5);
  assertEquals(registry.sumCounters("hookd_x_total", (l) => l.kind === "b"), 3);
  assertEquals(registry.sumCounters("hookd_z"), 0, "gauges are not counters");
  assertEquals(registry.sumCounters("hookd_missing_total"), 0);
});
