// One process: a heap snapshot of a JobTable holding N delivered jobs (filled as
// delivered_gc.ts fills it), to see what each delivered job's ~650 heap bytes are.
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session43/memory/snapshot.ts 50000 /tmp/s43/table.heapsnapshot`
import { writeHeapSnapshot } from "node:v8";
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";

const origins = [7001, 7002, 7003, 7004, 7005].map((p) => `127.0.0.1:${p}`);
function decoded(r: JobRecord): JobRecord {
  const d = decodeRecord(encodeRecord(r));
  if (!d.ok) throw new Error(d.reason);
  return d.value;
}
const n = Number(Deno.args[0] ?? 50000);
const table = new JobTable(jobsDefaults);
const t0 = Date.now();
for (let i = 0; i < n; i++) {
  const origin = origins[i % 5]!;
  const id = "job_" + (0x1000000000 + i).toString(16) + "a1b2c3d4e5f6";
  const now = t0 + i;
  const spec = {
    id,
    url: "http://127.0.0.1:9000/hook",
    payload: "x".repeat(200),
    headers: { "content-type": "application/json" },
    secrets: ["whsec_" + "A".repeat(32)],
    timeoutMs: 0,
    maxAttempts: 8,
    submittedAtMs: now,
    bodyHash: "",
  };
  table.apply(decoded({ type: "submit", stamp: { origin, seq: 3 * i + 1 }, spec }), now);
  table.apply(decoded({ type: "commit", stamp: { origin, seq: 3 * i + 2 }, jobId: id, bodyHash: "" }), now);
  table.apply(
    decoded({
      type: "done",
      stamp: { origin, seq: 3 * i + 3 },
      jobId: id,
      gen: 0,
      finishedAtMs: now + 3,
      attempt: { attempt: 1, startedAtMs: now + 1, latencyMs: 1.5, outcome: "success", status: 200, detail: "", node: origin },
    }),
    now,
  );
}
(globalThis as unknown as { gc: () => void }).gc();
console.log(`${table.size} jobs, heap ${(Deno.memoryUsage().heapUsed / 1e6).toFixed(1)} MB`);
writeHeapSnapshot(Deno.args[1] ?? "/tmp/s43/table.heapsnapshot");
