/**
 * Recovery: reads a WAL directory back on open.
 *
 * Owns the decision of what on disk is the log: which segments count (from the newest
 * complete checkpoint on), which tail bytes are a torn, never-acknowledged last batch (cut
 * and reported), and which damage is corruption of acknowledged data (an error naming the
 * segment and offset — never skipped silently). It does not write records; it may delete or
 * truncate files only to finish what a crash interrupted.
 *
 * Why batch ends decide: the writer starts batch N+1 only after batch N's fsync returned, and
 * ends every batch with a BatchEnd frame. Damage inside the last batch with nothing durable
 * after it is a torn write (the batch was never acknowledged). Damage followed by a later
 * batch's frames was durable once, so it is reported as corruption.
 */

import {
  BATCH_END_PAYLOAD_BYTES,
  batchStartOf,
  decodeRecord,
  decodeSegmentHeader,
  parseSegmentFileName,
  RECORD_HEADER_BYTES,
  RecordType,
  SEGMENT_FLAG_CHECKPOINT,
  SEGMENT_HEADER_BYTES,
  type SegmentHeader,
} from "./record_codec.ts";
import { joinPath, type WalFs } from "./wal_fs.ts";
import { assert } from "../lib/assert.ts";

export class WalCorruptionError extends Error {
  override name = "WalCorruptionError";
  constructor(readonly segment: string, readonly offset: number, reason: string) {
    super(`WAL corruption in segment ${segment} at offset ${offset}: ${reason}`);
  }
}

/** One record handed back in log order. */
export interface ReplayedRecord {
  kind: "snapshot" | "data";
  payload: Uint8Array;
  /** For data records: the LSN `append` returned. For snapshot records: the LSN they precede. */
  lsn: number;
  /** The segment file holding the record, and the byte offset of its frame there. */
  segment: string;
  offset: number;
}

export interface TruncationReport {
  segment: string;
  offset: number;
  droppedBytes: number;
  reason: string;
}

export interface RecoveryReport {
  segmentsRead: number;
  dataRecords: number;
  snapshotRecords: number;
  /** Set when a torn tail was cut off. */
  truncated: TruncationReport | undefined;
  /** Segments deleted to finish an interrupted checkpoint or rotation. */
  removedSegments: string[];
}

export interface RecoveredTail {
  /** The segment to keep appending to, or undefined when the directory is empty. */
  lastSegment:
    | { index: number; name: string; sizeBytes: number; header: SegmentHeader }
    | undefined;
  /** Segments kept (oldest first), for reclamation later. */
  segments: Array<{ index: number; name: string }>;
  nextLsn: number;
  report: RecoveryReport;
}

interface SegmentFile {
  index: number;
  name: string;
  header: SegmentHeader | undefined;
}

