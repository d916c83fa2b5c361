/**
 * Checkpoints written beside the appends (src/wal/wal.ts `#startCheckpoint`, `#writeSnapshot`):
 * at the cut the checkpoint gets a segment of its own and appends go on at once in the segment
 * after it, while the snapshot is drawn a slice at a time, a macrotask between slices, its
 * segment synced off the event-loop thread as it grows and in full before older segments go. A
 * caller's failure voids only the checkpoint, and a crash may tear it with data after it:
 * either way its segment stays, recovery skips it on every reopening, and the next checkpoint
 * reclaims it (src/wal/recovery.ts).
 *
 * The WAL's clock stands still here (as the simulator's does inside a slice), so slices end by
 * `checkpointSliceBytes` alone and every run slices the same way; its timers are real
 * macrotasks. Snapshot records of 23 bytes make 32-byte frames: 8 to a 256-byte slice.
 */

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import {
  type ReplayedRecord,
  Wal,
  WalCorruptionError,
  WalFailedError,
  type WalFs,
} from "../../src/wal/mod.ts";
import {
  decodeSegmentHeader,
  encodeSegmentHeader,
  frameBytes,
  parseSegmentFileName,
  SEGMENT_FLAG_CHECKPOINT,
  SEGMENT_HEADER_BYTES,
  segmentFileName,
  type SegmentHeader,
} from "../../src/wal/record_codec.ts";
import type { WalConfig } from "../../src/config/wal.ts";
import { testRecord, testRecordNumber } from "./test_records.ts";

const DIR = "/wal";
const SLICE_BYTES = 256;
const SYNC_BYTES = 1024;
const RECORD_BYTES = 23;
/** Snapshot frames one slice holds: the byte bound ends a slice after exactly this many. */
const PER_SLICE = SLICE_BYTES / frameBytes(RECORD_BYTES);
const CONFIG: Partial<WalConfig> = {
  segmentBytes: 4096,
  batchBytesMax: 1024,
  recordBytesMax: 256,
  checkpointSliceBytes: SLICE_BYTES,
  checkpointSyncBytes: SYNC_BYTES,
};
/** Records of a snapshot are numbered from here, data records by their LSN. */
const SNAPSHOT_BASE = 100_000;

function record(n: number, bytes = RECORD_BYTES): Uint8Array {
  return testRecord(n, bytes);
}

const recordNumber = testRecordNumber;

/**
 * The WAL's clock, standing still; its timers are real `setTimeout`s. `yields` holds, for every
 * zero-delay timer the WAL armed (a checkpoint's yield between slices), what `drawn()` said
 * when that timer ran.
 */
function stillClock(drawn: () => number = () => 0) {
  const yields: number[] = [];
  return {
    yields,
    nowMs: () => 0,
    setTimer(delayMs: number, fn: () => void): () => void {
      const handle = setTimeout(() => {
        if (delayMs === 0) yields.push(drawn());
        fn();
      }, delayMs);
      return () => clearTimeout(handle);
    },
  };
}

interface FileLog {
  written: number;
  synced: number;
  writes: number;
  /** The `offThread` argument of every `syncData` call, in order. */
  syncs: Array<boolean | undefined>;
  /** The most bytes written and not yet synced, seen after any write. */
  maxUnsynced: number;
}

/** `disk` seen through a WAL's file calls: per path, what was written and synced when. */
function observedDisk(disk: SimDisk) {
  const inner = disk.mount();
  const files = new Map<string, FileLog>();
  const removals: Array<{ path: string; unsynced: Map<string, number> }> = [];
  const unsyncedNow = () =>
    new Map([...files].map(([path, log]) => [path, log.written - log.synced]));
  const fs: WalFs = {
    ...inner,
    remove: (path) => {
      removals.push({ path, unsynced: unsyncedNow() });
      return inner.remove(path);
    },
    openAppend: async (path, create) => {
      const file = await inner.openAppend(path, create);
      let log = files.get(path);
      if (log === undefined || create) {
        log = { written: 0, synced: 0, writes: 0, syncs: [], maxUnsynced: 0 };
        files.set(path, log);
      }
      const entry = log;
      return {
        writeAll: async (bytes) => {
          await file.writeAll(bytes);
          entry.written += bytes.length;
          entry.writes++;
          entry.maxUnsynced = Math.max(entry.maxUnsynced, entry.written - entry.synced);
        },
        syncData: async (offThread?: boolean) => {
          entry.syncs.push(offThread);
          const written = entry.written;
          await file.syncData();
          entry.synced = written;
        },
        close: () => file.close(),
      };
    },
  };
  return { fs, files, removals };
}

