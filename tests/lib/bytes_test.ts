import fc from "fast-check";
import { assertEquals, assertThrows } from "../assert.ts";
import { ByteReader, ByteWriter, DecodeError } from "../../src/lib/bytes.ts";

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
        const expected = strings.map((s) => new TextDecoder().decode(new TextEncoder().encode(s)));
        assertEquals(strings.map(() => r.str(1 << 20)), expected);
        r.end();
      },
    ),
  );
});

Deno.test("ByteReader.str refuses bytes that are not UTF-8, short or long", () => {
  for (const bad of [[0x61, 0xff], [0xc3], [0x80, 0x61], Array(300).fill(0x61).concat([0xfe])]) {
    const bytes = new Uint8Array(4 + bad.length);
    new DataView(bytes.buffer).setUint32(0, bad.length);
    bytes.set(bad, 4);
    assertThrows(() => new ByteReader(bytes).str(1000), DecodeError);
  }
});