export async function recoverWal(
  fs: WalFs,
  dir: string,
  recordBytesMax: number,
  replay: (record: ReplayedRecord) => void,
): Promise<RecoveredTail> {
  await fs.mkdirp(dir);
  const report: RecoveryReport = {
    segmentsRead: 0,
    dataRecords: 0,
    snapshotRecords: 0,
    truncated: undefined,
    removedSegments: [],
  };
  const indexes = (await fs.list(dir))
    .map((name) => ({ name, index: parseSegmentFileName(name) }))
    .filter((s): s is { name: string; index: number } => s.index !== undefined)
    .sort((a, b) => a.index - b.index);

  // Only headers are read up front, and below one segment's bytes are held at a time: a log
  // of many segments must not have to fit in memory to be recovered.
  const segments: SegmentFile[] = [];
  for (const { name, index } of indexes) {
    const head = await fs.readRange(joinPath(dir, name), 0, SEGMENT_HEADER_BYTES);
    const decoded = decodeSegmentHeader(head);
    segments.push({ index, name, header: decoded.ok ? decoded.header : undefined });
  }
  let cached: { name: string; bytes: Uint8Array } | undefined;
  const read = async (segment: SegmentFile): Promise<Uint8Array> => {
    if (cached?.name !== segment.name) {
      cached = { name: segment.name, bytes: await fs.readFile(joinPath(dir, segment.name)) };
    }
    return cached.bytes;
  };

  // A segment whose header never became durable can only be the newest, and then it holds
  // nothing else: a segment's header is written and synced before anything goes into it.
  // A damaged header with more bytes after it was durable once, so it is corruption.
  const last = segments.at(-1);
  if (last !== undefined && last.header === undefined) {
    const bytes = await read(last);
    if (bytes.length > SEGMENT_HEADER_BYTES) {
      throw new WalCorruptionError(
        last.name,
        0,
        `segment header is damaged but ${bytes.length - SEGMENT_HEADER_BYTES} bytes follow it`,
      );
    }
    await dropSegment(fs, dir, report, {
      segment: last.name,
      offset: 0,
      droppedBytes: bytes.length,
      reason: "segment header incomplete (crash during rotation)",
    });
    segments.pop();
  }
  for (const segment of segments) {
    if (segment.header === undefined) {
      const why = decodeSegmentHeader(
        await fs.readRange(
          joinPath(dir, segment.name),
          0,
          SEGMENT_HEADER_BYTES,
        ),
      );
      throw new WalCorruptionError(segment.name, 0, why.ok ? "unreadable header" : why.reason);
    }
    if (segment.header.segmentIndex !== segment.index) {
      throw new WalCorruptionError(
        segment.name,
        8,
        `header names segment ${segment.header.segmentIndex}, file name says ${segment.index}`,
      );
    }
  }

  // Start from the newest segment that opens with a complete checkpoint. A checkpoint gets a
  // segment of its own at its cut, and appends go on in the next segment while it is filled,
  // so an incomplete one is either the newest segment (torn before the data segment after it
  // was made) or followed by a data segment that starts at its cut (torn while appends went
  // on). Either way the checkpoint never completed and the log before it still holds the state:
  // it is skipped (below: dropped when it is the newest segment, kept otherwise). Anything else
  // is damage to a sealed segment. Logs written before checkpoints had segments of their own (a
  // checkpoint then data in one segment) read the same way.
  let start = 0;
  let startsAtCheckpoint = false;
  const torn: Array<{ segment: SegmentFile; sizeBytes: number }> = [];
  for (let i = segments.length - 1; i >= 0; i--) {
    const segment = segments[i]!;
    if ((segment.header!.flags & SEGMENT_FLAG_CHECKPOINT) === 0) continue;
    const bytes = await read(segment);
    const salt = segment.header!.salt;
    if (checkpointComplete(bytes, recordBytesMax, salt)) {
      start = i;
      startsAtCheckpoint = true;
      break;
    }
    const after = segments[i + 1];
    if (
      after !== undefined &&
      (after.index !== segment.index + 1 ||
        (after.header!.flags & SEGMENT_FLAG_CHECKPOINT) !== 0 ||
        after.header!.firstLsn !== segment.header!.firstLsn)
    ) {
      throw new WalCorruptionError(
        segment.name,
        SEGMENT_HEADER_BYTES,
        "incomplete checkpoint in a sealed segment",
      );
    }
    // The checkpoint is the segment's one batch, from its header on.
    const later = findFrameAfterBatch(
      bytes,
      SEGMENT_HEADER_BYTES,
      SEGMENT_HEADER_BYTES,
      recordBytesMax,
      salt,
    );
    if (later !== undefined) {
      throw new WalCorruptionError(
        segment.name,
        SEGMENT_HEADER_BYTES,
        `checkpoint is damaged but a later batch at offset ${later} is intact`,
      );
    }
    torn.push({ segment, sizeBytes: bytes.length });
  }
  const tornIndexes = new Set(torn.map((t) => t.segment.index));
  const tornIsNewest = tornIndexes.has(segments.at(-1)?.index ?? -1);
  const live = segments.slice(start).filter((s) => !tornIndexes.has(s.index));
  // Reclamation removes only segments older than a complete checkpoint, so the log starts at
  // one or at LSN 0, and rotation numbers segments consecutively (a torn checkpoint's number
  // aside): anything else means a segment was lost (one holding no records would slip past
  // the LSN check below). Segments before the checkpoint are not checked: a crash may have
  // removed any subset of them.
  const first = live[0];
  if (first !== undefined && !startsAtCheckpoint && first.header!.firstLsn !== 0) {
    throw new WalCorruptionError(
      first.name,
      16,
      `oldest segment starts at LSN ${first.header!.firstLsn} without a checkpoint: ` +
        "earlier segments are missing",
    );
  }
  for (let i = 1; i < live.length; i++) {
    const expected = live[i - 1]!.index + 1;
    const index = live[i]!.index;
    if (index !== expected && !(index === expected + 1 && tornIndexes.has(expected))) {
      throw new WalCorruptionError(
        live[i]!.name,
        0,
        `segment ${expected} is missing before this one`,
      );
    }
  }

  let nextLsn = live[0]?.header?.firstLsn ?? 0;
  let lastSize = 0;
  for (let s = 0; s < live.length; s++) {
    const segment = live[s]!;
    // Before a torn checkpoint that is the newest segment every segment was sealed: the
    // checkpoint was made only after the last batch's fsync returned, so no tail may be cut.
    const isLast = s === live.length - 1 && !tornIsNewest;
    const header = segment.header!;
    if (header.firstLsn !== nextLsn) {
      throw new WalCorruptionError(
        segment.name,
        16,
        `segment starts at LSN ${header.firstLsn}, previous segment ended at ${nextLsn}`,
      );
    }
    report.segmentsRead++;
    const bytes = await read(segment);
    let offset = SEGMENT_HEADER_BYTES;
    // Records of the batch being read are held back until its BatchEnd arrives, so a torn last
    // batch is never half-replayed.
    let pending: ReplayedRecord[] = [];
    let pendingDataRecords = 0;
    let batchStart = offset;
    let inCheckpoint = false;
    while (offset < bytes.length) {
      const frame = decodeRecord(bytes, offset, recordBytesMax, header.salt);
      if (!frame.ok) {
        if (!isLast) {
          throw new WalCorruptionError(segment.name, offset, `${frame.reason} in a sealed segment`);
        }
        const later = findFrameAfterBatch(
          bytes,
          offset + 1,
          batchStart,
          recordBytesMax,
          header.salt,
        );
        if (later !== undefined) {
          throw new WalCorruptionError(
            segment.name,
            offset,
            `${frame.reason}; a later batch at offset ${later} is intact, so this is not a torn tail`,
          );
        }
        break;
      }
      // The walk only moves forward, one whole frame at a time, inside the segment's bytes: a
      // frame that claimed to end before its own header, or past the bytes read, would make
      // replay loop or read another frame's bytes as a payload.
      assert(
        frame.next === offset + RECORD_HEADER_BYTES + frame.payload.length,
        `recovery: frame at ${offset} ends at ${frame.next}, not after its payload`,
      );
      assert(
        frame.next <= bytes.length && frame.payload.length <= recordBytesMax,
        `recovery: frame at ${offset} overruns its segment or recordBytesMax`,
      );
      assert(
        batchStart <= offset && pendingDataRecords <= pending.length,
        `recovery: batch start ${batchStart} past frame offset ${offset}`,
      );
      // Payloads are copied out: a view would keep the whole segment's buffer alive for as
      // long as the caller keeps one record of it.
      switch (frame.type) {
        case RecordType.Data:
          pending.push({
            kind: "data",
            payload: frame.payload.slice(),
            lsn: nextLsn + pendingDataRecords,
            segment: segment.name,
            offset,
          });
          pendingDataRecords++;
          break;
        case RecordType.SnapshotBegin:
          inCheckpoint = true;
          break;
        case RecordType.Snapshot:
          if (!inCheckpoint) {
            throw new WalCorruptionError(
              segment.name,
              offset,
              "snapshot record outside a checkpoint",
            );
          }
          pending.push({
            kind: "snapshot",
            payload: frame.payload.slice(),
            lsn: nextLsn,
            segment: segment.name,
            offset,
          });
          break;
        case RecordType.SnapshotEnd:
          inCheckpoint = false;
          break;
        case RecordType.BatchEnd:
          for (const record of pending) {
            replay(record);
            if (record.kind === "data") report.dataRecords++;
            else report.snapshotRecords++;
          }
          nextLsn += pendingDataRecords;
          pending = [];
          pendingDataRecords = 0;
          batchStart = frame.next;
          break;
      }
      offset = frame.next;
    }
    const goodEnd = batchStart;
    assert(
      goodEnd >= SEGMENT_HEADER_BYTES && goodEnd <= offset,
      `recovery: good end ${goodEnd} outside the walked bytes (walk stopped at ${offset})`,
    );
    if (goodEnd < bytes.length) {
      if (!isLast) {
        throw new WalCorruptionError(segment.name, goodEnd, "sealed segment ends inside a batch");
      }
      await fs.truncate(joinPath(dir, segment.name), goodEnd);
      report.truncated = {
        segment: segment.name,
        offset: goodEnd,
        droppedBytes: bytes.length - goodEnd,
        reason: offset < bytes.length ? "torn record at the tail" : "last batch incomplete",
      };
    }
    lastSize = goodEnd;
  }

  // A torn checkpoint with data segments after it stays on disk: the data segment after it
  // names its cut, so every recovery tells it apart as this one did, and removing it would
  // leave a gap in the segment numbers that the next recovery could not tell from a lost
  // segment. The next checkpoint reclaims it with the segments before it. One that is the
  // newest segment (the first found) had nothing appended after it, so the log before it must
  // end at its cut, and it is dropped: the writer will create a segment of that number again,
  // and keeping a checkpoint-flagged segment without a checkpoint under later data would read
  // as corruption.
  if (tornIsNewest) {
    const { segment, sizeBytes } = torn[0]!;
    const cutLsn = segment.header!.firstLsn;
    const before = live.at(-1);
    if (before === undefined || nextLsn !== cutLsn || before.index + 1 !== segment.index) {
      throw new WalCorruptionError(
        segment.name,
        16,
        `incomplete checkpoint at LSN ${cutLsn}, but the log before it ends at ${nextLsn}`,
      );
    }
    await dropSegment(fs, dir, report, {
      segment: segment.name,
      offset: 0,
      droppedBytes: sizeBytes,
      reason: "checkpoint incomplete (crash while writing it)",
    });
  }

  // A complete checkpoint makes every older segment garbage; finish the reclamation a crash
  // interrupted. Done last, so nothing is deleted before the log after it has been verified.
  for (const stale of segments.slice(0, start)) {
    await fs.remove(joinPath(dir, stale.name));
    report.removedSegments.push(stale.name);
  }
  if (start > 0) await fs.syncDir(dir);

  const tail = live.at(-1);
  return {
    lastSegment: tail === undefined
      ? undefined
      : { index: tail.index, name: tail.name, sizeBytes: lastSize, header: tail.header! },
    // Torn checkpoints kept between data segments are listed for the next reclamation.
    segments: segments.slice(start)
      .filter((s) => !tornIsNewest || s !== segments.at(-1))
      .map(({ index, name }) => ({ index, name })),
    nextLsn,
    report,
  };
}

