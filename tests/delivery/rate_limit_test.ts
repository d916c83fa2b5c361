/**
 * Endpoint rate limits in the delivery core (docs/endpoints.md, "Rate limits across the
 * cluster"), on a virtual clock: an endpoint's jobs never start faster than the node's share
 * of its limit, held-back jobs take no slot and count as no failure, other endpoints' jobs
 * (on the same origin too) pass them by, and a changed limit applies to jobs already held.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { DeliveryCore } from "../../src/delivery/delivery_core.ts";
import { DeliveryMetrics } from "../../src/delivery/metrics.ts";
import { RateBucket } from "../../src/delivery/rate_bucket.ts";
import { endpointIdOf } from "../../src/delivery/types.ts";
import type { EngineConfig } from "../../src/delivery/engine.ts";
import { job, split, status, testConfig } from "./core_harness.ts";

/** An event's job to `endpointId`, as the job store hands it to the engine. */
function eventJob(n: number, endpointId: string, origin = "http://a.test") {
  return job(`evt_${n}.${endpointId}`, origin, { webhookId: `evt_${n}` });
}

interface Started {
  readonly jobId: string;
  readonly atMs: number;
}

/**
 * Drives `core` on a virtual clock until nothing is left or `untilMs`: every attempt is
 * answered `latencyMs` after it starts with a 200. Returns the attempts in start order.
 * `at` runs a step at a virtual time (before the core's own wakes at the same time).
 */
function drive(
  core: DeliveryCore,
  startMs: number,
  untilMs: number,
  options: { latencyMs?: number; at?: ReadonlyArray<[number, () => void]> } = {},
): { started: Started[]; reports: string[]; maxInflight: number } {
  const latencyMs = options.latencyMs ?? 5;
  const steps = [...(options.at ?? [])].sort((a, b) => a[0] - b[0]);
  const answers: Array<{ atMs: number; jobId: string }> = [];
  const started: Started[] = [];
  const reports: string[] = [];
  let maxInflight = 0;
  let nowMs = startMs;
  const collect = () => {
    const { attempts, reports: rs } = split(core.takeOutputs());
    for (const a of attempts) {
      started.push({ jobId: a.job.id, atMs: nowMs });
      answers.push({ atMs: nowMs + latencyMs, jobId: a.job.id });
    }
    for (const r of rs) reports.push(`${r.kind} ${r.jobId}`);
    maxInflight = Math.max(maxInflight, core.inflight);
  };
  collect();
  for (let i = 0; i < 100_000; i++) {
    answers.sort((a, b) => a.atMs - b.atMs);
    const next = Math.min(
      core.nextWakeMs(),
      answers[0]?.atMs ?? Infinity,
      steps[0]?.[0] ?? Infinity,
    );
    if (next === Infinity || next > untilMs) break;
    nowMs = Math.max(nowMs, next);
    if (steps[0] !== undefined && steps[0][0] <= nowMs) {
      steps.shift()![1]();
    } else if (answers[0] !== undefined && answers[0].atMs <= nowMs) {
      core.attemptDone(nowMs, answers.shift()!.jobId, status(200));
    } else {
      core.tick(nowMs);
    }
    collect();
  }
  return { started, reports, maxInflight };
}

/** The most attempts that started in any window [t, t + windowMs). */
function maxInWindow(times: readonly number[], windowMs: number): number {
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[j]! < times[i]! - windowMs + 1e-9) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

function coreWith(
  rates: Map<string, number>,
  overrides: Partial<EngineConfig> = {},
): DeliveryCore {
  return new DeliveryCore(
    { ...testConfig, ...overrides },
    new Sfc32(1),
    new DeliveryMetrics(new MetricsRegistry()),
    (id) => rates.get(id) ?? 0,
  );
}

Deno.test("endpointIdOf reads the endpoint of an event's job, none of a plain job", () => {
  assertEquals(endpointIdOf({ id: "evt_1.ep_a", webhookId: "evt_1" }), "ep_a");
  assertEquals(endpointIdOf({ id: "job_1" }), undefined);
  assertEquals(endpointIdOf({ id: "evt_1", webhookId: "evt_1" }), undefined);
  assertEquals(endpointIdOf({ id: "evt_2.ep_a", webhookId: "evt_1" }), undefined);
});

