import fc from "fast-check";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import {
  type ReplayedRecord,
  Wal,
  WalBusyError,
  WalCorruptionError,
  WalFailedError,
  type WalFs,
} from "../../src/wal/mod.ts";
import {
  BATCH_END_PAYLOAD_BYTES,
  encodeRecord,
  RECORD_HEADER_BYTES,
  RecordType,
  SEGMENT_HEADER_BYTES,
  segmentFileName,
} from "../../src/wal/record_codec.ts";
import type { WalConfig } from "../../src/config/wal.ts";
import { testRecord, testRecordNumber } from "./test_records.ts";

const DIR = "/wal";

function record(n: number, bytes = 40): Uint8Array {
  return testRecord(n, bytes);
}

const recordNumber = testRecordNumber;

async function reopen(disk: SimDisk, config: Partial<WalConfig> = {}) {
  const replayed: ReplayedRecord[] = [];
  const opened = await Wal.open(DIR, { fs: disk.mount(), config, replay: (r) => replayed.push(r) });
  return {
    ...opened,
    replayed,
    numbers: replayed.filter((r) => r.kind === "data").map((r) => recordNumber(r.payload)),
  };
}

Deno.test("Wal replays every appended record in order after reopening", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  const lsns = await Promise.all(Array.from({ length: 100 }, (_, i) => wal.append(record(i))));
  assertEquals(lsns, Array.from({ length: 100 }, (_, i) => i));
  await wal.close();
  const again = await reopen(disk);
  assertEquals(again.numbers, lsns);
  assertEquals(again.replayed.map((r) => r.lsn), lsns);
  assertEquals(again.report.truncated, undefined);
  assertEquals(await again.wal.append(record(100)), 100);
  await again.wal.close();
});

Deno.test("Wal group commit writes concurrent appends with one fsync per batch", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  const syncsBefore = disk.syncs;
  await Promise.all(Array.from({ length: 500 }, (_, i) => wal.append(record(i))));
  assertEquals(disk.syncs - syncsBefore, 1);
  assertEquals(wal.metrics.batches.value, 1);
  assertEquals(wal.metrics.appends.value, 500);
  await wal.close();
});

Deno.test("Wal per-append mode syncs once per record", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk, config: { syncMode: "per-append" } });
  const syncsBefore = disk.syncs;
  await Promise.all(Array.from({ length: 20 }, (_, i) => wal.append(record(i))));
  assertEquals(disk.syncs - syncsBefore, 20);
  await wal.close();
  assertEquals((await reopen(disk)).numbers.length, 20);
});

Deno.test("Wal bounds a batch by batchRecordsMax", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk, config: { batchRecordsMax: 16 } });
  await Promise.all(Array.from({ length: 100 }, (_, i) => wal.append(record(i))));
  assertEquals(wal.metrics.batches.value, 7);
  assert(wal.metrics.batchRecords.summary().max <= 16);
  await wal.close();
});

Deno.test("Wal recovers every acknowledged record after crashes at random points", async () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rng = new Sfc32(seed);
    const disk = new SimDisk();
    let { wal } = await Wal.open(DIR, {
      fs: disk.mount(),
      config: { segmentBytes: 4096, batchBytesMax: 2048, recordBytesMax: 1024 },
    });
    const acked: number[] = [];
    let next = 0;
    for (let round = 0; round < 3; round++) {
      const appends = 1 + rng.int(60);
      const inFlight: Promise<void>[] = [];
      for (let i = 0; i < appends; i++) {
        const n = next++;
        inFlight.push(
          wal.append(record(n, 8 + rng.int(120))).then(() => void acked.push(n), () => {}),
        );
      }
      // Crash either after everything settled or with the last batch still in the page cache.
      if (rng.next() < 0.5) await Promise.all(inFlight);
      else await Promise.race(inFlight);
      disk.crash(rng, rng.next() < 0.5);
      const again = await reopen(disk, {
        segmentBytes: 4096,
        batchBytesMax: 2048,
        recordBytesMax: 1024,
      });
      const recovered = new Set(again.numbers);
      for (const n of acked) {
        assert(recovered.has(n), `seed ${seed}: acknowledged record ${n} lost`);
      }
      const sorted = [...again.numbers].sort((a, b) => a - b);
      assertEquals(again.numbers, sorted, `seed ${seed}: records out of order`);
      acked.length = 0;
      acked.push(...again.numbers);
      wal = again.wal;
    }
    await wal.close();
  }
});

