/**
 * The transport's wire format, version 3: one datagram = a clear outer header, then the sealed
 * (ChaCha20-Poly1305) inner header and frames, then the 16-byte tag. Version 2 was the same
 * layout sealed with AES-256-GCM.
 *
 * Owns byte layout only: `DatagramWriter` (the sender's zero-copy builder), `readOuterHeader`
 * (the cheap checks made before any cryptography) and `decodeDatagram` (which never throws:
 * hostile bytes give `{ ok: false, reason }`). It does not seal or open (datagram_crypto.ts)
 * and knows nothing of sessions. `decodeDatagram` reads a datagram whose inner part is in the
 * clear: the endpoint opens it first, tests may build one unsealed.
 *
 * All integers little-endian. Outer header (28 bytes, the AEAD's associated data):
 *   0  u16 magic 0x4B48 ("HK")   2 u8 version (3)   3 u8 flags: bit 0 "ack may wait" (the
 *      receiver may hold this datagram's acknowledgement for a while, `lazyAckMs`); the
 *      other bits reserved, 0
 *   4  16 bytes: the sender's key id, random per process: which derived key sealed this
 *   20 u53 counter (u32 low, u32 high < 2^21): the nonce, never repeated under one key id
 * Inner header (17 bytes + node id), sealed:
 *   28 u32 sender session epoch (never 0)
 *   32 u32 destination epoch: the receiver's epoch as the sender knows it, 0 when unknown.
 *      Reliable frames are only accepted by the incarnation they were numbered for.
 *   36 u53 packet number (u32 low, u32 high < 2^21)
 *   44 u8 node id length (1..64) 45 node id, UTF-8
 * Frames, each starting with a type byte:
 *   0x01 ACK   u32 ack epoch (the receiver's epoch being acknowledged), u32 ack delay µs,
 *              u8 range count (>= 1), u53 largest, u32 first range length (covers
 *              largest-len..largest), then per further range u32 gap, u32 length
 *              (QUIC-style: next high = previous low - gap - 2).
 *   0x02 MSG   u8 channel, u53 message id, u16 length, bytes         (reliable, whole)
 *   0x03 FRAG  u8 channel, u53 message id, u32 total length, u32 offset, u16 length, bytes
 *   0x04 UNREL u8 channel, u16 length, bytes                        (unreliable)
 * Then the tag (sealed: the AEAD's; unsealed test datagrams: anything of `tagBytes`).
 */

import { err, ok, type Result } from "../lib/result.ts";
import { assert, fail, unreachable } from "../lib/assert.ts";
import { StringCache } from "../lib/string_cache.ts";

export const MAGIC = 0x4b48;
export const VERSION = 3;
export const KEY_ID_BYTES = 16;
/** Where the key id sits in the outer header (after magic, version and flags). */
export const KEY_ID_OFFSET = 4;
/** The clear part every datagram starts with: magic, version, flags, key id, counter. */
export const OUTER_HEADER_BYTES = 28;
/** Outer header plus the sealed header's fixed part (epochs, packet number, id length). */
export const HEADER_FIXED_BYTES = 45;
export const NODE_ID_BYTES_MAX = 64;
export const ACK_FRAME_BASE_BYTES = 22;
export const ACK_RANGE_BYTES = 8;
export const MSG_FRAME_OVERHEAD_BYTES = 12;
export const FRAG_FRAME_OVERHEAD_BYTES = 20;
export const UNRELIABLE_FRAME_OVERHEAD_BYTES = 4;
/** Largest payload one frame's u16 length can carry. */
export const FRAME_PAYLOAD_BYTES_MAX = 0xffff;

/** Outer-header flag: the receiver may hold this datagram's acknowledgement (`lazyAckMs`). */
export const FLAG_ACK_MAY_WAIT = 0x01;
/** Every flag this version knows; a datagram with another bit set is refused. */
export const FLAGS_KNOWN = FLAG_ACK_MAY_WAIT;

/** The key id of unsealed test datagrams. */
const ZERO_KEY_ID = new Uint8Array(KEY_ID_BYTES);

