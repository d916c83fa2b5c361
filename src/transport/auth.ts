/**
 * Where the cluster key comes from (`--cluster-key`, else the `HOOKD_CLUSTER_KEY` environment
 * variable), and the HMAC-SHA256 authenticator that wire version 1 used.
 *
 * Datagrams are now sealed with ChaCha20-Poly1305 (datagram_crypto.ts). `HmacSha256Authenticator`
 * stays for callers written against the old `authenticator` option, which hand the endpoint
 * their cluster key this way (`clusterKeyOf`), and for the per-datagram cost comparison in
 * bench/codec_bench.ts. This module never logs or stores the key's text.
 */

import { createHmac, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";
import type { Authenticator } from "./types.ts";

export const MAC_TAG_BYTES = 16;
export const CLUSTER_KEY_ENV = "HOOKD_CLUSTER_KEY";
/** Shortest cluster key accepted: 16 bytes of UTF-8 (a pass-phrase shorter than that is guessable). */
export const CLUSTER_KEY_BYTES_MIN = 16;

/** The key each authenticator was built with, for `clusterKeyOf`. */
const keysOf = new WeakMap<Authenticator, Uint8Array>();

/**
 * The cluster key an `HmacSha256Authenticator` was built with; undefined for any other
 * `Authenticator`, which the transport cannot derive its datagram keys from.
 */
export function clusterKeyOf(authenticator: Authenticator): Uint8Array | undefined {
  return keysOf.get(authenticator);
}

export class HmacSha256Authenticator implements Authenticator {
  readonly tagBytes = MAC_TAG_BYTES;
  readonly #key: Buffer;

  constructor(key: string | Uint8Array) {
    const bytes = typeof key === "string" ? new TextEncoder().encode(key) : key;
    if (bytes.length < CLUSTER_KEY_BYTES_MIN) {
      throw new RangeError(
        `cluster key must be at least ${CLUSTER_KEY_BYTES_MIN} bytes, got ${bytes.length}`,
      );
    }
    this.#key = Buffer.from(bytes);
    keysOf.set(this, Uint8Array.from(bytes));
  }

  sign(data: Uint8Array): Uint8Array {
    const full = createHmac("sha256", this.#key).update(data).digest();
    return new Uint8Array(full.buffer, full.byteOffset, MAC_TAG_BYTES);
  }

  verify(data: Uint8Array, tag: Uint8Array): boolean {
    if (tag.length !== MAC_TAG_BYTES) return false;
    return timingSafeEqual(this.sign(data), tag);
  }
}

/**
 * The cluster key: the flag's value when given, else the environment variable. Undefined
 * when neither is set; the caller decides whether that is an error.
 */
export function clusterKeyFrom(
  flagValue: string | undefined,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): string | undefined {
  if (flagValue !== undefined && flagValue !== "") return flagValue;
  const fromEnv = env(CLUSTER_KEY_ENV);
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : undefined;
}
