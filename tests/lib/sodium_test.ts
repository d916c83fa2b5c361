import { deepStrictEqual, equal } from "node:assert/strict";
import { createCipheriv, createDecipheriv } from "node:crypto";
import fc from "fast-check";
import { encodeHex as toHex } from "../../src/lib/hex.ts";
import { chachaOpenInPlace, chachaSealInPlace } from "../../src/lib/sodium.ts";

const fromHex = (hex: string) => Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16));
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 0x80 + i);
const NONCE = fromHex("070000004041424344454647");
const AD = fromHex("50515253c0c1c2c3c4c5c6c7");
const PLAINTEXT = new TextEncoder().encode(
  "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the " +
    "future, sunscreen would be it.",
);

Deno.test("sodium: ChaCha20-Poly1305 gives RFC 8439's AEAD test vector (§2.8.2)", () => {
  const text = PLAINTEXT.slice();
  const tag = new Uint8Array(16);
  chachaSealInPlace(KEY, NONCE, AD, text, tag);
  equal(toHex(tag), "1ae10b594f09e26a7e902ecbd0600691");
  equal(toHex(text.subarray(0, 16)), "d31a8d34648e60db7b86afbc53ef7ec2");
  equal(chachaOpenInPlace(KEY, NONCE, AD, text, tag), true);
  deepStrictEqual(text, PLAINTEXT);
});

Deno.test("sodium: agrees with node:crypto's ChaCha20-Poly1305 both ways (property)", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.uint8Array({ minLength: 12, maxLength: 12 }),
      fc.uint8Array({ maxLength: 64 }),
      fc.uint8Array({ maxLength: 4_000 }),
      (key, nonce, ad, plaintext) => {
        const text = plaintext.slice();
        const tag = new Uint8Array(16);
        chachaSealInPlace(key, nonce, ad, text, tag);
        const cipher = createCipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
        cipher.setAAD(ad, { plaintextLength: plaintext.length });
        const expected = new Uint8Array(cipher.update(plaintext));
        cipher.final();
        deepStrictEqual(text, expected);
        deepStrictEqual(tag, new Uint8Array(cipher.getAuthTag()));
        const decipher = createDecipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
        decipher.setAAD(ad, { plaintextLength: plaintext.length });
        decipher.setAuthTag(tag);
        deepStrictEqual(new Uint8Array(decipher.update(text)), plaintext);
        decipher.final();
        equal(chachaOpenInPlace(key, nonce, ad, text, tag), true);
        deepStrictEqual(text, plaintext);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("sodium: a changed bit in text, tag, associated data, nonce or key fails to open and leaves the text", () => {
  const sealed = PLAINTEXT.slice();
  const tag = new Uint8Array(16);
  chachaSealInPlace(KEY, NONCE, AD, sealed, tag);
  const flip = (a: Uint8Array, at: number) => {
    const b = a.slice();
    b[at]! ^= 1;
    return b;
  };
  const cases: [string, Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array][] = [
    ["text", KEY, NONCE, AD, flip(sealed, 7), tag],
    ["tag", KEY, NONCE, AD, sealed.slice(), flip(tag, 15)],
    ["associated data", KEY, NONCE, flip(AD, 0), sealed.slice(), tag],
    ["nonce", KEY, flip(NONCE, 11), AD, sealed.slice(), tag],
    ["key", flip(KEY, 31), NONCE, AD, sealed.slice(), tag],
  ];
  for (const [what, key, nonce, ad, text, t] of cases) {
    const before = text.slice();
    equal(chachaOpenInPlace(key, nonce, ad, text, t), false, what);
    deepStrictEqual(text, before, `${what}: text untouched`);
  }
  equal(chachaOpenInPlace(KEY, NONCE, AD, sealed.slice(), tag.subarray(0, 15)), false, "short tag");
});

Deno.test("sodium: a text longer than the scratch region grows it and still round-trips", () => {
  for (const bytes of [0, 1, 2_048, 70_000, 100]) {
    const plaintext = Uint8Array.from({ length: bytes }, (_, i) => i & 0xff);
    const text = plaintext.slice();
    const tag = new Uint8Array(16);
    chachaSealInPlace(KEY, NONCE, AD, text, tag);
    equal(chachaOpenInPlace(KEY, NONCE, AD, text, tag), true, `${bytes} bytes`);
    deepStrictEqual(text, plaintext);
  }
});
