/**
 * The dashboard's memory: the series keeps per-interval differences of the submit totals and
 * the interval's own latency percentiles, bounded in points; receivers are counted over a
 * sliding window, failing ones first, bounded in origins. The recorder closes one interval
 * per sample interval on an injected runtime and reads the node's counters without counting
 * a refusal twice.
 */

import { assert, assertEquals } from "../assert.ts";
import { DashboardStats } from "../../src/dashboard/stats.ts";
import { DashboardRecorder, submitTotals } from "../../src/dashboard/recorder.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { SIM_WALL_EPOCH_MS, SimRuntime } from "../../src/sim/sim_runtime.ts";
import type { DeliveryJob } from "../../src/delivery/types.ts";

const T0 = 1_800_000_000_000;
const ZERO = { accepted: 0, rejected: 0 };

function ok(origin: string) {
  return { origin, delivered: true, outcome: "success", status: 204, detail: "" };
}

function failed(origin: string, detail = "boom") {
  return { origin, delivered: false, outcome: "http_error", status: 500, detail };
}

Deno.test("DashboardStats series: each point holds its interval's differences and latencies", () => {
  const stats = new DashboardStats(T0, { accepted: 10, rejected: 2 });
  for (const ms of [5, 10, 20, 40, 1000]) stats.delivered(ms);
  stats.attempt(T0 + 10, failed("https://a.example"));
  stats.closeInterval(T0 + 1000, { accepted: 15, rejected: 3 });
  stats.closeInterval(T0 + 2500, { accepted: 15, rejected: 3 });
  const { points, intervalMs, pointsMax } = stats.series();
  assertEquals(intervalMs, 1000);
  assertEquals(pointsMax, 300);
  assertEquals(points.length, 2);
  const [first, second] = points;
  assertEquals(
    { ...first, p50Ms: undefined, p99Ms: undefined },
    {
      atMs: T0 + 1000,
      spanMs: 1000,
      accepted: 5,
      rejected: 1,
      delivered: 5,
      failedAttempts: 1,
      p50Ms: undefined,
      p99Ms: undefined,
    },
  );
  assert(first!.p50Ms !== null && Math.abs(first!.p50Ms - 20) < 0.1, `p50 ${first!.p50Ms}`);
  assert(first!.p99Ms !== null && Math.abs(first!.p99Ms - 1000) < 1, `p99 ${first!.p99Ms}`);
  // The next interval saw nothing: zero counts, no latency (null, not 0), its own span.
  assertEquals(second, {
    atMs: T0 + 2500,
    spanMs: 1500,
    accepted: 0,
    rejected: 0,
    delivered: 0,
    failedAttempts: 0,
    p50Ms: null,
    p99Ms: null,
  });
});

Deno.test("DashboardStats series keeps only the newest seriesPoints points", () => {
  const stats = new DashboardStats(T0, ZERO, { seriesPoints: 3 });
  for (let i = 1; i <= 5; i++) stats.closeInterval(T0 + i * 1000, { accepted: i, rejected: 0 });
  const points = stats.series().points;
  assertEquals(points.map((p) => p.atMs), [T0 + 3000, T0 + 4000, T0 + 5000]);
  assertEquals(points.map((p) => p.accepted), [1, 1, 1]);
});

Deno.test("DashboardStats receivers: counted over the window, failing first, held origins listed", () => {
  const stats = new DashboardStats(T0, ZERO, {
    receiverWindowMs: 10_000,
    receiverWindowBuckets: 10,
  });
  stats.attempt(T0, ok("https://ok.example"));
  stats.attempt(T0, ok("https://flaky.example"));
  stats.attempt(T0 + 500, failed("https://flaky.example"));
  stats.attempt(T0 + 600, failed("https://down.example", "x".repeat(500)));
  const loads = [
    { origin: "https://held.example", inflight: 2, jobsHeld: 5, breaker: "closed" as const },
    {
      origin: "https://open.example",
      inflight: 0,
      jobsHeld: 1,
      breaker: "open" as const,
      reopenAtMs: T0 + 30_000,
    },
  ];
  const view = stats.receivers(T0 + 1000, loads);
  assertEquals(view.windowMs, 10_000);
  assertEquals(view.items.map((r) => [r.origin, r.failureRate]), [
    ["https://open.example", null],
    ["https://down.example", 1],
    ["https://flaky.example", 0.5],
    ["https://ok.example", 0],
    ["https://held.example", null],
  ]);
  const open = view.items[0]!;
  assertEquals([open.breaker, open.reopenAtMs, open.jobsHeld], ["open", T0 + 30_000, 1]);
  const held = view.items[4]!;
  assertEquals([held.inflight, held.jobsHeld, held.attempts], [2, 5, 0]);
  const down = view.items[1]!;
  assertEquals(down.lastFailure?.status, 500);
  assertEquals(down.lastFailure?.detail.length, 200, "the detail is cut to failureDetailCharsMax");

  // Past the window the attempts no longer count; an origin with nothing held and nothing
  // recent is no longer listed, while one the engine still holds is.
  const later = stats.receivers(T0 + 12_000, loads);
  assertEquals(later.items.map((r) => r.origin), ["https://open.example", "https://held.example"]);
  // Halfway through the window, the older half of the attempts has slid out.
  stats.attempt(T0 + 6_000, ok("https://flaky.example"));
  const mid = stats.receivers(T0 + 10_500, []).items.find((r) =>
    r.origin === "https://flaky.example"
  );
  assertEquals([mid?.attempts, mid?.failures], [1, 0]);
});

