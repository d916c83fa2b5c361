import { assert, assertEquals } from "../assert.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { job, makeCore, split, status } from "./core_harness.ts";

Deno.test("DeliveryCore starts a due job at once and needs no wake-up (no polling)", () => {
  const { core } = makeCore();
  assert(core.schedule(0, job("j1")).ok);
  const { attempts } = split(core.takeOutputs());
  assertEquals(attempts.map((a) => [a.job.id, a.attempt, a.timeoutMs]), [["j1", 1, 1_000]]);
  assertEquals(core.nextWakeMs(), Infinity);
});

Deno.test("DeliveryCore arms a retry only after the store persisted the retry report", () => {
  const { core } = makeCore();
  core.schedule(0, job("j1"));
  core.takeOutputs();
  core.attemptDone(10, "j1", status(500));
  const { attempts, reports } = split(core.takeOutputs());
  assertEquals(attempts.length, 0);
  assertEquals(reports.length, 1);
  const retry = reports[0]!;
  assert(retry.kind === "retry");
  assertEquals([retry.attemptsMade, retry.nextAttemptAtMs, retry.attempt.status], [1, 110, 500]);
  assertEquals(core.nextWakeMs(), Infinity, "no timer before the report is durable");
  core.tick(500);
  assertEquals(core.takeOutputs().length, 0, "nothing starts before persisted()");
  core.persisted(20, "j1", true);
  assertEquals(core.nextWakeMs(), 110);
  core.tick(109);
  assertEquals(core.takeOutputs().length, 0);
  core.tick(110);
  const again = split(core.takeOutputs()).attempts;
  assertEquals(again.map((a) => [a.job.id, a.attempt]), [["j1", 2]]);
});

Deno.test("DeliveryCore uses the per-job timeout, capped at attemptTimeoutMaxMs", () => {
  const { core } = makeCore({ attemptTimeoutMaxMs: 5_000 });
  core.schedule(0, job("short", "http://a.test", { timeoutMs: 250 }));
  core.schedule(0, job("long", "http://a.test", { timeoutMs: 60_000 }));
  assertEquals(split(core.takeOutputs()).attempts.map((a) => a.timeoutMs), [250, 5_000]);
});

Deno.test("DeliveryCore resumes a handed-over job at its attempt count and due time", () => {
  const { core } = makeCore();
  core.schedule(1_000, job("j1"), { attemptsMade: 2, nextAttemptAtMs: 1_500 });
  assertEquals(core.takeOutputs().length, 0);
  assertEquals(core.nextWakeMs(), 1_500);
  core.tick(1_500);
  assertEquals(split(core.takeOutputs()).attempts[0]!.attempt, 3);
});

Deno.test("DeliveryCore dead-letters after maxAttemptsDefault and at once on 410", () => {
  const { core } = makeCore({ breakerFailureThreshold: 100 });
  core.schedule(0, job("gone"));
  core.takeOutputs();
  core.attemptDone(1, "gone", status(410));
  const gone = split(core.takeOutputs()).reports[0]!;
  assert(gone.kind === "dead" && gone.attemptsMade === 1 && /410/.test(gone.reason));

  core.schedule(0, job("tired"));
  let now = 0;
  for (let attempt = 1; attempt <= 4; attempt++) {
    const out = split(core.takeOutputs());
    assertEquals(out.attempts.map((a) => a.attempt), [attempt]);
    core.attemptDone(now, "tired", { kind: "timeout", latencyMs: 1_000 });
    const report = split(core.takeOutputs()).reports[0]!;
    if (attempt < 4) {
      assert(report.kind === "retry");
      core.persisted(now, "tired", true);
      now = report.nextAttemptAtMs;
      core.tick(now);
    } else {
      assert(report.kind === "dead" && report.attemptsMade === 4, JSON.stringify(report));
    }
  }
  assertEquals(core.jobCount, 0);
});

Deno.test("DeliveryCore honours Retry-After instead of the schedule", () => {
  const { core } = makeCore();
  core.schedule(0, job("j1"));
  core.takeOutputs();
  core.attemptDone(0, "j1", status(429, "2"));
  const report = split(core.takeOutputs()).reports[0]!;
  assert(report.kind === "retry" && report.nextAttemptAtMs === 2_000);
});

