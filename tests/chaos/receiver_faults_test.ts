/**
 * Receiver outages in front of the real sink: 500/503 answers that are not counted as
 * received, a slow answer handled after its caller gave up, connection resets
 * from the TCP front, each ending by itself; and a control decoder that never throws.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { startSink } from "../../src/process/sink.ts";
import {
  decodeReceiverFaultCommand,
  ReceiverFaults,
  startTcpFront,
} from "../../src/chaos/receiver_faults.ts";
import type { Runtime } from "../../src/lib/runtime.ts";

/** Polls `condition` (bounded: 10 s of 5 ms polls). */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  assert(condition(), "the condition never held");
}

/**
 * A clock the test moves by hand: an outage ends, and a slow answer is released, only when the
 * test says so, however slow the machine (no assertion here depends on real time).
 */
function manualRuntime(): Runtime & { advance(ms: number): void } {
  let now = 0;
  const timers: Array<{ atMs: number; fn: () => void }> = [];
  return {
    nowMs: () => now,
    wallMs: () => 1_700_000_000_000 + now,
    setTimer(delayMs, fn) {
      const timer = { atMs: now + delayMs, fn };
      timers.push(timer);
      return () => void timers.splice(timers.indexOf(timer), 1);
    },
    defer(fn) {
      timers.push({ atMs: now, fn });
    },
    advance(ms: number) {
      now += ms;
      for (const t of timers.filter((t) => t.atMs <= now)) {
        timers.splice(timers.indexOf(t), 1);
        t.fn();
      }
    },
  };
}

Deno.test("the sink's outages: 5xx and resets are not received, a slow answer is handled late", async () => {
  const runtime = manualRuntime();
  const faults = new ReceiverFaults({ slowMs: 300, runtime });
  const sink = await startSink({
    hostname: "127.0.0.1",
    port: 0,
    wrapHandler: (handler) => faults.wrap(handler),
  });
  const front = startTcpFront({ hostname: "127.0.0.1", port: 0, backendPort: sink.port, faults });
  const control = `http://127.0.0.1:${sink.port}/faults`;
  const post = async (id: string, timeoutMs = 2_000): Promise<number | string> => {
    try {
      const response = await fetch(`http://127.0.0.1:${front.port}/hook`, {
        method: "POST",
        headers: { "webhook-id": id },
        body: "{}",
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      return response.status;
    } catch (error) {
      return error instanceof Error && error.name === "TimeoutError" ? "timeout" : "failed";
    }
  };
  const mode = async (body: Record<string, unknown>) => {
    const response = await fetch(control, { method: "POST", body: JSON.stringify(body) });
    assertEquals(response.status, 200);
    await response.body?.cancel();
  };
  try {
    assertEquals(await post("a"), 204);
    await mode({ mode: "503" });
    assertEquals(await post("b"), 503);
    await mode({ mode: "500" });
    assertEquals(await post("c"), 500);
    await mode({ mode: "slow" });
    // Held until the clock moves: the caller gives up first, and the receiver handles it later.
    assertEquals(await post("d", 100), "timeout");
    const e = post("e", 10_000);
    await waitFor(() => faults.state().slowed === 2);
    runtime.advance(300);
    assertEquals(await e, 204);
    await waitFor(() => sink.stats().unique === 3); // a, d (late), e
    await mode({ mode: "reset", ms: 400 });
    assertEquals(await post("f"), "failed");
    runtime.advance(399);
    assertEquals(await post("f2"), "failed");
    runtime.advance(1);
    // The outage ended by itself.
    assertEquals(await post("g"), 204);
    const stats = sink.stats();
    // Received: a, d (handled after its caller gave up), e, g. Not b, c (5xx), f, f2 (reset).
    assertEquals(stats.unique, 4);
    const state = faults.state();
    assertEquals([state.mode, state.refused, state.slowed], ["ok", 2, 2]);
    assert(state.resets >= 1, JSON.stringify(state));
  } finally {
    await front.close();
    await sink.close();
  }
});

Deno.test("decodeReceiverFaultCommand takes the five modes and never throws on hostile bodies", () => {
  for (const mode of ["ok", "500", "503", "slow", "reset"]) {
    assert(decodeReceiverFaultCommand({ mode }).ok, mode);
  }
  for (const bad of [null, [], { mode: 503 }, { mode: "down" }, { mode: "slow", ms: -1 }]) {
    assertEquals(decodeReceiverFaultCommand(bad).ok, false, JSON.stringify(bad));
  }
  fc.assert(
    fc.property(fc.anything(), (v) => typeof decodeReceiverFaultCommand(v).ok === "boolean"),
    { numRuns: 1_000 },
  );
});
