/**
 * The WAL's on-disk formats: record frames and segment headers.
 *
 * Owns byte layouts only; it does no I/O. Decoders never throw on hostile bytes: they return
 * an error value saying why, so recovery can tell a torn tail from corruption.
 *
 * Record frame (little-endian):
 *
 *     0  u32  payloadBytes
 *     4  u32  CRC32C over bytes [0, 4) and [8, end): the length, the type and the payload,
 *             started from the segment's salt instead of zero
 *     8  u8   type (RecordType)
 *     9  ...  payload
 *
 * Why the salt: records are the caller's bytes, and a caller's payload (a webhook body) may
 * hold bytes that form valid frames. Recovery looks past damage for intact later frames to
 * tell corruption from a torn tail; without a salt a crafted payload torn by a crash would
 * read as "a later batch is intact" and keep the node from starting. A random salt per
 * segment, unknown to whoever chose the payload, makes such a frame fail its checksum.
 *
 * A data batch's BatchEnd carries a u32 (little-endian): how many bytes of the batch come
 * before it, so recovery can tell where a batch that ends intact after damage began, and so
 * whether the damage lies in an earlier batch (written, fsynced and acknowledged before this
 * one was written: corruption) or in this one (the last, possibly torn). A checkpoint's
 * BatchEnd, and every BatchEnd written before session 45, is empty: recovery then falls back to
 * finding a frame after it.
 *
 * Segment header (32 bytes, little-endian):
 *
 *     0  u32  magic "HKWL"
 *     4  u16  format version
 *     6  u16  flags (bit 0: the segment starts with a checkpoint)
 *     8  u64  segment index
 *    16  u64  LSN of the first data record in the segment
 *    24  u32  salt: the initial CRC32C value of every frame in the segment
 *    28  u32  CRC32C over bytes [0, 28)
 */

import { crc32cUpdate } from "./crc32c.ts";

export const RECORD_HEADER_BYTES = 9;
export const SEGMENT_HEADER_BYTES = 32;
export const SEGMENT_MAGIC = 0x4c574b48; // "HKWL" read as little-endian u32
export const SEGMENT_VERSION = 2;
export const SEGMENT_FLAG_CHECKPOINT = 1;

/**
 * What a frame holds. `Data` frames carry the caller's opaque records; the others are the
 * WAL's own bookkeeping. Zero is not a type, so zero-filled space never decodes as a record.
 */
