import fc from "fast-check";
import { assert, assertEquals, assertThrows } from "../assert.ts";
import { StringCache } from "../../src/lib/string_cache.ts";
import { ByteReader, ByteWriter, DecodeError } from "../../src/lib/bytes.ts";
import { AssertionError } from "../../src/lib/assert.ts";

/** Each input as a length-prefixed field, as the codecs write them. */
function fields(inputs: readonly Uint8Array[]): Uint8Array {
  const w = new ByteWriter();
  for (const bytes of inputs) w.bytes(bytes);
  return w.finish();
}

/** What `str` makes of a field: the string, or the decode error's message. */
function plainly(read: () => string): string {
  try {
    return `ok:${read()}`;
  } catch (e) {
    if (e instanceof DecodeError) return `error:${e.message}`;
    throw e;
  }
}

// Few slots and short fields from a small alphabet: the same bytes come back often (hits), and
// different fields of one length share slots (collisions). 0xff is never UTF-8.
const fieldArb = fc.uint8Array({ minLength: 0, maxLength: 6 }).map((b) =>
  b.map((x) => [0x61, 0x62, 0x63, 0xc3, 0xa9, 0xff][x % 6]!)
);

Deno.test("a StringCache decodes every field to what ByteReader.str makes of it, hit or miss", () => {
  let hits = 0;
  fc.assert(
    fc.property(fc.array(fieldArb, { minLength: 50, maxLength: 400 }), (inputs) => {
      const cache = new StringCache(4, 5);
      const bytes = fields(inputs);
      const cached = new ByteReader(bytes);
      const plain = new ByteReader(bytes);
      for (let i = 0; i < inputs.length; i++) {
        const want = plainly(() => plain.str(100));
        assertEquals(plainly(() => cached.strCached(100, cache)), want, `field ${i}`);
      }
      assertEquals(cached.offset, plain.offset);
      hits += cache.hits;
    }),
    { numRuns: 200 },
  );
  assert(hits > 1_000, `the runs hit the cache (${hits} hits), not only missed it`);
});

Deno.test("a StringCache shares one string per field, keeps its own copy of the bytes, and bypasses long fields", () => {
  const cache = new StringCache(1, 16); // one slot: every field lands in it
  let decoded = 0;
  const decode = (b: Uint8Array, start: number, n: number) => {
    decoded++;
    return new TextDecoder().decode(b.subarray(start, start + n));
  };
  const buffer = new TextEncoder().encode("10.0.0.1:7000");
  const first = cache.get(buffer, 0, buffer.length, decode);
  assertEquals(
    [cache.get(buffer.slice(), 0, buffer.length, decode), decoded],
    [first, 1],
    "a hit: no decode",
  );
  // The caller reuses its buffer: the cache must have keyed a copy, not the buffer itself.
  buffer[0] = 0x32;
  assertEquals([cache.get(buffer, 0, buffer.length, decode), decoded], ["20.0.0.1:7000", 2]);
  // A field read in place from the middle of a larger buffer: the same field, the same string.
  const framed = new TextEncoder().encode("xx20.0.0.1:7000yy");
  assertEquals([cache.get(framed, 2, 13, decode), decoded], ["20.0.0.1:7000", 2]);
  // Bytes around the field are not part of it: one more at its end is another field.
  assertEquals([cache.get(framed, 2, 14, decode), decoded], ["20.0.0.1:7000y", 3]);
  const long = new TextEncoder().encode("http://a.test/a/very/long/path");
  assertEquals(
    [cache.get(long, 0, long.length, () => "x"), cache.get(long, 0, long.length, () => "y")],
    ["x", "y"],
  );
  assertEquals([cache.hits, cache.misses], [2, 3], "a field past bytesMax is neither");
  assertThrows(() => new StringCache(3, 16), AssertionError);
});
