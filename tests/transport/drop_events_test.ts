/**
 * Messages the transport gives up are reported, never dropped silently: `forgetPeer`, and a
 * different node answering at a peer's address.
 */

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { Sfc32 } from "../../src/lib/rng.ts";
import {
  type DeliveredMessage,
  Endpoint,
  type TransportEvent,
  UdpTransport,
} from "../../src/transport/mod.ts";
import { keyIdFrom } from "./sim_harness.ts";

const KEY = "drop-events-test-cluster-key-0123";
const A = "10.0.0.1:7000";
const B = "10.0.0.2:7000";

function endpoint(nodeId: string, seed: number): Endpoint {
  const rng = new Sfc32(seed);
  return new Endpoint({ nodeId, clusterKey: KEY, keyId: keyIdFrom(rng), rng });
}

const text = (m: { bytes: Uint8Array }) => new TextDecoder().decode(m.bytes);
const bytes = (s: string) => new TextEncoder().encode(s);

function deliver(nowMs: number, from: Endpoint, fromAddress: string, to: Endpoint): number {
  from.tick(nowMs);
  const out = from.takeDatagrams();
  for (const d of out) to.receive(nowMs, fromAddress, d.bytes);
  return out.length;
}

function settle(nowMs: number, a: Endpoint, b: Endpoint): void {
  for (let i = 0; i < 100; i++) {
    if (deliver(nowMs, a, A, b) + deliver(nowMs, b, B, a) === 0) return;
  }
  throw new Error("did not settle");
}

type Dropped = Extract<TransportEvent, { type: "messages-dropped" }>;
const dropEvents = (e: Endpoint) =>
  e.takeEvents().filter((x): x is Dropped => x.type === "messages-dropped");

Deno.test("forgetPeer reports every reliable message not known delivered, oldest first, and only those", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  a.send(0, B, 1, bytes("delivered"));
  settle(0, a, b);
  a.takeEvents();
  a.send(1, B, 1, bytes("in flight"));
  a.tick(1);
  a.takeDatagrams(); // sent, lost
  a.send(2, B, 3, bytes("queued"));
  a.sendUnreliable(2, B, 4, bytes("probe")); // unreliable: not reported
  a.forgetPeer(B);
  const events = dropEvents(a);
  equal(events.length, 1);
  const e = events[0]!;
  equal(e.reason, "peer-forgotten");
  equal(e.address, B);
  equal(e.nodeId, "b");
  deepStrictEqual(e.messages.map((m) => [m.channel, text(m)]), [[1, "in flight"], [3, "queued"]]);
  ok(a.isIdle(B));
  // A peer never heard from: reported with no node id.
  a.send(3, "10.0.0.9:1", 1, bytes("to nobody"));
  a.forgetPeer("10.0.0.9:1");
  const [none] = dropEvents(a);
  equal(none?.nodeId, undefined);
  deepStrictEqual(none?.messages.map(text), ["to nobody"]);
  a.forgetPeer("10.0.0.9:1");
  equal(dropEvents(a).length, 0, "nothing to report twice");
});

Deno.test("when another node answers at a peer's address, its messages are reported as session-reset, not handed to it", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  a.send(0, B, 1, bytes("hello b"));
  settle(0, a, b);
  b.takeMessages();
  a.takeEvents();
  a.send(1, B, 1, bytes("for b only"));
  a.tick(1);
  a.takeDatagrams(); // lost with b, which is gone
  const c = endpoint("c", 3); // another node now at b's address
  c.send(2, A, 1, bytes("hello from c"));
  settle(2, a, c);
  const events = dropEvents(a);
  equal(events.length, 1);
  equal(events[0]!.reason, "session-reset");
  equal(events[0]!.nodeId, "c");
  deepStrictEqual(events[0]!.messages.map(text), ["for b only"]);
  equal(c.takeMessages().filter((m) => m.reliable).length, 0, "c never got b's message");
  deepStrictEqual(a.takeMessages().filter((m) => m.reliable).map(text), ["hello from c"]);
});