Deno.test("DeliveryCore refuses bad schemes and oversized payloads as dead letters at once", () => {
  const { core } = makeCore({ payloadBytesMax: 10 });
  core.schedule(0, { id: "f", url: "file:///etc/passwd", payload: "{}", secrets: [] });
  core.schedule(0, job("big", "http://a.test", { payload: "x".repeat(11) }));
  core.schedule(0, job("fits", "http://a.test", { payload: "é".repeat(5) }));
  const { attempts, reports } = split(core.takeOutputs());
  assertEquals(reports.map((r) => [r.jobId, r.kind]), [["f", "dead"], ["big", "dead"]]);
  assertEquals(attempts.map((a) => a.job.id), ["fits"]);
});

Deno.test("DeliveryCore says no past jobsMax and accepts a duplicate schedule idempotently", () => {
  const { core } = makeCore({ jobsMax: 2 });
  assert(core.schedule(0, job("a")).ok);
  assert(core.schedule(0, job("a")).ok);
  assert(core.schedule(0, job("b")).ok);
  const full = core.schedule(0, job("c"));
  assert(!full.ok && /jobsMax/.test(full.reason));
  assertEquals(split(core.takeOutputs()).attempts.length, 2);
});

Deno.test("DeliveryCore limits attempts per origin and shares node slots round-robin", () => {
  const { core } = makeCore({ originConcurrencyMax: 2, concurrentDeliveriesMax: 4 });
  for (let i = 0; i < 10; i++) core.schedule(0, job(`a${i}`, "http://a.test"));
  for (let i = 0; i < 10; i++) core.schedule(0, job(`b${i}`, "http://b.test"));
  for (let i = 0; i < 10; i++) core.schedule(0, job(`c${i}`, "http://c.test"));
  const first = split(core.takeOutputs()).attempts.map((a) => a.job.id);
  assertEquals(first, ["a0", "a1", "b0", "b1"]);
  // A slot freed by origin a goes to the origin whose turn it is (c), not back to a.
  core.attemptDone(1, "a0", status(200));
  const next = split(core.takeOutputs()).attempts.map((a) => a.job.id);
  assertEquals(next, ["c0"]);
  assertEquals(core.originInflight("http://a.test"), 1);
});

Deno.test("DeliveryCore keeps a healthy origin flowing while another one hangs", () => {
  const { core } = makeCore({ originConcurrencyMax: 4, concurrentDeliveriesMax: 8 });
  for (let i = 0; i < 50; i++) core.schedule(0, job(`slow${i}`, "http://slow.test"));
  for (let i = 0; i < 50; i++) core.schedule(0, job(`fast${i}`, "http://fast.test"));
  let delivered = 0;
  for (let round = 0; round < 100 && delivered < 50; round++) {
    const { attempts, reports } = split(core.takeOutputs());
    delivered += reports.filter((r) => r.kind === "delivered").length;
    // The slow origin never answers; the fast one answers at once.
    for (const a of attempts) {
      if (a.job.id.startsWith("fast")) core.attemptDone(round, a.job.id, status(200));
    }
  }
  delivered += split(core.takeOutputs()).reports.filter((r) => r.kind === "delivered").length;
  assertEquals(delivered, 50);
  assertEquals(core.originInflight("http://slow.test"), 4);
});

