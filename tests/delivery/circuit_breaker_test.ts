import { assert, assertEquals } from "../assert.ts";
import { CircuitBreaker } from "../../src/delivery/circuit_breaker.ts";

const config = { failureThreshold: 3, openMs: 1_000, openMaxMs: 3_000 };

function fail(breaker: CircuitBreaker, nowMs: number): void {
  const trial = breaker.onStart(nowMs);
  breaker.onResult(nowMs, true, trial);
}

Deno.test("CircuitBreaker opens after threshold consecutive failures; a success resets the count", () => {
  const breaker = new CircuitBreaker(config);
  fail(breaker, 0);
  fail(breaker, 0);
  breaker.onResult(0, false, breaker.onStart(0));
  assertEquals(breaker.consecutiveFailures, 0);
  fail(breaker, 1);
  fail(breaker, 2);
  assertEquals(breaker.state, "closed");
  fail(breaker, 3);
  assertEquals(breaker.state, "open");
  assertEquals(breaker.reopenAtMs, 1_003);
  assert(!breaker.canStart(1_002));
});

Deno.test("CircuitBreaker lets one trial through when half-open; success closes it", () => {
  const breaker = new CircuitBreaker(config);
  for (let i = 0; i < 3; i++) fail(breaker, 0);
  assert(breaker.canStart(1_000));
  assertEquals(breaker.state, "half_open");
  const trial = breaker.onStart(1_000);
  assert(trial);
  assert(!breaker.canStart(1_000), "only one trial at a time");
  breaker.onResult(1_010, false, trial);
  assertEquals(breaker.state, "closed");
  assert(breaker.idle);
});

Deno.test("CircuitBreaker doubles the open time after a failed trial, up to openMaxMs", () => {
  const breaker = new CircuitBreaker(config);
  for (let i = 0; i < 3; i++) fail(breaker, 0);
  let now = 1_000;
  const opens: number[] = [];
  for (let i = 0; i < 4; i++) {
    assert(breaker.canStart(now));
    fail(breaker, now);
    assertEquals(breaker.state, "open");
    opens.push(breaker.reopenAtMs - now);
    now = breaker.reopenAtMs;
  }
  assertEquals(opens, [2_000, 3_000, 3_000, 3_000]);
});

Deno.test("CircuitBreaker ignores late results of attempts started before it opened", () => {
  const breaker = new CircuitBreaker(config);
  const early = breaker.onStart(0);
  for (let i = 0; i < 3; i++) fail(breaker, 0);
  breaker.onResult(5, false, early);
  assertEquals(breaker.state, "open");
  assert(breaker.canStart(1_000));
  breaker.onResult(1_001, false, early);
  assertEquals(breaker.state, "half_open", "a non-trial result must not close it");
});
