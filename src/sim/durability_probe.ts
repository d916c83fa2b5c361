/**
 * What a simulated node's disk holds durably, read the way recovery would read it: which jobs
 * (id and body) a crash at this very moment would leave on that node's WAL. The whole-cluster
 * simulation asks it, at the instant a submit is acknowledged, on how many disks the job is.
 *
 * Owns a parse cache per disk file (by disk and file serial): each durable byte is parsed
 * once, so asking at every acknowledgement costs what was synced since the last question.
 * Must not change a disk or a node; it only reads `SimDisk.durableFiles()`.
 *
 * What counts as holding a job: a job-store record with the job's spec (SUBMIT, a COMMIT that
 * carries the spec, a STATE in a checkpoint or handoff) or the idempotency key it left behind,
 * inside a complete unit of the WAL: a data batch whose BatchEnd frame is durable, or a
 * checkpoint whose SnapshotEnd is. A batch torn short of its BatchEnd is what recovery cuts
 * off, so its frames do not count even where their bytes are durable.
 */

import { eventJobIds } from "../jobs/event_table.ts";
import { decodeWalBatch } from "../jobs/job_codec.ts";
import type { JobRecord } from "../jobs/job_model.ts";
import {
  decodeRecord,
  decodeSegmentHeader,
  RecordType,
  SEGMENT_HEADER_BYTES,
} from "../wal/record_codec.ts";
import type { SimDisk } from "./disk.ts";

/** Payload bound for parsing: generous, the simulation's WAL is configured far below it. */
const PAYLOAD_BYTES_MAX = 64 * 1024 * 1024;

interface FileParse {
  /** Offset just past the last complete unit parsed. */
  offset: number;
  salt: number | undefined;
  /** `jobId + "\u0000" + bodyHash` of every job held in complete units. */
  readonly jobs: Set<string>;
  /** The segment header itself is damaged: recovery reads nothing in this file. */
  stopped: boolean;
}

/** Key of a held job: its id and the hash of its body ("" for unkeyed jobs). */
export function heldKey(jobId: string, bodyHash: string): string {
  return `${jobId}\u0000${bodyHash}`;
}

/**
 * What a stamped record says, to compare two records under one stamp: the same record
 * (re-encoded or not) gives the same text, two different records of one seq do not.
 */
export function recordIdentity(record: JobRecord): string | undefined {
  switch (record.type) {
    case "submit":
      return `submit ${record.spec.id} ${record.spec.bodyHash} ${record.spec.payload}`;
    case "skip":
      return "skip";
    case "endpoint":
      return `endpoint ${record.state.id} ${record.state.version.atMs}`;
    case "event":
      return `event ${record.body.event.id} ${record.body.event.bodyHash} ${record.body.event.payload}`;
    case "event-commit":
      return `event-commit ${record.eventId}`;
    case "endpoint-health":
      return `endpoint-health ${record.endpointId} ${record.lastSuccessAtMs}`;
    case "event-state":
    case "endpoint-state":
    case "state":
    case "key":
    case "gone":
    case "meta":
      return undefined;
    default:
      return `${record.type} ${record.jobId}`;
  }
}

/** Stamp conflicts kept in full (the rest are counted). */
const STAMP_CONFLICTS_MAX = 5;

/** The key an event's record proves the event is held by (`holds(disk, eventKey(id), "")`). */
export function eventKey(eventId: string): string {
  return `event:${eventId}`;
}

/**
 * The key a REVIVE of generation `gen` is held by (`holds(disk, reviveKey(id, gen), "")`): the
 * record itself, or any record of that generation or a later one (a RETRY, DONE or DEAD, a
 * checkpoint's or handoff's state), which exists only once the REVIVE was made. A node that
 * caught up through a snapshot counts the REVIVE's seq as held and votes for it at once, while
 * its disk may hold only the new generation's DONE (seed 221 with `--revives`).
 */
export function reviveKey(jobId: string, gen: number): string {
  return `revive:${jobId}:${gen}`;
}

/** Every generation a state of generation `gen` proves was started. */
function reviveKeysUpTo(jobId: string, gen: number): string[] {
  const keys: string[] = [];
  for (let g = 1; g <= gen; g++) keys.push(heldKey(reviveKey(jobId, g), ""));
  return keys;
}

/** The (id, body) keys a record proves the job is held by (none for most records). */
export function heldKeysOf(record: JobRecord): string[] {
  switch (record.type) {
    case "revive":
      return [heldKey(reviveKey(record.jobId, record.gen), "")];
    case "retry":
    case "done":
    case "dead":
      return reviveKeysUpTo(record.jobId, record.gen);
    case "submit":
      return [heldKey(record.spec.id, record.spec.bodyHash)];
    case "commit":
      return record.spec !== undefined ? [heldKey(record.spec.id, record.spec.bodyHash)] : [];
    case "state":
      return [
        ...(record.state.spec !== undefined
          ? [heldKey(record.state.jobId, record.state.spec.bodyHash)]
          : []),
        ...reviveKeysUpTo(record.state.jobId, record.state.gen),
      ];
    case "key":
      return [heldKey(record.key.jobId, record.key.bodyHash)];
    case "event":
      // An event's record holds the event and every one of its jobs (their bodies are its).
      return [
        heldKey(eventKey(record.body.event.id), ""),
        ...eventJobIds(record.body).map((jobId) => heldKey(jobId, "")),
      ];
    case "event-commit":
      return record.body !== undefined
        ? eventJobIds(record.body).map((jobId) => heldKey(jobId, ""))
        : [];
    default:
      return [];
  }
}

