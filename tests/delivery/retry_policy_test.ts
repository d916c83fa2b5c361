import { assert, assertEquals } from "../assert.ts";
import fc from "fast-check";
import { deliveryDefaults } from "../../src/config/delivery.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import {
  classifyAttempt,
  decideRetry,
  isOriginFailure,
  parseRetryAfterMs,
  retryDelayMs,
  type RetryPolicyConfig,
} from "../../src/delivery/retry_policy.ts";
import type { AttemptResult } from "../../src/delivery/types.ts";

const policy: RetryPolicyConfig = {
  retryScheduleMs: [100, 1_000, 10_000],
  retryJitterRatio: 0.2,
  attemptsMax: 4,
  retryAfterMinMs: 50,
  retryAfterMaxMs: 60_000,
};
const http = (status: number, retryAfter?: string): AttemptResult => ({
  kind: "response",
  status,
  body: "",
  latencyMs: 1,
  ...(retryAfter !== undefined ? { retryAfter } : {}),
});

Deno.test("classifyAttempt labels 2xx success, 410 gone and the rest errors", () => {
  assertEquals(classifyAttempt(http(200)), "success");
  assertEquals(classifyAttempt(http(299)), "success");
  assertEquals(classifyAttempt(http(410)), "gone");
  assertEquals(classifyAttempt(http(302)), "http_error");
  assertEquals(classifyAttempt(http(500)), "http_error");
  assertEquals(classifyAttempt({ kind: "timeout", latencyMs: 5 }), "timeout");
  assertEquals(
    classifyAttempt({ kind: "network_error", message: "x", latencyMs: 0 }),
    "network_error",
  );
});

Deno.test("isOriginFailure counts 5xx, 429, timeouts and connection errors only", () => {
  assert(isOriginFailure(http(503)));
  assert(isOriginFailure(http(429)));
  assert(!isOriginFailure(http(400)));
  assert(!isOriginFailure(http(200)));
  assert(isOriginFailure({ kind: "timeout", latencyMs: 1 }));
  assert(!isOriginFailure({ kind: "refused", message: "private", latencyMs: 0 }));
});

Deno.test("decideRetry delivers on 2xx and ends the job at once on 410 Gone", () => {
  const rng = new Sfc32(1);
  assertEquals(decideRetry(policy, http(204), 1, 0, rng), { kind: "delivered" });
  const gone = decideRetry(policy, http(410), 1, 0, rng);
  assertEquals(gone.kind, "dead");
});

Deno.test("decideRetry follows the schedule with jitter, then dead-letters after attemptsMax", () => {
  const rng = new Sfc32(7);
  for (let attempt = 1; attempt < policy.attemptsMax; attempt++) {
    const decision = decideRetry(policy, http(500), attempt, 0, rng);
    assert(decision.kind === "retry");
    const base = policy.retryScheduleMs[Math.min(attempt, 3) - 1]!;
    assert(decision.delayMs >= base * 0.8 && decision.delayMs <= base * 1.2, `${decision.delayMs}`);
  }
  const last = decideRetry(policy, { kind: "timeout", latencyMs: 9 }, policy.attemptsMax, 0, rng);
  assert(last.kind === "dead" && /4 attempts failed/.test(last.reason), JSON.stringify(last));
});

Deno.test("retryDelayMs repeats the last step past the schedule and replays from a seed", () => {
  const a = [5, 6, 7, 20].map((n) => retryDelayMs(policy, n, new Sfc32(3)));
  const b = [5, 6, 7, 20].map((n) => retryDelayMs(policy, n, new Sfc32(3)));
  assertEquals(a, b);
  for (const d of a) assert(d >= 8_000 && d <= 12_000, `${d}`);
});

Deno.test("retryDelayMs jitter stays within the ratio for every seed and attempt", () => {
  fc.assert(
    fc.property(fc.integer(), fc.integer({ min: 1, max: 50 }), (seed, attempt) => {
      const base = policy.retryScheduleMs[Math.min(attempt, 3) - 1]!;
      const d = retryDelayMs(policy, attempt, new Sfc32(seed));
      return d >= Math.floor(base * 0.8) && d <= Math.ceil(base * 1.2);
    }),
  );
});

Deno.test("retryDelayMs jitter spreads retries (not one value for every job)", () => {
  const rng = new Sfc32(11);
  const delays = new Set(Array.from({ length: 50 }, () => retryDelayMs(policy, 2, rng)));
  assert(delays.size > 20, `only ${delays.size} distinct delays`);
});

Deno.test("decideRetry honours Retry-After seconds and HTTP dates within bounds", () => {
  const rng = new Sfc32(1);
  const nowMs = Date.parse("2026-01-01T00:00:00Z");
  assertEquals(decideRetry(policy, http(429, "3"), 1, nowMs, rng), {
    kind: "retry",
    delayMs: 3_000,
    fromRetryAfter: true,
  });
  const date = decideRetry(policy, http(503, "Thu, 01 Jan 2026 00:00:30 GMT"), 1, nowMs, rng);
  assertEquals(date, { kind: "retry", delayMs: 30_000, fromRetryAfter: true });
  // Clamped: a year becomes retryAfterMaxMs, zero becomes retryAfterMinMs.
  assertEquals(parseRetryAfterMs("31536000", nowMs, policy), 60_000);
  assertEquals(parseRetryAfterMs("0", nowMs, policy), 50);
  // Garbage falls back to the schedule.
  assertEquals(parseRetryAfterMs("soon", nowMs, policy), undefined);
  assertEquals(parseRetryAfterMs("-5", nowMs, policy), undefined);
  const fallback = decideRetry(policy, http(503, "soon"), 1, nowMs, rng);
  assert(fallback.kind === "retry" && !fallback.fromRetryAfter);
});

Deno.test("decideRetry never lets Retry-After shorten the schedule", () => {
  const rng = new Sfc32(5);
  // Third retry: 10 s scheduled (±20 %); the receiver asks for 1 s.
  const decision = decideRetry(policy, http(503, "1"), 3, 0, rng);
  assert(decision.kind === "retry" && !decision.fromRetryAfter, JSON.stringify(decision));
  assert(decision.delayMs >= 8_000, `${decision.delayMs}`);
});

Deno.test("deliveryDefaults retry schedule is the webhook-industry one", () => {
  assertEquals(deliveryDefaults.retryScheduleMs, [
    5_000,
    300_000,
    1_800_000,
    7_200_000,
    18_000_000,
    36_000_000,
  ]);
  assertEquals(jobsDefaults.maxAttemptsDefault, deliveryDefaults.retryScheduleMs.length + 1);
});
