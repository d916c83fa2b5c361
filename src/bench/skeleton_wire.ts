/**
 * The skeleton cluster's wire and log format (`hookd bench --skeleton`, skeleton_node.ts): the
 * fewest bytes that carry a job's replication, and nothing of hookd's transport.
 *
 * An entry is a SUBMIT (a job's id and its stored body), a VOTE (a replica holds the id on its
 * disk) or a DONE (the job was delivered). One datagram carries as many entries as fit, sealed
 * with the transport's own AEAD (datagram_crypto.ts) so the skeleton pays what hookd pays per
 * datagram. The same entry bytes, each behind a length and a CRC-32C, are what a node writes to
 * its log.
 *
 * Datagram: the 28-byte clear outer header hookd's sealing expects (magic, the sender's key id,
 * the counter that is the nonce), the sender's index (1 byte), the entries, the 16-byte tag.
 * Entry: kind (1 byte), id length (1), id (UTF-8), then for a SUBMIT the body's length (u16) and
 * the body.
 *
 * Owns encoding and decoding only; no I/O, no state beyond a sender's counter.
 */

import { assert } from "../lib/assert.ts";
import { crc32c } from "../wal/crc32c.ts";
import { KEY_ID_BYTES, OUTER_HEADER_BYTES } from "../transport/frame_codec.ts";
import {
  AEAD_TAG_BYTES,
  ClusterKeyring,
  openDatagram,
  sealDatagram,
} from "../transport/datagram_crypto.ts";

export type SkeletonEntry =
  | { readonly kind: "submit"; readonly id: string; readonly body: Uint8Array }
  | { readonly kind: "vote"; readonly id: string }
  | { readonly kind: "done"; readonly id: string };

const KIND_CODES = { submit: 1, vote: 2, done: 3 } as const;
const MAGIC = [0x48, 0x4b, 0x53, 0x4b]; // "HKSK"
const COUNTER_OFFSET = 20;
/** Bytes a datagram spends before its first entry and after its last. */
export const SKELETON_OVERHEAD_BYTES = OUTER_HEADER_BYTES + 1 + AEAD_TAG_BYTES;
const ID_BYTES_MAX = 255;
const BODY_BYTES_MAX = 65_535;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An entry's bytes, as a datagram and the log hold them. Throws on an id or body too long. */
export function encodeEntry(entry: SkeletonEntry): Uint8Array {
  const id = encoder.encode(entry.id);
  if (id.length > ID_BYTES_MAX) throw new RangeError(`id of ${id.length} bytes`);
  const bodyBytes = entry.kind === "submit" ? 2 + entry.body.length : 0;
  if (entry.kind === "submit" && entry.body.length > BODY_BYTES_MAX) {
    throw new RangeError(`body of ${entry.body.length} bytes`);
  }
  const out = new Uint8Array(2 + id.length + bodyBytes);
  out[0] = KIND_CODES[entry.kind];
  out[1] = id.length;
  out.set(id, 2);
  if (entry.kind === "submit") {
    const at = 2 + id.length;
    out[at] = entry.body.length >> 8;
    out[at + 1] = entry.body.length & 0xff;
    out.set(entry.body, at + 2);
  }
  return out;
}

/** Every entry of `bytes` in order, or undefined when any is cut short or of no known kind. */
export function decodeEntries(bytes: Uint8Array): SkeletonEntry[] | undefined {
  const out: SkeletonEntry[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 2 > bytes.length) return undefined;
    const code = bytes[at]!;
    const idEnd = at + 2 + bytes[at + 1]!;
    if (idEnd > bytes.length) return undefined;
    const id = decoder.decode(bytes.subarray(at + 2, idEnd));
    if (code === KIND_CODES.submit) {
      if (idEnd + 2 > bytes.length) return undefined;
      const bodyEnd = idEnd + 2 + ((bytes[idEnd]! << 8) | bytes[idEnd + 1]!);
      if (bodyEnd > bytes.length) return undefined;
      out.push({ kind: "submit", id, body: bytes.slice(idEnd + 2, bodyEnd) });
      at = bodyEnd;
    } else if (code === KIND_CODES.vote || code === KIND_CODES.done) {
      out.push({ kind: code === KIND_CODES.vote ? "vote" : "done", id });
      at = idEnd;
    } else {
      return undefined;
    }
  }
  return out;
}

/** Encoded entries packed into as few payloads as fit `payloadBytesMax` each, in order. */
export function packEntries(
  entries: readonly Uint8Array[],
  payloadBytesMax: number,
): Uint8Array[][] {
  const out: Uint8Array[][] = [];
  let current: Uint8Array[] = [];
  let bytes = 0;
  for (const entry of entries) {
    assert(entry.length <= payloadBytesMax, `skeleton entry of ${entry.length} bytes`);
    if (bytes + entry.length > payloadBytesMax) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += entry.length;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Seals datagrams of one sender: its key id, its key, its counter (the nonce). */
export class SkeletonSealer {
  readonly #keyId = crypto.getRandomValues(new Uint8Array(KEY_ID_BYTES));
  readonly #key: Uint8Array;
  #counter = 0;

  constructor(keyring: ClusterKeyring, readonly senderIndex: number) {
    assert(senderIndex >= 0 && senderIndex < 256, `sender index ${senderIndex}`);
    this.#key = keyring.derive(this.#keyId, 0);
  }

  /** One sealed datagram holding `entries` (encoded). */
  seal(entries: readonly Uint8Array[]): Uint8Array {
    let length = SKELETON_OVERHEAD_BYTES;
    for (const e of entries) length += e.length;
    const datagram = new Uint8Array(length);
    datagram.set(MAGIC, 0);
    datagram.set(this.#keyId, 4);
    new DataView(datagram.buffer).setBigUint64(COUNTER_OFFSET, BigInt(this.#counter++), true);
    datagram[OUTER_HEADER_BYTES] = this.senderIndex;
    let at = OUTER_HEADER_BYTES + 1;
    for (const e of entries) {
      datagram.set(e, at);
      at += e.length;
    }
    sealDatagram(this.#key, datagram);
    return datagram;
  }
}

/** Opens datagrams from any sender of the cluster, deriving (and keeping) each sender's key. */
export class SkeletonOpener {
  readonly #keys = new Map<string, Uint8Array>();

  constructor(readonly keyring: ClusterKeyring) {}

  /** The sender's index and entries, or undefined for a datagram that is not a sound one. */
  open(datagram: Uint8Array): { from: number; entries: SkeletonEntry[] } | undefined {
    if (datagram.length < SKELETON_OVERHEAD_BYTES) return undefined;
    if (MAGIC.some((b, i) => datagram[i] !== b)) return undefined;
    const keyId = datagram.subarray(4, 4 + KEY_ID_BYTES);
    const name = keyId.join(",");
    let key = this.#keys.get(name);
    if (key === undefined) {
      key = this.keyring.derive(keyId, 0);
      if (this.#keys.size < 1024) this.#keys.set(name, key);
    }
    const clear = openDatagram(key, datagram);
    if (clear === undefined) return undefined;
    const entries = decodeEntries(clear.subarray(OUTER_HEADER_BYTES + 1));
    if (entries === undefined) return undefined;
    return { from: clear[OUTER_HEADER_BYTES]!, entries };
  }
}

/** Entries framed for the log: per entry its length (u32), CRC-32C (u32), then its bytes. */
export function logRecords(entries: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const e of entries) length += 8 + e.length;
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const e of entries) {
    view.setUint32(at, e.length, true);
    view.setUint32(at + 4, crc32c(e), true);
    out.set(e, at + 8);
    at += 8 + e.length;
  }
  return out;
}
