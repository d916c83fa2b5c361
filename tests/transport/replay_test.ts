/**
 * Replay protection: a datagram replayed or duplicated, from its own address or any other,
 * delivers nothing twice and never resets or moves a peer's session.
 */

import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import { Sfc32 } from "../../src/lib/rng.ts";
import { ReplayWindow } from "../../src/transport/replay_window.ts";
import { type DeliveredMessage, Endpoint } from "../../src/transport/mod.ts";
import { checkBody, keyIdFrom, makeBody, type SimNode, TransportSim } from "./sim_harness.ts";

const KEY = "replay-test-cluster-key-0123456789";
const A = "10.0.0.1:7000";
const B = "10.0.0.2:7000";
const X = "10.6.6.6:6666";

function endpoint(nodeId: string, seed: number): Endpoint {
  const rng = new Sfc32(seed);
  return new Endpoint({ nodeId, clusterKey: KEY, keyId: keyIdFrom(rng), rng });
}

const text = (m: DeliveredMessage) => new TextDecoder().decode(m.bytes);
const snap = (e: Endpoint, name: string) =>
  (e.metrics.snapshot()[`hookd_transport_${name}`] as number | undefined) ?? 0;

/** Moves `from`'s datagrams to `to`, returning copies of them (an attacker's capture). */
function deliver(nowMs: number, from: Endpoint, fromAddress: string, to: Endpoint): Uint8Array[] {
  from.tick(nowMs);
  const out = from.takeDatagrams().map((d) => d.bytes.slice());
  for (const d of out) to.receive(nowMs, fromAddress, d);
  return out;
}

function settle(nowMs: number, a: Endpoint, b: Endpoint, capture: Uint8Array[] = []): void {
  for (let i = 0; i < 100; i++) {
    const fromA = deliver(nowMs, a, A, b);
    capture.push(...fromA);
    const moved = fromA.length + deliver(nowMs, b, B, a).length;
    if (moved === 0) return;
  }
  throw new Error("did not settle");
}

