// Retained heap bytes per pending (committed, not yet delivered) job in a JobTable, records
// decoded from bytes as on a node: what a backlog costs a node beyond its payloads.
// deno run --v8-flags=--expose-gc --config deno.json bench/results/session29/micro/pending_mem.ts N PAYLOAD_CHARS
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";

const N = Number(Deno.args[0] ?? 20000);
const payloadChars = Number(Deno.args[1] ?? 0);
const gc = (globalThis as unknown as { gc: () => void }).gc;
const table = new JobTable(jobsDefaults);
function dec(r: JobRecord): JobRecord {
  const d = decodeRecord(encodeRecord(r));
  if (!d.ok) throw new Error(d.reason);
  return d.value;
}
const origins = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"];
gc();
gc();
const before = Deno.memoryUsage().heapUsed;
const t0 = Date.now();
for (let i = 0; i < N; i++) {
  const origin = origins[i % 5]!;
  const id = "job_" + (0x1000000000 + i).toString(16) + "a1b2c3d4e5f6";
  const now = t0 + i;
  const spec = {
    id,
    url: "http://127.0.0.1:9000/hook",
    payload: "x".repeat(payloadChars),
    headers: { "content-type": "application/json" },
    secrets: ["whsec_" + "A".repeat(32)],
    timeoutMs: 0,
    maxAttempts: 8,
    submittedAtMs: now,
    bodyHash: "",
  };
  table.apply(dec({ type: "submit", stamp: { origin, seq: 2 * i + 1 }, spec }), now);
  table.apply(dec({ type: "commit", stamp: { origin, seq: 2 * i + 2 }, jobId: id, bodyHash: "" }), now);
}
gc();
gc();
const after = Deno.memoryUsage().heapUsed;
console.log(JSON.stringify({
  jobs: table.size,
  pending: table.counts.pending,
  payloadChars,
  bytesPerJob: Math.round((after - before) / N),
}));