function segmentPath(index: number): string {
  return `${DIR}/${segmentFileName(index)}`;
}

/** The index the next segment the WAL creates gets: its checkpoint's, at a checkpoint. */
async function nextSegmentIndex(disk: SimDisk): Promise<number> {
  const indexes = (await disk.list(DIR)).map((n) => parseSegmentFileName(n)!);
  return Math.max(...indexes) + 1;
}

async function reopen(disk: SimDisk) {
  const replayed: ReplayedRecord[] = [];
  const opened = await Wal.open(DIR, {
    fs: disk.mount(),
    config: CONFIG,
    clock: stillClock(),
    replay: (r) => replayed.push(r),
  });
  const data = replayed.filter((r) => r.kind === "data");
  for (const r of data) assertEquals(recordNumber(r.payload), r.lsn, "a data record's LSN");
  return {
    ...opened,
    replayed,
    snapshot: replayed.filter((r) => r.kind === "snapshot").map((r) => recordNumber(r.payload)),
    lsns: data.map((r) => r.lsn),
  };
}

function range(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}

/** Appends record(LSN) for each and collects what was acknowledged; refusals are kept apart. */
function appender(wal: Wal) {
  const acked: number[] = [];
  const refused: unknown[] = [];
  const pending: Array<Promise<void>> = [];
  return {
    acked,
    refused,
    append(onAck?: (lsn: number) => void): void {
      const n = wal.nextLsn;
      pending.push(
        wal.append(record(n)).then((lsn) => {
          assertEquals(lsn, n, "an append acknowledged with another LSN");
          acked.push(lsn);
          onAck?.(lsn);
        }, (error) => void refused.push(error)),
      );
    },
    settled: () => Promise.all(pending),
  };
}

Deno.test("appends made while a checkpoint's snapshot is written are acknowledged before it completes, and replay after it", async () => {
  const disk = new SimDisk();
  let drawn = 0;
  const { wal } = await Wal.open(DIR, {
    fs: disk.mount(),
    config: CONFIG,
    clock: stillClock(() => drawn),
  });
  for (let i = 0; i < 10; i++) await wal.append(record(i));
  const cut = wal.nextLsn;
  const SNAPSHOT = 20 * PER_SLICE;
  let checkpointDone = false;
  const acks: Array<{ lsn: number; drawn: number; checkpointDone: boolean }> = [];
  const appends = appender(wal);
  const append = () => appends.append((lsn) => acks.push({ lsn, drawn, checkpointDone }));
  const checkpoint = wal.checkpoint(function* () {
    for (let i = 0; i < SNAPSHOT; i++) {
      // The caller's state moves on while its snapshot is drawn: an append every other slice
      // (none in the last two, whose appends could only be written after the last draw).
      if (i % (2 * PER_SLICE) === PER_SLICE && i < SNAPSHOT - 2 * PER_SLICE) append();
      drawn++;
      yield record(SNAPSHOT_BASE + i);
    }
  }).then((result) => {
    checkpointDone = true;
    return result;
  });
  // Made right after the call: after the cut, queued behind the checkpoint.
  for (let i = 0; i < 4; i++) append();
  const result = await checkpoint;
  await appends.settled();
  assertEquals(appends.refused, []);
  assertEquals(result.snapshotRecords, SNAPSHOT);
  assertEquals(acks.length, 4 + 9);
  for (const ack of acks) {
    assert(!ack.checkpointDone, `LSN ${ack.lsn} was acknowledged only after the checkpoint`);
    assert(
      ack.drawn < SNAPSHOT,
      `LSN ${ack.lsn} was acknowledged after all ${SNAPSHOT} snapshot records were drawn`,
    );
  }
  const lsns = acks.map((a) => a.lsn).sort((a, b) => a - b);
  assertEquals(lsns, range(cut, acks.length));
  await wal.close();

  const again = await reopen(disk);
  // The snapshot first, at the cut, then exactly the appends made beside it.
  assertEquals(again.snapshot, range(SNAPSHOT_BASE, SNAPSHOT));
  assertEquals(
    again.replayed.slice(0, SNAPSHOT).map((r) => [r.kind, r.lsn]),
    Array.from({ length: SNAPSHOT }, () => ["snapshot", cut]),
  );
  assertEquals(again.lsns, lsns);
  assertEquals(again.replayed.length, SNAPSHOT + lsns.length);
  assertEquals(again.wal.nextLsn, cut + lsns.length);
  await again.wal.close();
});

