/**
 * Event-loop stalls in the simulator: while a node is stalled its timers and socket receives
 * wait; at the end of the stall the timers that came due run first, then the I/O, as an event
 * loop does; a crash drops what was waiting.
 */

import { assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { SimNetwork } from "../../src/sim/network.ts";
import { drainMicrotasks, SimScheduler } from "../../src/sim/scheduler.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { SimSocket } from "../../src/sim/sim_socket.ts";
import { StallGate, StallingRuntime, StallingSocket } from "../../src/sim/stall.ts";

Deno.test("StallGate defers timers and receives to the end of a stall, timers first", async () => {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(1), {
    delayMsMin: 1,
    delayMsMax: 1,
  });
  const gate = new StallGate(scheduler);
  const runtime = new StallingRuntime(new SimRuntime(scheduler), gate);
  const socket = new StallingSocket(new SimSocket(network, "10.0.0.1:1"), gate);
  const peer = new SimSocket(network, "10.0.0.2:1");
  const log: string[] = [];
  void (async () => {
    const buffer = new Uint8Array(16);
    for (;;) {
      const [data] = await socket.receive(buffer).catch(() => [undefined]);
      if (data === undefined) return;
      log.push(`${scheduler.nowMs} recv ${data[0]}`);
    }
  })();
  runtime.setTimer(50, () => log.push(`${scheduler.nowMs} timer 50`));
  const cancelled = runtime.setTimer(60, () => log.push("cancelled timer ran"));
  runtime.setTimer(500, () => log.push(`${scheduler.nowMs} timer 500`));
  scheduler.at(10, () => gate.stall(100));
  scheduler.at(20, () => void peer.send(new Uint8Array([7]), { hostname: "10.0.0.1", port: 1 }));
  scheduler.at(90, () => cancelled());
  // Extended while running: everything waits until 300.
  scheduler.at(100, () => gate.stall(200));
  scheduler.at(400, () => void peer.send(new Uint8Array([8]), { hostname: "10.0.0.1", port: 1 }));
  await scheduler.runUntilAsync(1_000);
  assertEquals(log, ["300 timer 50", "300 recv 7", "401 recv 8", "500 timer 500"]);
  assertEquals(gate.stalls, 1);
  assertEquals(gate.stalledMs, 290);
  socket.close();
  peer.close();
  await drainMicrotasks();
});

Deno.test("StallGate.halt drops deferred work and a close releases a held receive", async () => {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(2));
  const gate = new StallGate(scheduler);
  const runtime = new StallingRuntime(new SimRuntime(scheduler), gate);
  const socket = new StallingSocket(new SimSocket(network, "10.0.0.1:1"), gate);
  const ran: string[] = [];
  runtime.setTimer(10, () => ran.push("timer"));
  gate.stall(100);
  const received = socket.receive(new Uint8Array(8)).then(() => "received", () => "rejected");
  network.send("10.0.0.2:1", "10.0.0.1:1", new Uint8Array([1]));
  await scheduler.runUntilAsync(50);
  gate.halt();
  socket.close();
  await scheduler.runUntilAsync(1_000);
  assertEquals(ran, []);
  assertEquals(await received, "rejected");
});
