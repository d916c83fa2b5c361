import { assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { DurabilityProbe } from "../../src/sim/durability_probe.ts";
import { Wal } from "../../src/wal/wal.ts";
import { encodeRecord as encodeJobRecord, encodeWalBatch } from "../../src/jobs/job_codec.ts";
import { encodeRecord as encodeFrame, RecordType } from "../../src/wal/record_codec.ts";
import type { JobSpec } from "../../src/jobs/job_model.ts";

const DIR = "/var/lib/hookd";

function submit(id: string, seq: number): Uint8Array {
  const spec: JobSpec = {
    id,
    url: "http://a.test/",
    payload: "{}",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: 0,
    bodyHash: "",
  };
  return encodeWalBatch([encodeJobRecord({ type: "submit", stamp: { origin: "a", seq }, spec })]);
}

Deno.test("the durability probe sees only synced batches, and reads on past a torn tail recovery cut", async () => {
  const disk = new SimDisk();
  const probe = new DurabilityProbe();
  const first = await Wal.open(DIR, { fs: disk.mount(), rng: new Sfc32(1) });
  await first.wal.append(submit("job_a", 1));
  assertEquals(probe.holds(disk, "job_a", ""), true);
  assertEquals(probe.holds(disk, "job_b", ""), false);
  // The process dies while a frame is half written; the garbage reached the disk (a torn
  // sector that happened to be written back) and reads as a damaged frame.
  disk.crash();
  const file = (await disk.list(DIR))[0]!;
  const handle = await disk.openAppend(`${DIR}/${file}`, false);
  const torn = encodeFrame(RecordType.Data, new Uint8Array([1, 2, 3, 4]), 12345);
  await handle.writeAll(torn);
  await handle.syncData();
  assertEquals(probe.holds(disk, "job_b", ""), false, "a damaged tail holds nothing");
  // Recovery cuts the torn tail; the log goes on from there.
  const second = await Wal.open(DIR, { fs: disk.mount(), rng: new Sfc32(2) });
  assertEquals(second.report.truncated !== undefined, true, "recovery cut the tail");
  await second.wal.append(submit("job_b", 2));
  assertEquals(probe.holds(disk, "job_b", ""), true, "what follows the cut is read");
  assertEquals(probe.holds(disk, "job_a", ""), true);
  assertEquals(probe.undecodable, 0);
  await second.wal.close();
});