Deno.test("a checkpoint's snapshot is drawn in slices with a macrotask between them, and written in several writes", async () => {
  const disk = new SimDisk();
  const observed = observedDisk(disk);
  let drawn = 0;
  const clock = stillClock(() => drawn);
  const { wal } = await Wal.open(DIR, { fs: observed.fs, config: CONFIG, clock });
  for (let i = 0; i < 10; i++) await wal.append(record(i));
  const k = await nextSegmentIndex(disk);
  const SNAPSHOT = 20 * PER_SLICE;
  // A macrotask of the test's own, armed at a draw: where it runs says whether the event loop
  // got a turn in the middle of the snapshot.
  const turns: number[] = [];
  let armed = false;
  const result = await wal.checkpoint(function* () {
    for (let i = 0; i < SNAPSHOT; i++) {
      if (!armed) {
        armed = true;
        setTimeout(() => {
          armed = false;
          turns.push(drawn);
        }, 0);
      }
      drawn++;
      yield record(SNAPSHOT_BASE + i);
    }
  });
  assertEquals(result.snapshotRecords, SNAPSHOT);
  // The WAL yielded between slices of PER_SLICE records, never in the middle of one.
  assertEquals(clock.yields, range(1, SNAPSHOT / PER_SLICE).map((s) => s * PER_SLICE));
  const inside = turns.filter((d) => d > 0 && d < SNAPSHOT);
  assert(
    new Set(inside).size >= SNAPSHOT / PER_SLICE / 2,
    `the event loop ran between draws only at ${JSON.stringify(turns)}`,
  );
  const log = observed.files.get(segmentPath(k))!;
  // Its header, then at least a write per slice.
  assert(log.writes >= 1 + SNAPSHOT / PER_SLICE, `${log.writes} writes to the checkpoint`);
  assertEquals(log.written, SEGMENT_HEADER_BYTES + result.snapshotBytes);
  await wal.close();
});

Deno.test("a checkpoint's segment is synced off the event-loop thread as it grows, and in full before older segments go", async () => {
  const disk = new SimDisk();
  const observed = observedDisk(disk);
  const { wal } = await Wal.open(DIR, { fs: observed.fs, config: CONFIG, clock: stillClock() });
  // Several data segments for the checkpoint to reclaim.
  for (let i = 0; i < 300; i++) await wal.append(record(i));
  const k = await nextSegmentIndex(disk);
  assert(k > 2, "the log rotated");
  const SNAPSHOT = 20 * PER_SLICE;
  const appends = appender(wal);
  const result = await wal.checkpoint(function* () {
    for (let i = 0; i < SNAPSHOT; i++) {
      if (i % PER_SLICE === 0) appends.append();
      yield record(SNAPSHOT_BASE + i);
    }
  });
  await appends.settled();
  assertEquals(result.removedSegments, range(0, k).map(segmentFileName));
  const log = observed.files.get(segmentPath(k))!;
  assert(
    result.snapshotBytes > 4 * SYNC_BYTES,
    `a snapshot of ${result.snapshotBytes} bytes needs periodic syncs`,
  );
  assert(
    log.maxUnsynced <= SYNC_BYTES + SLICE_BYTES + frameBytes(0),
    `${log.maxUnsynced} bytes of the checkpoint were unsynced at once (sync every ${SYNC_BYTES})`,
  );
  // The header's sync (at creation), then the checkpoint's own: every one off-thread.
  assert(log.syncs.length >= 1 + 4, `${log.syncs.length} syncs of the checkpoint`);
  assertEquals(log.syncs.slice(1), log.syncs.slice(1).map(() => true), "off-thread syncs");
  // Nothing is removed before the whole checkpoint is durable.
  const removals = observed.removals.filter((r) =>
    result.removedSegments.includes(
      r.path.slice(DIR.length + 1),
    )
  );
  assertEquals(removals.length, k);
  for (const removal of removals) {
    assertEquals(removal.unsynced.get(segmentPath(k)), 0, `${removal.path} removed too early`);
  }
  // A crash the moment it resolved loses nothing: the snapshot, then the appends beside it.
  disk.crash();
  await wal.close().catch(() => {});
  const again = await reopen(disk);
  assertEquals(again.snapshot, range(SNAPSHOT_BASE, SNAPSHOT));
  assertEquals(again.lsns, range(300, appends.acked.length));
  assertEquals(appends.acked.length, SNAPSHOT / PER_SLICE);
  await again.wal.close();
});

