/**
 * Byte layout of membership packets: one packet carries one or more SWIM messages (the first is
 * usually a probe or an ack, the rest piggybacked gossip).
 *
 * Layout (big-endian): magic u8 0x53 ('S'), version u8 1, count u8 (1..255), then `count`
 * messages, each a type u8 followed by its fields. Strings are a u8 byte length and UTF-8.
 *   1 ping      seq u32, flags u8 (bit0 target suspected), targetIncarnation u32, targetId
 *   2 ping-req  seq u32, flags u8 (bit0 want nack, bit1 target suspected),
 *               targetIncarnation u32, targetId, targetAddress
 *   3 ack       seq u32
 *   4 nack      seq u32
 *   5 alive     incarnation u32, nodeId, address
 *   6 suspect   incarnation u32, nodeId, fromId
 *   7 dead      incarnation u32, nodeId, fromId
 *   8 sync      flags u8 (bit0 response, bit1 join), count u16, count × (state u8,
 *               incarnation u32, nodeId, address)
 * Authentication is the transport's job (every datagram carries its MAC).
 *
 * Owns encoding and decoding only. The decoder never throws on hostile bytes: it returns
 * `{ ok: false, reason }` and the caller counts it.
 */

import { assert, fail, unreachable } from "../lib/assert.ts";
import { err, ok, type Result } from "../lib/result.ts";
import {
  ADDRESS_BYTES_MAX,
  type MemberRecord,
  type MemberState,
  NODE_ID_BYTES_MAX,
  type SwimMessage,
} from "./messages.ts";

export const PACKET_MAGIC = 0x53;
export const PACKET_VERSION = 1;
export const PACKET_HEADER_BYTES = 3;
export const PACKET_MESSAGES_MAX = 255;
/** Rows of one sync message (u16 count). */
export const SYNC_MEMBERS_MAX = 65535;

const TYPE_CODES = {
  "ping": 1,
  "ping-req": 2,
  "ack": 3,
  "nack": 4,
  "alive": 5,
  "suspect": 6,
  "dead": 7,
  "sync": 8,
} as const;

const STATE_CODES: Record<MemberState, number> = { alive: 0, suspect: 1, dead: 2, left: 3 };
const STATES: readonly MemberState[] = ["alive", "suspect", "dead", "left"];

const encoder = new TextEncoder();
/** `ignoreBOM`: a node id that begins with U+FEFF keeps it (by default the decoder drops it). */
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function stringBytes(value: string): number {
  return 1 + utf8Bytes(value);
}

/**
 * UTF-8 length of `value`. Node ids and addresses are ASCII in practice, and counting them in
 * JavaScript skips a native encoder call per string: a 200-node simulation spent most of its
 * time in those calls (every packet sizes, encodes and decodes several strings).
 */
function utf8Bytes(value: string): number {
  for (let i = 0; i < value.length; i++) {
    if (value.charCodeAt(i) >= 0x80) return encoder.encode(value).length;
  }
  return value.length;
}

/** Encoded size of one message (type byte included), for fitting gossip into a packet. */
export function messageBytes(message: SwimMessage): number {
  switch (message.type) {
    case "ping":
      return 1 + 4 + 1 + 4 + stringBytes(message.targetId);
    case "ping-req":
      return 1 + 4 + 1 + 4 + stringBytes(message.targetId) + stringBytes(message.targetAddress);
    case "ack":
    case "nack":
      return 1 + 4;
    case "alive":
      return 1 + 4 + stringBytes(message.nodeId) + stringBytes(message.address);
    case "suspect":
    case "dead":
      return 1 + 4 + stringBytes(message.nodeId) + stringBytes(message.fromId);
    case "sync": {
      let total = 1 + 1 + 2;
      for (const m of message.members) {
        total += 1 + 4 + stringBytes(m.nodeId) + stringBytes(m.address);
      }
      return total;
    }
    default:
      return unreachable(message, "message");
  }
}

