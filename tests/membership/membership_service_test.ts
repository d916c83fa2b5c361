/**
 * The transport adapter, over a fake transport: channel filtering, the piggyback hook, the
 * reliable fallback for a sync too large for one datagram, events, and a clean close.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { decodePacket, encodePacket } from "../../src/membership/codec.ts";
import { alive, ping } from "../../src/membership/messages.ts";
import {
  MEMBERSHIP_CHANNEL,
  MembershipService,
  type MembershipTransport,
} from "../../src/membership/membership_service.ts";
import { type MemberEvent, SwimCore } from "../../src/membership/swim_core.ts";
import { type Runtime } from "../../src/lib/runtime.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { drainMicrotasks, SimScheduler } from "../../src/sim/scheduler.ts";
import {
  type DeliveredMessage,
  PIGGYBACK_CHANNEL,
  type PiggybackProvider,
  type SendResult,
} from "../../src/transport/types.ts";

class FakeTransport implements MembershipTransport {
  unreliable: Array<{ address: string; bytes: Uint8Array }> = [];
  reliable: Array<{ address: string; bytes: Uint8Array }> = [];
  handler: ((m: DeliveredMessage) => void) | undefined;
  piggyback: PiggybackProvider | null = null;
  datagramBytesMax = 1200;

  send(address: string, _channel: number, bytes: Uint8Array): SendResult {
    this.reliable.push({ address, bytes });
    return { accepted: true };
  }
  sendUnreliable(address: string, channel: number, bytes: Uint8Array): SendResult {
    assertEquals(channel, MEMBERSHIP_CHANNEL);
    if (bytes.length > this.datagramBytesMax) {
      return { accepted: false, reason: "message-too-large" };
    }
    this.unreliable.push({ address, bytes });
    return { accepted: true };
  }
  onMessage(handler: (m: DeliveredMessage) => void): () => void {
    this.handler = handler;
    return () => (this.handler = undefined);
  }
  setPiggyback(provider: PiggybackProvider | null): void {
    this.piggyback = provider;
  }
  deliver(channel: number, bytes: Uint8Array, fromAddress = "10.0.0.2:1"): void {
    this.handler?.({
      fromAddress,
      fromNodeId: "n2",
      channel,
      reliable: false,
      bytes,
    });
  }
}

function makeService(
  transport: FakeTransport,
  events: MemberEvent[],
  metrics?: MetricsRegistry,
  runtime?: Runtime,
  senders?: ReadonlySet<string>,
): MembershipService {
  const core = new SwimCore({
    nodeId: "n1",
    address: "10.0.0.1:1",
    seeds: ["10.0.0.2:1"],
    rng: new Sfc32(3),
    nowMs: runtime?.nowMs() ?? performance.now(),
  });
  return new MembershipService({
    core,
    transport,
    onEvent: (e) => events.push(e),
    ...(metrics !== undefined ? { metrics } : {}),
    ...(runtime !== undefined ? { runtime } : {}),
    ...(senders !== undefined ? { senders } : {}),
  });
}

Deno.test("MembershipService joins through its seed and reports member events", () => {
  const transport = new FakeTransport();
  const events: MemberEvent[] = [];
  const service = makeService(transport, events);
  try {
    service.start();
    const join = transport.unreliable.find((s) => s.address === "10.0.0.2:1");
    assert(join !== undefined, "a join sync went to the seed");
    const decoded = decodePacket(join.bytes);
    assert(decoded.ok && decoded.value[0]?.type === "sync");
    transport.deliver(MEMBERSHIP_CHANNEL, encodePacket([alive("n2", "10.0.0.2:1", 1)]));
    // Piggybacked gossip arrives on its own channel and is read too; other channels are not.
    transport.deliver(PIGGYBACK_CHANNEL, encodePacket([alive("n3", "10.0.0.3:1", 1)]));
    transport.deliver(7, encodePacket([alive("n4", "10.0.0.4:1", 1)]));
    assertEquals(events.map((e) => e.nodeId), ["n2", "n3"]);
    assert(service.view.isAlive("n3") && !service.view.isAlive("n4"));
    // The piggyback hook hands out queued gossip that fits.
    const gossip = transport.piggyback?.("10.0.0.2:1", 200);
    assert(gossip !== null && gossip !== undefined && gossip.length <= 200);
    assert(decodePacket(gossip).ok);
  } finally {
    service.close();
  }
  assertEquals(transport.handler, undefined, "close unsubscribes");
  assertEquals(transport.piggyback, null, "close removes the piggyback hook");
});

Deno.test("MembershipService sends a sync too large for a datagram on the reliable path", () => {
  const transport = new FakeTransport();
  transport.datagramBytesMax = 20; // smaller than a one-member sync
  const service = makeService(transport, []);
  try {
    service.start();
    assertEquals(transport.reliable.map((s) => s.address), ["10.0.0.2:1"]);
  } finally {
    service.close();
  }
});

Deno.test("MembershipService counts packets the transport refuses, by reason, in the metrics", () => {
  const transport = new FakeTransport();
  transport.datagramBytesMax = 5; // smaller than any membership packet
  const metrics = new MetricsRegistry();
  const service = makeService(transport, [], metrics);
  try {
    service.start();
    // A probe (unreliable, never moved to the reliable path) is refused.
    transport.deliver(MEMBERSHIP_CHANNEL, encodePacket([ping(1, "n1", 0, false)]));
    assertEquals(service.sendsRefused, 1);
    assertEquals(
      metrics.snapshot()['hookd_membership_sends_refused_total{reason="message-too-large"}'],
      1,
    );
  } finally {
    service.close();
  }
});

Deno.test("MembershipService runs its timer on the injected runtime (virtual time)", () => {
  const transport = new FakeTransport();
  const scheduler = new SimScheduler();
  const service = makeService(transport, [], undefined, new SimRuntime(scheduler));
  try {
    service.start();
    const joins = () => transport.unreliable.filter((s) => s.address === "10.0.0.2:1").length;
    assertEquals(joins(), 1, "the first join goes out at start");
    // The seed never answers: the join is retried every joinRetryMs of virtual time, which
    // only timers on the simulated runtime can do while no real time passes.
    scheduler.runUntil(3.5 * service.core.config.joinRetryMs);
    assertEquals(joins(), 4);
  } finally {
    service.close();
  }
  assertEquals(scheduler.pending > 0, true, "events were scheduled on the simulator");
  const before = transport.unreliable.length;
  scheduler.runUntil(scheduler.nowMs + 10_000);
  assertEquals(transport.unreliable.length, before, "a closed service arms no timer");
});

Deno.test("MembershipService.leave lingers in runtime time; close() ends the linger early", async () => {
  const scheduler = new SimScheduler();
  const service = makeService(new FakeTransport(), [], undefined, new SimRuntime(scheduler));
  service.start();
  let left = false;
  const leaving = service.leave(500).then(() => (left = true));
  scheduler.runUntil(499);
  await drainMicrotasks();
  assertEquals(left, false, "still lingering before 500 virtual ms");
  scheduler.runUntil(500);
  await drainMicrotasks();
  assertEquals(left, true, "the linger ended at 500 virtual ms, with no real time passing");
  await leaving;

  const other = makeService(new FakeTransport(), [], undefined, new SimRuntime(new SimScheduler()));
  other.start();
  const lingering = other.leave(60_000);
  other.close();
  await lingering; // resolves although no virtual time passed
});

Deno.test("MembershipService piggybacks gossip only on datagrams to members, not on a UDP client's", () => {
  const transport = new FakeTransport();
  const service = makeService(transport, [], undefined, new SimRuntime(new SimScheduler()));
  try {
    service.start();
    transport.deliver(MEMBERSHIP_CHANNEL, encodePacket([alive("n2", "10.0.0.2:1", 1)]));
    transport.deliver(MEMBERSHIP_CHANNEL, encodePacket([alive("n3", "10.0.0.3:1", 1)]));
    // The node answers a busy client (bench --via udp): hundreds of datagrams, each with room.
    // Each update may be piggybacked only a few times (retransmitMult · log10 N): spent on the
    // client, which ignores membership, they would never reach a member.
    for (let i = 0; i < 200; i++) {
      assertEquals(transport.piggyback?.("10.9.9.9:40000", 1000), null, `datagram ${i}`);
    }
    const gossip = transport.piggyback?.("10.0.0.2:1", 1000);
    assert(gossip !== null && gossip !== undefined, "the member still gets the updates");
    const decoded = decodePacket(gossip);
    assert(decoded.ok);
    assert(
      decoded.value.some((m) => m.type === "alive" && m.nodeId === "n3"),
      "n3's alive reaches n2",
    );
  } finally {
    service.close();
  }
});

Deno.test("MembershipService takes SWIM packets only from the voters' addresses", () => {
  // Any holder of the cluster key seals datagrams the transport authenticates (a UDP submit
  // client is one); only the voters may speak for members (issue 17, section 3).
  const transport = new FakeTransport();
  const events: MemberEvent[] = [];
  const voters = new Set(["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"]);
  const service = makeService(transport, events, undefined, undefined, voters);
  try {
    service.start();
    // A non-voter gossips that voter n3 is dead, and announces a member of its own.
    transport.deliver(
      MEMBERSHIP_CHANNEL,
      encodePacket([alive("n3", "10.0.0.3:1", 1), alive("n9", "10.0.0.9:1", 1)]),
      "10.0.0.9:1",
    );
    assertEquals(events.length, 0, "nothing taken from a non-voter");
    assertEquals(service.foreignPackets, 1);
    // The same packet from a voter is taken.
    transport.deliver(MEMBERSHIP_CHANNEL, encodePacket([alive("n3", "10.0.0.3:1", 1)]));
    assertEquals(events.map((e) => e.nodeId), ["n3"]);
  } finally {
    service.close();
  }
});
