import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import { Sfc32 } from "../../src/lib/rng.ts";
import type { TransportConfig } from "../../src/config/transport.ts";
import {
  type DeliveredMessage,
  Endpoint,
  HmacSha256Authenticator,
  PIGGYBACK_CHANNEL,
} from "../../src/transport/mod.ts";
import {
  type DatagramHeader,
  encodeDatagram,
  type Frame,
} from "../../src/transport/frame_codec.ts";
import {
  AEAD_TAG_BYTES,
  ClusterKeyring,
  keyGeneration,
  sealDatagram,
} from "../../src/transport/datagram_crypto.ts";
import { ReceivedRanges } from "../../src/transport/received_ranges.ts";
import { RttEstimator } from "../../src/transport/rtt_estimator.ts";

const KEY = "endpoint-test-cluster-key-0123";
const A = "10.0.0.1:7000";
const B = "10.0.0.2:7000";

function endpoint(nodeId: string, epoch: number, config: Partial<TransportConfig> = {}): Endpoint {
  return new Endpoint({
    nodeId,
    epoch,
    clusterKey: KEY,
    keyId: keyIdOf(epoch),
    rng: new Sfc32(epoch),
    config,
  });
}

/** A key id made from a number, so tests can forge datagrams "from" an endpoint. */
function keyIdOf(n: number): Uint8Array {
  const id = new Uint8Array(16);
  new DataView(id.buffer).setUint32(0, n, true);
  id[15] = 0xaa;
  return id;
}

const keyring = new ClusterKeyring(KEY);

/** A datagram sealed under the cluster key, as an endpoint with that key id would send it. */
function sealed(header: Omit<DatagramHeader, "keyId"> & { keyId?: Uint8Array }, frames: Frame[]) {
  const keyId = header.keyId ?? keyIdOf(header.epoch);
  return encodeDatagram(
    { ...header, keyId },
    frames,
    AEAD_TAG_BYTES,
    (d) => sealDatagram(keyring.derive(keyId, keyGeneration(header.counter)), d),
  );
}

/** Moves every datagram `from` has built to `to` (unless `drop` says so); returns how many. */
function deliver(
  nowMs: number,
  from: Endpoint,
  fromAddress: string,
  to: Endpoint,
  drop: (bytes: Uint8Array) => boolean = () => false,
): number {
  from.tick(nowMs);
  const datagrams = from.takeDatagrams();
  for (const d of datagrams) if (!drop(d.bytes)) to.receive(nowMs, fromAddress, d.bytes);
  return datagrams.length;
}

/** Ping-pongs datagrams between a and b until both are quiet (bounded). */
function settle(nowMs: number, a: Endpoint, b: Endpoint): void {
  for (let i = 0; i < 100; i++) {
    const moved = deliver(nowMs, a, A, b) + deliver(nowMs, b, B, a);
    if (moved === 0) return;
  }
  throw new Error("endpoints did not settle in 100 rounds");
}

/** Lets each endpoint learn the other's epoch, as any first exchange does. */
function handshake(a: Endpoint, b: Endpoint): void {
  a.sendUnreliable(0, B, 0, new Uint8Array(1));
  b.sendUnreliable(0, A, 0, new Uint8Array(1));
  settle(0, a, b);
  a.takeMessages();
  b.takeMessages();
  a.takeEvents();
  b.takeEvents();
}

const text = (m: DeliveredMessage) => new TextDecoder().decode(m.bytes);

Deno.test("Endpoint coalesces many small sends made before one flush into one datagram", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  handshake(a, b);
  // 30 frames of 12 + 20 bytes fit one 1,400-byte datagram.
  for (let i = 0; i < 30; i++) equal(a.send(1, B, 3, new Uint8Array(20)).accepted, true);
  a.tick(1);
  const datagrams = a.takeDatagrams();
  equal(datagrams.length, 1);
  for (const d of datagrams) b.receive(1, A, d.bytes);
  const got = b.takeMessages().filter((m) => m.reliable);
  equal(got.length, 30);
  ok(got.every((m) => m.channel === 3 && m.fromNodeId === "a" && m.fromAddress === A));
});

