import { assertEquals } from "../assert.ts";
import { StallMonitor } from "../../src/lib/stall_monitor.ts";
import type { Runtime } from "../../src/lib/runtime.ts";

/** A runtime whose clock and timers the test drives by hand. */
function manualRuntime() {
  let now = 0;
  let timers: Array<{ atMs: number; fn: () => void }> = [];
  const runtime: Runtime = {
    nowMs: () => now,
    wallMs: () => now,
    setTimer(delayMs, fn) {
      const timer = { atMs: now + delayMs, fn };
      timers.push(timer);
      return () => void (timers = timers.filter((t) => t !== timer));
    },
    defer(fn) {
      timers.push({ atMs: now, fn });
    },
  };
  return {
    runtime,
    /** Moves the clock without running timers (the process is frozen). */
    freeze(ms: number) {
      now += ms;
    },
    /** Moves the clock, running each timer at its time. */
    run(ms: number) {
      const end = now + ms;
      for (;;) {
        timers.sort((a, b) => a.atMs - b.atMs);
        const next = timers[0];
        if (next === undefined || next.atMs > end) break;
        timers.shift();
        now = Math.max(now, next.atMs);
        next.fn();
      }
      now = end;
    },
  };
}

Deno.test("StallMonitor stays quiet while it beats and reports a freeze once, to the first caller", () => {
  const clock = manualRuntime();
  const monitor = new StallMonitor({ runtime: clock.runtime, periodMs: 100, thresholdMs: 1_000 });
  const gaps: number[] = [];
  monitor.onStall((gapMs) => gaps.push(gapMs));
  monitor.start();
  clock.run(10_000);
  assertEquals(monitor.check(), false);
  assertEquals(gaps, []);
  // Frozen for 5 s: the first code to run afterwards (here a check, as the engine's expired
  // timer would) sees it before the monitor's own overdue beat does.
  clock.freeze(5_000);
  assertEquals(monitor.check(), true);
  assertEquals(gaps.length, 1);
  assertEquals(gaps[0]! > 4_000, true);
  assertEquals(monitor.check(), false);
  clock.run(1_000);
  assertEquals(gaps.length, 1);
  // A freeze shorter than the threshold is no freeze; the overdue beat sees the next long one.
  clock.freeze(900);
  clock.run(100);
  assertEquals(gaps.length, 1);
  clock.freeze(3_000);
  clock.run(100);
  assertEquals(gaps.length, 2);
  assertEquals(monitor.stalls, 2);
  monitor.close();
  clock.freeze(10_000);
  assertEquals(monitor.check(), false);
});