Deno.test("DeliveryCore breaker holds an origin's queue without spending attempts, then probes once", () => {
  const { core, registry } = makeCore({ originConcurrencyMax: 1, concurrentDeliveriesMax: 4 });
  for (let i = 0; i < 10; i++) core.schedule(0, job(`j${i}`));
  let now = 0;
  let inflight = split(core.takeOutputs()).attempts;
  let failures = 0;
  while (core.breakerState("http://a.test") === "closed" && failures < 10) {
    assertEquals(inflight.length, 1);
    core.attemptDone(now, inflight[0]!.job.id, status(503));
    failures++;
    const out = split(core.takeOutputs());
    for (const r of out.reports) core.persisted(now, r.jobId, true);
    inflight = [...out.attempts, ...split(core.takeOutputs()).attempts];
    now++;
  }
  assertEquals(failures, 3);
  assertEquals(inflight.length, 0, "an open breaker starts nothing");
  assertEquals(core.breakerState("http://a.test"), "open");
  assertEquals(registry.snapshot()['hookd_delivery_breaker_state{origin="http://a.test"}'], 2);
  const drained = split(core.takeOutputs());
  for (const r of drained.reports) core.persisted(now, r.jobId, true);
  assertEquals(drained.attempts.length, 0);
  // Well past every retry's due time, the open breaker still starts nothing.
  core.tick(999);
  assertEquals(split(core.takeOutputs()).attempts.length, 0);
  const wake = core.nextWakeMs();
  assert(wake <= 1_100, `wake ${wake}`);
  core.tick(1_200);
  const trial = split(core.takeOutputs()).attempts;
  assertEquals(trial.length, 1, "one trial when half-open");
  core.attemptDone(1_201, trial[0]!.job.id, status(200));
  assertEquals(core.breakerState("http://a.test"), "closed");
  assertEquals(split(core.takeOutputs()).attempts.length, 1, "flowing again, one at a time");
});

Deno.test("DeliveryCore cancel drops a waiting job; an in-flight attempt is still reported", () => {
  const { core } = makeCore({ originConcurrencyMax: 1 });
  core.schedule(0, job("inflight"));
  core.schedule(0, job("queued"));
  assertEquals(split(core.takeOutputs()).attempts.map((a) => a.job.id), ["inflight"]);
  assert(core.cancel(1, "queued"));
  assert(core.cancel(1, "inflight"));
  assert(!core.cancel(1, "unknown"));
  core.attemptDone(2, "inflight", status(500));
  const out = split(core.takeOutputs());
  assertEquals(out.reports.map((r) => r.kind), ["retry"]);
  assertEquals(out.attempts.length, 0, "the cancelled queued job must not start");
  core.persisted(3, "inflight", true);
  assertEquals(core.jobCount, 0);
  assertEquals(core.nextWakeMs(), Infinity);
});

Deno.test("DeliveryCore drops a job whose retry could not be made durable", () => {
  const { core, registry } = makeCore();
  core.schedule(0, job("j1"));
  core.takeOutputs();
  core.attemptDone(1, "j1", status(500));
  core.takeOutputs();
  core.persisted(2, "j1", false);
  assertEquals(core.jobCount, 0);
  assertEquals(registry.snapshot()["hookd_delivery_store_failures_total"], 1);
});

Deno.test("DeliveryCore dead-letters at once a handed-over job whose attempts are used up", () => {
  const { core } = makeCore({ maxAttemptsDefault: 3 });
  core.schedule(0, job("spent"), { attemptsMade: 3, nextAttemptAtMs: 0 });
  const { attempts, reports } = split(core.takeOutputs());
  assertEquals(attempts.length, 0);
  assert(reports[0]!.kind === "dead" && reports[0]!.attemptsMade === 3);
  assertEquals(core.jobCount, 0);
});

Deno.test("DeliveryCore gives freed slots to the least-loaded origin, so slow origins holding every slot cannot starve a fast one", () => {
  // Four slow origins can hold all 8 node slots (2 each); the fast one arrives last.
  const { core } = makeCore({ originConcurrencyMax: 2, concurrentDeliveriesMax: 8 });
  const sim = new SimScheduler();
  let fastDelivered = 0;
  const flush = (): void => {
    for (const out of core.takeOutputs()) {
      if (out.type === "report") {
        if (out.report.kind === "delivered" && out.job.id.startsWith("fast")) fastDelivered++;
        continue;
      }
      const id = out.job.id;
      sim.after(id.startsWith("fast") ? 1 : 1_000, () => {
        core.attemptDone(sim.nowMs, id, status(200));
        flush();
      });
    }
  };
  for (let o = 0; o < 4; o++) {
    for (let i = 0; i < 100; i++) core.schedule(0, job(`slow${o}_${i}`, `http://slow${o}.test`));
  }
  for (let i = 0; i < 5_000; i++) core.schedule(0, job(`fast${i}`, "http://fast.test"));
  flush();
  let fastInflightAt2s = -1;
  sim.at(2_000, () => fastInflightAt2s = core.originInflight("http://fast.test"));
  sim.runUntil(10_000);
  // After the first slow answers (t = 1 s) the fast origin takes a slot and keeps its share of
  // them (8 slots, 5 origins); round-robin alone let the slow ones take every slot back.
  assert(fastInflightAt2s >= 1, `fast origin holds ${fastInflightAt2s} slots at 2 s`);
  assertEquals(fastDelivered, 5_000, `fast origin delivered only ${fastDelivered} in 10 s`);
});

