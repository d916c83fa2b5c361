/**
 * Fsync pacing (src/wal/sync_pace.ts, `WalConfig.syncPaceMsMax`): when appends queued while
 * the last fsync ran (a stream), the writer waits as long as that fsync took before its next
 * batch, so the appends arriving meanwhile share one fsync; an append that finds the writer
 * idle is written at once, so a lone append never waits. Driven on a hand-moved clock and an
 * in-memory disk whose fsync takes 3 ms of it.
 */

import { assertEquals } from "../assert.ts";
import { syncPaceWaitMs } from "../../src/wal/sync_pace.ts";
import { Wal, type WalFs } from "../../src/wal/mod.ts";
import type { WalConfig } from "../../src/config/wal.ts";
import { SimDisk } from "../../src/sim/disk.ts";

Deno.test("syncPaceWaitMs: as long as the last fsync took, at most the bound, only in a stream", () => {
  // Appends queued while the last fsync ran for 3 ms: wait 3 (bound 5), or the bound (2).
  assertEquals(syncPaceWaitMs(3, 5, true), 3);
  assertEquals(syncPaceWaitMs(3, 2, true), 2);
  // None queued meanwhile (a lone append, a low rate): at once.
  assertEquals(syncPaceWaitMs(3, 5, false), 0);
  // Pacing off.
  assertEquals(syncPaceWaitMs(3, 0, true), 0);
});

/** A clock the test moves, and the timers armed on it. */
class HandClock {
  now = 1_000;
  readonly timers: Array<{ atMs: number; fn: () => void }> = [];
  nowMs(): number {
    return this.now;
  }
  setTimer(delayMs: number, fn: () => void): () => void {
    this.timers.push({ atMs: this.now + delayMs, fn });
    return () => {};
  }
  /** Moves the clock by `ms`, firing what falls due. */
  advance(ms: number): void {
    this.now += ms;
    for (const t of this.timers.splice(0)) {
      if (t.atMs <= this.now) t.fn();
      else this.timers.push(t);
    }
  }
}

/** `fs` whose every fsync takes `syncMs` of `clock`'s time and calls `during` as it runs. */
function slowSyncs(fs: WalFs, clock: HandClock, syncMs: number, during: () => void): WalFs {
  return {
    ...fs,
    async openAppend(path, create) {
      const file = await fs.openAppend(path, create);
      return {
        writeAll: (bytes) => file.writeAll(bytes),
        syncData: async () => {
          await file.syncData();
          during();
          clock.now += syncMs;
        },
        close: () => file.close(),
      };
    },
  };
}

/** Lets the WAL's writer run until it waits on the hand clock or settles. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * A WAL paced up to 5 ms (unless `config` says otherwise) on `clock`, on an in-memory disk whose fsyncs take 3 ms; `once`
 * runs inside the next fsync (the appends "arriving while it runs").
 */
async function openPaced(clock: HandClock, config: Partial<WalConfig> = {}) {
  let during = (): void => {};
  const { wal } = await Wal.open("/wal", {
    fs: slowSyncs(new SimDisk().mount(), clock, 3, () => during()),
    clock,
    config: { syncPaceMsMax: 5, ...config },
  });
  const once = (fn: () => void) => {
    during = () => {
      during = () => {};
      fn();
    };
  };
  return { wal, once };
}

async function run(paceMs: number) {
  const clock = new HandClock();
  const { wal, once } = await openPaced(clock, { syncPaceMsMax: paceMs });
  // The first append finds the writer idle: written at once. A second arrives while its fsync
  // runs, a third a moment after that fsync.
  let second: Promise<number> | undefined;
  once(() => second = wal.append(new Uint8Array([2])));
  await wal.append(new Uint8Array([1]));
  const waitsAfterFirst = wal.metrics.paceWaits.value;
  await settle();
  clock.now += 1;
  const third = wal.append(new Uint8Array([3]));
  await settle();
  clock.advance(10);
  await Promise.all([second!, third]);
  // Quiet for longer than the bound: a lone append goes at once.
  clock.advance(50);
  const fourth = wal.append(new Uint8Array([4]));
  await settle();
  const result = {
    waitsAfterFirst,
    paceWaits: wal.metrics.paceWaits.value,
    batches: wal.metrics.batches.value,
  };
  clock.advance(10); // (Were it waiting, this would end the wait.)
  await fourth;
  await wal.close();
  return result;
}

Deno.test("the WAL's writer lets a stream of appends share an fsync, and writes a lone one at once", async () => {
  assertEquals(await run(5), { waitsAfterFirst: 0, paceWaits: 1, batches: 3 });
  // Without pacing the second append is written alone, the third after it.
  assertEquals(await run(0), { waitsAfterFirst: 0, paceWaits: 0, batches: 4 });
});

Deno.test("appends a batch left behind by its bounds are not a stream: a burst is not paced", async () => {
  const clock = new HandClock();
  const { wal } = await openPaced(clock, { batchBytesMax: 1500, recordBytesMax: 1024 });
  // Three appends in one turn, one batch each (1,000 bytes against a 1,500-byte batch).
  const burst = [1, 2, 3].map(() => wal.append(new Uint8Array(1000)));
  await settle();
  assertEquals(await Promise.all(burst), [0, 1, 2], "written without a timer");
  assertEquals([wal.metrics.batches.value, wal.metrics.paceWaits.value], [3, 0]);
  await wal.close();
});

Deno.test("after a stream, a checkpoint that fails and a quiet spell, a lone append is written at once", async () => {
  const clock = new HandClock();
  const { wal, once } = await openPaced(clock);
  // A checkpoint whose snapshot throws is queued while the first append's fsync runs.
  let checkpoint: Promise<unknown> | undefined;
  once(() =>
    checkpoint = wal.checkpoint(() => {
      throw new Error("no snapshot");
    })
  );
  await wal.append(new Uint8Array([1]));
  await checkpoint!.catch(() => {});
  await settle();
  clock.advance(1_000);
  let written = false;
  const lone = wal.append(new Uint8Array([2])).then(() => written = true);
  await settle();
  assertEquals([written, wal.metrics.paceWaits.value], [true, 0]);
  await lone;
  await wal.close();
});

Deno.test("close() while a batch waits for company writes it, then closes", async () => {
  const clock = new HandClock();
  const { wal, once } = await openPaced(clock);
  let second: Promise<number> | undefined;
  once(() => second = wal.append(new Uint8Array([2])));
  await wal.append(new Uint8Array([1]));
  await settle();
  assertEquals(clock.timers.length, 1, "the second append waits for company");
  const closing = wal.close();
  clock.advance(10);
  assertEquals(await second!, 1);
  await closing;
});