Deno.test("Wal cuts a torn tail and reports where", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  for (let i = 0; i < 5; i++) await wal.append(record(i));
  await wal.close();
  const path = `${DIR}/${segmentFileName(0)}`;
  const goodLength = disk.bytes(path)!.length;
  // Half a frame at the end: a write that never completed.
  const torn = new Uint8Array(RECORD_HEADER_BYTES + 10).fill(0xab);
  torn[8] = 1;
  const file = await disk.openAppend(path, false);
  await file.writeAll(torn);
  await file.syncData();
  const again = await reopen(disk);
  assertEquals(again.numbers, [0, 1, 2, 3, 4]);
  assertEquals(again.report.truncated?.offset, goodLength);
  assertEquals(again.report.truncated?.droppedBytes, torn.length);
  assertEquals(disk.bytes(path)!.length, goodLength);
  await again.wal.close();
});

Deno.test("Wal refuses to open over mid-log corruption and names segment and offset", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  for (let i = 0; i < 10; i++) await wal.append(record(i));
  await wal.close();
  const path = `${DIR}/${segmentFileName(0)}`;
  // Damage the third record's payload; batches after it are intact.
  const frame = RECORD_HEADER_BYTES + 40;
  const batch = frame + RECORD_HEADER_BYTES + BATCH_END_PAYLOAD_BYTES;
  const offset = SEGMENT_HEADER_BYTES + 2 * batch;
  disk.corrupt(path, offset + 12, new Uint8Array([0xde, 0xad]));
  const error = await assertRejects(() => reopen(disk), WalCorruptionError);
  assertEquals(error.segment, segmentFileName(0));
  assertEquals(error.offset, offset);
});

Deno.test("Wal fails stop on an fsync error: the batch and all later appends are refused", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  await wal.append(record(0));
  disk.injectFault("sync");
  const batch = Array.from({ length: 10 }, (_, i) => wal.append(record(i + 1)));
  for (const append of batch) await assertRejects(() => append, WalFailedError);
  assert(wal.failed);
  assertEquals(wal.metrics.failed.value, 1);
  // The disk works again, but the WAL must not pretend the lost batch is safe.
  await assertRejects(() => wal.append(record(99)), WalFailedError, "refuses appends");
  await wal.close();
  const again = await reopen(disk);
  assertEquals(again.numbers.includes(0), true);
  await again.wal.close();
});

Deno.test("Wal fails stop on a full disk with a clear error", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  disk.injectFault("full");
  await assertRejects(() => wal.append(record(0)), WalFailedError, "No space left on device");
  await assertRejects(() => wal.append(record(1)), WalFailedError);
  await wal.close();
  // The disk took half of the batch before refusing: recovery cuts it as a torn tail.
  const again = await reopen(disk);
  assertEquals(again.numbers, []);
  assert(again.report.truncated !== undefined, "the partial write is reported");
  assertEquals(again.report.truncated.offset, SEGMENT_HEADER_BYTES);
  await again.wal.close();
});

Deno.test("Wal fails stop when a rotation's directory fsync fails, and loses nothing acknowledged", async () => {
  const disk = new SimDisk();
  const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), config });
  disk.injectFault("dirSync");
  const acked: number[] = [];
  let refused = 0;
  for (let i = 0; i < 40; i++) {
    await wal.append(record(i, 50)).then(() => acked.push(i), (error) => {
      assert(error instanceof WalFailedError);
      refused++;
    });
  }
  assert(acked.length > 0 && refused > 0, `acked ${acked.length}, refused ${refused}`);
  assertEquals(acked, Array.from({ length: acked.length }, (_, i) => i), "no ack after a failure");
  await wal.close();
  disk.crash();
  const again = await reopen(disk, config);
  assertEquals(again.numbers, acked);
  await again.wal.close();
});

