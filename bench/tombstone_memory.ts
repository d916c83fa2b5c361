/**
 * The memory a finished, compacted job costs a node: its tombstone (job_table.ts, the zombie
 * guard of issue 17). Fills a job table with unkeyed jobs, delivers them, lets retention
 * compact them, and reports the heap each remaining tombstone holds, after a full GC:
 *
 *   deno run --v8-flags=--expose-gc bench/tombstone_memory.ts [jobs]
 *
 * `finishedTombstonesMax` (src/config.ts) is sized from this figure. Exits 1 if a tombstone
 * costs more than `BYTES_MAX`, so a change that fattens them is noticed.
 */

import { JobTable } from "../src/jobs/job_table.ts";
import { jobsDefaults } from "../src/config/jobs.ts";
import type { JobSpec } from "../src/jobs/job_model.ts";

/** The bound config.ts states for one tombstone, with room for V8's own variation. */
const BYTES_MAX = 140;
const WALL = 1_800_000_000_000;
const HOUR = 3_600_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error("run with --v8-flags=--expose-gc");
  Deno.exit(2);
}
const jobs = Number(Deno.args[0] ?? 200_000);

/** A minted id (`job_` and 32 hex digits), built fresh as a decoded record's would be. */
function mintedId(bytes: Uint8Array): string {
  crypto.getRandomValues(bytes);
  let id = "job_";
  for (const b of bytes) id += b.toString(16).padStart(2, "0");
  return id;
}

function heapAfterGc(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

const before = heapAfterGc();
const table = new JobTable({ ...jobsDefaults, finishedTombstonesMax: jobs });
const scratch = new Uint8Array(16);
let seq = 1;
for (let i = 0; i < jobs; i++) {
  const spec: JobSpec = {
    id: mintedId(scratch),
    url: "http://a.test/",
    payload: "{}",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: WALL,
    bodyHash: "",
  };
  const stamp = { origin: "10.0.0.1:7000", seq: seq++ };
  table.apply({ type: "submit", stamp, spec }, WALL);
  const done = { origin: "10.0.0.1:7000", seq: seq++ };
  table.apply({ type: "done", stamp: done, jobId: spec.id, gen: 0, finishedAtMs: WALL }, WALL);
}
table.expire(WALL + jobsDefaults.finishedRetentionMs + HOUR);
const after = heapAfterGc();
const perTombstone = (after - before) / table.goneTombstones;
console.log(
  `${table.goneTombstones} tombstones, ${table.size} jobs left: ` +
    `${((after - before) / 1e6).toFixed(1)} MB, ${perTombstone.toFixed(1)} bytes per tombstone ` +
    `(${(perTombstone * jobsDefaults.finishedTombstonesMax / 1e6).toFixed(0)} MB at ` +
    `finishedTombstonesMax ${jobsDefaults.finishedTombstonesMax})`,
);
if (table.goneTombstones !== jobs || perTombstone > BYTES_MAX) Deno.exit(1);
