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

/** `runtime` counting its timers' fires: every timer a monitor arms on it is the monitor's own. */
function countingRuntime(runtime: Runtime): { runtime: Runtime; fires: number } {
  const counted = {
    fires: 0,
    runtime: {
      ...runtime,
      setTimer: (delayMs: number, fn: () => void) =>
        runtime.setTimer(delayMs, () => {
          counted.fires++;
          fn();
        }),
    },
  };
  return counted;
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
  const own = countingRuntime(clock.runtime);
  const monitor = new StallMonitor({ runtime: own.runtime, periodMs: 250, thresholdMs: 850 });
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
  // Started before any shell's timer, the own timer covers the first period, once.
  clock.run(10_000);
  assertEquals(own.fires, 1);
  assertEquals(monitor.ownTimerArmed, false);
  own.fires = 0;
  clock.run(10_000);
  assertEquals(own.fires, 0);
  assertEquals(monitor.stalls, 0);
  // Frozen 3 s: the shell's overdue timer runs the freeze's listeners before its own callback.
  order.length = 0;
  clock.freeze(3_000);
  clock.run(1);
  assertEquals(order, ["stall", "tick"]);
  assertEquals(monitor.stalls, 1);
  // Without other timers, the monitor's own beat still runs.
  monitor.close();
  const alone = new StallMonitor({ runtime: own.runtime, periodMs: 250, thresholdMs: 850 });
  alone.start();
  own.fires = 0;
  clock.run(1_000);
  assertEquals(own.fires, 4);
  clock.freeze(2_000);
  clock.run(250);
  assertEquals(alone.stalls, 1);
  alone.close();
});

Deno.test("StallMonitor: a timer due later than a period is no beat, and a cancelled one brings the own timer back", () => {
  const clock = manualRuntime();
  const own = countingRuntime(clock.runtime);
  const monitor = new StallMonitor({ runtime: own.runtime, periodMs: 250, thresholdMs: 850 });
  monitor.start();
  const beating = monitor.beatingRuntime(clock.runtime);
  // Only a slow shell timer (every 2 s, as anti-entropy): the own timer keeps beating between.
  const slow = () => void beating.setTimer(2_000, slow);
  beating.setTimer(2_000, slow);
  clock.run(10_000);
  assertEquals(monitor.stalls, 0);
  assertEquals(monitor.check(), false);
  assertEquals(own.fires >= 30, true);
  monitor.close();
  // A shell ticking every 200 ms covers a new monitor; once it stops (its timer cancelled, not
  // fired), the own timer covers again, or the idle spell would read as a freeze.
  const covered = new StallMonitor({ runtime: own.runtime, periodMs: 250, thresholdMs: 850 });
  covered.start();
  const shell = covered.beatingRuntime(clock.runtime);
  let cancelTick = () => {};
  const tick = () => void (cancelTick = shell.setTimer(200, tick));
  cancelTick = shell.setTimer(200, tick);
  clock.run(2_000);
  assertEquals(covered.ownTimerArmed, false);
  cancelTick();
  clock.run(2_000);
  assertEquals(covered.ownTimerArmed, true);
  assertEquals(covered.check(), false);
  assertEquals(covered.stalls, 0);
  covered.close();
});

Deno.test("StallMonitor.lazyRuntime: a lazy timer rides on a shell's beat within its slack, and wakes the process itself only when none comes", () => {
  const clock = manualRuntime();
  const own = countingRuntime(clock.runtime);
  const monitor = new StallMonitor({ runtime: own.runtime, periodMs: 250, thresholdMs: 850 });
  monitor.start();
  const shell = monitor.beatingRuntime(clock.runtime);
  const tick = () => void shell.setTimer(200, tick);
  shell.setTimer(200, tick);
  const lazy = monitor.lazyRuntime(clock.runtime, 250);
  // A one-second sampler on the lazy runtime: each run is late by at most the slack.
  const lateMs: number[] = [];
  let dueMs = 1_000;
  const sample = () => {
    lateMs.push(clock.runtime.nowMs() - dueMs);
    dueMs += 1_000;
    lazy.setTimer(dueMs - clock.runtime.nowMs(), sample);
  };
  lazy.setTimer(1_000, sample);
  clock.run(1_000);
  own.fires = 0;
  clock.run(10_000);
  assertEquals(own.fires, 0);
  assertEquals(lateMs.length >= 10, true);
  assertEquals(lateMs.every((ms) => ms >= 0 && ms <= 250), true);
  monitor.close();
  // No shell timer and a slack shorter than the period: the monitor's own timer runs it in time.
  const alone = new StallMonitor({ runtime: clock.runtime, periodMs: 250, thresholdMs: 850 });
  alone.start();
  const tight = alone.lazyRuntime(clock.runtime, 20);
  const ranAtMs: number[] = [];
  const startMs = clock.runtime.nowMs();
  tight.setTimer(100, () => ranAtMs.push(clock.runtime.nowMs() - startMs));
  const cancelled = tight.setTimer(50, () => ranAtMs.push(-1));
  cancelled();
  clock.run(1_000);
  assertEquals(ranAtMs.length, 1);
  assertEquals(ranAtMs[0]! >= 100 && ranAtMs[0]! <= 120, true);
  alone.close();
});