Deno.test("ReplayWindow accepts each counter once and refuses those older than its size", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 400 }), (counters) => {
      const w = new ReplayWindow(64);
      const accepted = new Set<number>();
      let top = -1;
      for (const c of counters) {
        const expected = !accepted.has(c) && (c > top || top - c < 64);
        equal(w.isNew(c), expected, `counter ${c} (top ${top})`);
        if (expected) {
          w.mark(c);
          accepted.add(c);
          top = Math.max(top, c);
        }
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("a replayed or duplicated datagram, from its address or another, delivers its unreliable frames once", () => {
  const a = endpoint("a", 1);
  const b = endpoint("b", 2);
  a.sendUnreliable(0, B, 4, new TextEncoder().encode("probe"));
  a.send(0, B, 1, new TextEncoder().encode("record"));
  const captured: Uint8Array[] = [];
  settle(0, a, b, captured);
  deepStrictEqual(b.takeMessages().map(text).sort(), ["probe", "record"]);
  for (const d of captured) {
    b.receive(1, A, d); // a duplicate from the network
    b.receive(1, X, d); // an attacker replaying from its own address
  }
  b.tick(2);
  equal(b.takeMessages().length, 0, "nothing delivered twice");
  equal(snap(b, "replays_total"), captured.length);
  equal(snap(b, "address_mismatches_total"), captured.length);
  ok(!b.peers().includes(X), "no session for the replaying address");
});

Deno.test("a captured datagram replayed after its sender restarted, from any address, neither resets nor moves the session", () => {
  const a1 = endpoint("a", 1);
  const b = endpoint("b", 2);
  // a1's very first datagram carries no destination epoch: the one a replay could best abuse.
  a1.sendUnreliable(0, B, 4, new TextEncoder().encode("first"));
  const captured: Uint8Array[] = [];
  settle(0, a1, b, captured);
  a1.send(1, B, 1, new TextEncoder().encode("old record"));
  settle(1, a1, b, captured);
  // The attacker also holds datagrams b never saw: it caught them on the way and dropped them.
  a1.sendUnreliable(1.5, B, 4, new TextEncoder().encode("withheld"));
  a1.send(1.5, B, 1, new TextEncoder().encode("withheld record"));
  a1.tick(1.5);
  captured.push(...a1.takeDatagrams().map((d) => d.bytes));
  b.takeMessages();
  // a restarts: a new process, a new key id.
  const a2 = endpoint("a", 3);
  a2.send(2, B, 1, new TextEncoder().encode("new record"));
  settle(2, a2, b);
  deepStrictEqual(b.takeMessages().map(text), ["new record"]);
  const restarts = b.takeEvents().filter((e) => e.type === "peer-restarted");
  equal(restarts.length, 1);
  const bound = b.peerStats(A)!;
  // Everything captured from a1, replayed from a's address and from another one, later on.
  for (const d of captured) {
    b.receive(3, A, d);
    b.receive(3, X, d);
  }
  b.tick(4);
  equal(b.takeMessages().length, 0, "no old message delivered");
  equal(b.takeEvents().length, 0, "no restart, no discovery");
  deepStrictEqual(b.peerStats(A)!.peerEpoch, bound.peerEpoch, "the session still belongs to a2");
  ok(!b.peers().includes(X), "no session moved to the replaying address");
  // And the live session still works both ways.
  a2.send(5, B, 1, new TextEncoder().encode("still here"));
  b.send(5, A, 1, new TextEncoder().encode("still there"));
  settle(5, a2, b);
  deepStrictEqual(b.takeMessages().map(text), ["still here"]);
  deepStrictEqual(a2.takeMessages().filter((m) => m.reliable).map(text), ["still there"]);
});

Deno.test("after the receiver restarts, datagrams captured before are addressed to its old epoch and deliver nothing", () => {
  const a = endpoint("a", 1);
  const b1 = endpoint("b", 2);
  // One exchange each way: from then on a addresses b1's epoch. (A datagram a sent before it
  // had heard from b at all names no epoch; replayed to a restarted b it can deliver its
  // unreliable frames once: the limit of binding a first contact without a handshake.)
  a.sendUnreliable(0, B, 4, new TextEncoder().encode("hello"));
  b1.sendUnreliable(0, A, 4, new TextEncoder().encode("hello back"));
  settle(0, a, b1);
  const captured: Uint8Array[] = [];
  a.sendUnreliable(1, B, 4, new TextEncoder().encode("probe for b1"));
  a.send(1, B, 1, new TextEncoder().encode("record for b1"));
  settle(1, a, b1, captured);
  const b2 = endpoint("b", 5);
  for (const d of captured) b2.receive(2, A, d);
  b2.tick(2);
  equal(b2.takeMessages().length, 0);
  equal(b2.takeEvents().length, 0);
  ok(snap(b2, "stale_epoch_drops_total") >= 1);
});

/**
 * Two endpoints exchange reliable and unreliable messages over a lossy network while an
 * attacker replays random captured datagrams, from random addresses, at random times.
 */
function underAttack(seed: number): string[] {
  const sim = new TransportSim(seed, { lossProbability: 0.1, delayMsMin: 0.05, delayMsMax: 2 });
  const a = sim.node(A, "a");
  const b = sim.node(B, "b");
  // The attacker records what it sees arrive (so it replays "later": a racing attacker that
  // beats a process's first datagram to its peer can bind that key id to its own address,
  // which costs the peer its traffic as dropping it would, but reveals or forges nothing).
  const captured: Array<{ from: string; bytes: Uint8Array }> = [];
  for (const [node, address] of [[a, A], [b, B]] as const) {
    const receive = node.endpoint.receive.bind(node.endpoint);
    node.endpoint.receive = (nowMs, from, bytes) => {
      if (from === (address === A ? B : A)) captured.push({ from, bytes: bytes.slice() });
      return receive(nowMs, from, bytes);
    };
  }
  const plan = new Sfc32(seed ^ 0xa77ac);
  const count = 150;
  for (let i = 0; i < count; i++) {
    sim.scheduler.at(i * 0.7, () => {
      a.endpoint.send(sim.scheduler.nowMs, B, 1, makeBody(i, 20 + plan.int(300)));
      a.endpoint.sendUnreliable(sim.scheduler.nowMs, B, 2, makeBody(10_000 + i, 30));
      a.pump();
      b.endpoint.send(sim.scheduler.nowMs, A, 1, makeBody(20_000 + i, 40));
      b.pump();
    });
  }
  const addresses = [A, B, X];
  let replayed = 0;
  for (let k = 0; k < 600; k++) {
    sim.scheduler.at(plan.next() * 150, () => {
      if (captured.length === 0) return;
      const d = captured[plan.int(captured.length)]!;
      const target: SimNode = d.from === A ? b : a;
      replayed++;
      target.endpoint.receive(sim.scheduler.nowMs, addresses[plan.int(3)]!, d.bytes);
      target.pump();
    });
  }
  sim.scheduler.runWhile(() => {
    const got = (n: SimNode) => new Set(n.delivered.filter((m) => m.reliable)).size;
    return got(b) < count || got(a) < count;
  }, 30_000);
  const failures: string[] = [];
  for (const [node, name] of [[a, "a"], [b, "b"]] as const) {
    const ids = node.delivered.map((m) => checkBody(m.bytes));
    if (ids.some((id) => id < 0)) failures.push(`${name}: corrupted body`);
    if (new Set(ids).size !== ids.length) failures.push(`${name}: a message delivered twice`);
    if (node.delivered.some((m) => m.fromAddress !== (node === a ? B : A))) {
      failures.push(`${name}: a message from another address`);
    }
    if (node.events.filter((e) => e.type === "peer-restarted").length > 0) {
      failures.push(`${name}: a replay reset the session`);
    }
  }
  const reliable = b.delivered.filter((m) => m.reliable).length;
  if (reliable !== count) failures.push(`b got ${reliable} of ${count} reliable messages`);
  if (replayed < 100) failures.push(`only ${replayed} replays`);
  return failures.map((f) => `seed ${seed}: ${f}`);
}

Deno.test("under a replaying attacker over a lossy network, every message is delivered exactly once and no session moves", () => {
  const failures: string[] = [];
  for (let seed = 1; seed <= 15; seed++) failures.push(...underAttack(seed));
  deepStrictEqual(failures, []);
});

Deno.test("a datagram of a retired key replayed after the key table evicted it neither resets the session nor delivers twice", () => {
  // A small table (2 · peersMax = 4 key ids) so that a few new key ids evict the retired one;
  // in production that takes 2,048 new key ids: peers restarting, or UDP clients, one each.
  const config = { peersMax: 2 };
  const mk = (nodeId: string, seed: number) => {
    const rng = new Sfc32(seed);
    return new Endpoint({ nodeId, clusterKey: KEY, keyId: keyIdFrom(rng), rng, config });
  };
  const a1 = mk("a", 1);
  const b = mk("b", 2);
  a1.send(0, B, 1, new TextEncoder().encode("hello"));
  settle(0, a1, b);
  // Captured once the session is bound: addressed to b's epoch, carrying a reliable record.
  const captured: Uint8Array[] = [];
  a1.send(1, B, 1, new TextEncoder().encode("old record"));
  settle(1, a1, b, captured);
  deepStrictEqual(b.takeMessages().map(text), ["hello", "old record"]);
  // a restarts: a new process, a new key id; a1's key is retired.
  const a2 = mk("a", 3);
  a2.send(2, B, 1, new TextEncoder().encode("new record"));
  settle(2, a2, b);
  deepStrictEqual(b.takeMessages().map(text), ["new record"]);
  b.takeEvents();
  const epochOfA2 = b.peerStats(A)!.peerEpoch;
  // Four new key ids authenticate (other processes, at other addresses): the oldest entries
  // not bound to a session, a1's retired key first, are evicted.
  for (let i = 0; i < 4; i++) {
    const c = mk(`c${i}`, 10 + i);
    c.sendUnreliable(3, B, 4, new TextEncoder().encode("hi"));
    c.tick(3);
    for (const d of c.takeDatagrams()) b.receive(3, `10.0.1.${i}:7000`, d.bytes);
  }
  b.tick(3);
  b.takeMessages();
  b.takeEvents();
  b.takeDatagrams();
  // The attacker replays a1's captured datagrams from a's address.
  for (const d of captured) b.receive(4, A, d);
  b.tick(4);
  deepStrictEqual(b.takeMessages().map(text), [], "no old message delivered again");
  deepStrictEqual(b.takeEvents(), [], "no restart");
  equal(b.peerStats(A)!.peerEpoch, epochOfA2, "the session still belongs to a2");
  // And a2 still gets through.
  a2.send(5, B, 1, new TextEncoder().encode("still here"));
  settle(5, a2, b);
  deepStrictEqual(b.takeMessages().map(text), ["still here"]);
});

Deno.test("a datagram whose key id the table evicted, replayed from another address, delivers nothing there and resets no other session", () => {
  const config = { peersMax: 3 };
  const mk = (nodeId: string, seed: number) => {
    const rng = new Sfc32(seed);
    return new Endpoint({ nodeId, clusterKey: KEY, keyId: keyIdFrom(rng), rng, config });
  };
  const b = mk("b", 2);
  // c talks to b from C and goes away; its key id stays bound to the session at C.
  const C = "10.0.0.3:7000";
  const c = mk("c", 4);
  c.send(0, B, 1, new TextEncoder().encode("hello from c"));
  const fromC: Uint8Array[] = [];
  for (let i = 0; i < 20; i++) {
    c.tick(i);
    const out = c.takeDatagrams();
    fromC.push(...out.map((d) => d.bytes.slice()));
    for (const d of out) b.receive(i, C, d.bytes);
    b.tick(i);
    for (const d of b.takeDatagrams()) c.receive(i, B, d.bytes);
    if (c.isIdle(B) && out.length === 0) break;
  }
  ok(fromC.length >= 2, "c's datagrams were captured");
  // a talks to b from A.
  const a = mk("a", 1);
  a.send(30, B, 1, new TextEncoder().encode("hello from a"));
  settle(30, a, b);
  deepStrictEqual(b.takeMessages().filter((m) => m.reliable).map(text).sort(), [
    "hello from a",
    "hello from c",
  ]);
  b.takeEvents();
  const epochOfA = b.peerStats(A)!.peerEpoch;
  // b forgets c (it was removed), and new key ids push c's out of the table.
  b.forgetPeer(C);
  b.takeEvents();
  for (let i = 0; i < 6; i++) {
    const n = mk(`n${i}`, 10 + i);
    n.sendUnreliable(31, B, 4, new TextEncoder().encode("hi"));
    n.tick(31);
    for (const d of n.takeDatagrams()) b.receive(31, `10.0.1.${i}:7000`, d.bytes);
  }
  b.tick(31);
  b.takeMessages();
  b.takeEvents();
  // Every datagram c sent once the session was up (addressed to b's epoch), replayed from A
  // (where a lives) and from an address b never heard of.
  for (const d of fromC) {
    b.receive(32, A, d);
    b.receive(32, X, d);
  }
  b.tick(32);
  deepStrictEqual(b.takeMessages().filter((m) => m.reliable).map(text), [], "nothing again");
  deepStrictEqual(b.takeEvents().filter((e) => e.type !== "peer-discovered"), [], "no reset");
  equal(b.peerStats(A)!.peerEpoch, epochOfA, "the session at A still belongs to a");
  a.send(33, B, 1, new TextEncoder().encode("still here"));
  settle(33, a, b);
  deepStrictEqual(b.takeMessages().filter((m) => m.reliable).map(text), ["still here"]);
});
