import { assert, assertEquals, assertRejects } from "../assert.ts";
import { Wal } from "../../src/wal/wal.ts";
import { encodeRecord, encodeWalBatch } from "../../src/jobs/job_codec.ts";
import type { JobSpec } from "../../src/jobs/job_model.ts";
import { walCensus } from "../../src/bench/wal_census.ts";

function spec(id: string): JobSpec {
  return {
    id,
    url: "http://127.0.0.1:9/hook",
    payload: "{}",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: 1,
    bodyHash: "",
  };
}

async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const e of Deno.readDir(dir)) {
    const bytes = await Deno.readFile(`${dir}/${e.name}`);
    out.set(e.name, Array.from(bytes.slice(-64)).join(",") + `#${bytes.length}`);
  }
  return out;
}

Deno.test("walCensus finds every job whose spec is on the disk, and changes nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { wal } = await Wal.open(dir);
    await wal.append(encodeWalBatch([
      encodeRecord({ type: "submit", stamp: { origin: "a:1", seq: 1 }, spec: spec("job_a") }),
      encodeRecord({ type: "submit", stamp: { origin: "a:1", seq: 2 }, spec: spec("job_b") }),
    ]));
    // A COMMIT without a spec does not make a job held; one with its spec does.
    await wal.append(encodeWalBatch([
      encodeRecord({
        type: "commit",
        stamp: { origin: "a:1", seq: 3 },
        jobId: "job_c",
        bodyHash: "",
      }),
      encodeRecord({
        type: "commit",
        stamp: { origin: "a:1", seq: 4 },
        jobId: "job_d",
        bodyHash: "",
        spec: spec("job_d"),
      }),
    ]));
    await wal.close();
    const before = await snapshot(dir);
    const census = await walCensus(dir);
    assertEquals([...census.jobIds].sort(), ["job_a", "job_b", "job_d"]);
    assertEquals(census.undecodable, 0);
    assertEquals(await snapshot(dir), before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("walCensus refuses to repair a torn tail instead of truncating what it checks", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { wal } = await Wal.open(dir);
    await wal.append(encodeWalBatch([
      encodeRecord({ type: "submit", stamp: { origin: "a:1", seq: 1 }, spec: spec("job_a") }),
    ]));
    await wal.close();
    const names = [];
    for await (const e of Deno.readDir(dir)) names.push(e.name);
    const segment = `${dir}/${names.sort().pop()}`;
    const file = await Deno.open(segment, { append: true });
    await file.write(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]));
    file.close();
    const before = await snapshot(dir);
    await assertRejects(() => walCensus(dir));
    assertEquals(await snapshot(dir), before, "the torn tail is still there");
    assert(before.size > 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