Deno.test("DashboardStats remembers at most receiverOriginsMax origins, forgetting the stalest", () => {
  const stats = new DashboardStats(T0, ZERO, { receiverOriginsMax: 2 });
  stats.attempt(T0 + 1, failed("https://a.example"));
  stats.attempt(T0 + 2, failed("https://b.example"));
  stats.attempt(T0 + 3, failed("https://a.example"));
  stats.attempt(T0 + 4, failed("https://c.example"));
  assertEquals(stats.originsRemembered, 2);
  const origins = stats.receivers(T0 + 5, []).items.map((r) => r.origin).sort();
  assertEquals(origins, ["https://a.example", "https://c.example"]);
});

Deno.test("submitTotals counts store outcomes once and the API's own refusals beside them", () => {
  const registry = new MetricsRegistry();
  const store = (result: string, n: number) =>
    registry.counter("hookd_jobs_submits_total", "s", { result }).inc(n);
  const apiJobs = (labels: Record<string, string>, n: number) =>
    registry.counter("hookd_api_jobs_total", "a", labels).inc(n);
  store("accepted", 7);
  store("existing", 1);
  store("no_quorum", 2);
  apiJobs({ outcome: "accepted" }, 7);
  // A store refusal is counted by the API too: it must not count twice.
  apiJobs({ outcome: "rejected", reason: "no_quorum" }, 2);
  apiJobs({ outcome: "rejected", reason: "invalid" }, 3);
  registry.counter("hookd_api_admission_rejected_total", "r", { route: "submit" }).inc(4);
  registry.counter("hookd_api_admission_rejected_total", "r", { route: "retry" }).inc(9);
  assertEquals(submitTotals(registry), { accepted: 8, rejected: 2 + 3 + 4 });
});

Deno.test("DashboardRecorder closes one interval per sample interval and records reports", () => {
  const scheduler = new SimScheduler();
  const runtime = new SimRuntime(scheduler);
  const registry = new MetricsRegistry();
  const accepted = registry.counter("hookd_jobs_submits_total", "s", { result: "accepted" });
  const recorder = new DashboardRecorder({
    registry,
    runtime,
    origins: () => [{ origin: "http://r.test", inflight: 1, jobsHeld: 1, breaker: "closed" }],
  });
  const job: DeliveryJob = {
    id: "j1",
    url: "http://r.test/hook",
    payload: "{}",
    secrets: [],
    submittedAtMs: SIM_WALL_EPOCH_MS + 100,
  };
  scheduler.runUntil(350);
  accepted.inc(3);
  recorder.onReport({
    kind: "retry",
    jobId: "j1",
    attemptsMade: 1,
    nextAttemptAtMs: 0,
    attempt: { attempt: 1, startedAtMs: 0, latencyMs: 3, outcome: "timeout", detail: "slow" },
  }, job);
  recorder.onReport({
    kind: "delivered",
    jobId: "j1",
    attempt: {
      attempt: 2,
      startedAtMs: 0,
      latencyMs: 3,
      outcome: "success",
      status: 200,
      detail: "",
    },
  }, job);
  scheduler.runUntil(3_000);
  const points = recorder.series().points;
  assertEquals(points.map((p) => p.atMs - SIM_WALL_EPOCH_MS), [1000, 2000, 3000]);
  assertEquals(points[0]!.accepted, 3);
  assertEquals(points[0]!.delivered, 1);
  assertEquals(points[0]!.failedAttempts, 1);
  assert(
    Math.abs(points[0]!.p50Ms! - 250) < 0.5,
    `latency from submittedAtMs: ${points[0]!.p50Ms}`,
  );
  assertEquals(points[1]!.accepted, 0);
  const receivers = recorder.receivers().items;
  assertEquals(receivers.map((r) => [r.origin, r.attempts, r.failures, r.inflight]), [
    ["http://r.test", 2, 1, 1],
  ]);
  recorder.close();
  scheduler.runUntil(10_000);
  assertEquals(recorder.series().points.length, 3, "a closed recorder arms no timer");
});
