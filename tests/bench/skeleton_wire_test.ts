import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  decodeEntries,
  encodeEntry,
  logRecords,
  packEntries,
  SKELETON_OVERHEAD_BYTES,
  type SkeletonEntry,
  SkeletonOpener,
  SkeletonSealer,
} from "../../src/bench/skeleton_wire.ts";
import { ClusterKeyring } from "../../src/transport/datagram_crypto.ts";
import { crc32c } from "../../src/wal/crc32c.ts";

const entryArb: fc.Arbitrary<SkeletonEntry> = fc.oneof(
  fc.record({
    kind: fc.constant("submit" as const),
    id: fc.string({ maxLength: 60 }),
    body: fc.uint8Array({ maxLength: 300 }),
  }),
  fc.record({ kind: fc.constant("vote" as const), id: fc.string({ maxLength: 60 }) }),
  fc.record({ kind: fc.constant("done" as const), id: fc.string({ maxLength: 60 }) }),
);

Deno.test("skeleton entries decode to what was encoded, in order", () => {
  fc.assert(fc.property(fc.array(entryArb, { maxLength: 8 }), (entries) => {
    const parts = entries.map(encodeEntry);
    const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      joined.set(p, at);
      at += p.length;
    }
    assertEquals(decodeEntries(joined), entries.map((e) => ({ ...e })));
  }));
});

Deno.test("a cut or unknown skeleton entry decodes to nothing, never to part of it", () => {
  const whole = encodeEntry({ kind: "submit", id: "job-1", body: new Uint8Array([1, 2, 3]) });
  for (let cut = 1; cut < whole.length; cut++) {
    assertEquals(decodeEntries(whole.subarray(0, cut)), undefined, `cut at ${cut}`);
  }
  const unknown = whole.slice();
  unknown[0] = 9;
  assertEquals(decodeEntries(unknown), undefined);
});

Deno.test("entries are packed in order into payloads no larger than the bound", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 1, max: 100 }), { maxLength: 40 }),
    fc.integer({ min: 100, max: 400 }),
    (sizes, bound) => {
      const entries = sizes.map((n, i) => new Uint8Array(n).fill(i % 256));
      const packed = packEntries(entries, bound);
      for (const payload of packed) {
        assert(payload.reduce((n, e) => n + e.length, 0) <= bound, "payload over the bound");
        assert(payload.length > 0, "an empty payload");
      }
      assertEquals(packed.flat(), entries);
    },
  ));
});

Deno.test("a sealed skeleton datagram opens under the cluster key only, and not once altered", () => {
  const key = "k".repeat(32);
  const sealer = new SkeletonSealer(new ClusterKeyring(key), 3);
  const entries: SkeletonEntry[] = [
    { kind: "submit", id: "a", body: new TextEncoder().encode("http://x/\n{}") },
    { kind: "vote", id: "b" },
  ];
  const datagram = sealer.seal(entries.map(encodeEntry));
  assertEquals(datagram.length, SKELETON_OVERHEAD_BYTES + 2 + 1 + 2 + 12 + 2 + 1);
  assertEquals(new SkeletonOpener(new ClusterKeyring(key)).open(datagram), { from: 3, entries });
  assertEquals(new SkeletonOpener(new ClusterKeyring("o".repeat(32))).open(datagram), undefined);
  for (const at of [0, 10, 24, 28, 35, datagram.length - 1]) {
    const altered = datagram.slice();
    altered[at]! ^= 1;
    assertEquals(new SkeletonOpener(new ClusterKeyring(key)).open(altered), undefined, `@${at}`);
  }
  // Two datagrams never share a nonce: the counter moves.
  const second = sealer.seal(entries.map(encodeEntry));
  assert(datagram.subarray(20, 28).some((b, i) => b !== second[20 + i]), "the counter moved");
});

Deno.test("log records carry each entry's length and CRC-32C", () => {
  const entries = [encodeEntry({ kind: "done", id: "x" }), encodeEntry({ kind: "vote", id: "yz" })];
  const bytes = logRecords(entries);
  const view = new DataView(bytes.buffer);
  assertEquals(view.getUint32(0, true), entries[0]!.length);
  assertEquals(view.getUint32(4, true), crc32c(entries[0]!));
  const second = 8 + entries[0]!.length;
  assertEquals(view.getUint32(second, true), entries[1]!.length);
  assertEquals(view.getUint32(second + 4, true), crc32c(entries[1]!));
  assertEquals(bytes.length, 16 + entries[0]!.length + entries[1]!.length);
});
