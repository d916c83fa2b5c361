import { assertEquals } from "../assert.ts";
import { ReplicationOutbox } from "../../src/jobs/repl_outbox.ts";

const rec = (n: number) => new Uint8Array([n]);
/** A take as plain data: peer → the records' first bytes. */
function taken(outbox: ReplicationOutbox): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const [peer, records] of outbox.take()) out[peer] = records.map((r) => r[0]!);
  return out;
}

Deno.test("ReplicationOutbox hands each flush's records back by peer, in the order queued, once", () => {
  const o = new ReplicationOutbox(5);
  o.queue("b", rec(1));
  o.queue("a", rec(2));
  o.queue("b", rec(3));
  const first = o.take();
  assertEquals([...first.keys()], ["b", "a"]);
  assertEquals(taken(o), {});
  assertEquals([...first.get("b")!].map((r) => r[0]), [1, 3]);
  o.queue("a", rec(4));
  assertEquals(taken(o), { a: [4] });
});

Deno.test("ReplicationOutbox: a lazy record rides with its own peer's next message, else leaves at its deadline", () => {
  const o = new ReplicationOutbox(5);
  o.queueLazy("a", rec(1), 100);
  o.queueLazy("b", rec(2), 101);
  assertEquals(o.lazyDueMs, 105);
  o.queue("a", rec(3));
  // Only a's lazy record goes: b gets no message this flush.
  assertEquals(taken(o), { a: [3, 1] });
  assertEquals(o.lazyDueMs, 105);
  o.tick(104);
  assertEquals(taken(o), {});
  o.tick(105);
  assertEquals(taken(o), { b: [2] });
  assertEquals(o.lazyDueMs, Infinity);
  assertEquals(taken(o), {});
});

Deno.test("ReplicationOutbox: a message sent to a peer outside the outbox takes its lazy records at the next flush only", () => {
  const o = new ReplicationOutbox(50);
  o.queueLazy("a", rec(1), 0);
  o.sent("a");
  assertEquals(taken(o), { a: [1] });
  // The mark is spent: a lazy record queued now waits for another message or its deadline.
  o.queueLazy("a", rec(2), 1);
  assertEquals(taken(o), {});
  o.sent("a");
  o.queueLazy("b", rec(3), 2);
  assertEquals(taken(o), { a: [2] });
  assertEquals(o.lazyDueMs, 51);
});

Deno.test("ReplicationOutbox: markDue sends every lazy record at the next flush", () => {
  const o = new ReplicationOutbox(1_000);
  o.queueLazy("a", rec(1), 0);
  o.queueLazy("b", rec(2), 0);
  o.queueLazy("a", rec(3), 0);
  o.markDue();
  assertEquals(taken(o), { a: [1, 3], b: [2] });
  assertEquals(o.lazyDueMs, Infinity);
  // The peers' lists are kept empty: a later lazy record is not sent twice or lost.
  o.queueLazy("b", rec(4), 10);
  assertEquals(taken(o), {});
  o.queue("b", rec(5));
  assertEquals(taken(o), { b: [5, 4] });
  assertEquals(taken(o), {});
});
