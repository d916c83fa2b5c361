// One process (session 43): what a compact store of delivered jobs would hold and cost, against
// the JobTable's objects (session 33's delivered_gc.ts). Fills a JobTable with N delivered jobs as
// that script does, then keeps only each job's `state` record bytes in 1-MiB slabs, with an index
// (a Map from id to a position in Int32Arrays of slab, offset and length), drops the table, and
// measures heap, a full GC and a lookup (decode) of a stored job.
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session43/memory/compact_store.ts 720000`
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import { type JobRecord, snapshotOf } from "../../../../src/jobs/job_model.ts";

const gc = (globalThis as unknown as { gc: () => void }).gc;
const heapMb = () => {
  gc();
  gc();
  return Deno.memoryUsage().heapUsed / 1e6;
};
const fullGcMs = () => {
  const ms: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t = performance.now();
    gc();
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b)[2]!;
};
const origins = [7001, 7002, 7003, 7004, 7005].map((p) => `127.0.0.1:${p}`);
const decoded = (r: JobRecord): JobRecord => {
  const d = decodeRecord(encodeRecord(r));
  if (!d.ok) throw new Error(d.reason);
  return d.value;
};
const n = Number(Deno.args[0] ?? 720000);
const base = heapMb();
let table: JobTable | undefined = new JobTable(jobsDefaults);
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
  const attempt = { attempt: 1, startedAtMs: now + 1, latencyMs: 1.5, outcome: "success" as const, status: 200, detail: "", node: origin };
  table.apply(decoded({ type: "done", stamp: { origin, seq: 3 * i + 3 }, jobId: id, gen: 0, finishedAtMs: now + 3, attempt }), now);
}
const tableMb = heapMb() - base;
console.log(`JobTable: ${n} delivered jobs, ${(tableMb * 1e6 / n).toFixed(0)} B of heap a job, a full GC ${fullGcMs().toFixed(1)} ms`);

// The compact form: state records in slabs, an index by id.
const SLAB = 1 << 20;
const slabs: Uint8Array[] = [];
let slab = new Uint8Array(0);
let used = 0;
const slabOf = new Int32Array(n);
const offsetOf = new Int32Array(n);
const lengthOf = new Int32Array(n);
const index = new Map<string, number>();
let k = 0;
for (const entry of table.entries()) {
  const bytes = encodeRecord({ type: "state", state: snapshotOf(entry) });
  if (used + bytes.length > slab.length) {
    slab = new Uint8Array(SLAB);
    slabs.push(slab);
    used = 0;
  }
  slab.set(bytes, used);
  slabOf[k] = slabs.length - 1;
  offsetOf[k] = used;
  lengthOf[k] = bytes.length;
  used += bytes.length;
  index.set(entry.jobId, k++);
}
table = undefined;
const compactHeapMb = heapMb() - base;
const external = slabs.length * SLAB / 1e6;
console.log(
  `compact: ${(compactHeapMb * 1e6 / n).toFixed(0)} B of heap a job (the index), ` +
    `${(external * 1e6 / n).toFixed(0)} B a job in ${slabs.length} slabs outside it, a full GC ${fullGcMs().toFixed(1)} ms`,
);
const ids = [...index.keys()];
const t = performance.now();
let found = 0;
for (let i = 0; i < 100000; i++) {
  const p = index.get(ids[(i * 7919) % ids.length]!)!;
  const d = decodeRecord(slabs[slabOf[p]!]!.subarray(offsetOf[p]!, offsetOf[p]! + lengthOf[p]!));
  if (d.ok) found++;
}
console.log(`a lookup and decode: ${((performance.now() - t) * 1000 / 100000).toFixed(2)} µs (${found} of 100000)`);