const FRAME_ACK = 0x01;
const FRAME_MSG = 0x02;
const FRAME_FRAG = 0x03;
const FRAME_UNRELIABLE = 0x04;
const U53_HIGH_MAX = 0x1fffff;
const TWO_32 = 0x1_0000_0000;

/** An inclusive range of packet numbers, `lo <= hi`. */
export interface PacketRange {
  lo: number;
  hi: number;
}

export type Frame =
  | { type: "ack"; ackEpoch: number; ackDelayUs: number; ranges: PacketRange[] }
  | { type: "message"; channel: number; msgId: number; bytes: Uint8Array }
  | {
    type: "fragment";
    channel: number;
    msgId: number;
    totalBytes: number;
    offset: number;
    bytes: Uint8Array;
  }
  | { type: "unreliable"; channel: number; bytes: Uint8Array };

export interface DatagramHeader {
  /** The sender's key id (`KEY_ID_BYTES`). */
  keyId: Uint8Array;
  /** The AEAD nonce counter. */
  counter: number;
  nodeId: string;
  epoch: number;
  /** The receiver's epoch as known to the sender; 0 when unknown. */
  dstEpoch: number;
  packetNumber: number;
  /** The sender marked it "ack may wait" (`FLAG_ACK_MAY_WAIT`); a decoded one always says. */
  ackMayWait?: boolean;
}

export interface DecodedDatagram extends DatagramHeader {
  ackMayWait: boolean;
  frames: Frame[];
}

const utf8 = new TextEncoder();
/** `ignoreBOM`: a node id that begins with U+FEFF keeps it (by default the decoder drops it). */
const utf8Strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The node id's UTF-8 bytes, or a reason it is not acceptable on the wire. */
export function encodeNodeId(nodeId: string): Result<Uint8Array> {
  // UTF-8 has no form for an unpaired surrogate: peers would learn another id than ours.
  if (!nodeId.isWellFormed()) return err("node id has an unpaired UTF-16 surrogate");
  const bytes = utf8.encode(nodeId);
  if (bytes.length === 0) return err("node id is empty");
  if (bytes.length > NODE_ID_BYTES_MAX) {
    return err(`node id is ${bytes.length} bytes, more than ${NODE_ID_BYTES_MAX}`);
  }
  return ok(bytes);
}

export function headerBytes(nodeIdBytes: number): number {
  return HEADER_FIXED_BYTES + nodeIdBytes;
}

export function ackFrameBytes(rangeCount: number): number {
  return ACK_FRAME_BASE_BYTES + ACK_RANGE_BYTES * Math.max(0, rangeCount - 1);
}

/**
 * Builds one datagram in a reusable scratch buffer. The caller checks `remaining` before each
 * frame (writing past capacity is a programmer error and asserts); `finish` copies the bytes
 * out with the tag appended, so the scratch buffer can be reused at once.
 */
export class DatagramWriter {
  readonly #buf: Uint8Array;
  readonly #view: DataView;
  readonly #capacity: number;
  #pos = 0;

  /** `capacityBytes`: the whole datagram including `tagBytes` of MAC. */
  constructor(capacityBytes: number, readonly tagBytes: number) {
    assert(capacityBytes > tagBytes + HEADER_FIXED_BYTES, "datagram capacity too small");
    this.#buf = new Uint8Array(capacityBytes);
    this.#view = new DataView(this.#buf.buffer);
    this.#capacity = capacityBytes - tagBytes;
  }

  /** Bytes still free for frames (the tag is already reserved). */
  get remaining(): number {
    return this.#capacity - this.#pos;
  }

  get length(): number {
    return this.#pos;
  }