Deno.test("Endpoint fragments a large message and reassembles it intact", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  const big = new Uint8Array(100_000).map((_, i) => (i * 13) & 0xff);
  equal(a.send(0, B, 1, big).accepted, true);
  // 72 datagrams are more than one pacing burst: time must pass for the rest to leave.
  for (let t = 0; t < 100 && !a.isIdle(B); t += 0.5) settle(t, a, b);
  const got = b.takeMessages();
  equal(got.length, 1);
  deepStrictEqual(got[0]!.bytes, big);
  ok(a.isIdle(B));
});

Deno.test("Endpoint drops and counts datagrams with a wrong MAC or garbage, and never throws", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  const forger = new Endpoint({
    nodeId: "a",
    epoch: 1,
    authenticator: new HmacSha256Authenticator("a-different-cluster-key-000"),
    rng: new Sfc32(1),
  });
  forger.sendUnreliable(0, B, 0, new TextEncoder().encode("forged"));
  deliver(0, forger, A, b);
  equal(b.takeMessages().length, 0);
  equal(b.metrics.snapshot()["hookd_transport_auth_failures_total"], 1);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      b.receive(0, A, bytes);
      equal(b.takeMessages().length, 0);
    }),
    { numRuns: 500 },
  );
  a.sendUnreliable(0, B, 0, new TextEncoder().encode("genuine"));
  deliver(0, a, A, b);
  deepStrictEqual(b.takeMessages().map(text), ["genuine"]);
});

Deno.test("Endpoint refuses sends past the queue bound with backpressure, then reports writable", () => {
  const a = endpoint("a", 1, { sendQueueMessagesMax: 4 });
  const b = endpoint("b", 2);
  for (let i = 0; i < 4; i++) equal(a.send(0, B, 1, new Uint8Array(10)).accepted, true);
  deepStrictEqual(a.send(0, B, 1, new Uint8Array(10)), {
    accepted: false,
    reason: "backpressure",
  });
  settle(0, a, b);
  deepStrictEqual(a.takeEvents().filter((e) => e.type === "writable"), [
    { type: "writable", address: B },
  ]);
  equal(a.send(1, B, 1, new Uint8Array(10)).accepted, true);
});

Deno.test("Endpoint refuses an invalid channel and an oversized message", () => {
  const a = endpoint("a", 1, { messageBytesMax: 1000, sendQueueBytesMax: 10_000 });
  deepStrictEqual(a.send(0, B, 255, new Uint8Array(1)), {
    accepted: false,
    reason: "invalid-channel",
  });
  deepStrictEqual(a.send(0, B, 1, new Uint8Array(1001)), {
    accepted: false,
    reason: "message-too-large",
  });
  deepStrictEqual(a.sendUnreliable(0, B, 1, new Uint8Array(2000)), {
    accepted: false,
    reason: "message-too-large",
  });
});

Deno.test("Endpoint asks the piggyback provider when a datagram has room and delivers its bytes on the reserved channel", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  const asked: Array<[string, number]> = [];
  a.setPiggyback((peer, space) => {
    asked.push([peer, space]);
    return new TextEncoder().encode("gossip");
  });
  a.sendUnreliable(0, B, 7, new TextEncoder().encode("probe"));
  deliver(0, a, A, b);
  ok(asked.length === 1 && asked[0]![0] === B && asked[0]![1] > 1000);
  const got = b.takeMessages().map((m) => [m.channel, m.reliable, text(m)]);
  deepStrictEqual(got, [[7, false, "probe"], [PIGGYBACK_CHANNEL, false, "gossip"]]);
});

