import { deepStrictEqual, equal } from "node:assert/strict";
import { createCipheriv, createDecipheriv } from "node:crypto";
import fc from "fast-check";
import { encodeHex as toHex } from "../../src/lib/hex.ts";
import { chachaOpenMessage, chachaSealMessage } from "../../src/lib/sodium.ts";

const fromHex = (hex: string) => Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16));
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 0x80 + i);
const NONCE = fromHex("070000004041424344454647");
const AD = fromHex("50515253c0c1c2c3c4c5c6c7");
const PLAINTEXT = new TextEncoder().encode(
  "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the " +
    "future, sunscreen would be it.",
);

/** A message as the two functions lay it out: associated data, text, room for the tag. */
function message(ad: Uint8Array, text: Uint8Array): Uint8Array {
  const m = new Uint8Array(ad.length + text.length + 16);
  m.set(ad);
  m.set(text, ad.length);
  return m;
}

Deno.test("sodium: ChaCha20-Poly1305 gives RFC 8439's AEAD test vector (§2.8.2)", () => {
  const sealed = message(AD, PLAINTEXT);
  chachaSealMessage(KEY, NONCE, sealed, AD.length);
  deepStrictEqual(sealed.subarray(0, AD.length), AD, "the associated data is left as it was");
  const textEnd = AD.length + PLAINTEXT.length;
  equal(toHex(sealed.subarray(textEnd)), "1ae10b594f09e26a7e902ecbd0600691");
  equal(toHex(sealed.subarray(AD.length, AD.length + 16)), "d31a8d34648e60db7b86afbc53ef7ec2");
  const opened = chachaOpenMessage(KEY, NONCE, sealed, AD.length);
  deepStrictEqual(opened, message(AD, PLAINTEXT).subarray(0, textEnd));
});

Deno.test("sodium: agrees with node:crypto's ChaCha20-Poly1305 both ways (property)", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.uint8Array({ minLength: 12, maxLength: 12 }),
      fc.uint8Array({ maxLength: 64 }),
      fc.uint8Array({ maxLength: 4_000 }),
      (key, nonce, ad, plaintext) => {
        const sealed = message(ad, plaintext);
        chachaSealMessage(key, nonce, sealed, ad.length);
        const cipher = createCipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
        cipher.setAAD(ad, { plaintextLength: plaintext.length });
        const expected = new Uint8Array(cipher.update(plaintext));
        cipher.final();
        const textEnd = ad.length + plaintext.length;
        deepStrictEqual(sealed.subarray(ad.length, textEnd), expected);
        const tag = sealed.slice(textEnd);
        deepStrictEqual(tag, new Uint8Array(cipher.getAuthTag()));
        const decipher = createDecipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
        decipher.setAAD(ad, { plaintextLength: plaintext.length });
        decipher.setAuthTag(tag);
        deepStrictEqual(new Uint8Array(decipher.update(expected)), plaintext);
        decipher.final();
        const before = sealed.slice();
        const opened = chachaOpenMessage(key, nonce, sealed, ad.length);
        deepStrictEqual(opened, message(ad, plaintext).subarray(0, textEnd));
        deepStrictEqual(sealed, before, "opening leaves the message as it was");
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("sodium: a changed bit in text, tag, associated data, nonce or key fails to open and leaves the message", () => {
  const sealed = message(AD, PLAINTEXT);
  chachaSealMessage(KEY, NONCE, sealed, AD.length);
  const flip = (a: Uint8Array, at: number) => {
    const b = a.slice();
    b[at]! ^= 1;
    return b;
  };
  const tagAt = sealed.length - 1;
  const cases: [string, Uint8Array, Uint8Array, Uint8Array][] = [
    ["text", KEY, NONCE, flip(sealed, AD.length + 7)],
    ["tag", KEY, NONCE, flip(sealed, tagAt)],
    ["associated data", KEY, NONCE, flip(sealed, 0)],
    ["nonce", KEY, flip(NONCE, 11), sealed.slice()],
    ["key", flip(KEY, 31), NONCE, sealed.slice()],
  ];
  for (const [what, key, nonce, m] of cases) {
    const before = m.slice();
    equal(chachaOpenMessage(key, nonce, m, AD.length), undefined, what);
    deepStrictEqual(m, before, `${what}: message untouched`);
  }
  equal(chachaOpenMessage(KEY, NONCE, sealed.subarray(0, 15), 0), undefined, "shorter than a tag");
  equal(chachaOpenMessage(KEY, NONCE, sealed.subarray(0, AD.length + 15), AD.length), undefined);
});

Deno.test("sodium: a text longer than the scratch region grows it and still round-trips", () => {
  for (const bytes of [0, 1, 2_048, 70_000, 100]) {
    const plaintext = Uint8Array.from({ length: bytes }, (_, i) => i & 0xff);
    const sealed = message(AD, plaintext);
    chachaSealMessage(KEY, NONCE, sealed, AD.length);
    const opened = chachaOpenMessage(KEY, NONCE, sealed, AD.length);
    deepStrictEqual(
      opened,
      message(AD, plaintext).subarray(0, AD.length + bytes),
      `${bytes} bytes`,
    );
  }
});
