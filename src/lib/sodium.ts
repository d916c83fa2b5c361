/**
 * The one door to libsodium (`libsodium-wrappers`, its WebAssembly build): ChaCha20-Poly1305
 * (IETF, RFC 8439) sealing and opening in place, synchronous, with no allocation per call.
 *
 * Why not `node:crypto`: under Deno its AES-256-GCM and ChaCha20-Poly1305 are Node-style cipher
 * objects built per call. On the 2-core machine (`bench/results/cost/aead_floors_output.txt`)
 * AES-256-GCM sealed a 200-byte datagram in 17.6 µs and opened it in 11.8, a 1,350-byte one in
 * 28.3 and 20.5; libsodium's own functions here took 2.7 / 1.7 and 7.9 / 6.2 µs. In the
 * simulator the cipher objects were a quarter of all CPU (issue 19).
 *
 * Owns the WebAssembly module's scratch memory: keys, nonces, associated data and the text
 * are copied into one region of its heap, processed there and copied back. Must not hold on
 * to a caller's arrays, and knows nothing of datagrams (datagram_crypto.ts does).
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

// Scratch layout: key | nonce | tag | associated data | text. Grown (never shrunk) when a
// longer text comes; the heap itself may grow on a malloc, so HEAPU8 is read on every call.
const KEY_AT = 0;
const NONCE_AT = KEY_AT + CHACHA_KEY_BYTES;
const TAG_AT = NONCE_AT + CHACHA_NONCE_BYTES;
const AD_AT = TAG_AT + CHACHA_TAG_BYTES;
const TEXT_AT = AD_AT + AD_BYTES_MAX;
let scratch = 0;
let scratchTextBytes = 0;

function scratchFor(textBytes: number, adBytes: number): number {
  if (!(adBytes <= AD_BYTES_MAX)) {
    fail(`associated data of ${adBytes} bytes exceeds ${AD_BYTES_MAX}`);
  }
  if (textBytes > scratchTextBytes) {
    if (scratch !== 0) raw._free(scratch);
    scratchTextBytes = Math.max(textBytes, 2_048);
    scratch = raw._malloc(TEXT_AT + scratchTextBytes);
    assert(scratch !== 0, "libsodium heap allocation failed");
  }
  return scratch;
}

/** Copies one call's inputs into the scratch region; returns its base pointer. */
function staged(
  key: Uint8Array,
  nonce: Uint8Array,
  ad: Uint8Array,
  text: Uint8Array,
  tag: Uint8Array | undefined,
): number {
  assert(key.length === CHACHA_KEY_BYTES && nonce.length === CHACHA_NONCE_BYTES, "key, nonce");
  const base = scratchFor(text.length, ad.length);
  const heap = raw.HEAPU8;
  heap.set(key, base + KEY_AT);
  heap.set(nonce, base + NONCE_AT);
  heap.set(ad, base + AD_AT);
  if (tag !== undefined) heap.set(tag, base + TAG_AT);
  heap.set(text, base + TEXT_AT);
  return base;
}

/**
 * Encrypts `text` in place under `key` and `nonce`, authenticating `ad` too, and writes the
 * 16-byte tag into `tag`.
 */
export function chachaSealInPlace(
  key: Uint8Array,
  nonce: Uint8Array,
  ad: Uint8Array,
  text: Uint8Array,
  tag: Uint8Array,
): void {
  assert(tag.length === CHACHA_TAG_BYTES, "tag length");
  const base = staged(key, nonce, ad, text, undefined);
  const text0 = base + TEXT_AT;
  const rc = raw._crypto_aead_chacha20poly1305_ietf_encrypt_detached(
    text0,
    base + TAG_AT,
    0,
    text0,
    text.length,
    0,
    base + AD_AT,
    ad.length,
    0,
    0,
    base + NONCE_AT,
    base + KEY_AT,
  );
  assert(rc === 0, "ChaCha20-Poly1305 encryption failed");
  const heap = raw.HEAPU8;
  text.set(heap.subarray(text0, text0 + text.length));
  tag.set(heap.subarray(base + TAG_AT, base + TAG_AT + CHACHA_TAG_BYTES));
}

/**
 * Decrypts `text` in place when `tag` authenticates it and `ad` under `key` and `nonce`, and
 * says whether it did; on false `text` is left as it was.
 */
export function chachaOpenInPlace(
  key: Uint8Array,
  nonce: Uint8Array,
  ad: Uint8Array,
  text: Uint8Array,
  tag: Uint8Array,
): boolean {
  if (tag.length !== CHACHA_TAG_BYTES) return false;
  const base = staged(key, nonce, ad, text, tag);
  const text0 = base + TEXT_AT;
  const rc = raw._crypto_aead_chacha20poly1305_ietf_decrypt_detached(
    text0,
    0,
    text0,
    text.length,
    0,
    base + TAG_AT,
    base + AD_AT,
    ad.length,
    0,
    base + NONCE_AT,
    base + KEY_AT,
  );
  if (rc !== 0) return false;
  const heap = raw.HEAPU8;
  text.set(heap.subarray(text0, text0 + text.length));
  return true;
}
