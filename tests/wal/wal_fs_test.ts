import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { denoWalFsWith, InlineSyncPolicy } from "../../src/wal/wal_fs.ts";
import { validateWalConfig, walDefaults } from "../../src/config/wal.ts";

Deno.test("inline sync policy: fast fsyncs stay inline, a slow one moves the next off-thread, fast ones bring them back", () => {
  const policy = new InlineSyncPolicy(2);
  ok(policy.inline(), "a fresh disk is tried inline");
  for (let i = 0; i < 50; i++) policy.observe(0.3);
  ok(policy.inline(), "0.3 ms fsyncs stay inline");
  policy.observe(40);
  equal(policy.inline(), false, "one 40 ms fsync: the next leave the event-loop thread");
  let offThread = 0;
  while (!policy.inline() && offThread < 100) {
    policy.observe(0.3);
    offThread++;
  }
  ok(offThread >= 5 && offThread <= 20, `back inline after ${offThread} fast fsyncs`);
  for (let i = 0; i < 50; i++) policy.observe(3);
  equal(policy.inline(), false, "a disk whose fsyncs take 3 ms stays off-thread");
});

Deno.test("inline sync policy: a limit of 0 never runs inline", () => {
  const policy = new InlineSyncPolicy(0);
  equal(policy.inline(), false);
  policy.observe(0);
  equal(policy.inline(), false);
});

Deno.test("wal config: inlineSyncMsMax must be a finite number >= 0", () => {
  let refused = 0;
  for (const bad of [-1, Number.NaN, Infinity]) {
    try {
      validateWalConfig({ ...walDefaults, inlineSyncMsMax: bad });
    } catch (error) {
      ok(error instanceof RangeError && error.message.includes("wal.inlineSyncMsMax"));
      refused++;
    }
  }
  equal(refused, 3);
});

Deno.test("deno WAL file system: bytes synced inline and off-thread are all in the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const inlineSyncMsMax of [2, 0]) {
      const fs = denoWalFsWith({ inlineSyncMsMax });
      const path = `${dir}/segment-${inlineSyncMsMax}`;
      const file = await fs.openAppend(path, true);
      const written: number[] = [];
      for (let i = 0; i < 20; i++) {
        const chunk = Uint8Array.from({ length: 100 + i }, (_, k) => (i + k) & 0xff);
        await file.writeAll(chunk);
        await file.syncData();
        written.push(...chunk);
      }
      file.close();
      deepStrictEqual(await fs.readFile(path), Uint8Array.from(written));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno WAL file system: an fsync that fails inline rejects, and does not throw", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fs = denoWalFsWith({ inlineSyncMsMax: 1_000 });
    const file = await fs.openAppend(`${dir}/segment`, true);
    file.close();
    let rejected: unknown;
    const pending = file.syncData();
    await pending.catch((error) => (rejected = error));
    ok(rejected instanceof Error, "a closed file's fsync rejects");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno WAL file system: the hook runs before each inline fsync only, and one that throws does not stop the fsync", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const [inlineSyncMsMax, expected] of [[1_000, 3], [0, 0]] as const) {
      let calls = 0;
      const fs = denoWalFsWith({
        inlineSyncMsMax,
        beforeInlineSync: () => {
          calls++;
          throw new Error("a hook that throws");
        },
      });
      const file = await fs.openAppend(`${dir}/segment-${inlineSyncMsMax}`, true);
      for (let i = 0; i < 3; i++) {
        await file.writeAll(new Uint8Array([i]));
        await file.syncData();
      }
      file.close();
      equal(calls, expected, `inlineSyncMsMax ${inlineSyncMsMax}`);
      deepStrictEqual(
        await fs.readFile(`${dir}/segment-${inlineSyncMsMax}`),
        Uint8Array.of(0, 1, 2),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