  /**
   * Starts a datagram. `counter` may be left at 0 and set in the finished copy with
   * `writeCounter` as it is sealed, so a nonce is taken only by a datagram that is sent.
   */
  begin(
    nodeIdBytes: Uint8Array,
    epoch: number,
    dstEpoch: number,
    packetNumber: number,
    keyId: Uint8Array = ZERO_KEY_ID,
    counter = 0,
  ): void {
    assert(nodeIdBytes.length >= 1 && nodeIdBytes.length <= NODE_ID_BYTES_MAX, "node id size");
    assert(epoch !== 0, "epoch 0 means unknown on the wire");
    assert(keyId.length === KEY_ID_BYTES, "key id size");
    const v = this.#view;
    v.setUint16(0, MAGIC, true);
    v.setUint8(2, VERSION);
    v.setUint8(3, 0);
    this.#buf.set(keyId, 4);
    writeU53(v, 20, counter);
    v.setUint32(28, epoch >>> 0, true);
    v.setUint32(32, dstEpoch >>> 0, true);
    writeU53(v, 36, packetNumber);
    v.setUint8(44, nodeIdBytes.length);
    this.#buf.set(nodeIdBytes, HEADER_FIXED_BYTES);
    this.#pos = HEADER_FIXED_BYTES + nodeIdBytes.length;
  }

  /** `ranges` sorted descending by `hi`, disjoint, non-adjacent; at least one. */
  writeAck(ackEpoch: number, ackDelayUs: number, ranges: readonly PacketRange[]): void {
    assert(ranges.length >= 1 && ranges.length <= 255, "ack range count");
    assert(this.remaining >= ackFrameBytes(ranges.length), "ack frame does not fit");
    const v = this.#view;
    let p = this.#pos;
    const first = ranges[0]!;
    v.setUint8(p, FRAME_ACK);
    v.setUint32(p + 1, ackEpoch >>> 0, true);
    v.setUint32(p + 5, Math.min(0xffffffff, Math.max(0, Math.round(ackDelayUs))), true);
    v.setUint8(p + 9, ranges.length);
    writeU53(v, p + 10, first.hi);
    v.setUint32(p + 18, first.hi - first.lo, true);
    p += ACK_FRAME_BASE_BYTES;
    let prevLo = first.lo;
    for (let i = 1; i < ranges.length; i++) {
      const r = ranges[i]!;
      const gap = prevLo - r.hi - 2;
      assert(gap >= 0 && r.hi >= r.lo, "ack ranges must be descending and non-adjacent");
      v.setUint32(p, gap, true);
      v.setUint32(p + 4, r.hi - r.lo, true);
      p += ACK_RANGE_BYTES;
      prevLo = r.lo;
    }
    this.#pos = p;
  }

  writeMessage(channel: number, msgId: number, bytes: Uint8Array): void {
    assert(bytes.length <= FRAME_PAYLOAD_BYTES_MAX, "message frame payload too large");
    assert(this.remaining >= MSG_FRAME_OVERHEAD_BYTES + bytes.length, "message does not fit");
    const v = this.#view;
    const p = this.#pos;
    v.setUint8(p, FRAME_MSG);
    v.setUint8(p + 1, channel);
    writeU53(v, p + 2, msgId);
    v.setUint16(p + 10, bytes.length, true);
    this.#buf.set(bytes, p + 12);
    this.#pos = p + 12 + bytes.length;
  }

  writeFragment(
    channel: number,
    msgId: number,
    totalBytes: number,
    offset: number,
    bytes: Uint8Array,
  ): void {
    assert(bytes.length <= FRAME_PAYLOAD_BYTES_MAX, "fragment payload too large");
    assert(this.remaining >= FRAG_FRAME_OVERHEAD_BYTES + bytes.length, "fragment does not fit");
    const v = this.#view;
    const p = this.#pos;
    v.setUint8(p, FRAME_FRAG);
    v.setUint8(p + 1, channel);
    writeU53(v, p + 2, msgId);
    v.setUint32(p + 10, totalBytes, true);
    v.setUint32(p + 14, offset, true);
    v.setUint16(p + 18, bytes.length, true);
    this.#buf.set(bytes, p + 20);
    this.#pos = p + 20 + bytes.length;
  }

  writeUnreliable(channel: number, bytes: Uint8Array): void {
    assert(bytes.length <= FRAME_PAYLOAD_BYTES_MAX, "unreliable payload too large");
    assert(
      this.remaining >= UNRELIABLE_FRAME_OVERHEAD_BYTES + bytes.length,
      "unreliable message does not fit",
    );
    const v = this.#view;
    const p = this.#pos;
    v.setUint8(p, FRAME_UNRELIABLE);
    v.setUint8(p + 1, channel);
    v.setUint16(p + 2, bytes.length, true);
    this.#buf.set(bytes, p + 4);
    this.#pos = p + 4 + bytes.length;
  }