class Writer {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  offset = 0;
  constructor(size: number) {
    this.bytes = new Uint8Array(size);
    this.view = new DataView(this.bytes.buffer);
  }
  u8(v: number): void {
    this.view.setUint8(this.offset, v);
    this.offset += 1;
  }
  u16(v: number): void {
    this.view.setUint16(this.offset, v, false);
    this.offset += 2;
  }
  u32(v: number): void {
    this.view.setUint32(this.offset, v, false);
    this.offset += 4;
  }
  str(v: string, max: number, what: string): void {
    const n = utf8Bytes(v);
    if (!(n <= max)) fail(`${what} is ${n} bytes, more than ${max}`);
    this.u8(n);
    if (n === v.length) {
      // ASCII: one byte per UTF-16 unit.
      for (let i = 0; i < n; i++) this.bytes[this.offset + i] = v.charCodeAt(i);
    } else {
      encoder.encodeInto(v, this.bytes.subarray(this.offset, this.offset + n));
    }
    this.offset += n;
  }
}

function checkU32(value: number, what: string): void {
  if (!(Number.isInteger(value) && value >= 0 && value <= 0xffffffff)) {
    fail(`${what} ${value} is not a u32`);
  }
}

/**
 * Encodes `messages` as one packet. Throws `AssertionError` on a programmer error (too many
 * messages, an over-long id, a non-u32 number): our own messages are always valid.
 */
export function encodePacket(messages: readonly SwimMessage[]): Uint8Array {
  if (!(messages.length >= 1 && messages.length <= PACKET_MESSAGES_MAX)) {
    fail(`a packet holds 1..${PACKET_MESSAGES_MAX} messages, got ${messages.length}`);
  }
  let size = PACKET_HEADER_BYTES;
  for (const m of messages) size += messageBytes(m);
  const w = new Writer(size);
  w.u8(PACKET_MAGIC);
  w.u8(PACKET_VERSION);
  w.u8(messages.length);
  for (const m of messages) {
    w.u8(TYPE_CODES[m.type]);
    switch (m.type) {
      case "ping":
        checkU32(m.seq, "seq");
        checkU32(m.targetIncarnation, "targetIncarnation");
        w.u32(m.seq);
        w.u8(m.targetSuspect ? 1 : 0);
        w.u32(m.targetIncarnation);
        w.str(m.targetId, NODE_ID_BYTES_MAX, "targetId");
        break;
      case "ping-req":
        checkU32(m.seq, "seq");
        checkU32(m.targetIncarnation, "targetIncarnation");
        w.u32(m.seq);
        w.u8((m.wantNack ? 1 : 0) | (m.targetSuspect ? 2 : 0));
        w.u32(m.targetIncarnation);
        w.str(m.targetId, NODE_ID_BYTES_MAX, "targetId");
        w.str(m.targetAddress, ADDRESS_BYTES_MAX, "targetAddress");
        break;
      case "ack":
      case "nack":
        checkU32(m.seq, "seq");
        w.u32(m.seq);
        break;
      case "alive":
        checkU32(m.incarnation, "incarnation");
        w.u32(m.incarnation);
        w.str(m.nodeId, NODE_ID_BYTES_MAX, "nodeId");
        w.str(m.address, ADDRESS_BYTES_MAX, "address");
        break;
      case "suspect":
      case "dead":
        checkU32(m.incarnation, "incarnation");
        w.u32(m.incarnation);
        w.str(m.nodeId, NODE_ID_BYTES_MAX, "nodeId");
        w.str(m.fromId, NODE_ID_BYTES_MAX, "fromId");
        break;
      case "sync":
        assert(m.members.length <= SYNC_MEMBERS_MAX, "sync rows fit a u16");
        w.u8((m.isResponse ? 1 : 0) | (m.isJoin ? 2 : 0));
        w.u16(m.members.length);
        for (const r of m.members) {
          checkU32(r.incarnation, "incarnation");
          w.u8(STATE_CODES[r.state]);
          w.u32(r.incarnation);
          w.str(r.nodeId, NODE_ID_BYTES_MAX, "nodeId");
          w.str(r.address, ADDRESS_BYTES_MAX, "address");
        }
        break;
      default:
        unreachable(m, "message");
    }
  }
  if (w.offset !== size) fail(`encoded ${w.offset} bytes, computed ${size}`);
  return w.bytes;
}

/** Thrown inside the decoder only, turned into an error value before it leaves this module. */
class Short extends Error {}