Deno.test("Wal refuses appends past queueRecordsMax with WalBusyError", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, {
    fs: disk,
    config: { queueRecordsMax: 8, batchRecordsMax: 8 },
  });
  const accepted = Array.from({ length: 8 }, (_, i) => wal.append(record(i)));
  await assertRejects(() => wal.append(record(8)), WalBusyError);
  await Promise.all(accepted);
  assertEquals(await wal.append(record(9)), 8);
  await wal.close();
});

Deno.test("Wal rejects a record over recordBytesMax without failing", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk, config: { recordBytesMax: 64 } });
  await assertRejects(() => wal.append(new Uint8Array(65)), RangeError);
  assert(!wal.failed);
  await wal.append(new Uint8Array(64));
  await wal.close();
});

Deno.test("Wal rotates segments and recovers across them", async () => {
  const disk = new SimDisk();
  const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
  const { wal } = await Wal.open(DIR, { fs: disk, config });
  for (let i = 0; i < 200; i++) await wal.append(record(i, 50));
  assert(wal.segmentCount > 10, `expected many segments, got ${wal.segmentCount}`);
  await wal.close();
  const names = await disk.list(DIR);
  for (const name of names) {
    assert(disk.bytes(`${DIR}/${name}`)!.length <= 1024, `${name} exceeds segmentBytes`);
  }
  const again = await reopen(disk, config);
  assertEquals(again.numbers, Array.from({ length: 200 }, (_, i) => i));
  assertEquals(again.replayed.map((r) => r.lsn), again.numbers);
  await again.wal.close();
});

Deno.test("Wal checkpoint reclaims old segments and recovery starts from the snapshot", async () => {
  const disk = new SimDisk();
  const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
  const { wal } = await Wal.open(DIR, { fs: disk, config });
  const live = new Set<number>();
  for (let i = 0; i < 300; i++) {
    await wal.append(record(i, 50));
    live.add(i);
    if (i >= 5) live.delete(i - 5); // only the last five records are "live" state
  }
  const segmentsBefore = (await disk.list(DIR)).length;
  const result = await wal.checkpoint(() => [...live].map((n) => record(n, 50)));
  assertEquals(result.snapshotRecords, 5);
  assertEquals(result.removedSegments.length, segmentsBefore);
  // The checkpoint's own segment, and the one appends went on in while it was written.
  assertEquals((await disk.list(DIR)).length, 2);
  await wal.append(record(1000, 50));
  await wal.close();
  const again = await reopen(disk, config);
  const snapshot = again.replayed.filter((r) => r.kind === "snapshot").map((r) =>
    recordNumber(r.payload)
  );
  assertEquals(snapshot, [295, 296, 297, 298, 299]);
  assertEquals(again.numbers, [1000]);
  assertEquals(again.replayed.at(-1)!.lsn, 300);
  assertEquals(await again.wal.append(record(1001, 50)), 301);
  await again.wal.close();
});

Deno.test("Wal keeps disk use bounded by live data across repeated checkpoints", async () => {
  const disk = new SimDisk();
  const config = { segmentBytes: 2048, batchBytesMax: 1024, recordBytesMax: 256 };
  const { wal } = await Wal.open(DIR, { fs: disk, config });
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 100; i++) await wal.append(record(round * 100 + i, 60));
    await wal.checkpoint(() => [record(round, 60)]);
    const names = await disk.list(DIR);
    const bytes = names.reduce((sum, n) => sum + disk.bytes(`${DIR}/${n}`)!.length, 0);
    assert(bytes <= 2048, `round ${round}: ${bytes} bytes on disk`);
  }
  await wal.close();
});

Deno.test("Wal survives a crash in the middle of a checkpoint", async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const rng = new Sfc32(seed);
    const disk = new SimDisk();
    const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
    const { wal } = await Wal.open(DIR, { fs: disk.mount(), config });
    for (let i = 0; i < 50; i++) await wal.append(record(i, 50));
    // Crash before the checkpoint's fsync: the snapshot is torn, the old log must still hold.
    disk.injectFault("sync", rng.int(3));
    await wal.checkpoint(() => [record(7, 50)]).catch(() => {});
    disk.crash(rng, true);
    const again = await reopen(disk, config);
    const snapshot = again.replayed.filter((r) => r.kind === "snapshot");
    if (snapshot.length === 0) {
      assertEquals(
        again.numbers,
        Array.from({ length: 50 }, (_, i) => i),
        `seed ${seed}`,
      );
    } else assertEquals(again.numbers, [], `seed ${seed}`);
    await again.wal.close();
  }
});

