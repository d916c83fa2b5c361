import { assertEquals } from "../assert.ts";
import fc from "fast-check";
import { crc32c, crc32cUpdate } from "../../src/wal/crc32c.ts";

Deno.test("crc32c matches the published check values", () => {
  const enc = new TextEncoder();
  assertEquals(crc32c(enc.encode("123456789")), 0xe3069283);
  assertEquals(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assertEquals(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assertEquals(crc32c(new Uint8Array(0)), 0);
});

Deno.test("crc32cUpdate over split ranges equals one pass", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(), (bytes, cut) => {
      const at = bytes.length === 0 ? 0 : cut % (bytes.length + 1);
      assertEquals(crc32cUpdate(crc32cUpdate(0, bytes, 0, at), bytes, at), crc32c(bytes));
    }),
  );
});