Deno.test("Endpoint retransmits a lost datagram when its timer fires", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  handshake(a, b);
  equal(a.send(1, B, 1, new TextEncoder().encode("once")).accepted, true);
  equal(deliver(1, a, A, b, () => true), 1); // lost
  const deadline = a.nextWakeMs();
  ok(Number.isFinite(deadline) && deadline > 1, `deadline ${deadline}`);
  settle(deadline, a, b);
  deepStrictEqual(b.takeMessages().map(text), ["once"]);
  ok(a.isIdle(B));
  const s = a.metrics.snapshot();
  equal(
    (s['hookd_transport_retransmits_total{kind="timeout"}'] as number) +
      (s['hookd_transport_retransmits_total{kind="probe"}'] as number),
    1,
  );
});

Deno.test("Endpoint reports a peer restart, drops the old incarnation's late datagrams and resends what was unacknowledged", () => {
  const a = endpoint("a", 1);
  const b1 = endpoint("b", 2);
  b1.sendUnreliable(0, A, 0, new Uint8Array(1));
  settle(0, a, b1);
  equal(a.peerStats(B)?.peerEpoch, 2);
  b1.sendUnreliable(0, A, 0, new TextEncoder().encode("late"));
  b1.tick(0);
  const late = b1.takeDatagrams();
  // a sends to b1, which crashes before receiving it.
  a.send(1, B, 1, new TextEncoder().encode("in flight"));
  a.tick(1);
  a.takeDatagrams();
  const b2 = endpoint("b", 3);
  b2.sendUnreliable(2, A, 0, new TextEncoder().encode("hello again"));
  deliver(2, b2, B, a);
  // b2 has not heard from this a yet, so nothing it sends proves it is not a replay of an
  // older incarnation: a answers with its epoch, and the restart counts once b2 names it.
  equal(a.takeEvents().filter((e) => e.type === "peer-restarted").length, 0);
  // a's retransmission reaches b2, whose answer names a's epoch: the restart is proven.
  for (let t = 2; t < 200 && !a.isIdle(B); t++) settle(t, a, b2);
  deepStrictEqual(
    a.takeEvents().filter((e) => e.type === "peer-restarted"),
    [{ type: "peer-restarted", address: B, nodeId: "b", previousEpoch: 2, epoch: 3 }],
  );
  deepStrictEqual(b2.takeMessages().filter((m) => m.reliable).map(text), ["in flight"]);
  a.takeMessages();
  const staleBefore = a.metrics.snapshot()["hookd_transport_stale_epoch_drops_total"] as number;
  for (const d of late) a.receive(300, B, d.bytes);
  equal(
    a.metrics.snapshot()["hookd_transport_stale_epoch_drops_total"],
    staleBefore + 1,
    "the dead incarnation's late datagram is dropped",
  );
  equal(a.takeMessages().length, 0);
});

Deno.test("ReceivedRanges agrees with a set of packet numbers", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 300 }), (pns) => {
      const ranges = new ReceivedRanges(1000);
      const model = new Set<number>();
      for (const pn of pns) {
        equal(ranges.add(pn), !model.has(pn));
        model.add(pn);
      }
      for (let pn = 0; pn <= 201; pn++) equal(ranges.has(pn), model.has(pn));
      const top = ranges.top(1000);
      for (let i = 1; i < top.length; i++) ok(top[i]!.hi + 1 < top[i - 1]!.lo, "disjoint, apart");
    }),
    { numRuns: 300 },
  );
});

Deno.test("ReceivedRanges forgets the lowest ranges beyond its bound", () => {
  const ranges = new ReceivedRanges(2);
  for (const pn of [1, 3, 5]) ranges.add(pn);
  equal(ranges.size, 2);
  equal(ranges.has(1), false);
  ok(ranges.has(3) && ranges.has(5));
});