/** A disk whose fsyncs wait until the test opens the gate. */
function gatedDisk(disk: SimDisk): { fs: WalFs; release: () => void; waiting: () => number } {
  const gates: Array<() => void> = [];
  const inner = disk.mount();
  return {
    release: () => gates.splice(0).forEach((open) => open()),
    waiting: () => gates.length,
    fs: {
      ...inner,
      openAppend: async (path, create) => {
        const file = await inner.openAppend(path, create);
        return {
          writeAll: (bytes) => file.writeAll(bytes),
          close: () => file.close(),
          syncData: async () => {
            await new Promise<void>((resolve) => gates.push(resolve));
            await file.syncData();
          },
        };
      },
    },
  };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setTimeout(r, 1));
  assert(condition(), "condition never held");
}

/** Opens a WAL on a gated disk, letting through the new segment's header sync. */
async function openGated(gated: ReturnType<typeof gatedDisk>): Promise<Wal> {
  const opening = Wal.open(DIR, { fs: gated.fs });
  await until(() => gated.waiting() === 1);
  gated.release();
  return (await opening).wal;
}

Deno.test("Wal appends that arrive during an fsync form the next batch", async () => {
  const disk = new SimDisk();
  const gated = gatedDisk(disk);
  const wal = await openGated(gated);
  const settled: number[] = [];
  const track = (p: Promise<number>) => p.then((lsn) => (settled.push(lsn), lsn));
  const first = track(wal.append(record(0)));
  await until(() => gated.waiting() === 1);
  const later = [1, 2, 3].map((n) => track(wal.append(record(n))));
  // Nothing is acknowledged while its fsync has not returned.
  await new Promise((r) => setTimeout(r, 5));
  assertEquals(settled, []);
  gated.release();
  assertEquals(await first, 0);
  await until(() => gated.waiting() === 1);
  await new Promise((r) => setTimeout(r, 5));
  assertEquals(settled, [0]);
  gated.release();
  assertEquals(await Promise.all(later), [1, 2, 3]);
  assertEquals(wal.metrics.batches.value, 2);
  assertEquals(wal.metrics.batchRecords.summary().max, 3);
  await wal.close();
});

Deno.test("Wal rejects appends queued behind a failed fsync and never writes them", async () => {
  const disk = new SimDisk();
  const gated = gatedDisk(disk);
  const wal = await openGated(gated);
  const first = wal.append(record(0));
  await until(() => gated.waiting() === 1);
  const queued = [1, 2, 3].map((n) => wal.append(record(n)));
  const writesBefore = disk.writes;
  disk.injectFault("sync");
  gated.release();
  await assertRejects(() => first, WalFailedError);
  for (const append of queued) await assertRejects(() => append, WalFailedError);
  assertEquals(disk.writes, writesBefore, "nothing written after the failed fsync");
  assertEquals(gated.waiting(), 0);
  await wal.close();
});

Deno.test("Wal close resolves for every caller only after pending appends settled", async () => {
  const disk = new SimDisk();
  const gated = gatedDisk(disk);
  const wal = await openGated(gated);
  const append = wal.append(record(0));
  await until(() => gated.waiting() === 1);
  const closed: string[] = [];
  const closes = ["a", "b"].map((who) => wal.close().then(() => void closed.push(who)));
  await new Promise((r) => setTimeout(r, 5));
  assertEquals(closed, []);
  await assertRejects(() => wal.append(record(1)), WalFailedError, "closed");
  gated.release();
  assertEquals(await append, 0);
  await Promise.all(closes);
  assertEquals(closed.sort(), ["a", "b"]);
});

Deno.test("Wal batchWaitMs lets a lone append wait for company", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), config: { batchWaitMs: 20 } });
  const first = wal.append(record(0));
  await new Promise((r) => setTimeout(r, 5));
  const second = wal.append(record(1));
  assertEquals(await Promise.all([first, second]), [0, 1]);
  assertEquals(wal.metrics.batches.value, 1);
  await wal.close();
});

