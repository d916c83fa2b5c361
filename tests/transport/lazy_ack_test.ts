/**
 * "Ack may wait" (transport.lazyAckMs): a datagram whose sender marked it is acknowledged by
 * the receiver's next datagram to that peer, or on its own at the deadline; everything else
 * keeps its prompt acknowledgement, and the marking sender waits longer before it probes.
 */

import { equal, ok } from "node:assert/strict";
import { Sfc32 } from "../../src/lib/rng.ts";
import { type TransportConfig, transportDefaults } from "../../src/config/transport.ts";
import { Endpoint } from "../../src/transport/endpoint.ts";
import { FLAG_ACK_MAY_WAIT } from "../../src/transport/frame_codec.ts";

const KEY = "lazy-ack-test-cluster-key-0123";
const A = "10.0.0.1:7000";
const B = "10.0.0.2:7000";
const LAZY_MS = transportDefaults.lazyAckMs;

function endpoint(nodeId: string, epoch: number, config: Partial<TransportConfig> = {}): Endpoint {
  const keyId = new Uint8Array(16);
  keyId[0] = epoch;
  return new Endpoint({ nodeId, epoch, clusterKey: KEY, keyId, rng: new Sfc32(epoch), config });
}

/** Moves every datagram `from` built to `to` (unless `drop`); returns the datagrams moved. */
function deliver(
  nowMs: number,
  from: Endpoint,
  fromAddress: string,
  to: Endpoint,
  drop = false,
): Uint8Array[] {
  from.tick(nowMs);
  const datagrams = from.takeDatagrams().map((d) => d.bytes);
  if (!drop) { for (const d of datagrams) to.receive(nowMs, fromAddress, d); }
  return datagrams;
}

/**
 * Each learns the other's epoch, and a reliable exchange gives both an RTT sample (the first
 * reliable frames, numbered before either knew the other's epoch, are sent again at once).
 */
function handshake(a: Endpoint, b: Endpoint): void {
  a.send(0, B, 1, new Uint8Array(1));
  b.send(0, A, 1, new Uint8Array(1));
  for (let i = 0; i < 20; i++) {
    if (deliver(0, a, A, b).length + deliver(0, b, B, a).length === 0) break;
  }
  a.takeMessages();
  b.takeMessages();
  a.takeEvents();
  b.takeEvents();
}

/** Two endpoints, `a` at A and `b` at B, past their handshake. */
function connected(config: Partial<TransportConfig> = {}): [Endpoint, Endpoint] {
  const a = endpoint("a", 1, config);
  const b = endpoint("b", 2, config);
  handshake(a, b);
  return [a, b];
}

const marked = (d: Uint8Array) => (d[3]! & FLAG_ACK_MAY_WAIT) !== 0;
const counter = (e: Endpoint, name: string) =>
  (e.metrics.snapshot()[name] as number | undefined) ?? 0;
const ackOnly = (e: Endpoint) => counter(e, "hookd_transport_ack_only_datagrams_total");
const retransmits = (e: Endpoint) =>
  ["fast", "probe", "timeout"].reduce(
    (sum, kind) => sum + counter(e, `hookd_transport_retransmits_total{kind="${kind}"}`),
    0,
  );

Deno.test("a marked message's ack waits for the receiver's own next datagram and rides on it", () => {
  const [a, b] = connected();
  const acksBefore = ackOnly(b);
  equal(a.send(10, B, 1, new Uint8Array([7]), true).accepted, true);
  const sent = deliver(10, a, A, b);
  equal(sent.length, 1);
  ok(marked(sent[0]!), "the datagram is marked");
  equal(b.takeMessages().length, 1);
  equal(deliver(10, b, B, a).length, 0, "no ack of its own");
  equal(b.nextWakeMs(), 10 + LAZY_MS);
  // b's reply carries it.
  b.send(15, A, 1, new Uint8Array([8]));
  const reply = deliver(15, b, B, a);
  equal(reply.length, 1);
  ok(!marked(reply[0]!), "an unmarked message leaves unmarked");
  ok(a.isIdle(B), "a's message is acknowledged");
  equal(ackOnly(b), acksBefore);
});

