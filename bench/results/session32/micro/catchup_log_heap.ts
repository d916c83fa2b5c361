// One process: the JavaScript heap a CatchupLog holds per record, at its default 64-MiB bound
// (200-byte records of five origins, as at 200/s: the bytes themselves sit in slabs, off the
// heap), and what an add allocates once the log is at its bound and evicting.
// Session 33 added what the log holds outside the JavaScript heap (`external` counts ArrayBuffers:
// the slabs, and in session 33's typed-array layout the ring and its indexes), less the record
// bytes themselves, so two layouts compare on all the memory they keep per record; session 32's
// output predates that line. Session 33's figures: bench/results/session33/micro/.
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session32/micro/catchup_log_heap.ts`
import { getHeapStatistics } from "node:v8";
import { CatchupLog } from "../../../../src/jobs/catchup_log.ts";

const gc = (globalThis as unknown as { gc: () => void }).gc;
const heapUsed = () => {
  gc();
  gc();
  return getHeapStatistics().used_heap_size;
};
const external = () => {
  gc();
  gc();
  return Deno.memoryUsage().external;
};
const allocated = () =>
  (getHeapStatistics() as unknown as { total_allocated_bytes: number }).total_allocated_bytes;
const origins = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"];
const record = new Uint8Array(200);
const seqs = [0, 0, 0, 0, 0];
const add = (log: CatchupLog, n: number) => {
  for (let i = 0; i < n; i++) log.add(origins[i % 5]!, ++seqs[i % 5]!, record);
};

const before = heapUsed();
const externalBefore = external();
const log = new CatchupLog(64 * 1024 * 1024);
add(log, 300_000);
const held = log.records;
const after = heapUsed();
const outside = external() - externalBefore - log.bytes;
console.log(
  `${held} records held: ${((after - before) / held).toFixed(1)} bytes of JS heap a record ` +
    `(${((after - before) / 1e6).toFixed(1)} MB); outside the heap, besides the records' ` +
    `${(log.bytes / 1e6).toFixed(1)} MB: ${(outside / held).toFixed(1)} bytes a record`,
);
add(log, 400_000); // past the bound: evicting from here on
const n = 1_000_000;
const a0 = allocated();
const t0 = performance.now();
add(log, n);
const ms = performance.now() - t0;
console.log(
  `at the bound (${log.records} records held): ${((allocated() - a0) / n).toFixed(1)} bytes ` +
    `allocated and ${((ms * 1000) / n).toFixed(2)} µs an add`,
);
