/**
 * Crash at every step: a workload of appends, rotations and checkpoints runs over a simulated
 * disk that crashes before its k-th operation, for every k the workload reaches. After each
 * crash the WAL must reopen, hold every acknowledged record (in a snapshot or as data), keep
 * LSNs continuous, and keep working through more rotations, checkpoints and reopenings.
 * Acknowledgements are counted as they happen, and the WAL may refuse only after the crash
 * and only as fail-stop (`WalFailedError`), so no crash point passes by refusing early.
 */

import { assert, assertEquals } from "../assert.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import {
  type ReplayedRecord,
  Wal,
  WalFailedError,
  type WalFile,
  type WalFs,
} from "../../src/wal/mod.ts";

const DIR = "/wal";
/** Slices of 64 bytes: a checkpoint's snapshot takes several writes, with appends between. */
const CONFIG = {
  segmentBytes: 1024,
  batchBytesMax: 512,
  recordBytesMax: 256,
  checkpointSliceBytes: 64,
};
/** The state the workload keeps: the last LIVE record numbers appended. */
const LIVE = 5;

function record(n: number): Uint8Array {
  const out = new Uint8Array(24 + (n % 40));
  new DataView(out.buffer).setUint32(0, n, true);
  for (let i = 4; i < out.length; i++) out[i] = (n * 7 + i) & 0xff;
  return out;
}

function numberOf(payload: Uint8Array): number {
  const n = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  assertEquals([...payload], [...record(n)], `record ${n} is damaged`);
  return n;
}

/** A view of `disk` that crashes it just before the `budget`-th operation (file calls count). */
function crashingFs(disk: SimDisk, budget: number, crash: () => void): {
  fs: WalFs;
  operations: () => number;
} {
  const inner = disk.mount();
  let count = 0;
  const step = () => {
    if (++count === budget) crash();
  };
  const wrap = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A) => {
    step();
    return fn(...args);
  };
  return {
    operations: () => count,
    fs: {
      mkdirp: wrap(inner.mkdirp),
      list: wrap(inner.list),
      readFile: wrap(inner.readFile),
      readRange: wrap(inner.readRange),
      truncate: wrap(inner.truncate),
      remove: wrap(inner.remove),
      syncDir: wrap(inner.syncDir),
      openAppend: async (path, create) => {
        step();
        const file = await inner.openAppend(path, create);
        const wrapped: WalFile = {
          writeAll: wrap((bytes: Uint8Array) => file.writeAll(bytes)),
          syncData: wrap(() => file.syncData()),
          close: () => file.close(),
        };
        return wrapped;
      },
    },
  };
}

/**
 * Rebuilds the workload's state from what recovery replayed and checks it: data records
 * carry consecutive LSNs equal to their numbers and follow the snapshot without a gap.
 * Returns the live set and the last number recovered (-1 for none).
 */
function rebuild(replayed: ReplayedRecord[], label: string): { live: Set<number>; last: number } {
  const live = new Set<number>();
  let last = -1;
  for (const r of replayed) {
    const n = numberOf(r.payload);
    if (r.kind === "snapshot") {
      live.add(n);
      last = Math.max(last, n);
      continue;
    }
    assertEquals(r.lsn, n, `${label}: record ${n} replayed with LSN ${r.lsn}`);
    assertEquals(n, last + 1, `${label}: record ${n} follows ${last}`);
    live.add(n);
    live.delete(n - LIVE);
    last = n;
  }
  return { live, last };
}

function expectedLive(last: number): Set<number> {
  const live = new Set<number>();
  for (let n = Math.max(0, last - LIVE + 1); n <= last; n++) live.add(n);
  return live;
}

/**
 * What a workload saw acknowledged, counted in each append's own continuation as the
 * acknowledgement happens, so a refusal, a throw or an early return later in the workload
 * cannot hide one from the durability check.
 */
interface Acks {
  /** The highest LSN acknowledged, -1 for none. */
  highestLsn: number;
  count: number;
}

function noAcks(): Acks {
  return { highestLsn: -1, count: 0 };
}

interface WorkloadOptions {
  rounds: number;
  /** Waves of four concurrent appends per round. */
  waves: number;
  /** Ends each round with a checkpoint. */
  checkpoints: boolean;
  /**
   * Says whether the disk has crashed. Only then may the WAL refuse, and only with
   * `WalFailedError`; without it every refusal fails the test.
   */
  crashed?: () => boolean;
}

/** A refusal is the crash's doing, or a failure of the test. */
function expectCrashRefusal(reason: unknown, options: WorkloadOptions): void {
  if (options.crashed?.() === true && reason instanceof WalFailedError) return;
  throw new Error(`the WAL refused without a crash: ${reason}`, { cause: reason });
}

/** Four appends at once, each counted as it is acknowledged. */
function wave(wal: Wal, acks: Acks): Array<Promise<void>> {
  const first = wal.nextLsn;
  return Array.from(
    { length: 4 },
    (_, i) =>
      wal.append(record(first + i)).then((lsn) => {
        assertEquals(lsn, first + i, "an append acknowledged with another LSN");
        acks.highestLsn = Math.max(acks.highestLsn, lsn);
        acks.count++;
      }),
  );
}

