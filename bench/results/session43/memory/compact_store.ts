// One process (session 43): what a compact store of delivered jobs would hold and cost, against
// the JobTable's objects (session 33's delivered_gc.ts). Fills a JobTable with N delivered jobs
// (delivered_table.ts), then keeps only each job's `state` record bytes in 1-MiB slabs, with an index
// (a Map from id to a position in Int32Arrays of slab, offset and length), drops the table, and
// measures heap, a full GC and a lookup (decode) of a stored job.
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session43/memory/compact_store.ts 720000`
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { snapshotOf } from "../../../../src/jobs/job_model.ts";
import type { JobTable } from "../../../../src/jobs/job_table.ts";
import { deliveredTable } from "./delivered_table.ts";

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
const n = Number(Deno.args[0] ?? 720000);
const base = heapMb();
let table: JobTable | undefined = deliveredTable(n);
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