Deno.test("when the same node restarts, its unacknowledged messages are requeued, not reported", () => {
  const a = endpoint("a", 1);
  const b1 = endpoint("b", 2);
  a.send(0, B, 1, bytes("hello"));
  settle(0, a, b1);
  a.takeEvents();
  a.send(1, B, 1, bytes("again"));
  a.tick(1);
  a.takeDatagrams();
  const b2 = endpoint("b", 4);
  b2.sendUnreliable(2, A, 0, new Uint8Array(1));
  // Until a's retransmission reaches b2, neither side has anything that names the other's
  // new epoch: time must pass.
  for (let t = 2; t < 200 && !a.isIdle(B); t++) settle(t, a, b2);
  const events = a.takeEvents();
  equal(events.filter((e) => e.type === "messages-dropped").length, 0);
  equal(events.filter((e) => e.type === "peer-restarted").length, 1);
  deepStrictEqual(b2.takeMessages().filter((m) => m.reliable).map(text), ["again"]);
});

Deno.test("UdpTransport.forgetPeer hands the messages-dropped event to its subscribers at once", async () => {
  const a = UdpTransport.start({ nodeId: "a", clusterKey: KEY });
  try {
    const events: TransportEvent[] = [];
    a.onEvent((e) => events.push(e));
    const got: DeliveredMessage[] = [];
    a.onMessage((m) => got.push(m));
    // Nobody listens there: the message stays unacknowledged.
    equal(a.send("127.0.0.1:9", 2, bytes("into the void")).accepted, true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    a.forgetPeer("127.0.0.1:9");
    const dropped = events.filter((e): e is Dropped => e.type === "messages-dropped");
    equal(dropped.length, 1);
    deepStrictEqual(dropped[0]!.messages.map(text), ["into the void"]);
  } finally {
    await a.close();
  }
});

Deno.test("sessions of peers long gone give way to a new peer once the table is full, and what they held is reported", () => {
  // A node with room for 3 peers answers three clients, each of which goes away before it
  // acknowledges the answer (a UDP client process that exited). A fourth, later, must get in.
  const config = { peersMax: 3 };
  const mk = (nodeId: string, seed: number) => {
    const rng = new Sfc32(seed);
    return new Endpoint({ nodeId, clusterKey: KEY, keyId: keyIdFrom(rng), rng, config });
  };
  const b = mk("b", 2);
  /** Runs `c` (at `at`) and b until quiet; false when the loop did not settle. */
  const exchange = (nowMs: number, c: Endpoint, at: string) => {
    for (let i = 0; i < 100; i++) {
      c.tick(nowMs);
      const up = c.takeDatagrams();
      for (const d of up) b.receive(nowMs, at, d.bytes);
      b.tick(nowMs);
      const down = b.takeDatagrams().filter((d) => d.address === at);
      for (const d of down) c.receive(nowMs, B, d.bytes);
      if (up.length + down.length === 0) return;
    }
    throw new Error("did not settle");
  };
  for (let i = 0; i < 3; i++) {
    const at = `10.0.9.${i}:40000`;
    const c = mk(`client${i}`, 10 + i);
    c.send(i, B, 1, bytes(`request ${i}`));
    exchange(i, c, at);
    b.send(i, at, 1, bytes(`answer ${i}`));
    b.tick(i);
    b.takeDatagrams(); // the client is gone: its answer is never acknowledged
  }
  deepStrictEqual(b.takeMessages().map(text), ["request 0", "request 1", "request 2"]);
  b.takeEvents();
  // Ten minutes later (b retransmitting the answers all along), a new client.
  let now = 10;
  for (let i = 0; i < 100_000 && now < 600_000; i++) {
    now = Math.max(now + 1, b.nextWakeMs());
    b.tick(now);
    b.takeDatagrams();
  }
  const late = mk("late", 20);
  late.send(now, B, 1, bytes("late request"));
  exchange(now, late, "10.0.9.99:40000");
  deepStrictEqual(b.takeMessages().map(text), ["late request"], "the new client got in");
  const dropped = dropEvents(b);
  equal(dropped.length, 1, "one gone client's session was released");
  deepStrictEqual(dropped[0]!.messages.map(text), ["answer 0"], "the one heard from longest ago");
  equal(b.peers().length, 3);
});