Deno.test("RateBucket starts a burst of its capacity, then one per interval", () => {
  const bucket = new RateBucket(20, 100); // capacity 2, one every 50 ms
  assertEquals(bucket.capacity, 2);
  assertEquals(bucket.available(0), 2);
  assert(bucket.take(0));
  assert(bucket.take(0));
  assert(!bucket.take(0));
  assertEquals(bucket.nextAllowedMs(), 50);
  assert(!bucket.take(49.999));
  assert(bucket.take(50));
  assertEquals(bucket.available(50), 0);
  // A raised rate shortens the debt at once.
  bucket.setRate(60, 200, 100); // one every 5 ms, capacity 20
  assert(bucket.take(60));
});

Deno.test("rate limit: an endpoint's attempts never exceed the node's share per second", () => {
  for (const ratePerS of [0.5, 2, 5, 37]) {
    const rates = new Map([["ep_a", ratePerS]]);
    const core = coreWith(rates);
    const n = 40;
    for (let i = 0; i < n; i++) core.schedule(0, eventJob(i, "ep_a"));
    const { started, reports } = drive(core, 0, 1_000_000);
    assertEquals(started.length, n, `rate ${ratePerS}: every job attempted`);
    assertEquals(reports.filter((r) => r.startsWith("delivered")).length, n);
    const capacity = Math.max(1, Math.floor((ratePerS * testConfig.rateLimitBurstMs) / 1000));
    const times = started.map((s) => s.atMs);
    const perSecond = maxInWindow(times, 1_000);
    assert(
      perSecond <= Math.ceil(ratePerS) + capacity,
      `rate ${ratePerS}/s: ${perSecond} attempts in one second`,
    );
    // Over the whole run the pace is the rate (the limit is used, not overshot).
    const spanMs = times[n - 1]! - times[0]!;
    const expectedMs = ((n - capacity) / ratePerS) * 1000;
    assert(
      spanMs >= expectedMs - 1 && spanMs <= expectedMs + 50,
      `rate ${ratePerS}/s: ${n} attempts over ${spanMs} ms, expected ${expectedMs}`,
    );
    assertEquals(core.jobCount, 0);
    assertEquals(core.limitedCount("ep_a"), 0);
  }
});

Deno.test("rate limit: held jobs take no slot, fail nothing, and other endpoints pass them", () => {
  const rates = new Map([["ep_a", 1]]);
  // Two slots in all: held jobs of ep_a must not sit in them.
  const core = coreWith(rates, { concurrentDeliveriesMax: 2, originConcurrencyMax: 2 });
  for (let i = 0; i < 10; i++) core.schedule(0, eventJob(i, "ep_a"));
  // The same origin, another endpoint (no limit), and a plain job.
  for (let i = 0; i < 10; i++) core.schedule(0, eventJob(100 + i, "ep_b"));
  core.schedule(0, job("plain"));
  assertEquals(core.limitedCount("ep_a"), 9, "all but the first wait in ep_a's queue");
  const { started, reports, maxInflight } = drive(core, 0, 60_000, { latencyMs: 10 });
  assert(maxInflight <= 2);
  const others = started.filter((s) => !s.jobId.endsWith(".ep_a"));
  assertEquals(others.length, 11);
  // Two at a time, 10 ms each: every other job is done in well under ep_a's second interval.
  assert(others.every((s) => s.atMs < 100), `others at ${others.map((s) => s.atMs)}`);
  const a = started.filter((s) => s.jobId.endsWith(".ep_a")).map((s) => s.atMs);
  assertEquals(a, [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000]);
  // Not one retry or dead letter: being held back is not a failed attempt.
  assert(reports.every((r) => r.startsWith("delivered")), reports.join("\n"));
  assertEquals(started.length, 21, "every job attempted once");
});

Deno.test("rate limit: a raised limit applies at once to the jobs already held", () => {
  const rates = new Map([["ep_a", 1]]);
  const core = coreWith(rates);
  for (let i = 0; i < 20; i++) core.schedule(0, eventJob(i, "ep_a"));
  const { started } = drive(core, 0, 60_000, {
    at: [[2_500, () => {
      rates.set("ep_a", 10);
      core.limitsChanged(2_500);
    }]],
  });
  const times = started.map((s) => s.atMs);
  assertEquals(times.slice(0, 3), [0, 1000, 2000]);
  // The debt left at the change (500 of 1000 ms) shrinks tenfold: the next goes at 2550.
  assertEquals(times[3], 2_550);
  assertEquals(times.length, 20);
  assert(times[19]! <= 2_550 + 16 * 100 + 1, `the last at ${times[19]}`);
  assert(maxInWindow(times.slice(3), 1_000) <= 10 + 1);
});

