/**
 * The gossip queue: one update per member, least-sent then newest first, bounded
 * retransmissions, bounded size, no copy of a packet's own main message, and the bucketed
 * walk taking exactly what a full sort would.
 */

import { assertEquals } from "../assert.ts";
import fc from "fast-check";
import { GossipQueue } from "../../src/membership/gossip_queue.ts";
import { alive, dead, type GossipMessage, suspect } from "../../src/membership/messages.ts";
import { messageBytes } from "../../src/membership/codec.ts";

Deno.test("GossipQueue sends least-sent first, newest first among equals", () => {
  const q = new GossipQueue(16);
  q.push(alive("a", "h:1", 1));
  q.push(alive("b", "h:2", 1));
  assertEquals(q.take(1000, 1, 3).map((m) => m.nodeId), ["b"]);
  q.push(alive("c", "h:3", 1));
  // c (0 sends, newest) then a (0 sends) then b (1 send).
  assertEquals(q.take(1000, 10, 3).map((m) => m.nodeId), ["c", "a", "b"]);
});

Deno.test("GossipQueue drops an update after retransmitLimit sends", () => {
  const q = new GossipQueue(16);
  q.push(alive("a", "h:1", 1));
  for (let i = 0; i < 3; i++) assertEquals(q.take(1000, 10, 3).length, 1);
  assertEquals(q.size, 0);
  assertEquals(q.take(1000, 10, 3), []);
});

Deno.test("GossipQueue keeps one update per member, the newest replacing the older", () => {
  const q = new GossipQueue(16);
  q.push(alive("a", "h:1", 1));
  q.take(1000, 10, 5);
  q.push(suspect("a", 1, "b"));
  assertEquals(q.size, 1);
  assertEquals(q.take(1000, 10, 5), [suspect("a", 1, "b")]);
});

Deno.test("GossipQueue takes only what fits in the space given", () => {
  const q = new GossipQueue(16);
  const big = alive("a", "x".repeat(200), 1);
  const small = dead("b", 1, "c");
  q.push(big);
  q.push(small);
  assertEquals(q.take(messageBytes(small), 10, 5), [small]);
  assertEquals(q.take(messageBytes(small) - 1, 10, 5), []);
  assertEquals(q.take(messageBytes(big), 10, 5), [big]);
});

Deno.test("GossipQueue at capacity evicts the most-sent update", () => {
  const q = new GossipQueue(2);
  q.push(alive("a", "h:1", 1));
  q.take(1000, 1, 9); // a sent once
  q.push(alive("b", "h:2", 1));
  q.push(alive("c", "h:3", 1));
  assertEquals(q.size, 2);
  assertEquals(q.dropped, 1);
  assertEquals(q.take(1000, 10, 9).map((m) => m.nodeId).sort(), ["b", "c"]);
});

Deno.test("GossipQueue skips a packet's own main message without counting a send", () => {
  const q = new GossipQueue(4);
  const notice = dead("a", 3, "b");
  q.push(notice);
  assertEquals(q.take(1000, 10, 1, [notice]), []);
  assertEquals(q.size, 1);
  assertEquals(q.take(1000, 10, 1), [notice]);
});

/**
 * The queue's order, spelled out slowly: sort every live update by (sends ascending, arrival
 * in its send count descending) and take greedily what fits. Moved updates arrive in their
 * next count in the order they were taken.
 */
class ReferenceQueue {
  items: Array<{ message: GossipMessage; bytes: number; transmits: number; arrival: number }> = [];
  #arrival = 0;
  constructor(readonly capacity: number) {}
  push(message: GossipMessage): void {
    this.items = this.items.filter((i) => i.message.nodeId !== message.nodeId);
    if (this.items.length >= this.capacity) {
      const worst = [...this.items].sort((a, b) =>
        b.transmits - a.transmits || a.arrival - b.arrival
      )[0]!;
      this.items = this.items.filter((i) => i !== worst);
    }
    this.items.push({
      message,
      bytes: messageBytes(message),
      transmits: 0,
      arrival: this.#arrival++,
    });
  }
  take(spaceBytes: number, countMax: number, limit: number): GossipMessage[] {
    const ordered = [...this.items].sort((a, b) =>
      a.transmits - b.transmits || b.arrival - a.arrival
    );
    const out: typeof ordered = [];
    let room = spaceBytes;
    const bytesMin = Math.min(...this.items.map((i) => i.bytes));
    for (const item of ordered) {
      if (out.length >= countMax || room < bytesMin) break;
      if (item.bytes > room) continue;
      room -= item.bytes;
      out.push(item);
    }
    for (let i = out.length - 1; i >= 0; i--) {
      const item = out[i]!;
      item.transmits++;
      item.arrival = this.#arrival++;
    }
    this.items = this.items.filter((i) => i.transmits < limit);
    return out.map((i) => i.message);
  }
}

Deno.test("GossipQueue takes exactly what the sorted reference takes (property)", () => {
  const update = fc.record({
    id: fc.integer({ min: 0, max: 40 }),
    kind: fc.constantFrom("alive", "suspect", "dead"),
    incarnation: fc.integer({ min: 0, max: 3 }),
    addressBytes: fc.integer({ min: 3, max: 120 }),
  }).map(({ id, kind, incarnation, addressBytes }): GossipMessage =>
    kind === "alive"
      ? alive(`n${id}`, "h".repeat(addressBytes), incarnation)
      : kind === "suspect"
      ? suspect(`n${id}`, incarnation, "x")
      : dead(`n${id}`, incarnation, "x")
  );
  const op = fc.oneof(
    update.map((message) => ({ push: message })),
    fc.record({
      spaceBytes: fc.integer({ min: 0, max: 600 }),
      countMax: fc.integer({ min: 0, max: 12 }),
    }),
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 24 }),
      fc.integer({ min: 1, max: 6 }),
      fc.array(op, { maxLength: 400 }),
      (capacity, limit, ops) => {
        const q = new GossipQueue(capacity);
        const ref = new ReferenceQueue(capacity);
        for (const o of ops) {
          if ("push" in o) {
            q.push(o.push);
            ref.push(o.push);
          } else {
            assertEquals(
              q.take(o.spaceBytes, o.countMax, limit),
              ref.take(o.spaceBytes, o.countMax, limit),
            );
          }
          assertEquals(q.size, ref.items.length);
        }
      },
    ),
    { numRuns: 300 },
  );
});
