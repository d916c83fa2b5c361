/**
 * The catch-up log's per-origin index (seq_slot_index.ts): an open-addressing table of ring
 * slots, checked against a `Map` over adds and removes, across growth, shrinking and the
 * backward shift that keeps every probe run unbroken.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { SeqSlotIndex } from "../../src/jobs/seq_slot_index.ts";

/** Seqs as the log sees them: runs of consecutive seqs, gaps, and seqs past 2^32. */
const seqArb = fc.oneof(
  fc.integer({ min: 1, max: 64 }),
  fc.integer({ min: 1, max: 5_000 }),
  fc.integer({ min: 2 ** 32 - 8, max: 2 ** 32 + 8 }),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
);

Deno.test("SeqSlotIndex finds, inserts and removes exactly as a Map would", () => {
  fc.assert(
    fc.property(
      // `size: "max"`: fast-check would otherwise keep most arrays near ten operations, too few
      // to grow a table past its first capacity and shrink it back.
      fc.array(
        fc.tuple(fc.constantFrom("insert", "remove-held", "remove"), seqArb, fc.nat()),
        { maxLength: 600, size: "max" },
      ),
      (ops) => {
        const index = new SeqSlotIndex();
        const model = new Map<number, number>();
        // The ring's seq array: the index reads a slot's seq back from it.
        const seqs = new Float64Array(ops.length + 1);
        let nextSlot = 0;
        for (const [op, drawn, pick] of ops) {
          // Half the removes take a seq held, so tables shrink as well as grow.
          const held = [...model.keys()];
          const seq = op === "remove-held" && held.length > 0 ? held[pick % held.length]! : drawn;
          if (op === "insert") {
            if (model.has(seq)) continue; // the log never indexes a seq it holds twice
            const slot = nextSlot++;
            seqs[slot] = seq;
            index.insert(seq, slot, seqs);
            model.set(seq, slot);
          } else {
            assertEquals(index.remove(seq, seqs), model.delete(seq));
          }
          assertEquals(index.size, model.size);
          assert(index.size * 2 <= index.capacity, "the table is more than half full");
          assert(
            index.capacity <= 8 || index.size * 8 >= index.capacity,
            `a table of ${index.capacity} cells for ${index.size} entries did not shrink`,
          );
        }
        for (const [, seq] of ops) assertEquals(index.find(seq, seqs), model.get(seq) ?? -1);
        for (const [seq, slot] of model) assertEquals(index.find(seq, seqs), slot);
        const visited: number[] = [];
        index.forEach((slot) => visited.push(slot));
        assertEquals(visited.sort((a, b) => a - b), [...model.values()].sort((a, b) => a - b));
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("SeqSlotIndex keeps every entry of a long run reachable as its head is removed", () => {
  // The catch-up log's own pattern: consecutive seqs added, the oldest removed, at the bound.
  const index = new SeqSlotIndex();
  const seqs = new Float64Array(20_000);
  for (let seq = 1; seq <= 20_000; seq++) {
    seqs[seq - 1] = seq;
    index.insert(seq, seq - 1, seqs);
    if (seq > 1_000) assert(index.remove(seq - 1_000, seqs), `seq ${seq - 1_000} not found`);
  }
  assertEquals(index.size, 1_000);
  for (let seq = 19_001; seq <= 20_000; seq++) assertEquals(index.find(seq, seqs), seq - 1);
  assertEquals(index.find(19_000, seqs), -1);
});
