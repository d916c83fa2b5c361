/**
 * Real sockets between two processes on loopback: this process runs a `UdpTransport`, the
 * other is `hookd bench transport --role peer` (src/bench/transport_peer.ts).
 */

import { equal, ok } from "node:assert/strict";
import { ControlClient, spawnTransportPeer } from "../../src/bench/transport_bench.ts";
import { DATA_CHANNEL, encodeData, wallNowMs } from "../../src/bench/transport_peer.ts";
import { type TransportEvent, UdpTransport } from "../../src/transport/mod.ts";

const KEY = "udp-process-test-key-0123456789";

async function waitFor(what: string, done: () => boolean, limitMs: number): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sends `count` data messages of `phase`, waiting out backpressure (bounded). */
async function sendPhase(
  transport: UdpTransport,
  peer: string,
  phase: number,
  count: number,
): Promise<void> {
  const deadline = performance.now() + 30_000;
  for (let seq = 0; seq < count;) {
    if (transport.send(peer, DATA_CHANNEL, encodeData(phase, seq, wallNowMs(), 100)).accepted) {
      seq++;
    } else {
      if (performance.now() > deadline) throw new Error("backpressure did not clear");
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}

for (const loss of [0, 0.2]) {
  Deno.test(`UdpTransport delivers every message exactly once to another process at ${loss * 100} % ingress loss`, async () => {
    const peer = await spawnTransportPeer(["--loss", String(loss)], KEY, "null");
    const transport = UdpTransport.start({
      nodeId: "tester",
      clusterKey: KEY,
      lossProbability: loss,
    });
    try {
      const control = new ControlClient(transport, peer.address);
      equal((await control.request({ cmd: "hello" }, 10_000)).type, "hello");
      equal((await control.request({ cmd: "begin", phase: 1 }, 10_000)).type, "begun");
      await sendPhase(transport, peer.address, 1, 3000);
      await waitFor("all acknowledged", () => transport.isIdle(peer.address), 30_000);
      const reply = await control.request({ cmd: "report", phase: 1 }, 10_000);
      ok(reply.type === "report");
      equal(reply.report.senders.length, 1);
      equal(reply.report.senders[0]!.delivered, 3000);
      equal(reply.report.senders[0]!.duplicates, 0);
      equal(reply.report.counters.authFailures, 0);
      if (loss > 0) ok(reply.report.counters.dropsInjected > 0, "peer dropped some");
      equal((await control.request({ cmd: "exit" }, 10_000)).type, "bye");
    } finally {
      await transport.close();
      equal(await peer.stop(10_000), 0);
    }
  });
}

Deno.test("UdpTransport recovers when the peer process restarts with a new epoch", async () => {
  const first = await spawnTransportPeer(["--loss", "0.1"], KEY, "null");
  const transport = UdpTransport.start({ nodeId: "tester", clusterKey: KEY, lossProbability: 0.1 });
  const events: TransportEvent[] = [];
  transport.onEvent((e) => events.push(e));
  let second: Awaited<ReturnType<typeof spawnTransportPeer>> | undefined;
  try {
    const control = new ControlClient(transport, first.address);
    const hello1 = await control.request({ cmd: "hello" }, 10_000);
    ok(hello1.type === "hello");
    await sendPhase(transport, first.address, 1, 500);
    await waitFor("all acknowledged", () => transport.isIdle(first.address), 30_000);
    first.child.kill("SIGKILL");
    await first.stop(10_000);
    second = await spawnTransportPeer(["--loss", "0.1", "--listen", first.address], KEY, "null");
    equal(second.address, first.address);
    // The first request reaches the new process under the old session; the transport must
    // notice the new epoch, reset the session and still get the request through.
    const hello2 = await control.request({ cmd: "hello" }, 10_000);
    ok(hello2.type === "hello");
    ok(hello2.epoch !== hello1.epoch, "a new incarnation has a new epoch");
    const restarts = events.filter((e) => e.type === "peer-restarted");
    equal(restarts.length, 1);
    await sendPhase(transport, second.address, 2, 500);
    await waitFor("all acknowledged", () => transport.isIdle(second!.address), 30_000);
    const reply = await control.request({ cmd: "report", phase: 2 }, 10_000);
    ok(reply.type === "report");
    equal(reply.report.senders[0]!.delivered, 500);
    equal(reply.report.senders[0]!.duplicates, 0);
    equal((await control.request({ cmd: "exit" }, 10_000)).type, "bye");
  } finally {
    await transport.close();
    if (second !== undefined) equal(await second.stop(10_000), 0);
    else await first.stop(1_000);
  }
});
