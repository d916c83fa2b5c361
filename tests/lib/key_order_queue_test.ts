import fc from "fast-check";
import { assert, assertEquals, assertThrows } from "../assert.ts";
import { KeyOrderQueue } from "../../src/lib/key_order_queue.ts";
import { AssertionError } from "../../src/lib/assert.ts";

type Op =
  | { readonly op: "push"; readonly gap: number }
  | { readonly op: "delete"; readonly pick: number }
  | { readonly op: "deleteAbsent"; readonly pick: number }
  | { readonly op: "deleteWhileIterating"; readonly every: number }
  | { readonly op: "clear" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("push" as const), gap: fc.nat(3) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("delete" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("deleteAbsent" as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("deleteWhileIterating" as const),
      every: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: "clear" as const }) },
);

Deno.test("KeyOrderQueue behaves as a Map with increasing keys, through holes, compactions and clears", () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 100, maxLength: 600 }), (ops) => {
      const q = new KeyOrderQueue<string>();
      const model = new Map<number, string>();
      let next = 0;
      for (const o of ops) {
        switch (o.op) {
          case "push": {
            next += 1 + o.gap;
            q.push(next, `v${next}`);
            model.set(next, `v${next}`);
            break;
          }
          case "delete": {
            const keys = [...model.keys()];
            if (keys.length === 0) break;
            const k = keys[o.pick % keys.length]!;
            assertEquals(q.delete(k), true);
            model.delete(k);
            break;
          }
          case "deleteAbsent": {
            // A key never pushed, or one already removed: nothing changes.
            const k = model.has(o.pick % (next + 2)) ? -1 : o.pick % (next + 2);
            assertEquals(q.delete(k), false);
            break;
          }
          case "deleteWhileIterating": {
            let i = 0;
            const seen: string[] = [];
            for (const v of q.values()) {
              seen.push(v);
              if (i++ % o.every === 0) {
                const k = Number(v.slice(1));
                q.delete(k);
                model.delete(k);
              }
            }
            assertEquals(seen.length, i);
            break;
          }
          case "clear":
            q.clear();
            model.clear();
            // Keys may start low again after a clear.
            next = 0;
            break;
        }
        assertEquals(q.size, model.size);
        const ordered = [...model.entries()].sort((a, b) => a[0] - b[0]);
        assertEquals([...q.values()], ordered.map(([, v]) => v));
        assertEquals(q.first(), ordered[0]?.[1]);
        assertEquals(q.firstKey(), ordered[0]?.[0]);
        for (let k = Math.max(0, next - 8); k <= next + 1; k++) {
          assertEquals(q.get(k), model.get(k));
          assertEquals(q.has(k), model.has(k));
        }
      }
    }),
    { numRuns: 300 },
  );
});

Deno.test("KeyOrderQueue refuses a key that is not above the last one pushed, even once removed", () => {
  const q = new KeyOrderQueue<number>();
  q.push(5, 50);
  assertThrows(() => q.push(5, 51), AssertionError);
  assertThrows(() => q.push(3, 30), AssertionError);
  q.delete(5);
  assertThrows(() => q.push(4, 40), AssertionError);
  q.push(6, 60);
  assertEquals([...q.values()], [60]);
});

Deno.test("KeyOrderQueue keeps its room: a long run of in-flight churn stays within the most ever held", () => {
  // Many entries in flight at once, each removed some pushes later: the arrays' length is
  // bounded by what was live plus the holes a compaction waits for, not by the keys pushed.
  const q = new KeyOrderQueue<number>();
  const live: number[] = [];
  for (let k = 1; k <= 100_000; k++) {
    q.push(k, k);
    live.push(k);
    if (live.length > 20) q.delete(live.shift()!);
  }
  assertEquals(q.size, 20);
  assertEquals(q.firstKey(), 100_000 - 19);
  assert(q.slots <= 2 * (20 + 32), `${q.slots} slots for 20 live entries`);
});