export const RecordType = {
  /** A caller's record. */
  Data: 1,
  /** Ends every batch write: recovery uses it to tell a torn last batch from corruption. */
  BatchEnd: 2,
  /** Opens a checkpoint: the snapshot records follow. */
  SnapshotBegin: 3,
  /** One record of a caller's snapshot. */
  Snapshot: 4,
  /** Closes a checkpoint; the checkpoint counts only once this is on disk. */
  SnapshotEnd: 5,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

const MAX_TYPE = RecordType.SnapshotEnd;

export function frameBytes(payloadBytes: number): number {
  return RECORD_HEADER_BYTES + payloadBytes;
}

/** A data batch's BatchEnd payload: the u32 count of the batch's bytes before it. */
export const BATCH_END_PAYLOAD_BYTES = 4;

/**
 * Writes a data batch's BatchEnd payload into `target` (BATCH_END_PAYLOAD_BYTES long), byte by
 * byte: it runs once a batch, and a DataView each time would be garbage on the WAL's path.
 */
export function writeBatchEndPayload(target: Uint8Array, batchBytesBefore: number): Uint8Array {
  target[0] = batchBytesBefore & 0xff;
  target[1] = (batchBytesBefore >>> 8) & 0xff;
  target[2] = (batchBytesBefore >>> 16) & 0xff;
  target[3] = (batchBytesBefore >>> 24) & 0xff;
  return target;
}

/**
 * Where the batch closed by the BatchEnd `payload` at `offset` began, when the payload says
 * (a data batch's, written since session 45); undefined for an empty one.
 */
export function batchStartOf(payload: Uint8Array, offset: number): number | undefined {
  if (payload.length !== BATCH_END_PAYLOAD_BYTES) return undefined;
  const before = new DataView(payload.buffer, payload.byteOffset, payload.byteLength)
    .getUint32(0, true);
  return offset - before;
}

/** Writes one frame at `offset` of `target`, salted; returns the offset just past it. */
export function encodeRecordInto(
  target: Uint8Array,
  offset: number,
  type: RecordType,
  payload: Uint8Array,
  salt: number,
): number {
  const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
  view.setUint32(offset, payload.length, true);
  target[offset + 8] = type;
  target.set(payload, offset + RECORD_HEADER_BYTES);
  const end = offset + RECORD_HEADER_BYTES + payload.length;
  let crc = crc32cUpdate(salt, target, offset, offset + 4);
  crc = crc32cUpdate(crc, target, offset + 8, end);
  view.setUint32(offset + 4, crc, true);
  return end;
}

export function encodeRecord(type: RecordType, payload: Uint8Array, salt: number): Uint8Array {
  const out = new Uint8Array(frameBytes(payload.length));
  encodeRecordInto(out, 0, type, payload, salt);
  return out;
}

export type DecodedRecord = {
  ok: true;
  type: RecordType;
  /** A view into the input, not a copy. */
  payload: Uint8Array;
  /** Offset just past this frame. */
  next: number;
};

export type RecordDecodeError = {
  ok: false;
  /** `short`: the bytes end inside the frame; `corrupt`: the frame's checks fail. */
  kind: "short" | "corrupt";
  reason: string;
};

/** Decodes the frame at `offset` of a segment salted `salt`, refusing payloads over the max. */
export function decodeRecord(
  bytes: Uint8Array,
  offset: number,
  payloadBytesMax: number,
  salt: number,
): DecodedRecord | RecordDecodeError {
  const available = bytes.length - offset;
  if (offset < 0 || available < RECORD_HEADER_BYTES) {
    return { ok: false, kind: "short", reason: `${available} bytes left, a frame header needs 9` };
  }
  // The type byte is checked before anything else: recovery scans damaged regions byte by
  // byte, and most offsets fail here cheaply.
  const type = bytes[offset + 8]!;
  if (type === 0 || type > MAX_TYPE) {
    return { ok: false, kind: "corrupt", reason: `unknown record type ${type}` };
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const payloadBytes = view.getUint32(offset, true);
  if (payloadBytes > payloadBytesMax) {
    return {
      ok: false,
      kind: "corrupt",
      reason: `payload length ${payloadBytes} exceeds the limit ${payloadBytesMax}`,
    };
  }
  const end = offset + RECORD_HEADER_BYTES + payloadBytes;
  if (end > bytes.length) {
    return {
      ok: false,
      kind: "short",
      reason: `frame of ${RECORD_HEADER_BYTES + payloadBytes} bytes, ${available} left`,
    };
  }
  let crc = crc32cUpdate(salt, bytes, offset, offset + 4);
  crc = crc32cUpdate(crc, bytes, offset + 8, end);
  const stored = view.getUint32(offset + 4, true);
  if (crc !== stored) {
    return { ok: false, kind: "corrupt", reason: `checksum mismatch` };
  }
  return {
    ok: true,
    type: type as RecordType,
    payload: bytes.subarray(offset + RECORD_HEADER_BYTES, end),
    next: end,
  };
}

export interface SegmentHeader {
  version: number;
  flags: number;
  segmentIndex: number;
  firstLsn: number;
  /** Random u32 chosen when the segment is created; seeds every frame's checksum. */
  salt: number;
}

export function encodeSegmentHeader(header: SegmentHeader): Uint8Array {
  const out = new Uint8Array(SEGMENT_HEADER_BYTES);
  const view = new DataView(out.buffer);
  view.setUint32(0, SEGMENT_MAGIC, true);
  view.setUint16(4, header.version, true);
  view.setUint16(6, header.flags, true);
  view.setBigUint64(8, BigInt(header.segmentIndex), true);
  view.setBigUint64(16, BigInt(header.firstLsn), true);
  view.setUint32(24, header.salt >>> 0, true);
  view.setUint32(28, crc32cUpdate(0, out, 0, 28), true);
  return out;
}

export type SegmentHeaderResult =
  | { ok: true; header: SegmentHeader }
  | { ok: false; kind: "short" | "corrupt"; reason: string };

export function decodeSegmentHeader(bytes: Uint8Array): SegmentHeaderResult {
  if (bytes.length < SEGMENT_HEADER_BYTES) {
    return {
      ok: false,
      kind: "short",
      reason: `segment header needs 32 bytes, got ${bytes.length}`,
    };
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, SEGMENT_HEADER_BYTES);
  if (view.getUint32(0, true) !== SEGMENT_MAGIC) {
    return { ok: false, kind: "corrupt", reason: "bad segment magic" };
  }
  if (view.getUint32(28, true) !== crc32cUpdate(0, bytes, 0, 28)) {
    return { ok: false, kind: "corrupt", reason: "segment header checksum mismatch" };
  }
  const version = view.getUint16(4, true);
  if (version !== SEGMENT_VERSION) {
    return { ok: false, kind: "corrupt", reason: `unsupported segment version ${version}` };
  }
  const segmentIndex = view.getBigUint64(8, true);
  const firstLsn = view.getBigUint64(16, true);
  if (
    segmentIndex > BigInt(Number.MAX_SAFE_INTEGER) || firstLsn > BigInt(Number.MAX_SAFE_INTEGER)
  ) {
    return { ok: false, kind: "corrupt", reason: "segment index or LSN out of range" };
  }
  return {
    ok: true,
    header: {
      version,
      flags: view.getUint16(6, true),
      segmentIndex: Number(segmentIndex),
      firstLsn: Number(firstLsn),
      salt: view.getUint32(24, true),
    },
  };
}

export function segmentFileName(segmentIndex: number): string {
  return `${String(segmentIndex).padStart(20, "0")}.wal`;
}

/** The index in a segment file name, or undefined for any other file. */
export function parseSegmentFileName(name: string): number | undefined {
  const match = /^(\d{20})\.wal$/.exec(name);
  return match ? Number(match[1]) : undefined;
}
