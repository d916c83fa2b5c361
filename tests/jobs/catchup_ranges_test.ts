import fc from "fast-check";
import { assertEquals } from "../assert.ts";
import { missingRanges, SeqTracker, summaryHas } from "../../src/jobs/seq_tracker.ts";
import { CatchupLog } from "../../src/jobs/catchup_log.ts";

/** What a sync reply ships for one origin, the way it was computed before: seq by seq. */
function naive(log: CatchupLog, theirs: SeqTracker, from: number, to: number): number[] {
  const out: number[] = [];
  for (let seq = from; seq <= to; seq++) {
    if (summaryHas(theirs.summary(1000), "o", seq)) continue;
    if (log.get("o", seq) !== undefined) out.push(seq);
  }
  return out;
}

Deno.test("missingRanges and CatchupLog.collect ship exactly what the seq-by-seq walk did", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 80 }), fc.integer({ min: 0, max: 6 })), {
        maxLength: 20,
      }),
      fc.uniqueArray(fc.integer({ min: 1, max: 90 }), { maxLength: 40 }),
      fc.integer({ min: 1, max: 90 }),
      fc.integer({ min: 0, max: 90 }),
      (theirRanges, logged, from, span) => {
        const theirs = new SeqTracker();
        for (const [a, n] of theirRanges) theirs.addRange("o", a, a + n);
        const log = new CatchupLog(1 << 20);
        for (const seq of logged) log.add("o", seq, new Uint8Array([seq]));
        const to = from + span;
        const shipped: Uint8Array[] = [];
        const held = theirs.summary(1000).find((h) => h.origin === "o");
        for (const [a, b] of missingRanges(held, from, to)) log.collect("o", a, b, shipped);
        assertEquals(shipped.map((b) => b[0]!).sort((x, y) => x - y), naive(log, theirs, from, to));
      },
    ),
    { numRuns: 500 },
  );
});
