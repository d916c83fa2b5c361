/**
 * The one door to libsodium (`libsodium-wrappers`, its WebAssembly build): ChaCha20-Poly1305
 * (IETF, RFC 8439) sealing in place and opening into one new array, synchronous.
 *
 * Why not `node:crypto`: under Deno its AES-256-GCM and ChaCha20-Poly1305 are Node-style cipher
 * objects built per call. On the 2-core machine (`bench/results/cost/aead_floors_output.txt`)
 * AES-256-GCM sealed a 200-byte datagram in 17.6 µs and opened it in 11.8, a 1,350-byte one in
 * 28.3 and 20.5; libsodium's own functions here took 2.7 / 1.7 and 7.9 / 6.2 µs. In the
 * simulator the cipher objects were a quarter of all CPU (issue 19).
 *
 * Owns the WebAssembly module's scratch memory: the key, the nonce and the message (associated
 * data, text, tag) are copied into one region of its heap, processed there and copied back.
 * Must not hold on to a caller's arrays, and knows nothing of datagrams (datagram_crypto.ts
 * does).
 */

import sodium from "libsodium-wrappers";
import { assert, fail } from "./assert.ts";

/** The raw functions this module calls (emscripten exports: pointers are heap offsets). */
interface SodiumModule {
  readonly HEAPU8: Uint8Array;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  _crypto_aead_chacha20poly1305_ietf_encrypt_detached(
    c: number,
    mac: number,
    macLenP: number,
    m: number,
    mLenLow: number,
    mLenHigh: number,
    ad: number,
    adLenLow: number,
    adLenHigh: number,
    nsec: number,
    npub: number,
    k: number,
  ): number;
  _crypto_aead_chacha20poly1305_ietf_decrypt_detached(
    m: number,
    nsec: number,
    c: number,
    cLenLow: number,
    cLenHigh: number,
    mac: number,
    ad: number,
    adLenLow: number,
    adLenHigh: number,
    npub: number,
    k: number,
  ): number;
}

export const CHACHA_KEY_BYTES = 32;
export const CHACHA_NONCE_BYTES = 12;
export const CHACHA_TAG_BYTES = 16;
/** Longest associated data the scratch region takes (a datagram's outer header is 28). */
const AD_BYTES_MAX = 64;

await sodium.ready;
const raw = (sodium as unknown as { libsodium: SodiumModule }).libsodium;
assert(
  typeof raw?._crypto_aead_chacha20poly1305_ietf_encrypt_detached === "function",
  "libsodium exposes ChaCha20-Poly1305",
);

// Scratch layout: key | nonce | room for associated data | text | tag. A message (associated
// data, text, tag, contiguous) is copied in whole so that its text starts at TEXT_AT. Grown
// (never shrunk) when a longer text comes; the heap itself may grow on a malloc, so HEAPU8 is
// read on every call.
const KEY_AT = 0;
const NONCE_AT = KEY_AT + CHACHA_KEY_BYTES;
const TEXT_AT = NONCE_AT + CHACHA_NONCE_BYTES + AD_BYTES_MAX;
let scratch = 0;
let scratchTextBytes = 0;

function scratchFor(textBytes: number, adBytes: number): number {
  if (!(Number.isInteger(adBytes) && adBytes <= AD_BYTES_MAX)) {
    fail(`associated data of ${adBytes} bytes exceeds ${AD_BYTES_MAX}`);
  }
  if (textBytes > scratchTextBytes) {
    if (scratch !== 0) raw._free(scratch);
    scratchTextBytes = Math.max(textBytes, 2_048);
    scratch = raw._malloc(TEXT_AT + scratchTextBytes + CHACHA_TAG_BYTES);
    assert(scratch !== 0, "libsodium heap allocation failed");
  }
  return scratch;
}

/**
 * Copies one call's key, nonce and message into the scratch region, the message's text at
 * TEXT_AT; returns the region's base pointer.
 */
function staged(
  key: Uint8Array,
  nonce: Uint8Array,
  message: Uint8Array,
  adBytes: number,
  textBytes: number,
): number {
  assert(key.length === CHACHA_KEY_BYTES && nonce.length === CHACHA_NONCE_BYTES, "key, nonce");
  const base = scratchFor(textBytes, adBytes);
  const heap = raw.HEAPU8;
  heap.set(key, base + KEY_AT);
  heap.set(nonce, base + NONCE_AT);
  heap.set(message, base + TEXT_AT - adBytes);
  return base;
}

/**
 * Seals `message` in place. It is laid out as `adBytes` of associated data, then the text,
 * then `CHACHA_TAG_BYTES` for the tag: the text is encrypted under `key` and `nonce`, the
 * associated data authenticated with it, and the tag written at the end. One copy in and one
 * out, and no view of the caller's bytes.
 */
export function chachaSealMessage(
  key: Uint8Array,
  nonce: Uint8Array,
  message: Uint8Array,
  adBytes: number,
): void {
  const textBytes = message.length - adBytes - CHACHA_TAG_BYTES;
  assert(adBytes >= 0 && textBytes >= 0, "a message holds its associated data and a tag");
  const base = staged(key, nonce, message, adBytes, textBytes);
  const text0 = base + TEXT_AT;
  const rc = raw._crypto_aead_chacha20poly1305_ietf_encrypt_detached(
    text0,
    text0 + textBytes,
    0,
    text0,
    textBytes,
    0,
    text0 - adBytes,
    adBytes,
    0,
    0,
    base + NONCE_AT,
    base + KEY_AT,
  );
  assert(rc === 0, "ChaCha20-Poly1305 encryption failed");
  message.set(raw.HEAPU8.subarray(text0, text0 + textBytes + CHACHA_TAG_BYTES), adBytes);
}

/**
 * Opens a message sealed as `chachaSealMessage` lays it out: a new array of its associated
 * data then its text in the clear (no tag), or undefined when the tag does not authenticate
 * the text and associated data under `key` and `nonce` (or the message is shorter than a tag).
 * Never changes `message`.
 */
export function chachaOpenMessage(
  key: Uint8Array,
  nonce: Uint8Array,
  message: Uint8Array,
  adBytes: number,
): Uint8Array | undefined {
  const textBytes = message.length - adBytes - CHACHA_TAG_BYTES;
  if (adBytes < 0 || textBytes < 0) return undefined;
  const base = staged(key, nonce, message, adBytes, textBytes);
  const text0 = base + TEXT_AT;
  const rc = raw._crypto_aead_chacha20poly1305_ietf_decrypt_detached(
    text0,
    0,
    text0,
    textBytes,
    0,
    text0 + textBytes,
    text0 - adBytes,
    adBytes,
    0,
    base + NONCE_AT,
    base + KEY_AT,
  );
  if (rc !== 0) return undefined;
  return raw.HEAPU8.slice(text0 - adBytes, text0 + textBytes);
}
