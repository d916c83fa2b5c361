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
  deliver(channel: number, bytes: Uint8Array): void {
    this.handler?.({
      fromAddress: "10.0.0.2:1",
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
): MembershipService {
  const core = new SwimCore({
    nodeId: "n1",
    address: "10.0.0.1:1",
    seeds: ["10.0.0.2:1"],
    rng: new Sfc32(3),
    nowMs: performance.now(),
  });
  return new MembershipService({
    core,
    transport,
    onEvent: (e) => events.push(e),
    ...(metrics !== undefined ? { metrics } : {}),
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