/** Deletes a segment that holds only a torn, never-acknowledged write, durably, and says so. */
async function dropSegment(
  fs: WalFs,
  dir: string,
  report: RecoveryReport,
  truncation: TruncationReport,
): Promise<void> {
  await fs.remove(joinPath(dir, truncation.segment));
  await fs.syncDir(dir);
  report.removedSegments.push(truncation.segment);
  report.truncated = truncation;
}

function checkpointComplete(bytes: Uint8Array, recordBytesMax: number, salt: number): boolean {
  let offset = SEGMENT_HEADER_BYTES;
  const first = decodeRecord(bytes, offset, recordBytesMax, salt);
  if (!first.ok || first.type !== RecordType.SnapshotBegin) return false;
  offset = first.next;
  while (offset < bytes.length) {
    const frame = decodeRecord(bytes, offset, recordBytesMax, salt);
    if (!frame.ok) return false;
    if (frame.type === RecordType.SnapshotEnd) {
      const end = decodeRecord(bytes, frame.next, recordBytesMax, salt);
      return end.ok && end.type === RecordType.BatchEnd;
    }
    offset = frame.next;
  }
  return false;
}

/**
 * Looks past damage at `from`, inside the batch that began at `damagedBatchStart`, for an
 * intact later batch; returns where it begins. Evidence is a valid BatchEnd that says its batch
 * began after `damagedBatchStart` (a data batch's BatchEnd carries its length), or a valid
 * BatchEnd followed by another valid frame. Either way a batch was written after the damaged
 * one, which the writer does only once the damaged one's fsync returned. The salt keeps
 * frame-shaped bytes inside a caller's payload from counting (record_codec.ts).
 */