Deno.test("Wal drops a checkpoint torn by a crash and keeps rotating after it", async () => {
  const disk = new SimDisk();
  const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), config });
  for (let i = 0; i < 5; i++) await wal.append(record(i, 50));
  disk.injectFault("sync", 1); // the checkpoint segment's header syncs; its snapshot does not
  await assertRejects(() => wal.checkpoint(() => [record(7, 50)]), WalFailedError);
  disk.crash();
  const first = await reopen(disk, config);
  assertEquals(first.numbers, [0, 1, 2, 3, 4]);
  assertEquals(first.report.truncated?.segment, segmentFileName(1));
  assertEquals(first.report.removedSegments, [segmentFileName(1)]);
  // Enough data for several rotations before any new checkpoint: the next recovery must not
  // meet a checkpoint-flagged segment without a checkpoint.
  for (let i = 5; i < 60; i++) assertEquals(await first.wal.append(record(i, 50)), i);
  assert(first.wal.segmentCount > 2, "the log rotated");
  await first.wal.close();
  const second = await reopen(disk, config);
  assertEquals(second.numbers, Array.from({ length: 60 }, (_, i) => i));
  assertEquals(second.report.truncated, undefined);
  await second.wal.close();
});

Deno.test("Wal refuses to open when a segment is missing, naming the segment", async () => {
  const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
  for (const missing of [0, 2]) {
    const disk = new SimDisk();
    const { wal } = await Wal.open(DIR, { fs: disk, config });
    for (let i = 0; i < 100; i++) await wal.append(record(i, 50));
    await wal.close();
    await disk.remove(`${DIR}/${segmentFileName(missing)}`);
    const error = await assertRejects(() => reopen(disk, config), WalCorruptionError);
    assertEquals(error.segment, segmentFileName(missing + 1));
  }
});

Deno.test("Wal hands replayed payloads out as copies, not views of a whole segment", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  for (let i = 0; i < 10; i++) await wal.append(record(i));
  await wal.checkpoint(() => [record(99)]);
  await wal.append(record(10));
  await wal.close();
  const again = await reopen(disk);
  assertEquals(again.replayed.length, 2);
  for (const r of again.replayed) assertEquals(r.payload.buffer.byteLength, r.payload.length);
  await again.wal.close();
});

Deno.test("Wal fails only the checkpoint, not the log, when the snapshot callback throws", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  await wal.append(record(0));
  await assertRejects(
    () =>
      wal.checkpoint(() => {
        throw new TypeError("caller bug");
      }),
    TypeError,
  );
  assert(!wal.failed);
  assertEquals(await wal.append(record(1)), 1);
  await wal.close();
  assertEquals((await reopen(disk)).numbers, [0, 1]);
});

Deno.test("Wal closes its file exactly once after a rotation failed", async () => {
  const disk = new SimDisk();
  const inner = disk.mount();
  let closes = 0;
  let refuseCreate = false;
  const fs: WalFs = {
    ...inner,
    openAppend: async (path, create) => {
      if (create && refuseCreate) throw new Error("injected open failure (EMFILE)");
      const file = await inner.openAppend(path, create);
      let closed = false;
      return {
        writeAll: (bytes) => file.writeAll(bytes),
        syncData: () => file.syncData(),
        close: () => {
          // A closed Deno.FsFile throws when closed again.
          if (closed) throw new Error("BadResource: file closed twice");
          closed = true;
          closes++;
          file.close();
        },
      };
    },
  };
  const config = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
  const { wal } = await Wal.open(DIR, { fs, config });
  for (let i = 0; wal.segmentCount === 1; i++) await wal.append(record(i, 50));
  refuseCreate = true;
  let refused = false;
  for (let i = 0; i < 100 && !refused; i++) {
    await wal.append(record(i, 50)).catch((error) => {
      assert(error instanceof WalFailedError);
      refused = true;
    });
  }
  assert(refused, "a rotation was attempted");
  await wal.close();
  assertEquals(closes, 2);
});

