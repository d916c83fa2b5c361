/**
 * Reading perf stat's task clock (the bench cost's exact idle CPU), and the graceful "no reading"
 * where perf is missing. Whether a real perf counts is the machine's business, not asserted here.
 */

import { assertEquals } from "../assert.ts";
import { parseTaskClockMs, perfTaskClockMs } from "../../src/bench/perf_task_clock.ts";

Deno.test("parseTaskClockMs: reads the task clock from perf stat's CSV", () => {
  const csv = "\n1604.33,msec,task-clock,30008390411,100.00,0.053,CPUs utilized\n" +
    "4218,,context-switches,30008390411,100.00,2.629,K/sec\n";
  assertEquals(parseTaskClockMs(csv), 1604.33);
});

Deno.test("parseTaskClockMs: a value perf could not count, another unit, or no line is no reading", () => {
  assertEquals(parseTaskClockMs("<not counted>,msec,task-clock,0,0.00,,\n"), undefined);
  assertEquals(parseTaskClockMs("<not supported>,,task-clock,0,100.00,,\n"), undefined);
  assertEquals(parseTaskClockMs("1604.33,usec,task-clock,30008390411,100.00,,\n"), undefined);
  assertEquals(
    parseTaskClockMs("4218,,context-switches,30008390411,100.00,2.629,K/sec\n"),
    undefined,
  );
  assertEquals(parseTaskClockMs(""), undefined);
});

Deno.test("perfTaskClockMs: without perf it waits out the window and reads nothing", async () => {
  const startMs = performance.now();
  const ms = await perfTaskClockMs([Deno.pid], 0.2, "hookd-no-such-perf-binary");
  assertEquals(ms, undefined);
  // The window is still waited for: callers use the call as their wait.
  assertEquals(performance.now() - startMs >= 190, true);
});

Deno.test("perfTaskClockMs: no processes, no reading", async () => {
  assertEquals(await perfTaskClockMs([], 0.05), undefined);
});

/** Whether this machine has a perf that counts (CI machines may not have one). */
function perfCounts(): boolean {
  try {
    const out = new Deno.Command("perf", {
      args: ["stat", "-x,", "-e", "task-clock", "--", "true"],
      stdout: "null",
      stderr: "piped",
    }).outputSync();
    return out.success && parseTaskClockMs(new TextDecoder().decode(out.stderr)) !== undefined;
  } catch {
    return false;
  }
}

Deno.test({
  name: "perfTaskClockMs: a busy process's task clock is read where perf can count it",
  ignore: !perfCounts(),
  fn: async () => {
    // Spin this process for most of the window, so its task clock is far from zero.
    const spin = new Worker(
      `data:application/javascript,${
        encodeURIComponent(
          "const end = Date.now() + 250; while (Date.now() < end) {} self.close();",
        )
      }`,
      { type: "module" },
    );
    const ms = await perfTaskClockMs([Deno.pid], 0.4);
    spin.terminate();
    assertEquals(ms !== undefined && ms >= 50 && ms <= 2 * 400 + 100, true);
  },
});