  /** Marks the datagram being built "ack may wait" (`FLAG_ACK_MAY_WAIT`); before `finish`. */
  markAckMayWait(): void {
    this.#buf[3] = this.#buf[3]! | FLAG_ACK_MAY_WAIT;
  }

  /**
   * The finished datagram. `seal(datagram)` receives a copy laid out in full (outer header,
   * inner part in the clear, `tagBytes` of zeros) and seals it in place; without `seal` the
   * copy is returned unsealed (tests and tools).
   */
  finish(seal?: (datagram: Uint8Array) => void): Uint8Array {
    // One copy, no view of the buffer: `slice` makes the array the datagram leaves in.
    const out = this.#buf.slice(0, this.#pos + this.tagBytes);
    // The buffer's capacity reserves the tag: the slice is never short of it.
    assert(out.length === this.#pos + this.tagBytes, "a datagram's tag fits its buffer");
    out.fill(0, this.#pos);
    if (seal !== undefined) seal(out);
    return out;
  }
}

/** Writes `counter` into a built datagram's outer header (the nonce, set as it is sealed). */
export function writeCounter(datagram: Uint8Array, counter: number): void {
  // Byte by byte, as `writeU53` lays it out (little-endian low word, then high): every datagram
  // sent takes a counter, and a view of it would be garbage each time.
  if (!(Number.isSafeInteger(counter) && counter >= 0)) fail(`u53 out of range: ${counter}`);
  u32Into(datagram, 20, counter % TWO_32);
  u32Into(datagram, 24, Math.floor(counter / TWO_32));
}

/** Writes `value` as a little-endian u32 at `at`. */
function u32Into(b: Uint8Array, at: number, value: number): void {
  b[at] = value & 0xff;
  b[at + 1] = (value >>> 8) & 0xff;
  b[at + 2] = (value >>> 16) & 0xff;
  b[at + 3] = (value >>> 24) & 0xff;
}

/** Whole-datagram encoder for tests and tools; the session uses `DatagramWriter` directly. */
export function encodeDatagram(
  header: DatagramHeader,
  frames: readonly Frame[],
  tagBytes = 0,
  seal?: (datagram: Uint8Array) => void,
): Uint8Array {
  const nodeId = encodeNodeId(header.nodeId);
  if (!nodeId.ok) fail(`encodeDatagram: ${nodeId.ok ? "" : nodeId.reason}`);
  let size = headerBytes(nodeId.value.length) + tagBytes;
  for (const f of frames) size += frameBytes(f);
  const writer = new DatagramWriter(Math.max(size, HEADER_FIXED_BYTES + tagBytes + 1), tagBytes);
  writer.begin(
    nodeId.value,
    header.epoch,
    header.dstEpoch,
    header.packetNumber,
    header.keyId,
    header.counter,
  );
  if (header.ackMayWait === true) writer.markAckMayWait();
  for (const f of frames) {
    switch (f.type) {
      case "ack":
        writer.writeAck(f.ackEpoch, f.ackDelayUs, f.ranges);
        break;
      case "message":
        writer.writeMessage(f.channel, f.msgId, f.bytes);
        break;
      case "fragment":
        writer.writeFragment(f.channel, f.msgId, f.totalBytes, f.offset, f.bytes);
        break;
      case "unreliable":
        writer.writeUnreliable(f.channel, f.bytes);
        break;
      default:
        unreachable(f, "frame");
    }
  }
  return writer.finish(seal);
}

export function frameBytes(f: Frame): number {
  switch (f.type) {
    case "ack":
      return ackFrameBytes(f.ranges.length);
    case "message":
      return MSG_FRAME_OVERHEAD_BYTES + f.bytes.length;
    case "fragment":
      return FRAG_FRAME_OVERHEAD_BYTES + f.bytes.length;
    case "unreliable":
      return UNRELIABLE_FRAME_OVERHEAD_BYTES + f.bytes.length;
    default:
      return unreachable(f, "frame");
  }
}

/** The clear outer header, read before any cryptography. */
export interface OuterHeader {
  /** A view of the key id bytes in the datagram. */
  keyId: Uint8Array;
  counter: number;
}

/**
 * The cheapest checks a datagram gets, before any key is looked up or any byte decrypted:
 * length, magic, version, flags, counter range. Never throws. Read byte by byte, with no view
 * of its own: every datagram that arrives goes through it.
 */
export function readOuterHeader(datagram: Uint8Array, tagBytes: number): Result<OuterHeader> {
  if (datagram.length < HEADER_FIXED_BYTES + 1 + tagBytes) return err("short datagram");
  if ((datagram[0]! | (datagram[1]! << 8)) !== MAGIC) return err("bad magic");
  if (datagram[2] !== VERSION) return err(`unsupported version ${datagram[2]}`);
  if ((datagram[3]! & ~FLAGS_KNOWN) !== 0) return err("reserved flags set");
  const counter = u53At(datagram, 20);
  if (counter === undefined) return err("counter out of range");
  return ok({
    keyId: datagram.subarray(KEY_ID_OFFSET, KEY_ID_OFFSET + KEY_ID_BYTES),
    counter,
  });
}

/** A little-endian u32 at `at`. */
function u32At(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

/** A little-endian u16 at `at`. */
function u16At(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8);
}

/** `readU53` on bytes: a little-endian u64 at `at`, or undefined past 2^53 - 1. */
function u53At(b: Uint8Array, at: number): number | undefined {
  const hi = u32At(b, at + 4);
  if (hi > U53_HIGH_MAX) return undefined;
  return hi * TWO_32 + u32At(b, at);
}

/**
 * Parses `datagram` minus its trailing `tagBytes`, its inner part in the clear (the caller
 * opened it first). Never throws; payload views alias `datagram`.
 */
export function decodeDatagram(datagram: Uint8Array, tagBytes: number): Result<DecodedDatagram> {
  const outer = readOuterHeader(datagram, tagBytes);
  if (!outer.ok) return outer;
  return decodeAfterOuterHeader(datagram, tagBytes, outer.value);
}

/**
 * Node ids seen in datagrams: a cluster's handful, decoded once each (`StringCache` compares
 * the bytes in full, so a hit is the same id).
 */
const NODE_IDS = new StringCache(64, NODE_ID_BYTES_MAX);

function strictUtf8(source: Uint8Array, start: number, n: number): string {
  return utf8Strict.decode(source.subarray(start, start + n));
}

/**
 * `decodeDatagram` for a datagram whose outer header `readOuterHeader` read already: the same
 * bytes, as an opened copy of the datagram has (the receiver reads the header before it
 * opens, and does not read it twice). `outer` is trusted to be `datagram`'s: only its counter
 * is taken from it.
 */
export function decodeAfterOuterHeader(
  datagram: Uint8Array,
  tagBytes: number,
  outer: OuterHeader,
): Result<DecodedDatagram> {
  if (datagram.length < HEADER_FIXED_BYTES + 1 + tagBytes) return err("short datagram");
  const end = datagram.length - tagBytes;
  // Read byte by byte (`u32At`, `u53At`), with no view of its own: every datagram received
  // goes through here.
  const epoch = u32At(datagram, 28);
  if (epoch === 0) return err("epoch 0");
  const dstEpoch = u32At(datagram, 32);
  const packetNumber = u53At(datagram, 36);
  if (packetNumber === undefined) return err("packet number out of range");
  const idLen = datagram[44]!;
  if (idLen === 0 || idLen > NODE_ID_BYTES_MAX) return err("bad node id length");
  if (HEADER_FIXED_BYTES + idLen > end) return err("node id truncated");
  let nodeId: string;
  try {
    nodeId = NODE_IDS.get(datagram, HEADER_FIXED_BYTES, idLen, strictUtf8);
  } catch {
    return err("node id is not UTF-8");
  }
  const frames: Frame[] = [];
  let p = HEADER_FIXED_BYTES + idLen;
  while (p < end) {
    const type = datagram[p]!;
    switch (type) {
      case FRAME_ACK: {
        if (p + ACK_FRAME_BASE_BYTES > end) return err("ack frame truncated");
        const ackEpoch = u32At(datagram, p + 1);
        const ackDelayUs = u32At(datagram, p + 5);
        const count = datagram[p + 9]!;
        if (count === 0) return err("ack frame without ranges");
        const largest = u53At(datagram, p + 10);
        if (largest === undefined) return err("ack largest out of range");
        const firstLen = u32At(datagram, p + 18);
        if (firstLen > largest) return err("ack range below zero");
        if (p + ackFrameBytes(count) > end) return err("ack ranges truncated");
        const ranges: PacketRange[] = [{ lo: largest - firstLen, hi: largest }];
        let q = p + ACK_FRAME_BASE_BYTES;
        let prevLo = largest - firstLen;
        for (let i = 1; i < count; i++) {
          const gap = u32At(datagram, q);
          const len = u32At(datagram, q + 4);
          const hi = prevLo - gap - 2;
          const lo = hi - len;
          if (lo < 0) return err("ack range below zero");
          ranges.push({ lo, hi });
          prevLo = lo;
          q += ACK_RANGE_BYTES;
        }
        frames.push({ type: "ack", ackEpoch, ackDelayUs, ranges });
        p = q;
        break;
      }
      case FRAME_MSG: {
        if (p + MSG_FRAME_OVERHEAD_BYTES > end) return err("message frame truncated");
        const channel = datagram[p + 1]!;
        const msgId = u53At(datagram, p + 2);
        if (msgId === undefined) return err("message id out of range");
        const len = u16At(datagram, p + 10);
        const start = p + MSG_FRAME_OVERHEAD_BYTES;
        if (start + len > end) return err("message payload truncated");
        frames.push({
          type: "message",
          channel,
          msgId,
          bytes: datagram.subarray(start, start + len),
        });
        p = start + len;
        break;
      }
      case FRAME_FRAG: {
        if (p + FRAG_FRAME_OVERHEAD_BYTES > end) return err("fragment frame truncated");
        const channel = datagram[p + 1]!;
        const msgId = u53At(datagram, p + 2);
        if (msgId === undefined) return err("message id out of range");
        const totalBytes = u32At(datagram, p + 10);
        const offset = u32At(datagram, p + 14);
        const len = u16At(datagram, p + 18);
        if (len === 0) return err("empty fragment");
        if (offset + len > totalBytes) return err("fragment beyond message end");
        const start = p + FRAG_FRAME_OVERHEAD_BYTES;
        if (start + len > end) return err("fragment payload truncated");
        frames.push({
          type: "fragment",
          channel,
          msgId,
          totalBytes,
          offset,
          bytes: datagram.subarray(start, start + len),
        });
        p = start + len;
        break;
      }
      case FRAME_UNRELIABLE: {
        if (p + UNRELIABLE_FRAME_OVERHEAD_BYTES > end) return err("unreliable frame truncated");
        const channel = datagram[p + 1]!;
        const len = u16At(datagram, p + 2);
        const start = p + UNRELIABLE_FRAME_OVERHEAD_BYTES;
        if (start + len > end) return err("unreliable payload truncated");
        frames.push({ type: "unreliable", channel, bytes: datagram.subarray(start, start + len) });
        p = start + len;
        break;
      }
      default:
        return err(`unknown frame type ${type}`);
    }
  }
  return ok({
    // A view of this datagram's bytes (an opened copy), not of the buffer `outer` was read
    // from: that one is the receive loop's, refilled by the next datagram.
    keyId: datagram.subarray(KEY_ID_OFFSET, KEY_ID_OFFSET + KEY_ID_BYTES),
    counter: outer.counter,
    nodeId,
    epoch,
    dstEpoch,
    packetNumber,
    ackMayWait: (datagram[3]! & FLAG_ACK_MAY_WAIT) !== 0,
    frames,
  });
}

function writeU53(v: DataView, at: number, value: number): void {
  if (!(Number.isSafeInteger(value) && value >= 0)) fail(`u53 out of range: ${value}`);
  v.setUint32(at, value % TWO_32, true);
  v.setUint32(at + 4, Math.floor(value / TWO_32), true);
}