Deno.test("RttEstimator follows RFC 6298 with a floor, a ceiling and backoff", () => {
  const rtt = new RttEstimator({ rtoInitialMs: 30, rtoMinMs: 5, rtoMaxMs: 200, granularityMs: 1 });
  equal(rtt.rtoMs(), 30);
  rtt.update(10, 0);
  equal(rtt.srttMs, 10);
  equal(rtt.rttVarMs, 5);
  equal(rtt.rtoMs(), 30); // 10 + 4·5
  rtt.update(2, 0);
  equal(rtt.rttVarMs, 0.75 * 5 + 0.25 * 8);
  equal(rtt.srttMs, 0.875 * 10 + 0.125 * 2);
  equal(rtt.rtoMs(3), 200); // doubled three times, capped
  const lan = new RttEstimator({ rtoInitialMs: 30, rtoMinMs: 5, rtoMaxMs: 200, granularityMs: 1 });
  lan.update(0.1, 0);
  equal(lan.rtoMs(), 5); // floor
  lan.update(0.2, 0.15); // the reported ack delay would go below the least RTT seen: ignored
  ok(lan.srttMs! > 0.1);
});

Deno.test("Endpoint delivers a later message while an earlier one is still missing (no head-of-line blocking)", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  handshake(a, b);
  a.send(1, B, 1, new TextEncoder().encode("first"));
  equal(deliver(1, a, A, b, () => true), 1); // lost
  a.send(2, B, 1, new TextEncoder().encode("second"));
  equal(deliver(2, a, A, b), 1);
  deepStrictEqual(b.takeMessages().map(text), ["second"]);
  // b's ack for the second reveals the gap; a resends the first once the loss delay passed.
  deliver(2, b, B, a);
  settle(4, a, b);
  deepStrictEqual(b.takeMessages().map(text), ["first"]);
  equal(a.metrics.snapshot()['hookd_transport_retransmits_total{kind="fast"}'], 1);
});

Deno.test("Endpoint.forgetPeer gives the next session a fresh epoch, so a peer still alive takes its messages as new", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  for (let i = 0; i < 5; i++) a.send(0, B, 1, new TextEncoder().encode(`before ${i}`));
  settle(0, a, b);
  equal(b.takeMessages().length, 5);
  b.takeEvents();
  a.forgetPeer(B);
  // The new session numbers packets and messages from the start again; under the old epoch
  // b would acknowledge them as ones it has seen and drop them.
  a.send(1, B, 1, new TextEncoder().encode("after"));
  settle(1, a, b);
  deepStrictEqual(b.takeMessages().map(text), ["after"]);
  const restarted = b.takeEvents().filter((e) => e.type === "peer-restarted");
  equal(restarted.length, 1);
  ok(restarted[0]!.type === "peer-restarted" && restarted[0]!.previousEpoch === 1);
  ok(a.isIdle(B));
});

Deno.test("Endpoint leaves a datagram unacknowledged when it cannot take a reliable frame, so nothing is lost silently", () => {
  // b's whole reassembly budget is 2,000 bytes; a (default limits) sends a larger message.
  const a = endpoint("a", 1);
  const b = endpoint("b", 2, {
    messageBytesMax: 1000,
    sendQueueBytesMax: 100_000,
    reassemblyBytesMax: 2000,
  });
  handshake(a, b);
  a.send(1, B, 1, new Uint8Array(5000));
  settle(1, a, b);
  equal(b.takeMessages().length, 0);
  equal(a.isIdle(B), false, "a still holds the message it could not deliver");
  ok((b.metrics.snapshot()["hookd_transport_protocol_errors_total"] as number) > 0);
});

Deno.test("Endpoint never delivers a message whose fragments overlap and leave a hole", () => {
  const b = endpoint("b", 2);
  const hello = sealed(
    { counter: 1, nodeId: "a", epoch: 1, dstEpoch: 0, packetNumber: 1 },
    [
      { type: "unreliable", channel: 0, bytes: new Uint8Array(1) },
    ],
  );
  b.receive(0, A, hello);
  // 5 + 5 bytes add up to the 10-byte total, but cover only bytes 0..6.
  for (const [pn, offset] of [[2, 0], [3, 2]] as const) {
    const fragment = sealed(
      { counter: pn, nodeId: "a", epoch: 1, dstEpoch: 2, packetNumber: pn },
      [
        {
          type: "fragment",
          channel: 1,
          msgId: 0,
          totalBytes: 10,
          offset,
          bytes: new Uint8Array(5).fill(7),
        },
      ],
    );
    b.receive(0, A, fragment);
  }
  equal(b.takeMessages().filter((m) => m.reliable).length, 0);
  equal(b.metrics.snapshot()["hookd_transport_protocol_errors_total"], 1);
});