function findFrameAfterBatch(
  bytes: Uint8Array,
  from: number,
  damagedBatchStart: number,
  recordBytesMax: number,
  salt: number,
): number | undefined {
  for (let offset = from; offset + RECORD_HEADER_BYTES <= bytes.length; offset++) {
    // A BatchEnd frame's payload is empty or BATCH_END_PAYLOAD_BYTES: checking its type and
    // length first means no offset costs more than a 13-byte checksum. Decoding every offset
    // as a frame would checksum up to recordBytesMax bytes at each one whose bytes merely look
    // like a header, which a payload can arrange everywhere, making the scan quadratic in the
    // damaged region.
    const length = bytes[offset]!;
    if (
      bytes[offset + 8] !== RecordType.BatchEnd ||
      (length !== 0 && length !== BATCH_END_PAYLOAD_BYTES) ||
      (bytes[offset + 1]! | bytes[offset + 2]! | bytes[offset + 3]!) !== 0
    ) {
      continue;
    }
    const frame = decodeRecord(bytes, offset, recordBytesMax, salt);
    if (!frame.ok || frame.type !== RecordType.BatchEnd) continue;
    const start = batchStartOf(frame.payload, offset);
    if (start !== undefined && start > damagedBatchStart && start >= SEGMENT_HEADER_BYTES) {
      return start;
    }
    const next = decodeRecord(bytes, frame.next, recordBytesMax, salt);
    if (next.ok) return frame.next;
  }
  return undefined;
}