/**
 * Runs `options.rounds` rounds and stops at the first refusal (the crash). A round's
 * checkpoint has a wave of appends beside it, which land in the segment after the
 * checkpoint's while its snapshot is written: a crash may tear the checkpoint with data
 * after it.
 */
async function workload(wal: Wal, acks: Acks, options: WorkloadOptions): Promise<void> {
  for (let round = 0; round < options.rounds; round++) {
    for (let w = 0; w < options.waves; w++) {
      const appends = wave(wal, acks);
      const refusals = (await Promise.allSettled(appends)).filter((s) => s.status === "rejected");
      for (const refusal of refusals) expectCrashRefusal(refusal.reason, options);
      if (refusals.length > 0) return;
    }
    if (!options.checkpoints) continue;
    // Every append before the call is acknowledged, so the live set at the cut is exactly
    // expectedLive; the wave after the call is replayed after the snapshot.
    const checkpoint = wal.checkpoint(() => [...expectedLive(acks.highestLsn)].map(record))
      .then(() => {});
    const settled = await Promise.allSettled([checkpoint, ...wave(wal, acks)]);
    const refusals = settled.filter((s) => s.status === "rejected");
    for (const refusal of refusals) expectCrashRefusal(refusal.reason, options);
    if (refusals.length > 0) return;
  }
}

async function reopen(fs: WalFs, label: string) {
  const replayed: ReplayedRecord[] = [];
  const { wal } = await Wal.open(DIR, { fs, config: CONFIG, replay: (r) => replayed.push(r) });
  const state = rebuild(replayed, label);
  assertEquals(wal.nextLsn, state.last + 1, `${label}: next LSN`);
  return { wal, state };
}

/** Runs the workload over a disk that crashes before operation `budget`, then checks it. */
async function crashPoint(budget: number, total: number): Promise<void> {
  const label = `crash before operation ${budget} of ${total}`;
  const rng = new Sfc32(budget);
  const disk = new SimDisk();
  const tear = budget % 2 === 0;
  const crashing = crashingFs(disk, budget, () => disk.crash(rng, tear));
  const crashed = () => disk.generation > 0;
  const acks = noAcks();
  let opened: Wal | undefined;
  try {
    opened = (await Wal.open(DIR, { fs: crashing.fs, config: CONFIG })).wal;
  } catch (error) {
    // Only the crash may stop the first open.
    if (!crashed()) throw error;
  }
  if (opened !== undefined) {
    await workload(opened, acks, { rounds: 4, waves: 4, checkpoints: true, crashed });
    // The dead process's file handle may refuse to close; that is part of the crash.
    await opened.close().catch(() => {});
  }
  assert(disk.generation === 1, `${label}: the disk never crashed`);

  const first = await reopen(disk.mount(), label);
  assert(
    first.state.last >= acks.highestLsn,
    `${label}: acknowledged up to ${acks.highestLsn}, recovered up to ${first.state.last}`,
  );
  assertEquals(first.state.live, expectedLive(first.state.last), label);

  // The recovered log must keep working, refusing nothing: rotations (over a segment of data
  // before the next checkpoint), a checkpoint, and another reopening.
  const more = { highestLsn: first.state.last, count: 0 };
  await workload(first.wal, more, { rounds: 1, waves: 8, checkpoints: false });
  assertEquals(more.count, 8 * 4, `${label}: appends acknowledged after recovery`);
  await first.wal.close();
  const second = await reopen(disk.mount(), `${label}, reopened`);
  assertEquals(second.state.last, more.highestLsn, `${label}, reopened`);
  assertEquals(second.state.live, expectedLive(more.highestLsn), `${label}, reopened`);
  const evenMore = { highestLsn: more.highestLsn, count: 0 };
  await workload(second.wal, evenMore, { rounds: 2, waves: 4, checkpoints: true });
  assertEquals(evenMore.count, 2 * 5 * 4, `${label}: appends acknowledged after reopening`);
  await second.wal.close();
  const third = await reopen(disk.mount(), `${label}, reopened twice`);
  assertEquals(third.state.last, evenMore.highestLsn, `${label}, reopened twice`);
  assertEquals(third.state.live, expectedLive(evenMore.highestLsn), `${label}, reopened twice`);
  await third.wal.close();
}

Deno.test("Wal keeps every acknowledged record through a crash at any step of append, rotation or checkpoint", async () => {
  // A dry run counts the operations the workload makes; then it crashes before each of them.
  const dry = crashingFs(new SimDisk(), 0, () => {});
  const { wal: dryWal } = await Wal.open(DIR, { fs: dry.fs, config: CONFIG });
  const dryAcks = noAcks();
  await workload(dryWal, dryAcks, { rounds: 4, waves: 4, checkpoints: true });
  await dryWal.close();
  assertEquals(dryAcks.count, 4 * 5 * 4, "appends acknowledged in the dry run");
  const total = dry.operations();
  assert(total > 50, `the workload made only ${total} operations`);

  // Every crash point runs, so a broken guarantee shows how many points it breaks.
  const failures: string[] = [];
  for (let budget = 1; budget <= total; budget++) {
    try {
      await crashPoint(budget, total);
    } catch (error) {
      failures.push(`operation ${budget}: ${error instanceof Error ? error.message : error}`);
    }
  }
  assert(
    failures.length === 0,
    `${failures.length} of ${total} crash points failed:\n${failures.slice(0, 8).join("\n")}`,
  );
});
