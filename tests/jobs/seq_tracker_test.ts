import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { SeqTracker, summaryHas } from "../../src/jobs/seq_tracker.ts";

Deno.test("SeqTracker agrees with a set model under any additions and ranges", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 4 })),
        { maxLength: 40 },
      ),
      (ops) => {
        const t = new SeqTracker();
        const model = new Set<number>();
        for (const [from, span] of ops) {
          const fresh = [...Array(span + 1).keys()].some((i) => !model.has(from + i));
          const changed = span === 0 ? t.add("o", from) : t.addRange("o", from, from + span);
          assertEquals(changed, fresh, `add [${from}, ${from + span}] reports whether it was new`);
          for (let i = 0; i <= span; i++) model.add(from + i);
        }
        let contiguous = 0;
        while (model.has(contiguous + 1)) contiguous++;
        assertEquals(t.contiguous("o"), contiguous);
        assertEquals(t.max("o"), model.size === 0 ? 0 : Math.max(...model));
        for (let seq = 1; seq <= 70; seq++) {
          assertEquals(t.has("o", seq), model.has(seq), `has(${seq})`);
          assertEquals(summaryHas(t.summary(1000), "o", seq), model.has(seq), `summary has ${seq}`);
        }
        const gaps = t.gaps("o", 70);
        for (let seq = 1; seq <= 70; seq++) {
          const inGap = gaps.some(([a, b]) => seq >= a && seq <= b);
          assertEquals(inGap, !model.has(seq), `gap at ${seq}`);
        }
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("SeqTracker.merge takes a summary's coverage", () => {
  const a = new SeqTracker();
  a.addRange("x", 1, 10);
  a.add("x", 15);
  const b = new SeqTracker();
  b.merge(a.summary());
  assertEquals(b.contiguous("x"), 10);
  assert(b.has("x", 15) && !b.has("x", 14));
});
