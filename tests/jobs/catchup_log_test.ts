/**
 * The catch-up log (catchup_log.ts): records kept by origin and seq up to a byte bound, oldest
 * evicted first, copied into slabs rather than kept as the caller's views.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { CATCHUP_SLAB_BYTES_MAX, CatchupLog } from "../../src/jobs/catchup_log.ts";

/** The log as the plainest code would keep it: a map and an eviction queue. */
class ModelLog {
  readonly records = new Map<string, Uint8Array>();
  readonly order: Array<[string, number, number]> = [];
  readonly floors = new Map<string, number>();
  bytes = 0;
  evicted = 0;

  constructor(readonly bytesMax: number) {}

  add(origin: string, seq: number, bytes: Uint8Array): void {
    const key = `${origin}/${seq}`;
    if (this.records.has(key) || seq <= (this.floors.get(origin) ?? 0)) return;
    this.records.set(key, bytes.slice());
    this.order.push([origin, seq, bytes.length]);
    this.bytes += bytes.length;
    while (this.bytes > this.bytesMax && this.order.length > 0) {
      const [o, s, n] = this.order.shift()!;
      this.records.delete(`${o}/${s}`);
      this.bytes -= n;
      this.evicted++;
      if (s > (this.floors.get(o) ?? 0)) this.floors.set(o, s);
    }
  }
}

Deno.test("CatchupLog keeps, evicts and serves records exactly as a map and a queue would", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 40_000 }),
      fc.array(
        fc.tuple(
          fc.constantFrom("a", "b", "c"),
          fc.integer({ min: 1, max: 60 }),
          fc.integer({ min: 0, max: 3_000 }),
        ),
        // `size: "max"`: fast-check would otherwise draw at most ten adds.
        { maxLength: 120, size: "max" },
      ),
      (bytesMax, adds) => {
        const log = new CatchupLog(bytesMax);
        const model = new ModelLog(bytesMax);
        for (const [i, [origin, seq, size]] of adds.entries()) {
          const bytes = new Uint8Array(size).map((_, k) => (i * 31 + k) & 0xff);
          log.add(origin, seq, bytes);
          model.add(origin, seq, bytes);
          bytes.fill(0); // the caller's buffer is reused: the log kept a copy
        }
        assertEquals(log.bytes, model.bytes);
        assertEquals(log.evicted, model.evicted);
        assertEquals(log.records, model.records.size);
        for (const origin of ["a", "b", "c"]) {
          assertEquals(log.floor(origin), model.floors.get(origin) ?? 0);
          for (let seq = 1; seq <= 60; seq++) {
            assertEquals(log.get(origin, seq), model.records.get(`${origin}/${seq}`));
          }
          const sorted = log.collectSorted(origin, 1, 60);
          const expected = [...model.records]
            .filter(([k]) => k.startsWith(`${origin}/`))
            .map(([k, v]) => [Number(k.split("/")[1]), v] as [number, Uint8Array])
            .sort((x, y) => x[0] - y[0]);
          assertEquals(sorted, expected);
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("CatchupLog copies a record out of its datagram, so it keeps no datagram alive", () => {
  const datagram = new Uint8Array(1400).fill(7);
  const record = datagram.subarray(100, 160);
  const log = new CatchupLog(1 << 20);
  log.add("a", 1, record);
  const kept = log.get("a", 1)!;
  assertEquals(kept, record);
  assert(kept.buffer !== datagram.buffer, "the kept record is a view into the datagram");
  datagram.fill(0);
  assertEquals(kept[0], 7);
});

Deno.test("CatchupLog gives a record larger than a slab a slab of its own", () => {
  const big = new Uint8Array(CATCHUP_SLAB_BYTES_MAX + 10).fill(3);
  const log = new CatchupLog(64 * 1024 * 1024);
  log.add("a", 1, new Uint8Array([1, 2, 3]));
  log.add("a", 2, big);
  log.add("a", 3, new Uint8Array([9]));
  assertEquals(log.get("a", 1), new Uint8Array([1, 2, 3]));
  assertEquals(log.get("a", 2)!.length, big.length);
  assertEquals(log.get("a", 2)![big.length - 1], 3);
  assertEquals(log.get("a", 3), new Uint8Array([9]));
});

Deno.test("CatchupLog still finds its records after the eviction order was compacted", () => {
  const log = new CatchupLog(1000);
  for (let seq = 1; seq <= 20_000; seq++) {
    log.add(seq % 2 === 0 ? "a" : "b", seq, new Uint8Array(10).fill(seq & 0xff));
    // A record added before the last compaction is still found (here: 99 adds ago).
    if (seq > 99) {
      const old = seq - 99;
      assertEquals(log.get(old % 2 === 0 ? "a" : "b", old), new Uint8Array(10).fill(old & 0xff));
    }
  }
  assertEquals(log.records, 100);
  assertEquals(log.bytes, 1000);
  assertEquals(log.evicted, 19_900);
  assertEquals(log.floor("a"), 19_900);
  assertEquals(log.floor("b"), 19_899);
  for (let seq = 19_901; seq <= 20_000; seq++) {
    const origin = seq % 2 === 0 ? "a" : "b";
    assertEquals(log.get(origin, seq), new Uint8Array(10).fill(seq & 0xff), `seq ${seq}`);
  }
  assertEquals(log.get("a", 19_900), undefined);
  const out: Uint8Array[] = [];
  log.collect("a", 1, 20_000, out);
  assertEquals(out.length, 50);
});