Deno.test("Wal treats a torn last batch as torn even when a payload holds frame-shaped bytes", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk, rng: new Sfc32(7) });
  await wal.append(record(0));
  // A caller's payload that embeds a BatchEnd frame and a data frame, as an attacker who knows
  // the format (but not the segment's salt) would write them.
  const forged = new Uint8Array([
    ...encodeRecord(RecordType.BatchEnd, new Uint8Array(0), 0),
    ...encodeRecord(RecordType.Data, record(99), 0),
  ]);
  await Promise.all([wal.append(record(1)), wal.append(forged)]);
  await wal.close();
  // A crash tears the last batch before the forged bytes: recovery must cut it as a torn
  // tail, not call it corruption of an earlier batch and refuse to start.
  const path = `${DIR}/${segmentFileName(0)}`;
  const lastBatch = SEGMENT_HEADER_BYTES + (RECORD_HEADER_BYTES + 40) + RECORD_HEADER_BYTES +
    BATCH_END_PAYLOAD_BYTES;
  disk.corrupt(path, lastBatch + 2, new Uint8Array([0xff, 0xff]));
  const again = await reopen(disk);
  assertEquals(again.numbers, [0]);
  assertEquals(again.report.truncated?.offset, lastBatch);
  await again.wal.close();
});

Deno.test("Wal refuses to open when a damaged segment header has records after it", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  await wal.append(record(0));
  await wal.close();
  disk.corrupt(`${DIR}/${segmentFileName(0)}`, 0, new Uint8Array([0]));
  const error = await assertRejects(() => reopen(disk), WalCorruptionError);
  assertEquals(error.segment, segmentFileName(0));
});

Deno.test("Wal refuses to open when the damage is in an earlier batch's end and only the last batch follows intact", async () => {
  // Two acknowledged batches, one record each; a flipped bit in the first one's BatchEnd. The
  // second batch is whole and last: before BatchEnd frames carried their batch's length,
  // nothing after the damage proved a later batch, and both were cut as a torn tail (found by
  // session 45's review).
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk });
  await wal.append(record(1));
  await wal.append(record(2));
  await wal.close();
  const path = `${DIR}/${segmentFileName(0)}`;
  const firstEnd = SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES + 40;
  disk.corrupt(path, firstEnd, new Uint8Array([disk.bytes(path)![firstEnd]! ^ 1]));
  const error = await assertRejects(() => reopen(disk), WalCorruptionError);
  assertEquals(error.offset, firstEnd);
});

Deno.test("Wal never cuts damage to an acknowledged batch that is not the last as a torn tail (property)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 2, maxLength: 6 }),
      fc.nat(),
      fc.integer({ min: 1, max: 255 }),
      async (batchSizes, where, flip) => {
        const disk = new SimDisk();
        const { wal } = await Wal.open(DIR, { fs: disk });
        const starts: number[] = [];
        let n = 0;
        for (const size of batchSizes) {
          starts.push(disk.bytes(`${DIR}/${segmentFileName(0)}`)!.length);
          const appends: Promise<number>[] = [];
          for (let i = 0; i < size; i++) appends.push(wal.append(record(n++, 8 + (n % 13))));
          await Promise.all(appends);
        }
        await wal.close();
        const path = `${DIR}/${segmentFileName(0)}`;
        const bytes = disk.bytes(path)!;
        const lastStart = starts.at(-1)!;
        // One byte somewhere in the acknowledged batches before the last one.
        const at = SEGMENT_HEADER_BYTES + where % (lastStart - SEGMENT_HEADER_BYTES);
        disk.corrupt(path, at, new Uint8Array([bytes[at]! ^ flip]));
        let opened: Awaited<ReturnType<typeof reopen>> | undefined;
        try {
          opened = await reopen(disk);
        } catch (error) {
          assert(error instanceof WalCorruptionError, String(error));
          return;
        }
        await opened.wal.close();
        throw new Error(
          `damage at ${at} (batches start at ${starts.join(", ")}) was not reported: ` +
            `replayed ${opened.numbers.length} of ${n}, truncated ${
              JSON.stringify(opened.report.truncated)
            }`,
        );
      },
    ),
    { numRuns: 400 },
  );
});
