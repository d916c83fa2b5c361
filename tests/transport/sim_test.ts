/**
 * Simulation tests of the transport core: two endpoints exchanging reliable messages (small
 * and fragmented) and unreliable ones over the seeded lossy network. Each failure message
 * names its seed; `replay(seed)` in a scratch test reproduces it exactly.
 */

import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { Sfc32 } from "../../src/lib/rng.ts";
import type { TransportConfig } from "../../src/config/transport.ts";
import { checkBody, makeBody, type SimNode, TransportSim } from "./sim_harness.ts";

const A = "10.0.0.1:7000";
const B = "10.0.0.2:7000";

interface ExchangeResult {
  failures: string[];
  /** A digest of everything observable, to prove a seed replays identically. */
  fingerprint: string;
  retransmits: number;
}

/** Sends `messages` reliable messages each way at random times; checks exactly-once delivery. */
function exchange(seed: number, messages: number): ExchangeResult {
  const params = new Sfc32(seed ^ 0x7a5f);
  const loss = params.next() * 0.3;
  const duplicate = params.next() * 0.05;
  const delayMsMax = 0.1 + params.next() * 3;
  const config: Partial<TransportConfig> = {
    datagramBytes: 512 + params.int(3000),
    windowBytes: 16384,
    sendQueueMessagesMax: 64,
    windowMessages: 32,
  };
  const sim = new TransportSim(seed, {
    lossProbability: loss,
    duplicateProbability: duplicate,
    delayMsMin: 0.05,
    delayMsMax,
  });
  const a = sim.node(A, "a", config);
  const b = sim.node(B, "b", config);
  const plan = new Sfc32(seed);
  let refusedForever = 0;
  const schedule = (from: SimNode, to: string, id: number, body: Uint8Array, atMs: number) => {
    let attempts = 0;
    const attempt = () => {
      const result = from.endpoint.send(sim.scheduler.nowMs, to, 1 + (id % 3), body);
      if (result.accepted) from.pump();
      else if (result.reason === "backpressure" && attempts++ < 10_000) {
        sim.scheduler.after(1, attempt);
      } else refusedForever++;
    };
    sim.scheduler.at(atMs, attempt);
  };
  for (let i = 0; i < messages; i++) {
    const large = plan.next() < 0.1;
    const length = large ? 1000 + plan.int(6000) : 8 + plan.int(200);
    const atMs = plan.next() * 200;
    if (i % 2 === 0) schedule(a, B, i, makeBody(i, length), atMs);
    else schedule(b, A, i, makeBody(i, length), atMs);
  }
  // Unreliable traffic rides along; it must never be delivered corrupted (it may be lost).
  for (let i = 0; i < 50; i++) {
    sim.scheduler.at(plan.next() * 200, () => {
      a.endpoint.sendUnreliable(sim.scheduler.nowMs, B, 9, makeBody(100_000 + i, 40));
      a.pump();
    });
  }
  const expected = (node: SimNode) =>
    node === b ? Math.ceil(messages / 2) : Math.floor(messages / 2);
  const reliableCount = (node: SimNode) => node.delivered.filter((m) => m.reliable).length;
  sim.scheduler.runWhile(
    () => reliableCount(a) < expected(a) || reliableCount(b) < expected(b),
    60_000,
  );
  const failures: string[] = [];
  if (refusedForever > 0) failures.push(`${refusedForever} sends never accepted`);
  for (const [node, parity, name] of [[b, 0, "b"], [a, 1, "a"]] as const) {
    const seen = new Map<number, number>();
    for (const m of node.delivered) {
      const id = checkBody(m.bytes);
      if (id < 0) {
        failures.push(`${name}: corrupted body on channel ${m.channel}`);
        continue;
      }
      if (!m.reliable) continue;
      if (id % 2 !== parity) failures.push(`${name}: got message ${id} meant for the other side`);
      if (m.channel !== 1 + (id % 3)) failures.push(`${name}: message ${id} on wrong channel`);
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    for (let id = parity; id < messages; id += 2) {
      const count = seen.get(id) ?? 0;
      if (count !== 1) failures.push(`${name}: message ${id} delivered ${count} times`);
    }
  }
  const counter = (node: SimNode, kind: string) =>
    node.endpoint.metrics.snapshot()[`hookd_transport_retransmits_total{kind="${kind}"}`] as number;
  const retransmits = ["fast", "probe", "timeout"].reduce(
    (sum, k) => sum + counter(a, k) + counter(b, k),
    0,
  );
  const order = (node: SimNode) => node.delivered.map((m) => checkBody(m.bytes)).join(",");
  const fingerprint = [
    sim.scheduler.nowMs.toFixed(6),
    sim.scheduler.eventsRun,
    JSON.stringify(sim.network.stats),
    retransmits,
    order(a),
    order(b),
  ].join("|");
  return {
    failures: failures.slice(0, 5).map((f) =>
      `seed ${seed} (loss ${loss.toFixed(3)}, dup ${duplicate.toFixed(3)}): ${f}`
    ),
    fingerprint,
    retransmits,
  };
}

Deno.test("Endpoint delivers every reliable message exactly once across 100 seeds with up to 30 % loss, duplication and reordering", () => {
  const failures: string[] = [];
  let retransmits = 0;
  for (let seed = 1; seed <= 100; seed++) {
    const result = exchange(seed, 240);
    failures.push(...result.failures);
    retransmits += result.retransmits;
  }
  assertEquals(failures, []);
  // The network did lose packets, so recovery was exercised rather than skipped.
  if (retransmits === 0) throw new Error("no retransmissions across 100 lossy seeds");
});

Deno.test("Endpoint simulation replays a seed exactly", () => {
  const first = exchange(7, 120);
  const second = exchange(7, 120);
  assertEquals(first.failures, []);
  assertEquals(second.fingerprint, first.fingerprint);
  const other = exchange(8, 120);
  if (other.fingerprint === first.fingerprint) throw new Error("different seeds, same run");
});

Deno.test("Endpoint recovers from a peer restart: new epoch, old state discarded, later messages delivered once", () => {
  for (let seed = 1; seed <= 10; seed++) {
    const sim = new TransportSim(seed, { lossProbability: 0.2, delayMsMin: 0.05, delayMsMax: 1 });
    const a = sim.node(A, "a");
    const b = sim.node(B, "b");
    const before = 100;
    const after = 100;
    for (let i = 0; i < before + after; i++) {
      sim.scheduler.at(i < before ? i * 0.5 : 100 + (i - before) * 0.5, () => {
        const r = a.endpoint.send(sim.scheduler.nowMs, B, 1, makeBody(i, 64));
        assertEquals(r, { accepted: true }, `seed ${seed}`);
        a.pump();
      });
    }
    // b crashes at 30 ms (losing whatever it had) and comes back at 60 ms with a new epoch.
    let oldDelivered: number[] = [];
    sim.scheduler.at(30, () => {
      oldDelivered = b.delivered.map((m) => checkBody(m.bytes));
      b.delivered.length = 0;
      sim.network.detach(B);
    });
    sim.scheduler.at(60, () => {
      b.restart(0xabc00000 + seed, {});
      sim.network.attach(B, (from, packet) => {
        b.endpoint.receive(sim.scheduler.nowMs, from, packet);
        b.pump();
      });
    });
    const done = () => {
      const ids = new Set(b.delivered.map((m) => checkBody(m.bytes)));
      for (let i = before; i < before + after; i++) if (!ids.has(i)) return false;
      return true;
    };
    const finished = sim.scheduler.runWhile(() => !done(), 20_000);
    assertEquals(finished, true, `seed ${seed}: messages after the restart not all delivered`);
    const newIds = b.delivered.map((m) => checkBody(m.bytes));
    assertEquals(newIds.length, new Set(newIds).size, `seed ${seed}: duplicate in new incarnation`);
    // Every message reached one incarnation or the other (at-least-once across the crash).
    const union = new Set([...oldDelivered, ...newIds]);
    for (let i = 0; i < before + after; i++) {
      assertEquals(union.has(i), true, `seed ${seed}: message ${i} never delivered`);
    }
    const restarted = a.events.filter((e) => e.type === "peer-restarted");
    assertEquals(restarted.length, 1, `seed ${seed}: peer-restarted events`);
  }
});

Deno.test("Endpoint keeps delivering exactly once through a long backlog and a partition that heals", () => {
  for (const seed of [11, 12]) {
    const sim = new TransportSim(seed, { lossProbability: 0.1, delayMsMin: 0.05, delayMsMax: 1 });
    const config = { sendQueueMessagesMax: 3000, windowBytes: 8192 };
    const a = sim.node(A, "a", config);
    const b = sim.node(B, "b", config);
    const total = 6000;
    let next = 0;
    // The application refills the queue whenever it has room: the backlog never empties.
    const refill = () => {
      while (
        next < total && a.endpoint.send(sim.scheduler.nowMs, B, 1, makeBody(next, 50)).accepted
      ) {
        next++;
      }
      a.pump();
      if (next < total) sim.scheduler.after(1, refill);
    };
    sim.scheduler.at(0, refill);
    sim.scheduler.at(50, () => sim.network.partition([A]));
    sim.scheduler.at(1500, () => sim.network.heal());
    const finished = sim.scheduler.runWhile(() => b.delivered.length < total, 120_000);
    assertEquals(finished, true, `seed ${seed}: ${b.delivered.length} of ${total} delivered`);
    const ids = b.delivered.map((m) => checkBody(m.bytes));
    assertEquals(new Set(ids).size, total, `seed ${seed}: duplicates or corruption`);
    const s = a.endpoint.metrics.snapshot();
    if (!((s['hookd_transport_retransmits_total{kind="timeout"}'] as number) > 0)) {
      throw new Error(`seed ${seed}: the partition should have needed timeouts`);
    }
  }
});

Deno.test("Endpoint keeps sessions apart: four nodes all sending to all at 20 % loss", () => {
  for (const seed of [21, 22, 23]) {
    const sim = new TransportSim(seed, { lossProbability: 0.2, delayMsMin: 0.05, delayMsMax: 2 });
    const addresses = ["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1", "10.0.0.4:1"];
    const nodes = addresses.map((address, i) => sim.node(address, `n${i}`, { datagramBytes: 600 }));
    const plan = new Sfc32(seed);
    const perPair = 60;
    let id = 0;
    for (const [i, from] of nodes.entries()) {
      for (const [j] of nodes.entries()) {
        if (i === j) continue;
        for (let k = 0; k < perPair; k++) {
          const body = makeBody(id++, plan.next() < 0.1 ? 2000 : 30);
          sim.scheduler.at(plan.next() * 100, () => {
            assertEquals(from.endpoint.send(sim.scheduler.nowMs, addresses[j]!, 1, body), {
              accepted: true,
            });
            from.pump();
          });
        }
      }
    }
    const expected = perPair * (nodes.length - 1);
    const finished = sim.scheduler.runWhile(
      () => nodes.some((n) => n.delivered.length < expected),
      60_000,
    );
    assertEquals(finished, true, `seed ${seed}: not everything delivered`);
    const all = nodes.flatMap((n) => n.delivered.map((m) => checkBody(m.bytes)));
    assertEquals(all.length, id, `seed ${seed}: delivery count`);
    assertEquals(new Set(all).size, id, `seed ${seed}: duplicates or corruption`);
    for (const [j, node] of nodes.entries()) {
      for (const m of node.delivered) {
        const sender = addresses.indexOf(m.fromAddress);
        assertEquals(m.fromNodeId, `n${sender}`, `seed ${seed}: node id of ${m.fromAddress}`);
        if (sender === j) throw new Error(`seed ${seed}: node ${j} received from itself`);
      }
    }
  }
});

Deno.test("Endpoint.forgetPeer mid-stream: the peer, still alive, takes every later message once and resends what it had unacknowledged", () => {
  for (let seed = 31; seed <= 50; seed++) {
    const sim = new TransportSim(seed, {
      lossProbability: 0.25,
      duplicateProbability: 0.03,
      delayMsMin: 0.05,
      delayMsMax: 2,
    });
    const a = sim.node(A, "a");
    const b = sim.node(B, "b");
    const count = 200;
    for (let i = 0; i < count; i++) {
      sim.scheduler.at(i * 0.5, () => {
        a.endpoint.send(sim.scheduler.nowMs, B, 1, makeBody(i, i % 10 === 0 ? 3000 : 40));
        a.pump();
      });
      sim.scheduler.at(i * 0.5 + 0.2, () => {
        b.endpoint.send(sim.scheduler.nowMs, A, 1, makeBody(10_000 + i, 40));
        b.pump();
      });
    }
    // a drops its session with b (and whatever it still held for b) while b is fine.
    const forgetAtMs = 50;
    sim.scheduler.at(forgetAtMs, () => a.endpoint.forgetPeer(B));
    const firstAfter = forgetAtMs / 0.5 + 1;
    const has = (node: SimNode, from: number, to: number) => {
      const ids = new Set(node.delivered.map((m) => checkBody(m.bytes)));
      for (let i = from; i < to; i++) if (!ids.has(i)) return false;
      return true;
    };
    const finished = sim.scheduler.runWhile(
      () => !has(b, firstAfter, count) || !has(a, 10_000, 10_000 + count),
      30_000,
    );
    assertEquals(finished, true, `seed ${seed}: messages after the forget not all delivered`);
    const later = b.delivered.map((m) => checkBody(m.bytes)).filter((id) => id >= firstAfter);
    assertEquals(later.length, new Set(later).size, `seed ${seed}: a later message twice`);
    assertEquals(
      [...a.delivered, ...b.delivered].every((m) => checkBody(m.bytes) >= 0),
      true,
      `seed ${seed}: corrupted body`,
    );
  }
});

/**
 * Large messages at 30 % loss through a reassembly budget that holds only one or two of them:
 * fragments of new messages are refused (with their whole datagram) until earlier ones
 * complete. Returns why the seed failed (not all delivered once within `limitMs`), if it did.
 */
function reassemblyPressure(seed: number, limitMs: number): string | undefined {
  const sim = new TransportSim(seed, { lossProbability: 0.3, delayMsMin: 0.05, delayMsMax: 1 });
  const config = { reassemblyBytesMax: 64 * 1024, messageBytesMax: 48 * 1024 };
  const a = sim.node(A, "a", config);
  const b = sim.node(B, "b", config);
  const plan = new Sfc32(seed);
  const count = 60;
  for (let i = 0; i < count; i++) {
    const length = plan.next() < 0.3 ? 20 + plan.int(1500) : 20_000 + plan.int(28_000);
    sim.scheduler.at(plan.next() * 50, () => {
      const result = a.endpoint.send(sim.scheduler.nowMs, B, 1, makeBody(i, length));
      if (!result.accepted) throw new Error(`seed ${seed}: send refused (${result.reason})`);
      a.pump();
    });
  }
  sim.scheduler.runWhile(() => b.delivered.length < count, limitMs);
  const n = new Set(b.delivered.filter((m) => m.reliable).map((m) => checkBody(m.bytes))).size;
  if (n < count) return `seed ${seed}: ${n} of ${count} delivered in ${limitMs} ms`;
  const at = sim.scheduler.nowMs.toFixed(0);
  return b.delivered.length === count ? undefined : `seed ${seed}: duplicates by ${at} ms`;
}

Deno.test("Endpoint does not overfill its peer's reassembly memory: large messages at 30 % loss through room for one or two all arrive (30 seeds)", () => {
  const failures: string[] = [];
  for (let seed = 1; seed <= 30; seed++) {
    const failure = reassemblyPressure(seed, 20_000);
    if (failure !== undefined) failures.push(failure);
  }
  assertEquals(failures, []);
});
