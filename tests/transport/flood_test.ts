/**
 * Junk costs a node as little as possible and changes nothing: no session, no datagram sent,
 * no exception, and genuine traffic still gets through. (The rate a node survives is measured
 * by `hookd bench flood`, not asserted here.)
 */

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MAGIC, VERSION } from "../../src/transport/frame_codec.ts";
import { type DeliveredMessage, Endpoint, UdpTransport } from "../../src/transport/mod.ts";
import { TransportSim } from "./sim_harness.ts";

const KEY = "flood-test-cluster-key-0123456789";
const A = "10.0.0.1:7000";
const B = "10.0.0.2:7000";

/** Random bytes, some of them behind a header that passes the cheap checks. */
const junk = fc.tuple(fc.boolean(), fc.uint8Array({ minLength: 0, maxLength: 1500 })).map(
  ([plausible, bytes]) => {
    if (!plausible || bytes.length < 4) return bytes;
    bytes[0] = MAGIC & 0xff;
    bytes[1] = MAGIC >>> 8;
    bytes[2] = VERSION;
    bytes[3] = 0;
    return bytes;
  },
);

Deno.test("Endpoint never throws on junk, keeps no state for it and sends nothing back", () => {
  const b = new Endpoint({ nodeId: "b", clusterKey: KEY, rng: new Sfc32(1) });
  let nowMs = 0;
  fc.assert(
    fc.property(junk, fc.constantFrom("10.0.0.1:1", "10.0.0.2:2"), (bytes, from) => {
      equal(b.receive(nowMs += 0.01, from, bytes), false);
    }),
    { numRuns: 3000 },
  );
  b.tick(nowMs + 1000);
  deepStrictEqual(b.takeDatagrams(), []);
  deepStrictEqual(b.takeMessages(), []);
  deepStrictEqual(b.takeEvents(), []);
  deepStrictEqual(b.peers(), []);
});

Deno.test("UdpTransport under a burst of junk from a socket sends nothing, and a genuine peer still gets through", async () => {
  const a = UdpTransport.start({ nodeId: "a", clusterKey: KEY });
  const b = UdpTransport.start({ nodeId: "b", clusterKey: KEY });
  const flooder = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  try {
    const got: DeliveredMessage[] = [];
    b.onMessage((m) => got.push(m));
    // Each tick is a flush over every session: junk must not cause one.
    let ticks = 0;
    const tick = b.endpoint.tick.bind(b.endpoint);
    b.endpoint.tick = (nowMs) => {
      ticks++;
      tick(nowMs);
    };
    const port = Number(b.address.split(":")[1]);
    const to: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port };
    const samples = fc.sample(junk, { numRuns: 2000, seed: 7 });
    // In small bursts, so that most of it fits the receive buffer and reaches the transport.
    for (let i = 0; i < samples.length; i += 20) {
      await Promise.all(samples.slice(i, i + 20).map((d) => flooder.send(d, to)));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const metric = (name: string) => (b.metrics.snapshot()[name] as number | undefined) ?? 0;
    const deadline = performance.now() + 5000;
    while (metric('hookd_transport_datagrams_total{direction="in"}') < 500) {
      if (performance.now() > deadline) throw new Error("the junk did not arrive");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    equal(metric('hookd_transport_datagrams_total{direction="out"}'), 0, "junk made b send");
    equal(ticks, 0, "junk made b flush");
    equal(b.endpoint.peers().length, 0, "junk made b keep a session");
    ok(a.send(b.address, 1, new TextEncoder().encode("genuine")).accepted);
    while (got.length === 0) {
      if (performance.now() > deadline + 5000) throw new Error("the genuine message was lost");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    deepStrictEqual(got.map((m) => new TextDecoder().decode(m.bytes)), ["genuine"]);
  } finally {
    flooder.close();
    await a.close();
    await b.close();
  }
});

Deno.test("a junk flood with random key ids does not keep a restarted peer out: its new key is still derived", () => {
  // 20,000 plausible datagrams a second (a sixth of the flood the issue measured), each with a
  // random key id, from random addresses: every one asks for a key derivation, and the global
  // budget (keyDerivationsPerSecondMax) is spent on them.
  const sim = new TransportSim(1, { lossProbability: 0, delayMsMin: 0.05, delayMsMax: 0.2 });
  const a = sim.node(A, "a");
  const b = sim.node(B, "b");
  a.endpoint.send(0, B, 1, new TextEncoder().encode("first"));
  a.pump();
  sim.scheduler.runUntil(100);
  const junkRng = new Sfc32(99);
  const perMs = 20;
  for (let t = 100; t < 3_100; t++) {
    for (let k = 0; k < perMs; k++) {
      sim.scheduler.at(t + k / perMs, () => {
        const bytes = new Uint8Array(200);
        for (let i = 0; i < bytes.length; i++) bytes[i] = junkRng.int(256);
        bytes.set([MAGIC & 0xff, MAGIC >>> 8, VERSION, 0], 0);
        bytes.fill(0, 24, 28); // a counter in range
        const from = `10.9.${junkRng.int(256)}.${junkRng.int(256)}:${1 + junkRng.int(60000)}`;
        b.endpoint.receive(sim.scheduler.nowMs, from, bytes);
      });
    }
  }
  sim.scheduler.runUntil(200);
  // a restarts (a new key id) and sends.
  a.restart(12345, {});
  a.endpoint.send(200, B, 1, new TextEncoder().encode("after restart"));
  a.pump();
  sim.scheduler.runUntil(1_200);
  const texts = b.delivered.map((m) => new TextDecoder().decode(m.bytes));
  ok(texts.includes("after restart"), "the restarted peer got through within a second");
  ok(
    (b.endpoint.metrics.snapshot()["hookd_transport_key_derivations_refused_total"] as number) >
      10_000,
    "the flood did exhaust the global derivation budget",
  );
});
