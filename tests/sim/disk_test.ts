import { assert, assertEquals } from "../assert.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { Sfc32 } from "../../src/lib/rng.ts";

const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

Deno.test("SimDisk crash loses unsynced bytes and keeps synced ones", async () => {
  const disk = new SimDisk();
  const file = await disk.openAppend("/d/a", true);
  await disk.syncDir("/d");
  await file.writeAll(bytes(100, 1));
  await file.syncData();
  await file.writeAll(bytes(50, 2));
  disk.crash();
  assertEquals(disk.bytes("/d/a"), bytes(100, 1));
});

Deno.test("SimDisk crash drops a file whose directory entry was never synced, even with synced data", async () => {
  const disk = new SimDisk();
  const file = await disk.openAppend("/d/a", true);
  await file.writeAll(bytes(10, 1));
  await file.syncData();
  disk.crash();
  assertEquals(await disk.list("/d"), []);
});

Deno.test("SimDisk crash undoes a removal that no directory sync made durable", async () => {
  const disk = new SimDisk();
  const file = await disk.openAppend("/d/a", true);
  await file.writeAll(bytes(10, 1));
  await file.syncData();
  await disk.syncDir("/d");
  await disk.remove("/d/a");
  assertEquals(await disk.list("/d"), []);
  disk.crash();
  assertEquals(disk.bytes("/d/a"), bytes(10, 1));
  await disk.remove("/d/a");
  await disk.syncDir("/d");
  disk.crash();
  assertEquals(await disk.list("/d"), []);
});

Deno.test("SimDisk directory sync covers only the directory's own entries", async () => {
  const disk = new SimDisk();
  await disk.openAppend("/d/a", true);
  await disk.openAppend("/d/sub/b", true);
  await disk.syncDir("/d");
  disk.crash();
  assertEquals(await disk.list("/d"), ["a"]);
});

Deno.test("SimDisk torn crash damages only unsynced bytes, never the synced prefix", async () => {
  let holes = 0;
  for (let seed = 1; seed <= 50; seed++) {
    const rng = new Sfc32(seed);
    const disk = new SimDisk();
    const file = await disk.openAppend("/d/a", true);
    await disk.syncDir("/d");
    const synced = 1 + rng.int(3000);
    await file.writeAll(bytes(synced, 0xaa));
    await file.syncData();
    await file.writeAll(bytes(1 + rng.int(5000), 0xbb));
    disk.crash(rng, true);
    const after = disk.bytes("/d/a")!;
    assert(after.length >= synced, `seed ${seed}: synced bytes lost`);
    assertEquals(after.subarray(0, synced), bytes(synced, 0xaa), `seed ${seed}`);
    if (after.subarray(synced).includes(0)) holes++;
  }
  assert(holes > 0, "no crash left an unwritten sector");
});

Deno.test("SimDisk full disk takes a short write, then refuses", async () => {
  const disk = new SimDisk();
  const file = await disk.openAppend("/d/a", true);
  disk.injectFault("full");
  let refused = false;
  await file.writeAll(bytes(100, 1)).catch(() => refused = true);
  assert(refused);
  assertEquals(disk.bytes("/d/a")!.length, 50);
});

Deno.test("SimDisk handles from before a crash fail afterwards", async () => {
  const disk = new SimDisk();
  const fs = disk.mount();
  const file = await fs.openAppend("/d/a", true);
  disk.crash();
  let failed = 0;
  await file.writeAll(bytes(1, 1)).catch(() => failed++);
  await fs.list("/d").catch(() => failed++);
  assertEquals(failed, 2);
});

Deno.test("SimDisk durableFiles is exactly what a crash at that moment leaves", async () => {
  for (let seed = 1; seed <= 100; seed++) {
    const rng = new Sfc32(seed);
    const disk = new SimDisk();
    const names = ["/d/a", "/d/b", "/d/c"];
    const open = new Map<string, Awaited<ReturnType<SimDisk["openAppend"]>>>();
    for (let step = 0; step < 30; step++) {
      const path = names[rng.int(names.length)]!;
      const op = rng.int(5);
      if (op === 0) open.set(path, await disk.openAppend(path, true));
      else if (op === 1) await open.get(path)?.writeAll(bytes(1 + rng.int(40), 1 + step));
      else if (op === 2) await open.get(path)?.syncData();
      else if (op === 3) await disk.syncDir("/d");
      else if (disk.bytes(path) !== undefined) {
        await disk.remove(path);
        open.delete(path);
      }
    }
    const before = disk.durableFiles()
      .map((f) => [f.path, [...f.bytes]] as const)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    disk.crash();
    const after = (await disk.list("/d")).sort().map((name) =>
      [`/d/${name}`, [...disk.bytes(`/d/${name}`)!]] as const
    );
    assertEquals(before, after, `seed ${seed}`);
  }
});

Deno.test("SimDisk durableFiles names a file by serial, not by path", async () => {
  const disk = new SimDisk();
  await disk.openAppend("/d/a", true);
  await disk.syncDir("/d");
  const first = disk.durableFiles()[0]!.serial;
  await disk.remove("/d/a");
  await disk.syncDir("/d");
  await disk.openAppend("/d/a", true);
  await disk.syncDir("/d");
  const files = disk.durableFiles();
  assertEquals(files.length, 1);
  assert(files[0]!.serial !== first, "a new file at the same path has a new serial");
});
