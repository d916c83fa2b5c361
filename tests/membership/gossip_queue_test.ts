/**
 * The gossip queue: one update per member, least-sent then newest first, bounded
 * retransmissions, bounded size, and no copy of a packet's own main message.
 */

import { assertEquals } from "../assert.ts";
import { GossipQueue } from "../../src/membership/gossip_queue.ts";
import { alive, dead, suspect } from "../../src/membership/messages.ts";
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
