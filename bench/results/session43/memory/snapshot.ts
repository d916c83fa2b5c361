// One process: a heap snapshot of a JobTable holding N delivered jobs (filled by
// delivered_table.ts), to see what each delivered job's ~650 heap bytes are.
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session43/memory/snapshot.ts 50000 /tmp/s43/table.heapsnapshot`
import { writeHeapSnapshot } from "node:v8";
import { deliveredTable } from "./delivered_table.ts";

const n = Number(Deno.args[0] ?? 50000);
const table = deliveredTable(n);
(globalThis as unknown as { gc: () => void }).gc();
console.log(`${table.size} jobs, heap ${(Deno.memoryUsage().heapUsed / 1e6).toFixed(1)} MB`);
writeHeapSnapshot(Deno.args[1] ?? "/tmp/s43/table.heapsnapshot");