/** Authenticated datagrams from a broken or hostile cluster member, near b's live state. */
const hostileFrame: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({
    type: fc.constant("ack" as const),
    ackEpoch: fc.constantFrom(2, 0, 99),
    ackDelayUs: fc.nat(),
    ranges: fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5 })).map((
      [hi, len],
    ) => [{ lo: Math.max(0, hi - len), hi }]),
  }),
  fc.record({
    type: fc.constant("message" as const),
    channel: fc.integer({ min: 0, max: 255 }),
    msgId: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.maxSafeNat()),
    bytes: fc.uint8Array({ maxLength: 20 }),
  }),
  fc.record({
    channel: fc.integer({ min: 0, max: 3 }),
    msgId: fc.integer({ min: 0, max: 20 }),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 20 }),
    offset: fc.integer({ min: 0, max: 40 }),
    extra: fc.integer({ min: 0, max: 40 }),
  }).map(({ channel, msgId, bytes, offset, extra }): Frame => ({
    type: "fragment",
    channel,
    msgId,
    totalBytes: offset + bytes.length + extra,
    offset,
    bytes,
  })),
  fc.record({
    type: fc.constant("unreliable" as const),
    channel: fc.integer({ min: 0, max: 255 }),
    bytes: fc.uint8Array({ maxLength: 20 }),
  }),
);

Deno.test("Endpoint never throws on authenticated datagrams with arbitrary frames, epochs and numbers", () => {
  const datagram = fc.record({
    counter: fc.oneof(fc.integer({ min: 0, max: 60 }), fc.maxSafeNat()),
    nodeId: fc.constantFrom("a", "z"),
    epoch: fc.constantFrom(1, 1, 1, 5, 7),
    dstEpoch: fc.constantFrom(2, 2, 2, 0, 9),
    packetNumber: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.maxSafeNat()),
    frames: fc.array(hostileFrame, { maxLength: 5 }),
  });
  fc.assert(
    fc.property(fc.array(fc.tuple(datagram, fc.boolean()), { maxLength: 30 }), (steps) => {
      const b = endpoint("b", 2, { messageBytesMax: 60, reassemblyBytesMax: 120 });
      let nowMs = 0;
      for (const [d, send] of steps) {
        // b's own traffic gives acks something to match.
        if (send) b.send(nowMs, A, 1, new Uint8Array(50));
        b.receive(nowMs, A, sealed(d, d.frames));
        nowMs += 0.7;
        b.tick(nowMs);
        b.tick(nowMs + 1000);
        b.takeDatagrams();
        b.takeMessages();
        b.takeEvents();
      }
    }),
    { numRuns: 1000 },
  );
});

Deno.test("Endpoint takes message ids past its own smaller window from a peer with a larger one", () => {
  const a = endpoint("a", 1, { windowMessages: 64 });
  const b = endpoint("b", 2, { windowMessages: 4 });
  handshake(a, b);
  a.send(1, B, 1, new TextEncoder().encode("0"));
  equal(deliver(1, a, A, b, () => true), 1); // lost: every later id is ahead of a gap
  for (let i = 1; i < 20; i++) {
    a.send(2, B, 1, new TextEncoder().encode(String(i)));
    deliver(2, a, A, b);
  }
  for (let t = 3; t < 200 && !a.isIdle(B); t++) settle(t, a, b);
  const got = b.takeMessages().map(text).map(Number).sort((x, y) => x - y);
  deepStrictEqual(got, Array.from({ length: 20 }, (_, i) => i));
  ok(a.isIdle(B));
  equal(b.metrics.snapshot()["hookd_transport_protocol_errors_total"], 0);
});