Deno.test("DeliveryCore does not pile up cancelled jobs in its timer heap or ready queues", () => {
  const { core } = makeCore({ originConcurrencyMax: 1, jobsMax: 10_000 });
  // One attempt that never ends keeps origin a busy, so its other jobs wait in its queue.
  core.schedule(0, job("hang"));
  for (let round = 0; round < 20; round++) {
    // Ownership moves back and forth: jobs arrive waiting on a far retry, or queued, and leave.
    for (let i = 0; i < 1_000; i++) {
      core.schedule(0, job(`w${i}`, "http://b.test"), { attemptsMade: 1, nextAttemptAtMs: 1e12 });
      core.schedule(0, job(`q${i}`));
    }
    for (let i = 0; i < 1_000; i++) {
      core.cancel(0, `w${i}`);
      core.cancel(0, `q${i}`);
    }
  }
  core.takeOutputs();
  assertEquals(core.jobCount, 1);
  // 40,000 cancels; what stays is bounded by the compaction thresholds (1,024 stale timers
  // plus twice the ~2,000 jobs held at the peak), not by the churn.
  assert(core.queuedItems <= 5_200, `${core.queuedItems} queued items after churn`);
});

Deno.test("DeliveryCore adds a breaker-state series only for origins whose breaker opened", () => {
  const { core, registry } = makeCore({ breakerFailureThreshold: 1 });
  for (let i = 0; i < 100; i++) {
    core.schedule(0, job(`ok${i}`, `http://o${i}.test`));
    core.takeOutputs();
    core.attemptDone(1, `ok${i}`, status(200));
  }
  core.schedule(0, job("bad", "http://bad.test"));
  core.takeOutputs();
  core.attemptDone(1, "bad", status(503));
  const series = Object.keys(registry.snapshot()).filter((k) =>
    k.startsWith("hookd_delivery_breaker_state")
  );
  assertEquals(series, ['hookd_delivery_breaker_state{origin="http://bad.test"}']);
  assertEquals(registry.snapshot()["hookd_delivery_breakers_open"], 1);
});

Deno.test("DeliveryCore says no past heldPayloadBytesMax and takes jobs again once some leave", () => {
  const { core } = makeCore({ payloadBytesMax: 100, heldPayloadBytesMax: 400 });
  const big = (id: string) => job(id, "http://a.test", { payload: "x".repeat(100) });
  assert(core.schedule(0, big("a")).ok);
  assert(core.schedule(0, big("b")).ok);
  const full = core.schedule(0, big("c"));
  assert(!full.ok && /heldPayloadBytesMax/.test(full.reason), JSON.stringify(full));
  core.takeOutputs();
  core.attemptDone(1, "a", status(200));
  assert(core.schedule(1, big("c")).ok);
});

Deno.test("DeliveryCore does not hold a job's own short timeouts against its origin's breaker", () => {
  const { core } = makeCore({ breakerFailureThreshold: 2 });
  for (let i = 0; i < 3; i++) {
    core.schedule(0, job(`hasty${i}`, "http://a.test", { timeoutMs: 10 }));
    core.takeOutputs();
    core.attemptDone(10, `hasty${i}`, { kind: "timeout", latencyMs: 10 });
  }
  assertEquals(core.breakerState("http://a.test"), "closed");
  // At the node's default timeout, the same failures do open it.
  for (let i = 0; i < 2; i++) {
    core.schedule(0, job(`patient${i}`));
    core.takeOutputs();
    core.attemptDone(1_000, `patient${i}`, { kind: "timeout", latencyMs: 1_000 });
  }
  assertEquals(core.breakerState("http://a.test"), "open");
});
