import { assertEquals } from "../assert.ts";
import fc from "fast-check";
import { MinHeap } from "../../src/lib/min_heap.ts";

Deno.test("MinHeap pops any pushed sequence in sorted order", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 200 }), (xs) => {
      const heap = new MinHeap<number>((a, b) => a < b);
      for (const x of xs) heap.push(x);
      assertEquals(heap.size, xs.length);
      const out: number[] = [];
      for (let x = heap.pop(); x !== undefined; x = heap.pop()) out.push(x);
      assertEquals(out, [...xs].sort((a, b) => a - b));
      assertEquals(heap.peek(), undefined);
    }),
  );
});

Deno.test("MinHeap keeps order when pushes and pops interleave", () => {
  fc.assert(
    fc.property(fc.array(fc.option(fc.nat(100), { nil: undefined }), { maxLength: 300 }), (ops) => {
      const heap = new MinHeap<number>((a, b) => a < b);
      const model: number[] = [];
      for (const op of ops) {
        if (op === undefined) {
          model.sort((a, b) => a - b);
          assertEquals(heap.pop(), model.shift());
        } else {
          heap.push(op);
          model.push(op);
        }
      }
      assertEquals(heap.size, model.length);
    }),
  );
});