Deno.test("close() waits for the checkpoint being written beside the appends", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), config: CONFIG, clock: stillClock() });
  for (let i = 0; i < 10; i++) await wal.append(record(i));
  const order: string[] = [];
  const checkpoint = wal.checkpoint(() =>
    range(SNAPSHOT_BASE, 10 * PER_SLICE).map((n) => record(n))
  )
    .then(() => void order.push("checkpoint"));
  const closed = wal.close().then(() => void order.push("close"));
  await Promise.all([checkpoint, closed]);
  assertEquals(order, ["checkpoint", "close"]);
  const again = await reopen(disk);
  assertEquals(again.snapshot, range(SNAPSHOT_BASE, 10 * PER_SLICE));
  await again.wal.close();
});

/**
 * A checkpoint whose caller fails after 5 slices' records were written, with appends beside
 * it; checks that only the checkpoint failed (`expected` judges its error), then either reopens
 * or completes another checkpoint in the same process (`afterwards`).
 */
async function callerFailsMidSnapshot(
  fail: () => Uint8Array,
  expected: (error: unknown) => void,
  afterwards: "reopen" | "checkpoint",
): Promise<void> {
  const label = afterwards;
  const disk = new SimDisk();
  const observed = observedDisk(disk);
  let drawn = 0;
  const clock = stillClock(() => drawn);
  const { wal } = await Wal.open(DIR, { fs: observed.fs, config: CONFIG, clock });
  for (let i = 0; i < 10; i++) await wal.append(record(i));
  const k = await nextSegmentIndex(disk);
  const cut = wal.nextLsn;
  const appends = appender(wal);
  const checkpoint = wal.checkpoint(function* () {
    for (let i = 0; i < 10 * PER_SLICE; i++) {
      if (i % PER_SLICE === 0) appends.append();
      if (i === 5 * PER_SLICE + 3) yield fail();
      drawn++;
      yield record(SNAPSHOT_BASE + i);
    }
  });
  let error: unknown;
  await checkpoint.then(() => assert(false, "the checkpoint succeeded"), (e) => void (error = e));
  expected(error);
  await appends.settled();
  assertEquals(appends.refused, [], label);
  assert(!wal.failed, `${label}: the caller's failure failed the WAL`);
  assertEquals(wal.metrics.failed.value, 0, label);
  assertEquals(wal.metrics.checkpoints.value, 0, label);
  // It failed after several slices were written.
  assertEquals(clock.yields, range(1, 5).map((s) => s * PER_SLICE), label);
  assert(observed.files.get(segmentPath(k))!.writes >= 5, `${label}: slices were written`);
  // The WAL goes on appending, at the next LSNs, in the data segment made at the cut.
  for (let i = 0; i < 5; i++) appends.append();
  await appends.settled();
  assertEquals(appends.refused, [], label);
  assertEquals(appends.acked.sort((a, b) => a - b), range(cut, 6 + 5), label);
  // The void checkpoint's segment stays, before the data segment that starts at its cut: no
  // gap in the segment numbers.
  assertEquals([headerOf(disk, k).flags, headerOf(disk, k).firstLsn], [
    SEGMENT_FLAG_CHECKPOINT,
    cut,
  ]);
  assertEquals([headerOf(disk, k + 1).flags, headerOf(disk, k + 1).firstLsn], [0, cut]);
  const all = range(0, cut + 6 + 5);

  if (afterwards === "reopen") {
    await wal.close();
    const again = await reopen(disk);
    assertEquals(again.snapshot, [], label);
    assertEquals(again.lsns, all, label);
    await again.wal.close();
    const twice = await reopen(disk);
    assertEquals(twice.lsns, all, `${label}, twice`);
    await twice.wal.close();
    return;
  }
  // The next checkpoint in the same process reclaims it with the segments before it.
  const result = await wal.checkpoint(() => [record(SNAPSHOT_BASE)]);
  assertEquals(result.removedSegments, range(0, k + 2).map(segmentFileName), label);
  assert(!(await disk.list(DIR)).includes(segmentFileName(k)), `${label}: void one removed`);
  await wal.append(record(wal.nextLsn));
  await wal.close();
  const again = await reopen(disk);
  assertEquals(again.snapshot, [SNAPSHOT_BASE], label);
  assertEquals(again.lsns, [all.length], label);
  await again.wal.close();
}

const oversized = () => new Uint8Array(CONFIG.recordBytesMax! + 1);

