// Retained heap bytes per delivered job in a JobTable, records decoded from bytes as on a node.
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";

const N = Number(Deno.args[0] ?? 20000);
const gc = (globalThis as unknown as { gc: () => void }).gc;
const table = new JobTable(jobsDefaults as never);
function dec(r: JobRecord): JobRecord {
  const d = decodeRecord(encodeRecord(r));
  if (!d.ok) throw new Error(d.reason);
  return d.value;
}
const origins = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"];
gc(); gc();
const before = Deno.memoryUsage().heapUsed;
const t0 = Date.now();
for (let i = 0; i < N; i++) {
  const origin = origins[i % 5]!;
  const id = "job_" + (0x1000000000 + i).toString(16) + "a1b2c3d4e5f6";
  const now = t0 + i;
  const spec = {
    id, url: "http://127.0.0.1:9000/hook", payload: "x".repeat(200),
    headers: { "content-type": "application/json" }, secrets: ["whsec_" + "A".repeat(32)],
    timeoutMs: 0, maxAttempts: 8, submittedAtMs: now, bodyHash: "",
  };
  table.apply(dec({ type: "submit", stamp: { origin, seq: 3 * i + 1 }, spec }), now);
  table.apply(dec({ type: "commit", stamp: { origin, seq: 3 * i + 2 }, jobId: id, bodyHash: "" }), now);
  table.apply(dec({
    type: "done", stamp: { origin, seq: 3 * i + 3 }, jobId: id, gen: 0, finishedAtMs: now + 3,
    attempt: { attempt: 1, startedAtMs: now + 1, latencyMs: 1.5, outcome: "success", status: 200, detail: "", node: origin },
  }), now);
}
gc(); gc();
const after = Deno.memoryUsage().heapUsed;
console.log(JSON.stringify({ jobs: table.size, bytesPerJob: Math.round((after - before) / N) }));
// Added in session 28: a second argument writes a heap snapshot there (session28/micro/ reads it).
if (Deno.args[1] !== undefined) {
  const v8 = await import("node:v8");
  v8.writeHeapSnapshot(Deno.args[1]);
}
