// One process: what a WAL checkpoint costs a node holding N delivered jobs. Fills a JobTable
// the way session 33's delivered_gc.ts does, then runs the real `Wal.checkpoint` on a WAL in a
// temp dir on the disk, with the snapshot the node writes (Recovery.snapshotRecords' encoding:
// one WAL batch per table record). Reports the checkpoint's wall time, the longest event-loop
// gap seen by a 1-ms interval meanwhile (what every other task on the node waits), and the
// snapshot's size. With --v8-flags=--expose-gc, also the first full GC after it.
// `deno run -A --config deno.json bench/results/session34/micro/checkpoint_cost.ts 50000 143000 300000`
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";
import { Wal } from "../../../../src/wal/mod.ts";
import { Recovery } from "../../../../src/jobs/recovery.ts";
import { SeqTracker } from "../../../../src/jobs/seq_tracker.ts";
import { CatchupLog } from "../../../../src/jobs/catchup_log.ts";
import { MetricsRegistry } from "../../../../src/metrics/registry.ts";

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
    table.apply(
      decoded({
        type: "submit",
        stamp: { origin, seq: 3 * i + 1 },
        spec: {
          id,
          url: "http://127.0.0.1:9000/hook",
          payload: "x".repeat(200),
          headers: { "content-type": "application/json" },
          secrets: ["whsec_" + "A".repeat(32)],
          timeoutMs: 0,
          maxAttempts: 8,
          submittedAtMs: now,
          bodyHash: "",
        },
      }),
      now,
    );
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

// The snapshot a node writes: Recovery.snapshotRecords over this table (no tracker state: the
// meta record is the only other record, and small).
const recovery = new Recovery({
  self: origins[0]!,
  config: jobsDefaults,
  metrics: { decodeErrors: new MetricsRegistry().counter("x", "x") },
  table,
  tracker: new SeqTracker(),
  catchupLog: new CatchupLog(jobsDefaults.catchupLogBytesMax),
  appends: { notDurableSeqs: () => [] },
  host: { nextOwnSeq: () => 1, raiseNextOwnSeq: () => {} },
});
const snapshot = () => recovery.snapshotRecords();
const gc = (globalThis as unknown as { gc?: () => void }).gc;

const dir = await Deno.makeTempDir({ dir: Deno.cwd(), prefix: ".ckpt-probe-" });
try {
  const { wal } = await Wal.open(dir, {
    config: {
      inlineSyncMsMax: Number(Deno.env.get("PROBE_INLINE_SYNC_MS") ?? 2),
      checkpointSyncBytes: Number(Deno.env.get("PROBE_SYNC_BYTES") ?? 1024 * 1024),
    },
  });
  for (const n of Deno.args.map(Number)) {
    fill(n);
    await wal.append(new Uint8Array(64));
    let gapMs = 0;
    let longGaps = 0;
    let appendMs = 0;
    let appends = 0;
    let last = performance.now();
    let measuring = false;
    const pending: Promise<void>[] = [];
    const timer = setInterval(() => {
      const now = performance.now();
      gapMs = Math.max(gapMs, now - last);
      if (now - last >= 5) longGaps++;
      last = now;
      if (!measuring) return;
      appends++;
      pending.push(
        wal.append(new Uint8Array(300)).then(() => {
          appendMs = Math.max(appendMs, performance.now() - now);
        }),
      );
    }, 1);
    await new Promise((r) => setTimeout(r, 20));
    gapMs = 0;
    longGaps = 0;
    last = performance.now();
    measuring = true;
    const started = performance.now();
    const result = await wal.checkpoint(snapshot);
    const wallMs = performance.now() - started;
    measuring = false;
    await Promise.all(pending);
    await new Promise((r) => setTimeout(r, 5));
    clearInterval(timer);
    // With --expose-gc: the first full GC after the checkpoint, which sweeps what it left dead.
    let gcNote = "";
    if (gc !== undefined) {
      const t = performance.now();
      gc();
      gcNote = `, the next full GC ${(performance.now() - t).toFixed(0)} ms`;
    }
    console.log(
      `${n} jobs: checkpoint ${wallMs.toFixed(0)} ms, longest event-loop gap ${gapMs.toFixed(0)} ms ` +
        `(${longGaps} of 5 ms or more), ${appends} appends meanwhile, the slowest ${appendMs.toFixed(0)} ms, ` +
        `${result.snapshotRecords} records, ${(result.snapshotBytes / 1e6).toFixed(1)} MB${gcNote}`,
    );
  }
  await wal.close();
} finally {
  await Deno.remove(dir, { recursive: true });
}
