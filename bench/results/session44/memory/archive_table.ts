// One process (session 44): the job table's archive on N delivered jobs, against the same table
// before its jobs were archived (session 43's delivered_table.ts fill, JobTable defaults). Heap
// a job, a full GC, the cost of an `expire` pass that archives 5,000 (archiveBatchMax), a read
// (`get`) of an archived job, and the pass that drops them all at their retention.
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session44/memory/archive_table.ts 720000`
import { deliveredTable } from "../../session43/memory/delivered_table.ts";

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
const t0 = Date.now();
const table = deliveredTable(n);
const ids = [...table.entries()].map((e) => e.jobId);
const objectsMb = heapMb() - base;
console.log(
  `objects: ${n} delivered jobs, ${(objectsMb * 1e6 / n).toFixed(0)} B of heap a job, ` +
    `RSS ${(Deno.memoryUsage().rss / 1e6).toFixed(0)} MB, a full GC ${fullGcMs().toFixed(1)} ms`,
);
// Archive them: passes of archiveBatchMax, at a wall time past archiveAfterMs, before retention
// (the fill stamps job i at t0 + i ms).
const now = t0 + n + 20_000;
const passes: number[] = [];
while (table.archivedJobs < n && passes.length < n) {
  const t = performance.now();
  table.expire(now);
  passes.push(performance.now() - t);
}
passes.sort((a, b) => a - b);
const archivedMb = heapMb() - base;
console.log(
  `archive: ${passes.length} passes, median ${passes[passes.length >> 1]!.toFixed(2)} ms, ` +
    `${(passes.reduce((a, b) => a + b, 0) * 1000 / n).toFixed(2)} µs a job archived`,
);
console.log(
  `archived: ${(archivedMb * 1e6 / n).toFixed(0)} B of heap a job (ids and the Map), ` +
    `${(table.archiveBytes / n).toFixed(0)} B a job in slabs outside it, ` +
    `RSS ${(Deno.memoryUsage().rss / 1e6).toFixed(0)} MB, a full GC ${fullGcMs().toFixed(1)} ms`,
);
let t = performance.now();
let found = 0;
for (let i = 0; i < 100000; i++) {
  if (table.get(ids[(i * 7919) % ids.length]!)?.phase === "delivered") found++;
}
console.log(
  `a get() of an archived job: ${((performance.now() - t) * 1000 / 100000).toFixed(2)} µs ` +
    `(${found} of 100000 delivered)`,
);
t = performance.now();
const dropped = table.expire(t0 + n + 3_600_000 + 10_000).length;
console.log(
  `retention: ${dropped} dropped in one pass, ${((performance.now() - t) * 1000 / dropped).toFixed(2)} µs a job; ` +
    `${table.size} left, ${table.archiveBytes} B of slabs`,
);
