/**
 * Crash at every step: a workload of appends, rotations and checkpoints runs over a simulated
 * disk that crashes before its k-th operation, for every k the workload reaches. After each
 * crash the WAL must reopen, hold every acknowledged record (in a snapshot or as data), keep
 * LSNs continuous, and keep working through more rotations, checkpoints and reopenings.
 */

import { assert, assertEquals } from "../assert.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { type ReplayedRecord, Wal, type WalFile, type WalFs } from "../../src/wal/mod.ts";

const DIR = "/wal";
const CONFIG = { segmentBytes: 1024, batchBytesMax: 512, recordBytesMax: 256 };
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
 * `rounds` of (`waves` of four concurrent appends, then a checkpoint unless `checkpoints` is
 * off); stops at the first refusal (the crash). Returns the highest acknowledged number.
 */
async function workload(
  wal: Wal,
  rounds: number,
  waves: number,
  ackedBefore: number,
  checkpoints = true,
): Promise<number> {
  let acked = ackedBefore;
  for (let round = 0; round < rounds; round++) {
    for (let wave = 0; wave < waves; wave++) {
      const first = wal.nextLsn;
      const appends = Array.from({ length: 4 }, (_, i) => wal.append(record(first + i)));
      const settled = await Promise.allSettled(appends);
      for (const [i, s] of settled.entries()) {
        if (s.status === "rejected") return acked;
        assertEquals(s.value, first + i);
        acked = Math.max(acked, s.value);
      }
    }
    if (!checkpoints) continue;
    try {
      // Every append before the call is durable, so the live set is exactly expectedLive.
      await wal.checkpoint(() => [...expectedLive(acked)].map(record));
    } catch {
      return acked;
    }
  }
  return acked;
}

async function reopen(fs: WalFs, label: string) {
  const replayed: ReplayedRecord[] = [];
  const { wal } = await Wal.open(DIR, { fs, config: CONFIG, replay: (r) => replayed.push(r) });
  const state = rebuild(replayed, label);
  assertEquals(wal.nextLsn, state.last + 1, `${label}: next LSN`);
  return { wal, state };
}

Deno.test("Wal keeps every acknowledged record through a crash at any step of append, rotation or checkpoint", async () => {
  // A dry run counts the operations the workload makes; then it crashes before each of them.
  const dry = crashingFs(new SimDisk(), 0, () => {});
  const { wal: dryWal } = await Wal.open(DIR, { fs: dry.fs, config: CONFIG });
  await workload(dryWal, 4, 4, -1);
  await dryWal.close();
  const total = dry.operations();
  assert(total > 50, `the workload made only ${total} operations`);

  for (let budget = 1; budget <= total; budget++) {
    const label = `crash before operation ${budget} of ${total}`;
    const rng = new Sfc32(budget);
    const disk = new SimDisk();
    const tear = budget % 2 === 0;
    const crashing = crashingFs(disk, budget, () => disk.crash(rng, tear));
    let acked = -1;
    try {
      const { wal } = await Wal.open(DIR, { fs: crashing.fs, config: CONFIG });
      acked = await workload(wal, 4, 4, -1);
      await wal.close().catch(() => {});
    } catch {
      // The crash hit the first open.
    }
    assert(disk.generation === 1, `${label}: the disk never crashed`);

    const first = await reopen(disk.mount(), label);
    assert(
      first.state.last >= acked,
      `${label}: acknowledged ${acked}, recovered ${first.state.last}`,
    );
    assertEquals(first.state.live, expectedLive(first.state.last), label);

    // The recovered log must keep working: rotations (over a segment of data before the next
    // checkpoint), a checkpoint, and another reopening.
    const more = await workload(first.wal, 1, 8, first.state.last, false);
    await first.wal.close();
    const second = await reopen(disk.mount(), `${label}, reopened`);
    assertEquals(second.state.last, more, `${label}, reopened`);
    assertEquals(second.state.live, expectedLive(more), `${label}, reopened`);
    const evenMore = await workload(second.wal, 2, 4, more);
    await second.wal.close();
    const third = await reopen(disk.mount(), `${label}, reopened twice`);
    assertEquals(third.state.last, evenMore, `${label}, reopened twice`);
    assertEquals(third.state.live, expectedLive(evenMore), `${label}, reopened twice`);
    await third.wal.close();
  }
});
