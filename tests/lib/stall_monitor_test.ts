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

Deno.test("StallMonitor: other timers' fires are its beats, so its own timer sleeps, and they see a freeze first", () => {
  const clock = manualRuntime();
  let ownFires = 0;
  // Count the monitor's own timer fires: every timer it arms on this runtime is its own.
  const counting: Runtime = {
    ...clock.runtime,
    setTimer: (delayMs, fn) => clock.runtime.setTimer(delayMs, () => (ownFires++, fn())),
  };
  const monitor = new StallMonitor({ runtime: counting, periodMs: 250, thresholdMs: 850 });
  const order: string[] = [];
  monitor.onStall(() => order.push("stall"));
  monitor.start();
  const beating = monitor.beatingRuntime(clock.runtime);
  // A shell's periodic timer, every 200 ms (SWIM's probe period).
  const tick = () => {
    order.push("tick");
    beating.setTimer(200, tick);
  };
  beating.setTimer(200, tick);
  clock.run(10_000);
  assertEquals(ownFires, 0);
  assertEquals(monitor.stalls, 0);
  // Frozen 3 s: the shell's overdue timer runs the freeze's listeners before its own callback.
  order.length = 0;
  clock.freeze(3_000);
  clock.run(1);
  assertEquals(order, ["stall", "tick"]);
  assertEquals(monitor.stalls, 1);
  // Without other timers, the monitor's own beat still runs.
  monitor.close();
  const alone = new StallMonitor({ runtime: counting, periodMs: 250, thresholdMs: 850 });
  alone.start();
  ownFires = 0;
  clock.run(1_000);
  assertEquals(ownFires, 4);
  clock.freeze(2_000);
  clock.run(250);
  assertEquals(alone.stalls, 1);
  alone.close();
});
