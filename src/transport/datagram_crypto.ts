/**
 * Datagram confidentiality and integrity: every datagram is sealed with AES-256-GCM under a
 * key derived from the cluster key, so SUBMIT records (webhook payloads, signing secrets) are
 * unreadable on the path and a forged or altered datagram fails to open.
 *
 * Owns key derivation and sealing/opening; it knows the outer header's layout (frame_codec.ts)
 * only as where the nonce counter sits and what the associated data is. Synchronous on purpose
 * (`node:crypto`'s createCipheriv is synchronous under Deno; WebCrypto is not): the core runs
 * inside the simulator with no awaits. Measured on the 2-core machine with other work running
 * (`deno bench bench/codec_bench.ts`, a 1,350-byte datagram of 13 messages, min / p75): encode
 * and seal 10.1 / 13.8 µs against 4.8 / 7.6 µs to encode and HMAC-sign; open and decode
 * 10.1 / 13.3 µs against 4.6 / 6.8 µs to verify and decode: about 6 µs more each way. The
 * pure-JS AES-GCM of @noble/ciphers took 45 / 65 µs to seal alone, so it was not taken.
 *
 * Keys and nonces. Each sending endpoint draws a random 16-byte key id when it starts and
 * numbers its datagrams with one counter (all peers together). The key is
 * HKDF-SHA256(cluster key, salt, info = key id ‖ generation) with generation = counter / 2^24,
 * and the 96-bit nonce is 0‖counter. A nonce therefore never repeats under one key: the
 * counter never repeats within a process, and a restarted process draws a new key id (a
 * collision needs ~2^64 restarts). The generation moves the sender to a fresh key every 2^24
 * datagrams, far inside AES-GCM's usage limits for datagrams this size (RFC 9001 §6.6).
 */

import { createCipheriv, createDecipheriv, createHmac } from "node:crypto";
import { Buffer } from "node:buffer";
import { KEY_ID_BYTES, OUTER_HEADER_BYTES } from "./frame_codec.ts";
import { CLUSTER_KEY_BYTES_MIN } from "./auth.ts";

export const AEAD_TAG_BYTES = 16;
/** Datagrams sealed under one derived key before the sender moves to the next generation. */
export const KEY_GENERATION_DATAGRAMS = 2 ** 24;

const HKDF_SALT = new TextEncoder().encode("hookd transport v2 datagram keys");
const HKDF_INFO_LABEL = new TextEncoder().encode("aes-256-gcm ");
/** Where the counter sits in the outer header (frame_codec.ts). */
const COUNTER_OFFSET = 20;

/** The generation (which derived key) a datagram counter falls in. */
export function keyGeneration(counter: number): number {
  return Math.floor(counter / KEY_GENERATION_DATAGRAMS);
}

/** The cluster key's pseudo-random key (HKDF-Extract), from which datagram keys are expanded. */
export class ClusterKeyring {
  readonly #prk: Buffer;

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

  /** The AES-256 key for a sender's key id and generation: HKDF-Expand, one HMAC block. */
  derive(keyId: Uint8Array, generation: number): Buffer {
    const info = new Uint8Array(HKDF_INFO_LABEL.length + KEY_ID_BYTES + 4 + 1);
    info.set(HKDF_INFO_LABEL);
    info.set(keyId.subarray(0, KEY_ID_BYTES), HKDF_INFO_LABEL.length);
    new DataView(info.buffer).setUint32(HKDF_INFO_LABEL.length + KEY_ID_BYTES, generation, true);
    info[info.length - 1] = 1; // HKDF's block counter T(1)
    return createHmac("sha256", this.#prk).update(info).digest();
  }
}

/** 0‖counter, the counter's 8 bytes as they are on the wire. */
function nonceOf(datagram: Uint8Array): Uint8Array {
  const iv = new Uint8Array(12);
  iv.set(datagram.subarray(COUNTER_OFFSET, COUNTER_OFFSET + 8), 4);
  return iv;
}

/**
 * Seals `datagram` in place: everything after the outer header up to the last
 * `AEAD_TAG_BYTES` is encrypted, the outer header authenticated, the tag written at the end.
 */
export function sealDatagram(key: Buffer, datagram: Uint8Array): void {
  const end = datagram.length - AEAD_TAG_BYTES;
  const cipher = createCipheriv("aes-256-gcm", key, nonceOf(datagram));
  cipher.setAAD(datagram.subarray(0, OUTER_HEADER_BYTES));
  const sealed = cipher.update(datagram.subarray(OUTER_HEADER_BYTES, end));
  cipher.final();
  datagram.set(sealed, OUTER_HEADER_BYTES);
  datagram.set(cipher.getAuthTag(), end);
}

/**
 * Opens a sealed datagram: a new array with the outer header and the inner part in the clear
 * (no tag), or undefined when it does not authenticate under `key`. Never throws.
 */
export function openDatagram(key: Buffer, datagram: Uint8Array): Uint8Array | undefined {
  const end = datagram.length - AEAD_TAG_BYTES;
  if (end < OUTER_HEADER_BYTES) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, nonceOf(datagram));
    decipher.setAAD(datagram.subarray(0, OUTER_HEADER_BYTES));
    decipher.setAuthTag(datagram.subarray(end));
    const plain = decipher.update(datagram.subarray(OUTER_HEADER_BYTES, end));
    decipher.final();
    const out = new Uint8Array(end);
    out.set(datagram.subarray(0, OUTER_HEADER_BYTES));
    out.set(plain, OUTER_HEADER_BYTES);
    return out;
  } catch {
    return undefined;
  }
}