export class DurabilityProbe {
  /** Per disk (serials are a disk's own), per file serial. */
  readonly #disks = new Map<SimDisk, Map<number, FileParse>>();
  /** WAL batches that did not decode as job-store batches (must stay 0). */
  undecodable = 0;
  /** What each stamp named on the first disk seen holding it. */
  readonly #stamps = new Map<string, string>();
  /** One seq naming two different records on the disks (a reused seq; must stay empty). */
  readonly stampConflicts: string[] = [];
  stampConflictsMore = 0;
  /** Disk names for the stamp conflicts' report. */
  readonly #names = new Map<SimDisk, string>();

  /** Names `disk` (its node) in what the probe reports. */
  name(disk: SimDisk, name: string): void {
    this.#names.set(disk, name);
  }

  /** Whether a crash now would leave `(jobId, bodyHash)` on `disk`. */
  holds(disk: SimDisk, jobId: string, bodyHash: string): boolean {
    const key = heldKey(jobId, bodyHash);
    const files = this.#filesOf(disk);
    for (const file of disk.durableFiles()) {
      if (!file.path.endsWith(".wal")) continue;
      if (this.#parse(files, file.serial, file.bytes, disk).jobs.has(key)) return true;
    }
    return false;
  }

  /** Reads what `disk` holds durably now (for the stamp check at the end of a run). */
  scan(disk: SimDisk): void {
    const files = this.#filesOf(disk);
    for (const file of disk.durableFiles()) {
      if (file.path.endsWith(".wal")) this.#parse(files, file.serial, file.bytes, disk);
    }
  }

  #filesOf(disk: SimDisk): Map<number, FileParse> {
    let files = this.#disks.get(disk);
    if (files === undefined) {
      files = new Map();
      this.#disks.set(disk, files);
    }
    return files;
  }

  #noteStamp(where: string, stamp: string, identity: string): void {
    const earlier = this.#stamps.get(stamp);
    if (earlier === undefined) this.#stamps.set(stamp, identity);
    else if (earlier !== identity) {
      if (this.stampConflicts.length < STAMP_CONFLICTS_MAX) {
        this.stampConflicts.push(`${stamp}: ${earlier}, and ${identity} in ${where}`);
      } else this.stampConflictsMore++;
    }
  }

  #parse(
    files: Map<number, FileParse>,
    serial: number,
    bytes: Uint8Array,
    disk: SimDisk,
  ): FileParse {
    let state = files.get(serial);
    if (state === undefined || bytes.length < state.offset) {
      // New, or cut below what was parsed (recovery truncated a torn tail): start over.
      state = { offset: 0, salt: undefined, jobs: new Set(), stopped: false };
      files.set(serial, state);
    }
    if (state.stopped) return state;
    if (state.salt === undefined) {
      if (bytes.length < SEGMENT_HEADER_BYTES) return state;
      const header = decodeSegmentHeader(bytes.subarray(0, SEGMENT_HEADER_BYTES));
      if (!header.ok) {
        state.stopped = true;
        return state;
      }
      state.salt = header.header.salt;
      state.offset = SEGMENT_HEADER_BYTES;
    }
    let offset = state.offset;
    let unit: string[] = [];
    let unitStamps: Array<[string, string]> = [];
    for (;;) {
      const frame = decodeRecord(bytes, offset, PAYLOAD_BYTES_MAX, state.salt);
      if (!frame.ok) {
        // Short or damaged (a torn tail a crash left): nothing past the last complete unit
        // counts. Not for good: recovery cuts the torn tail and the log grows on from there,
        // so the next question parses again from that unit.
        return state;
      }
      offset = frame.next;
      switch (frame.type) {
        case RecordType.Data:
        case RecordType.Snapshot: {
          const batch = decodeWalBatch(frame.payload);
          if (!batch.ok) {
            this.undecodable++;
            break;
          }
          for (const { record } of batch.value) {
            unit.push(...heldKeysOf(record));
            const identity = recordIdentity(record);
            if (identity !== undefined && "stamp" in record) {
              unitStamps.push([`${record.stamp.origin}/${record.stamp.seq}`, identity]);
            }
          }
          break;
        }
        case RecordType.SnapshotBegin:
          unit = [];
          unitStamps = [];
          break;
        case RecordType.SnapshotEnd:
        case RecordType.BatchEnd:
          // A complete unit: what recovery would replay.
          for (const key of unit) state.jobs.add(key);
          for (const [stamp, identity] of unitStamps) {
            this.#noteStamp(this.#names.get(disk) ?? "a disk", stamp, identity);
          }
          unit = [];
          unitStamps = [];
          state.offset = offset;
          break;
      }
    }
  }
}
