/**
 * Receiver outages in front of the real sink: 500/503 answers that are not counted as
 * received, a slow answer handled after its caller gave up, connection resets
 * from the TCP front, each ending by itself; and a control decoder that never throws.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { startSink } from "../../src/bench/sink.ts";
import {
  decodeReceiverFaultCommand,
  ReceiverFaults,
  startTcpFront,
} from "../../src/chaos/receiver_faults.ts";

Deno.test("the sink's outages: 5xx and resets are not received, a slow answer is handled late", async () => {
  const faults = new ReceiverFaults({ slowMs: 300 });
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
    assertEquals(await post("d", 100), "timeout");
    assertEquals(await post("e", 2_000), 204);
    await mode({ mode: "reset", ms: 400 });
    assertEquals(await post("f"), "failed");
    await new Promise((r) => setTimeout(r, 450));
    // The outage ended by itself.
    assertEquals(await post("g"), 204);
    const stats = sink.stats();
    // Received: a, d (handled after its caller gave up), e, g. Not b, c (5xx), f (reset).
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