Deno.test("a held ack leaves on its own at lazyAckMs, before the sender probes", () => {
  const [a, b] = connected();
  const retransmitted = retransmits(a);
  a.send(10, B, 1, new Uint8Array([7]), true);
  deliver(10, a, A, b);
  // The marking sender allows for the wait (twice it: timers fire late).
  ok(a.nextWakeMs() >= 10 + 2 * LAZY_MS, `a wakes at ${a.nextWakeMs()}`);
  equal(deliver(10 + LAZY_MS - 1, b, B, a).length, 0, "still held");
  const ack = deliver(10 + LAZY_MS, b, B, a);
  equal(ack.length, 1);
  ok(a.isIdle(B));
  equal(retransmits(a), retransmitted, "nothing sent again");
});

Deno.test("an unmarked message is acknowledged at once, and a marked one after a gap too", () => {
  const [a, b] = connected();
  a.send(10, B, 1, new Uint8Array([1]));
  deliver(10, a, A, b);
  equal(deliver(10, b, B, a).length, 1, "unmarked: acknowledged at once");
  ok(a.isIdle(B));
  // A lost datagram, then a marked one: the gap is news the sender needs now.
  a.send(20, B, 1, new Uint8Array([2]), true);
  deliver(20, a, A, b, true);
  a.send(21, B, 1, new Uint8Array([3]), true);
  deliver(21, a, A, b);
  equal(deliver(21, b, B, a).length, 1, "a gap is acknowledged at once");
});

Deno.test("a retransmission is never marked, nor anything for lazyAckQuietMs after a loss", () => {
  const [a, b] = connected();
  const retransmitted = retransmits(a);
  a.send(10, B, 1, new Uint8Array([1]), true);
  deliver(10, a, A, b, true); // lost
  // Probes first (speculative: not a loss), then the RTO declares it lost.
  let nowMs = 10;
  let again: Uint8Array[] = [];
  for (let i = 0; i < 10 && retransmits(a) === retransmitted; i++) {
    nowMs = a.nextWakeMs();
    again = deliver(nowMs, a, A, b, true);
  }
  ok(again.length > 0 && retransmits(a) > retransmitted, "retransmitted");
  ok(again.every((d) => !marked(d)), "the retransmission is not marked");
  for (
    let i = 0;
    i < 10 && counter(a, 'hookd_transport_retransmits_total{kind="timeout"}') === 0;
    i++
  ) {
    nowMs = a.nextWakeMs();
    deliver(nowMs, a, A, b, true);
  }
  ok(counter(a, 'hookd_transport_retransmits_total{kind="timeout"}') > 0, "declared lost");
  const lostAtMs = nowMs;
  // The path heals: the next retransmission arrives, unmarked, and is acknowledged at once.
  for (let i = 0; i < 10 && !a.isIdle(B); i++) {
    nowMs = Math.max(nowMs, a.nextWakeMs());
    for (const d of deliver(nowMs, a, A, b)) ok(!marked(d));
    deliver(nowMs, b, B, a);
  }
  ok(a.isIdle(B));
  ok(nowMs < lostAtMs + transportDefaults.lazyAckQuietMs, "healed within the quiet time");
  a.send(nowMs + 1, B, 1, new Uint8Array([2]), true);
  const soon = deliver(nowMs + 1, a, A, b);
  ok(soon.length === 1 && !marked(soon[0]!), "not marked right after a loss");
  deliver(nowMs + 1, b, B, a);
  const later = nowMs + 1 + transportDefaults.lazyAckQuietMs;
  a.send(later, B, 1, new Uint8Array([3]), true);
  const quiet = deliver(later, a, A, b);
  ok(quiet.length === 1 && marked(quiet[0]!), "marked again once the path was quiet");
});

Deno.test("lazyAckMs 0 marks nothing", () => {
  const [a, b] = connected({ lazyAckMs: 0 });
  a.send(10, B, 1, new Uint8Array([1]), true);
  const sent = deliver(10, a, A, b);
  ok(sent.length === 1 && !marked(sent[0]!));
  equal(deliver(10, b, B, a).length, 1, "acknowledged at once");
});
