import { assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { SimNetwork } from "../../src/sim/network.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { SimSocket } from "../../src/sim/sim_socket.ts";
import { UdpTransport } from "../../src/transport/udp_transport.ts";

const KEY = "sim-socket-test-key-0123456789";

async function run(seed: number): Promise<{ got: number[]; events: number }> {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(seed), {
    lossProbability: 0.2,
    duplicateProbability: 0.05,
  });
  const make = (id: string, address: string) =>
    UdpTransport.start({
      nodeId: id,
      clusterKey: KEY,
      socket: new SimSocket(network, address),
      runtime: new SimRuntime(scheduler),
      rng: new Sfc32(seed * 7 + id.length),
    });
  const a = make("a", "10.0.0.1:7000");
  const b = make("bb", "10.0.0.2:7000");
  const got: number[] = [];
  b.onMessage((m) => got.push(m.bytes[0]!));
  for (let i = 0; i < 200; i++) {
    scheduler.at(i, () => void a.send(b.address, 3, new Uint8Array([i % 256])));
  }
  await scheduler.runUntilAsync(5_000, () => got.length === 200);
  await a.close();
  await b.close();
  return { got, events: scheduler.eventsRun };
}

Deno.test("UdpTransport runs on simulated sockets and a seed replays exactly", async () => {
  const first = await run(11);
  assertEquals(first.got.length, 200);
  assertEquals(new Set(first.got).size, 200);
  const again = await run(11);
  assertEquals(again, first);
});
