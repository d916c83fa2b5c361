// One process: what the delivered jobs a node keeps for `finishedRetentionMs` (an hour) cost
// each major GC. Fills a JobTable with N delivered jobs, records decoded from bytes as on a node
// (session 27's table_mem.ts), then times full, non-incremental GCs (`gc()`): the whole marking
// work of a mark-compact in one pause, an upper bound on what a node's incremental and
// concurrent marking spreads out. At 200 jobs/s an hour is 720,000 jobs.
// Then, for the table as filled last: the bytes each delivered job would take encoded as the
// `state` record a snapshot carries (what a store outside the JS heap would keep), and the time
// to decode one back (what a query or a late record for it would pay).
// `deno run -A --v8-flags=--expose-gc --config deno.json bench/results/session43/memory/delivered_gc.ts 0 100000 300000 720000`
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import { type JobRecord, snapshotOf } from "../../../../src/jobs/job_model.ts";

const gc = (globalThis as unknown as { gc: () => void }).gc;
const origins = [7001, 7002, 7003, 7004, 7005].map((p) => `127.0.0.1:${p}`);
function decoded(r: JobRecord): JobRecord {
  const d = decodeRecord(encodeRecord(r));
  if (!d.ok) throw new Error(d.reason);
  return d.value;
}

const t0 = Date.now();
let filled = 0;
const table = new JobTable(jobsDefaults);
function fill(n: number): void {
  for (; filled < n; filled++) {
    const i = filled;
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
    table.apply(
      decoded({ type: "commit", stamp: { origin, seq: 3 * i + 2 }, jobId: id, bodyHash: "" }),
      now,
    );
    table.apply(
      decoded({
        type: "done",
        stamp: { origin, seq: 3 * i + 3 },
        jobId: id,
        gen: 0,
        finishedAtMs: now + 3,
        attempt: {
          attempt: 1,
          startedAtMs: now + 1,
          latencyMs: 1.5,
          outcome: "success",
          status: 200,
          detail: "",
          node: origin,
        },
      }),
      now,
    );
  }
}

for (const n of Deno.args.map(Number)) {
  fill(n);
  gc();
  gc();
  const ms: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t = performance.now();
    gc();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  console.log(
    `${table.size} delivered jobs held: heap ${(Deno.memoryUsage().heapUsed / 1e6).toFixed(0)} MB,` +
      ` a full GC ${ms[2]!.toFixed(1)} ms (median of 5; ${ms[0]!.toFixed(1)}–${ms[4]!.toFixed(1)})`,
  );
}

const encoded: Uint8Array[] = [];
for (const entry of table.entries()) {
  encoded.push(encodeRecord({ type: "state", state: snapshotOf(entry) }));
}
const bytes = encoded.reduce((n, b) => n + b.length, 0);
const t = performance.now();
for (const b of encoded) if (!decodeRecord(b).ok) throw new Error("state record did not decode");
const decodeUs = ((performance.now() - t) * 1000) / encoded.length;
console.log(
  `encoded as state records: ${(bytes / encoded.length).toFixed(0)} bytes a delivered job ` +
    `(${(bytes / 1e6).toFixed(0)} MB for ${encoded.length}); decoding one back ${decodeUs.toFixed(2)} µs`,
);