Deno.test("a snapshot record over recordBytesMax mid-snapshot fails only the checkpoint; reopening replays every append", async () => {
  for (const afterwards of ["reopen", "checkpoint"] as const) {
    await callerFailsMidSnapshot(oversized, (error) => {
      assert(error instanceof RangeError, `expected a RangeError, got ${error}`);
      assert(error.message.includes("recordBytesMax"), error.message);
    }, afterwards);
  }
});

class CallerBug extends Error {}

Deno.test("a snapshot iterator that throws mid-snapshot fails only the checkpoint; reopening replays every append", async () => {
  for (const afterwards of ["reopen", "checkpoint"] as const) {
    const thrown = new CallerBug("the table changed under the iterator");
    await callerFailsMidSnapshot(
      () => {
        throw thrown;
      },
      (error) => assert(error === thrown, `expected the iterator's own error, got ${error}`),
      afterwards,
    );
  }
});

Deno.test({
  // With 49-byte frames against 256-byte slices a slice's buffer never fills exactly: a slice
  // must still end on the bytes it framed, and the bytes flushed mid-slice must count toward
  // checkpointSyncBytes (both once missed: one slice on a clock that stands still).
  name: "a checkpoint's slices are bounded by checkpointSliceBytes whatever the record size",
  async fn() {
    const disk = new SimDisk();
    const observed = observedDisk(disk);
    let drawn = 0;
    const clock = stillClock(() => drawn);
    const { wal } = await Wal.open(DIR, { fs: observed.fs, config: CONFIG, clock });
    const k = await nextSegmentIndex(disk);
    const result = await wal.checkpoint(function* () {
      for (let i = 0; i < 100; i++) {
        drawn++;
        yield record(SNAPSHOT_BASE + i, 40);
      }
    });
    const perSlice = Math.ceil(SLICE_BYTES / frameBytes(40));
    assert(clock.yields.length >= 100 / perSlice - 1, `${clock.yields.length} yields`);
    for (let i = 1; i < clock.yields.length; i++) {
      assert(clock.yields[i]! - clock.yields[i - 1]! <= perSlice, `${clock.yields}`);
    }
    const log = observed.files.get(segmentPath(k))!;
    assert(result.snapshotBytes > 4 * SYNC_BYTES);
    assert(log.maxUnsynced <= SYNC_BYTES + 2 * SLICE_BYTES, `${log.maxUnsynced} unsynced`);
    await wal.close();
  },
});

/**
 * Runs a WAL whose checkpoint (at segment `k`) is torn by a crash after `crashAtDraw` of its
 * 20 slices' records, with an append at the start of every slice beside it
 * (`appendsBeside`). Returns what was acknowledged.
 */
async function tornCheckpoint(
  disk: SimDisk,
  options: { seed: number; appendsBeside: boolean; config?: Partial<WalConfig> },
): Promise<{ acked: number[]; k: number; cut: number }> {
  const config = { ...CONFIG, ...options.config };
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), config, clock: stillClock() });
  const appends = appender(wal);
  for (let i = 0; i < 10; i++) appends.append();
  await appends.settled();
  const k = await nextSegmentIndex(disk);
  const cut = wal.nextLsn;
  const crashAtDraw = 13 * PER_SLICE + 5;
  const checkpoint = wal.checkpoint(function* () {
    for (let i = 0; i < 20 * PER_SLICE; i++) {
      if (i === crashAtDraw) disk.crash(new Sfc32(options.seed), true);
      if (options.appendsBeside && i % PER_SLICE === 0) appends.append();
      yield record(SNAPSHOT_BASE + i);
    }
  });
  await assertRejects(() => checkpoint, WalFailedError);
  await appends.settled();
  for (const error of appends.refused) assert(error instanceof WalFailedError, `${error}`);
  await wal.close().catch(() => {});
  // The state under test: an incomplete checkpoint at k, the data segment after it at its cut.
  const names = await disk.list(DIR);
  assert(names.includes(segmentFileName(k)), "the checkpoint's segment survived the crash");
  const header = headerOf(disk, k);
  assertEquals([header.flags, header.firstLsn], [SEGMENT_FLAG_CHECKPOINT, cut]);
  assertEquals([headerOf(disk, k + 1).flags, headerOf(disk, k + 1).firstLsn], [0, cut]);
  if (options.appendsBeside) {
    assert(appends.acked.length > 10 + 3, "appends were acknowledged beside the checkpoint");
  }
  return { acked: appends.acked, k, cut };
}

