import fc from "fast-check";
import { assertEquals, assertThrows } from "../assert.ts";
import { ByteReader, ByteWriter, DecodeError } from "../../src/lib/bytes.ts";
import { AssertionError } from "../../src/lib/assert.ts";

/** What a string's UTF-8 bytes decode to, a leading U+FEFF kept. */
const KEEP_BOM = new TextDecoder("utf-8", { ignoreBOM: true });
const STRICT = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** `bytes` as a `str` field: a u32 length, then the bytes. */
function strField(bytes: Uint8Array): Uint8Array {
  const field = new Uint8Array(4 + bytes.length);
  new DataView(field.buffer).setUint32(0, bytes.length);
  field.set(bytes, 4);
  return field;
}

Deno.test("ByteReader.str reads back every string ByteWriter.str wrote, ASCII or not, short or long", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.string({ unit: "grapheme", maxLength: 100 }),
          fc.string({ unit: "binary", maxLength: 300 }),
        ),
        { maxLength: 8 },
      ),
      (strings) => {
        const w = new ByteWriter(16);
        for (const s of strings) w.str(s);
        const r = new ByteReader(w.finish());
        // A lone surrogate is written as U+FFFD (the encoder's rule), so compare with that.
        const expected = strings.map((s) => KEEP_BOM.decode(new TextEncoder().encode(s)));
        assertEquals(strings.map(() => r.str(1 << 20)), expected);
        r.end();
      },
    ),
  );
});

Deno.test("ByteReader.str refuses bytes that are not UTF-8, short or long", () => {
  for (const bad of [[0x61, 0xff], [0xc3], [0x80, 0x61], Array(300).fill(0x61).concat([0xfe])]) {
    assertThrows(() => new ByteReader(strField(Uint8Array.from(bad))).str(1000), DecodeError);
  }
});

Deno.test("ByteReader.str keeps a leading U+FEFF and a real U+FFFD, at every length", () => {
  for (
    const s of [
      "\uFEFF",
      "\uFEFFabc",
      "\uFEFF" + "x".repeat(300),
      // A real U+FFFD sends the decoding through the fatal decoder: it must keep the U+FEFF too.
      "\uFEFFa\uFFFD",
      "a\uFFFDb",
      "é\uFFFD".repeat(200),
    ]
  ) {
    const w = new ByteWriter(16);
    w.str(s);
    assertEquals(new ByteReader(w.finish()).str(1 << 20), s);
  }
});

Deno.test("ByteReader.str decodes any bytes as the fatal decoder does, or refuses them as it does", () => {
  // Bytes near UTF-8: valid sequences, lone continuation and lead bytes, overlongs, surrogates.
  const unit = fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }),
    fc.constantFrom(0x80, 0xbf, 0xc0, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xed, 0xa0, 0xef, 0xbb),
    fc.constantFrom(0xbf, 0xbd, 0xf0, 0x9f, 0x98, 0x80, 0xf4, 0x90, 0xff),
  );
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 400 }), (units) => {
      const bytes = Uint8Array.from(units);
      let expected: string | undefined;
      try {
        expected = STRICT.decode(bytes);
      } catch {
        expected = undefined;
      }
      const reader = new ByteReader(strField(bytes));
      if (expected === undefined) assertThrows(() => reader.str(1 << 20), DecodeError);
      else assertEquals(reader.str(1 << 20), expected);
    }),
    { numRuns: 2000 },
  );
});

/** The message of the `DecodeError` `read` throws ("" if it throws none). */
function plainError(read: () => unknown): string {
  try {
    read();
    return "";
  } catch (e) {
    if (e instanceof DecodeError) return e.message;
    throw e;
  }
}

Deno.test("ByteReader.lastRead reads the part just read, and nothing past it", () => {
  const w = new ByteWriter(16);
  w.bytes(new ByteWriter(8).u32(7).u8(1).finish()).bytes(new ByteWriter(8).u32(9).finish());
  const r = new ByteReader(w.finish());
  const first = r.bytes(100);
  const inner = r.lastRead(first.length);
  assertEquals(inner.u32(), 7);
  // The part's trailing byte is its own, and the next part is not its to read.
  assertEquals(plainError(() => inner.end()), "1 trailing bytes");
  assertEquals(inner.u8(), 1);
  inner.end();
  assertEquals(plainError(() => inner.u8()), "truncated");
  assertEquals(inner.remaining, 0);
  // The outer reader went on past the part, untouched by the inner one's reads.
  const second = r.lastRead(r.bytes(100).length);
  assertEquals(second.u32(), 9);
  r.end();
  assertThrows(() => r.lastRead(r.offset + 1), AssertionError);
  // A part's own part: never before where the part starts (the bytes before are not its).
  const outer = new ByteReader(w.finish());
  outer.bytes(100);
  const part = outer.lastRead(outer.bytes(100).length);
  assertEquals(part.u32(), 9);
  assertThrows(() => part.lastRead(part.offset), AssertionError);
  assertEquals(part.lastRead(4).u32(), 9, "the part's own last 4 bytes");
  // Bounds and a view given by hand are checked, not trusted.
  const five = new Uint8Array(5);
  assertThrows(() => new ByteReader(five, undefined, 0, 8), AssertionError);
  assertThrows(() => new ByteReader(five, undefined, 3, 2), AssertionError);
  assertThrows(() => new ByteReader(five, new DataView(new ArrayBuffer(5))), AssertionError);
});