Deno.test("Endpoint drops a late datagram from a dead incarnation addressed to an earlier one of ours, keeping the live peer", () => {
  const a1 = endpoint("a", 1);
  const b1 = endpoint("b", 2);
  handshake(a1, b1);
  b1.send(0, A, 1, new TextEncoder().encode("from the dead"));
  b1.tick(0);
  const late = b1.takeDatagrams(); // addressed to epoch 1 of a
  // Both restart; a hears from b's new incarnation first, then the late datagram arrives.
  const a2 = endpoint("a", 5);
  const b2 = endpoint("b", 3);
  b2.sendUnreliable(1, A, 0, new Uint8Array(1));
  deliver(1, b2, B, a2);
  for (const d of late) a2.receive(1, B, d.bytes);
  equal(a2.peerStats(B)?.peerEpoch, 3, "the late datagram did not pass for a restart");
  equal(a2.metrics.snapshot()["hookd_transport_stale_epoch_drops_total"], 1);
  a2.send(2, B, 1, new TextEncoder().encode("to the living"));
  settle(2, a2, b2);
  deepStrictEqual(b2.takeMessages().filter((m) => m.reliable).map(text), ["to the living"]);
});

Deno.test("Endpoint tells apart senders whose key ids differ only in their last byte", () => {
  // A key id belongs to the address it first authenticated from: all 16 bytes name it, so two
  // processes whose ids share 15 bytes are two peers, not one seen from two addresses.
  const keyId = (last: number) => {
    const id = keyIdOf(7);
    id[15] = last;
    return id;
  };
  const sender = (nodeId: string, last: number) =>
    new Endpoint({
      nodeId,
      epoch: 3 + last,
      clusterKey: KEY,
      keyId: keyId(last),
      rng: new Sfc32(last),
    });
  const s1 = sender("s1", 1);
  const s2 = sender("s2", 2);
  const r = endpoint("r", 9);
  const S1 = "10.0.0.11:7000";
  const S2 = "10.0.0.12:7000";
  for (const [s, address] of [[s1, S1], [s2, S2]] as const) {
    s.sendUnreliable(0, B, 0, new TextEncoder().encode(address));
    deliver(0, s, address, r);
  }
  deepStrictEqual(r.takeMessages().map((m) => [m.fromAddress, text(m)]), [[S1, S1], [S2, S2]]);
  equal(r.metrics.snapshot()["hookd_transport_address_mismatches_total"], 0);
});

Deno.test("Endpoint counts the datagrams that carry nothing but an acknowledgement", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  handshake(a, b);
  const ackOnly = (e: Endpoint) =>
    e.metrics.snapshot()["hookd_transport_ack_only_datagrams_total"] as number;
  const [aBefore, bBefore] = [ackOnly(a), ackOnly(b)];
  equal(a.send(1, B, 1, new TextEncoder().encode("hello")).accepted, true);
  equal(deliver(1, a, A, b), 1);
  equal(ackOnly(a), aBefore, "a message is not an ack alone");
  // b has nothing to say: its acknowledgement leaves alone.
  equal(deliver(1, b, B, a), 1);
  equal(ackOnly(b), bBefore + 1);
  ok(a.isIdle(B));
  // A reply carries the next acknowledgement: not counted.
  equal(a.send(2, B, 1, new TextEncoder().encode("again")).accepted, true);
  deliver(2, a, A, b);
  equal(b.send(2, A, 1, new TextEncoder().encode("reply")).accepted, true);
  equal(deliver(2, b, B, a), 1);
  equal(ackOnly(b), bBefore + 1);
  // A datagram with piggybacked gossip is not an ack alone either.
  b.setPiggyback(() => new Uint8Array(8));
  equal(a.send(3, B, 1, new TextEncoder().encode("third")).accepted, true);
  deliver(3, a, A, b);
  equal(deliver(3, b, B, a), 1);
  equal(ackOnly(b), bBefore + 1);
});