class Reader {
  readonly view: DataView;
  offset = 0;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.offset + n > this.bytes.length) throw new Short("truncated");
  }
  u8(): number {
    this.need(1);
    return this.view.getUint8(this.offset++);
  }
  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.offset, false);
    this.offset += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.offset, false);
    this.offset += 4;
    return v;
  }
  str(max: number, what: string): string {
    const n = this.u8();
    if (n > max) throw new Short(`${what} longer than ${max} bytes`);
    this.need(n);
    const slice = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    let ascii = true;
    for (let i = 0; i < n && ascii; i++) ascii = slice[i]! < 0x80;
    // At most 255 bytes, so one fromCharCode call is safe; ASCII is valid UTF-8 as it is.
    if (ascii) return String.fromCharCode.apply(null, slice as unknown as number[]);
    try {
      return decoder.decode(slice);
    } catch {
      throw new Short(`${what} is not UTF-8`);
    }
  }
}

/** Decodes a packet; hostile or truncated bytes give `{ ok: false, reason }`, never a throw. */
export function decodePacket(bytes: Uint8Array): Result<SwimMessage[]> {
  try {
    const r = new Reader(bytes);
    if (r.u8() !== PACKET_MAGIC) return err("bad magic");
    const version = r.u8();
    if (version !== PACKET_VERSION) return err(`unsupported version ${version}`);
    const count = r.u8();
    if (count === 0) return err("empty packet");
    const messages: SwimMessage[] = [];
    for (let i = 0; i < count; i++) {
      const code = r.u8();
      switch (code) {
        case 1: {
          const seq = r.u32();
          const flags = r.u8();
          if (flags > 1) return err("bad ping flags");
          messages.push({
            type: "ping",
            seq,
            targetSuspect: flags === 1,
            targetIncarnation: r.u32(),
            targetId: r.str(NODE_ID_BYTES_MAX, "targetId"),
          });
          break;
        }
        case 2: {
          const seq = r.u32();
          const flags = r.u8();
          if (flags > 3) return err("bad ping-req flags");
          messages.push({
            type: "ping-req",
            seq,
            wantNack: (flags & 1) !== 0,
            targetSuspect: (flags & 2) !== 0,
            targetIncarnation: r.u32(),
            targetId: r.str(NODE_ID_BYTES_MAX, "targetId"),
            targetAddress: r.str(ADDRESS_BYTES_MAX, "targetAddress"),
          });
          break;
        }
        case 3:
          messages.push({ type: "ack", seq: r.u32() });
          break;
        case 4:
          messages.push({ type: "nack", seq: r.u32() });
          break;
        case 5: {
          const incarnation = r.u32();
          messages.push({
            type: "alive",
            incarnation,
            nodeId: r.str(NODE_ID_BYTES_MAX, "nodeId"),
            address: r.str(ADDRESS_BYTES_MAX, "address"),
          });
          break;
        }
        case 6:
        case 7: {
          const incarnation = r.u32();
          const nodeId = r.str(NODE_ID_BYTES_MAX, "nodeId");
          const fromId = r.str(NODE_ID_BYTES_MAX, "fromId");
          messages.push({ type: code === 6 ? "suspect" : "dead", incarnation, nodeId, fromId });
          break;
        }
        case 8: {
          const flags = r.u8();
          if (flags > 3) return err("bad sync flags");
          const rows = r.u16();
          const members: MemberRecord[] = [];
          for (let j = 0; j < rows; j++) {
            const state = STATES[r.u8()];
            if (state === undefined) return err("bad member state");
            const incarnation = r.u32();
            const nodeId = r.str(NODE_ID_BYTES_MAX, "nodeId");
            const address = r.str(ADDRESS_BYTES_MAX, "address");
            members.push({ nodeId, address, incarnation, state });
          }
          messages.push({
            type: "sync",
            isResponse: (flags & 1) !== 0,
            isJoin: (flags & 2) !== 0,
            members,
          });
          break;
        }
        default:
          return err(`unknown message type ${code}`);
      }
    }
    if (r.offset !== bytes.length) return err("trailing bytes");
    return ok(messages);
  } catch (error) {
    if (error instanceof Short) return err(error.message);
    throw error;
  }
}
