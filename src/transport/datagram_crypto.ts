/**
 * Datagram confidentiality and integrity: every datagram is sealed with ChaCha20-Poly1305
 * (IETF, RFC 8439) under a key derived from the cluster key, so SUBMIT records (webhook
 * payloads, signing secrets) are unreadable on the path and a forged or altered datagram fails
 * to open.
 *
 * Owns key derivation and sealing/opening; it knows the outer header's layout (frame_codec.ts)
 * only as where the nonce counter sits and what the associated data is. Synchronous on purpose:
 * the core runs inside the simulator with no awaits. The AEAD is libsodium's
 * (src/lib/sodium.ts), called on its WebAssembly heap: `node:crypto`'s AES-256-GCM built a
 * cipher object per datagram and took 17.6 µs to seal 200 bytes against 2.7 µs here (sodium.ts
 * has the figures), and was a quarter of the simulator's CPU (issue 19). The pure-JS AES-GCM
 * of @noble/ciphers took 45 / 65 µs to seal alone. AES-GCM itself is not on offer in
 * libsodium's WebAssembly build: WebAssembly has no AES instructions.
 *
 * Keys and nonces. Each sending endpoint draws a random 16-byte key id when it starts and
 * numbers its datagrams with one counter (all peers together). The key is
 * HKDF-SHA256(cluster key, salt, info = key id ‖ generation) with generation = counter / 2^24,
 * and the 96-bit nonce is 0‖counter. A nonce therefore never repeats under one key: the
 * counter never repeats within a process, and a restarted process draws a new key id (a
 * collision needs ~2^64 restarts). The generation moves the sender to a fresh key every 2^24
 * datagrams, far inside ChaCha20-Poly1305's usage limits (RFC 9001 §6.6).
 */

import { createHmac } from "node:crypto";
import { CHACHA_TAG_BYTES, chachaOpenMessage, chachaSealMessage } from "../lib/sodium.ts";
import { KEY_ID_BYTES, OUTER_HEADER_BYTES } from "./frame_codec.ts";
import { CLUSTER_KEY_BYTES_MIN } from "./auth.ts";

export const AEAD_TAG_BYTES = CHACHA_TAG_BYTES;
/** Datagrams sealed under one derived key before the sender moves to the next generation. */
export const KEY_GENERATION_DATAGRAMS = 2 ** 24;

const HKDF_SALT = new TextEncoder().encode("hookd transport v3 datagram keys");
const HKDF_INFO_LABEL = new TextEncoder().encode("chacha20-poly1305 ");
/** Where the counter sits in the outer header (frame_codec.ts). */
const COUNTER_OFFSET = 20;

/** The generation (which derived key) a datagram counter falls in. */
export function keyGeneration(counter: number): number {
  return Math.floor(counter / KEY_GENERATION_DATAGRAMS);
}

/** The cluster key's pseudo-random key (HKDF-Extract), from which datagram keys are expanded. */
export class ClusterKeyring {
  readonly #prk: Uint8Array;

  constructor(clusterKey: string | Uint8Array) {
    const bytes = typeof clusterKey === "string"
      ? new TextEncoder().encode(clusterKey)
      : clusterKey;
    if (bytes.length < CLUSTER_KEY_BYTES_MIN) {
      throw new RangeError(
        `cluster key must be at least ${CLUSTER_KEY_BYTES_MIN} bytes, got ${bytes.length}`,
      );
    }
    this.#prk = createHmac("sha256", HKDF_SALT).update(bytes).digest();
  }

  /** The 256-bit key for a sender's key id and generation: HKDF-Expand, one HMAC block. */
  derive(keyId: Uint8Array, generation: number): Uint8Array {
    const info = new Uint8Array(HKDF_INFO_LABEL.length + KEY_ID_BYTES + 4 + 1);
    info.set(HKDF_INFO_LABEL);
    info.set(keyId.subarray(0, KEY_ID_BYTES), HKDF_INFO_LABEL.length);
    new DataView(info.buffer).setUint32(HKDF_INFO_LABEL.length + KEY_ID_BYTES, generation, true);
    info[info.length - 1] = 1; // HKDF's block counter T(1)
    return new Uint8Array(createHmac("sha256", this.#prk).update(info).digest());
  }
}

/** 0‖counter, the counter's 8 bytes as they are on the wire; one array reused (single thread). */
const nonce = new Uint8Array(12);
function nonceOf(datagram: Uint8Array): Uint8Array {
  for (let i = 0; i < 8; i++) nonce[4 + i] = datagram[COUNTER_OFFSET + i]!;
  return nonce;
}

/**
 * Seals `datagram` in place: everything after the outer header up to the last
 * `AEAD_TAG_BYTES` is encrypted, the outer header authenticated, the tag written at the end.
 */
export function sealDatagram(key: Uint8Array, datagram: Uint8Array): void {
  chachaSealMessage(key, nonceOf(datagram), datagram, OUTER_HEADER_BYTES);
}

/**
 * Opens a sealed datagram: a new array with the outer header and the inner part in the clear
 * (no tag), or undefined when it does not authenticate under `key`. Never throws, and never
 * changes `datagram`.
 */
export function openDatagram(key: Uint8Array, datagram: Uint8Array): Uint8Array | undefined {
  if (datagram.length < OUTER_HEADER_BYTES + AEAD_TAG_BYTES) return undefined;
  return chachaOpenMessage(key, nonceOf(datagram), datagram, OUTER_HEADER_BYTES);
}
