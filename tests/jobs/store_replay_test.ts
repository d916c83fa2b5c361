/**
 * Issue 17 §1: `JobStore.open` replayed with `void core.replay(...)`, so a WAL batch that did
 * not decode was skipped and only a counter moved; an acknowledged job of another client was
 * left on two disks after a restart that way. A complete batch that cannot be decoded is now a
 * recovery error: the node refuses to start and says where and what to do.
 */

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { Wal } from "../../src/wal/wal.ts";
import { SEGMENT_HEADER_BYTES } from "../../src/wal/record_codec.ts";
import { encodeRecord, encodeWalBatch } from "../../src/jobs/job_codec.ts";
import { JobLogReplayError, JobStore, type JobsTransport } from "../../src/jobs/job_store.ts";
import type { JobSpec } from "../../src/jobs/job_model.ts";

const VOTERS = [1, 2, 3].map((i) => `10.0.0.${i}:7000`);
const DIR = "/data";

/** Never reached: the store fails before it joins replication. */
const NO_TRANSPORT: JobsTransport = {
  send: () => ({ accepted: true }),
  onMessage: () => () => {},
  onEvent: () => () => {},
};

function submitBatch(seq: number, id: string): Uint8Array {
  const spec: JobSpec = {
    id,
    url: "https://h.test/",
    payload: "{}",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: 1_800_000_000_000,
    bodyHash: "",
  };
  return encodeWalBatch([
    encodeRecord({ type: "submit", stamp: { origin: VOTERS[1]!, seq }, spec }),
  ]);
}

/** Opens a store on `disk` that delivers nothing (`deliver` as given: true asks for delivery). */
function open(disk: SimDisk, deliver = false): Promise<JobStore> {
  return JobStore.open({
    self: VOTERS[0]!,
    nodeId: "n1",
    voters: VOTERS,
    dataDir: DIR,
    fs: disk.mount(),
    transport: NO_TRANSPORT,
    members: () => [],
    rng: new Sfc32(1),
    metrics: new MetricsRegistry(),
    deliver,
  });
}

Deno.test("JobStore.open refuses to start on an undecodable WAL batch before the log's end, naming segment and offset", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), replay: () => {} });
  const first = submitBatch(1, "job_a");
  await wal.append(first);
  // A complete, CRC-valid WAL record whose job-store batch does not decode (an unknown record
  // type: what a record past the codec's limits looked like to the decoder).
  await wal.append(encodeWalBatch([new Uint8Array([99, 1, 2, 3])]));
  await wal.append(submitBatch(2, "job_b"));
  await wal.close();

  const error = await assertRejects(() => open(disk), JobLogReplayError);
  assert(error instanceof JobLogReplayError);
  assert(error.offset > SEGMENT_HEADER_BYTES, `offset ${error.offset} is past the first batch`);
  assert(error.message.includes(error.segment), error.message);
  assert(error.message.includes(`offset ${error.offset}`), error.message);
  assert(error.message.includes("refuses to start"), error.message);
  assert(error.message.includes("catch up from its peers"), error.message);
  assertEquals(error.dataDir, DIR);
});

Deno.test("JobStore.open still opens a WAL whose batches all decode", async () => {
  const disk = new SimDisk();
  const { wal } = await Wal.open(DIR, { fs: disk.mount(), replay: () => {} });
  await wal.append(submitBatch(1, "job_a"));
  await wal.append(submitBatch(2, "job_b"));
  await wal.close();
  const store = await open(disk);
  assert(store.core.table.get("job_b")?.spec !== undefined, "the last batch was replayed");
  await store.close();
});

Deno.test("JobStore.open refuses to deliver with no scheduler: it would take jobs and never send them", async () => {
  const disk = new SimDisk();
  await assertRejects(
    () => open(disk, true),
    RangeError,
    "scheduler",
  );
});