Deno.test("rate limit: a limit removed releases every held job", () => {
  const rates = new Map([["ep_a", 0.1]]);
  const core = coreWith(rates);
  for (let i = 0; i < 5; i++) core.schedule(0, eventJob(i, "ep_a"));
  const { started } = drive(core, 0, 60_000, {
    at: [[1_000, () => {
      assertEquals(core.limitedCount("ep_a"), 4);
      rates.delete("ep_a");
      core.limitsChanged(1_000);
    }]],
  });
  assertEquals(started.map((s) => s.atMs), [0, 1000, 1000, 1000, 1000]);
});

Deno.test("rate limit: cancelled held jobs leave nothing behind and wake nothing", () => {
  const rates = new Map([["ep_a", 1]]);
  const core = coreWith(rates);
  for (let i = 0; i < 200; i++) core.schedule(0, eventJob(i, "ep_a"));
  const first = split(core.takeOutputs()).attempts;
  assertEquals(first.length, 1);
  assertEquals(core.limitedCount("ep_a"), 199);
  core.attemptDone(5, first[0]!.job.id, status(200));
  for (let i = 1; i < 200; i++) core.cancel(6, `evt_${i}.ep_a`);
  assertEquals(core.limitedCount("ep_a"), 0);
  assertEquals(core.jobCount, 0);
  // The bucket's own timer goes once it is full again, then nothing is left to wake for.
  core.tick(core.nextWakeMs());
  assertEquals(split(core.takeOutputs()).attempts.length, 0);
  assertEquals(core.nextWakeMs(), Infinity);
});

Deno.test("rate limit: a job finished does not refill the bucket (one at a time, fast answers)", () => {
  const rates = new Map([["ep_a", 2]]);
  const core = coreWith(rates);
  // Jobs that come one by one, each answered in 1 ms, at 20 per second: the bucket must
  // remember its debt after each job leaves the engine.
  const started: number[] = [];
  let id = 0;
  for (let t = 0; t < 5_000; t += 50) {
    core.schedule(t, eventJob(id++, "ep_a"));
    core.tick(t);
    for (const a of split(core.takeOutputs()).attempts) {
      started.push(t);
      core.attemptDone(t + 1, a.job.id, status(200));
      core.takeOutputs();
    }
  }
  assert(maxInWindow(started, 1_000) <= 2 + 1, `${maxInWindow(started, 1_000)} in a second`);
});

Deno.test("rate limit: a job put back behind a busy origin and cancelled there frees its token", () => {
  const rates = new Map([["ep_a", 1]]);
  const core = coreWith(rates, { originConcurrencyMax: 2 });
  for (let i = 0; i < 4; i++) core.schedule(0, eventJob(i, "ep_a"));
  assertEquals(split(core.takeOutputs()).attempts.map((a) => a.job.id), ["evt_0.ep_a"]);
  assertEquals(core.limitedCount("ep_a"), 3);
  // Another endpoint's job takes the origin's second slot.
  core.schedule(500, eventJob(9, "ep_b"));
  assertEquals(split(core.takeOutputs()).attempts.length, 1);
  // ep_a's token comes at 1000: its next job goes back to the origin's queue, which is full.
  core.tick(1_000);
  assertEquals(split(core.takeOutputs()).attempts.length, 0);
  assertEquals(core.limitedCount("ep_a"), 2);
  assertEquals(core.nextWakeMs(), Infinity, "no timer while the one put back is queued");
  core.cancel(1_001, "evt_1.ep_a");
  // The token it did not use goes to the next one held.
  assertEquals(core.nextWakeMs(), 1_000);
  core.tick(1_001);
  assertEquals(core.limitedCount("ep_a"), 1);
  core.attemptDone(1_500, "evt_0.ep_a", status(200));
  assertEquals(split(core.takeOutputs()).attempts.map((a) => a.job.id), ["evt_2.ep_a"]);
});
