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

Deno.test("CatchupLog matches the model across its ring's growth, wrap-around and wide seqs", () => {
  // Many small records: the ring doubles several times, also once it has started evicting (its
  // head is then not slot 0) and wrapped, and every doubling moves the records and re-indexes
  // them. Each origin's seqs run forward from a base (1, or near 2^32 or 2^53) by steps that
  // repeat, go back or leave gaps, as replication and catch-up deliver them.
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 3_000 }),
      fc.constantFrom(1, 2 ** 32 - 200, Number.MAX_SAFE_INTEGER - 20_000),
      fc.array(
        fc.tuple(
          fc.constantFrom("a", "b", "c"),
          fc.integer({ min: -3, max: 20 }),
          fc.integer({ min: 0, max: 12 }),
        ),
        { maxLength: 600, size: "max" },
      ),
      (bytesMax, base, adds) => {
        const log = new CatchupLog(bytesMax);
        const model = new ModelLog(bytesMax);
        const last = new Map<string, number>();
        const added: Array<[string, number]> = [];
        for (const [i, [origin, step, size]] of adds.entries()) {
          const seq = Math.max(1, (last.get(origin) ?? base) + step);
          last.set(origin, seq);
          added.push([origin, seq]);
          const bytes = new Uint8Array(size).fill(i & 0xff);
          log.add(origin, seq, bytes);
          model.add(origin, seq, bytes);
        }
        assertEquals(log.bytes, model.bytes);
        assertEquals(log.evicted, model.evicted);
        assertEquals(log.records, model.records.size);
        for (const [origin, seq] of added) {
          assertEquals(log.get(origin, seq), model.records.get(`${origin}/${seq}`));
          assertEquals(log.floor(origin), model.floors.get(origin) ?? 0);
        }
        for (const origin of ["a", "b", "c"]) {
          const expected = [...model.records]
            .filter(([k]) => k.startsWith(`${origin}/`))
            .map(([k, v]) => [Number(k.split("/")[1]), v] as [number, Uint8Array])
            .sort((x, y) => x[0] - y[0]);
          assertEquals(log.collectSorted(origin, 1, Number.MAX_SAFE_INTEGER), expected);
        }
      },
    ),
    // Shrinking hundreds of adds took minutes; the seed and path fast-check prints replay the
    // failure as found.
    { numRuns: 100, endOnFailure: true },
  );
});

Deno.test("CatchupLog grows its ring after it wrapped, keeping every record where it finds it", () => {
  // 64 slots at first. 60 records of 10 bytes fill 600 bytes; 10 more evict the first 10, so
  // the head is slot 10 and the ring has wrapped; 10 empty records then make it double.
  const log = new CatchupLog(600);
  const record = (seq: number) => new Uint8Array(seq === 0 ? 0 : 10).fill(seq & 0xff);
  for (let seq = 1; seq <= 70; seq++) log.add("a", seq, record(seq));
  assertEquals(log.evicted, 10);
  for (let seq = 71; seq <= 80; seq++) log.add("b", seq, new Uint8Array(0));
  assertEquals(log.records, 70);
  for (let seq = 11; seq <= 70; seq++) assertEquals(log.get("a", seq), record(seq), `seq ${seq}`);
  for (let seq = 71; seq <= 80; seq++) assertEquals(log.get("b", seq), new Uint8Array(0));
  assertEquals(log.get("a", 10), undefined);
  assertEquals(log.collectSorted("a", 1, 100).map(([seq]) => seq)[0], 11);
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

Deno.test("CatchupLog still finds its records after its ring grew and wrapped", () => {
  const log = new CatchupLog(1000);
  for (let seq = 1; seq <= 20_000; seq++) {
    log.add(seq % 2 === 0 ? "a" : "b", seq, new Uint8Array(10).fill(seq & 0xff));
    // A record added before the ring last grew or wrapped is still found (here: 99 adds ago).
    if (seq > 99) {
      const old = seq - 99;
      assertEquals(log.get(old % 2 === 0 ? "a" : "b", old), new Uint8Array(10).fill(old & 0xff));
    }
  }
  assertEquals(log.records, 100);
  assertEquals(log.bytes, 1000);
  // 1,000 bytes of records span at most two 4-KiB slabs: the older ones were dropped.
  assert(log.slabBytes <= 2 * 4096, `${log.slabBytes} bytes of slabs held for 1,000 of records`);
  assertEquals(log.evicted, 19_900);
  assertEquals(log.floor("a"), 19_900);
  assertEquals(log.floor("b"), 19_899);
  for (let seq = 19_901; seq <= 20_000; seq++) {
    const origin = seq % 2 === 0 ? "a" : "b";
    assertEquals(log.get(origin, seq), new Uint8Array(10).fill(seq & 0xff), `seq ${seq}`);
  }
  assertEquals(log.get("a", 19_900), undefined);
  assertEquals(log.collectSorted("a", 1, 20_000).length, 50);
});