function headerOf(disk: SimDisk, index: number): SegmentHeader {
  const decoded = decodeSegmentHeader(disk.bytes(segmentPath(index))!.subarray(0, 32));
  assert(decoded.ok, `segment ${index}'s header`);
  return decoded.header;
}

function rewriteHeader(disk: SimDisk, index: number, change: Partial<SegmentHeader>): void {
  disk.corrupt(segmentPath(index), 0, encodeSegmentHeader({ ...headerOf(disk, index), ...change }));
}

Deno.test("a checkpoint torn with data after it is kept and skipped on every reopening, and reclaimed by the next checkpoint", async () => {
  for (let seed = 1; seed <= 8; seed++) {
    const label = `seed ${seed}`;
    const disk = new SimDisk();
    const { acked, k, cut } = await tornCheckpoint(disk, { seed, appendsBeside: true });
    const torn = disk.bytes(segmentPath(k))!.slice();

    const first = await reopen(disk);
    assertEquals(first.snapshot, [], label);
    const recovered = first.lsns;
    assertEquals(recovered, range(0, recovered.length), `${label}: LSNs without a gap`);
    for (const lsn of acked) assert(recovered.includes(lsn), `${label}: acknowledged ${lsn} lost`);
    assert(recovered.length > cut, `${label}: appends after the cut recovered`);
    assertEquals(disk.bytes(segmentPath(k)), torn, `${label}: the torn checkpoint is kept as is`);
    // Enough to rotate past the data segment after the cut.
    const more = appender(first.wal);
    for (let i = 0; i < 200; i++) more.append();
    await more.settled();
    assertEquals(more.refused, [], label);
    assert(await nextSegmentIndex(disk) > k + 2, `${label}: the log rotated`);
    await first.wal.close();

    const second = await reopen(disk);
    assertEquals(second.snapshot, [], label);
    assertEquals(second.lsns, range(0, recovered.length + 200), label);
    assertEquals(disk.bytes(segmentPath(k)), torn, `${label}: still kept`);
    const result = await second.wal.checkpoint(() => [record(SNAPSHOT_BASE)]);
    assert(result.removedSegments.includes(segmentFileName(k)), `${label}: torn one reclaimed`);
    assert(!(await disk.list(DIR)).includes(segmentFileName(k)), `${label}: torn one removed`);
    await second.wal.append(record(second.wal.nextLsn));
    await second.wal.close();

    const third = await reopen(disk);
    assertEquals(third.snapshot, [SNAPSHOT_BASE], label);
    assertEquals(third.lsns, [recovered.length + 200], label);
    await third.wal.close();
  }
});

/** Recovery refuses the disk as corrupt, naming checkpoint segment `k` as incomplete. */
async function assertIncompleteCheckpointRefused(disk: SimDisk, k: number): Promise<void> {
  const error = await assertRejects(
    () => reopen(disk),
    WalCorruptionError,
    "incomplete checkpoint",
  );
  assertEquals(error.segment, segmentFileName(k));
}

Deno.test("recovery refuses an incomplete checkpoint followed by a data segment with another first LSN", async () => {
  const disk = new SimDisk();
  const { k, cut } = await tornCheckpoint(disk, { seed: 1, appendsBeside: true });
  // The data segment after it does not start at its cut: not the segment the WAL made there.
  rewriteHeader(disk, k, { firstLsn: cut + 1 });
  await assertIncompleteCheckpointRefused(disk, k);
});

Deno.test("recovery refuses an incomplete checkpoint followed by another checkpoint's segment", async () => {
  const disk = new SimDisk();
  const { k } = await tornCheckpoint(disk, { seed: 2, appendsBeside: false });
  rewriteHeader(disk, k + 1, { flags: SEGMENT_FLAG_CHECKPOINT });
  await assertIncompleteCheckpointRefused(disk, k);
});

Deno.test("recovery refuses an incomplete checkpoint whose data segment after it is lost", async () => {
  const disk = new SimDisk();
  // Small data segments: the appends beside the checkpoint fill several.
  const { k } = await tornCheckpoint(disk, {
    seed: 3,
    appendsBeside: true,
    config: { segmentBytes: 320, batchBytesMax: 300 },
  });
  assert((await disk.list(DIR)).includes(segmentFileName(k + 2)), "the data rotated");
  await disk.remove(segmentPath(k + 1));
  await disk.syncDir(DIR);
  await assertIncompleteCheckpointRefused(disk, k);
});
