/**
 * A sweep row from what the harness gathered (`sweepRow`, no processes): `completed` within the
 * step plus the grace, `lost` as accepted and never received, duplicates as the sink's extra
 * receipts, latency from each job's scheduled time, null percentiles when nothing completed,
 * per-job costs from the window's counters and every process's CPU, and a note whenever the
 * step is not a clean measurement (load not offered, or offered late; backlog; undrained).
 */

import { assert, assertEquals } from "../assert.ts";
import { type SweepOptions, waitForReceipts } from "../../src/bench/sweep.ts";
import { backlogIn, onSweepClock, type StepRecord, sweepRow } from "../../src/bench/sweep_row.ts";
import { walFilesystem } from "../../src/bench/filesystem.ts";
import type { SinkReceipt } from "../../src/process/sink.ts";
import type { AcceptedSubmit, StepReport } from "../../src/process/generator_protocol.ts";
import { VirtualRuntime } from "./virtual_runtime.ts";

const T0 = 1_700_000_000_000;

const OPTIONS: SweepOptions = {
  sweep: "rate",
  rates: [100],
  losses: [0],
  durationS: 10,
  warmupS: 5,
  warmupRate: 100,
  nodes: 5,
  via: ["http"],
  walModes: ["batched"],
  drainLimitS: 30,
  graceS: 2,
  payloadBytes: 128,
  inFlight: 1024,
};
const VARIANT = { via: "http", walSync: "batched", loss: 0 } as const;

/** A step of `n` accepted jobs scheduled every 10 ms from T0 (100/s for 10 s asked). */
function record(n: number, fields: Partial<StepReport> = {}): StepRecord {
  const ids: AcceptedSubmit[] = Array.from(
    { length: n },
    (_, i) => [`j${i}`, T0 + i * 10, T0 + i * 10 + 3, T0 + i * 10, i % 5],
  );
  const report: StepReport = {
    op: "done",
    step: "s1-r100",
    asked: 1000,
    offered: n,
    accepted: n,
    jobs_made: n,
    rejected: 0,
    errors: 0,
    codes: {},
    send_seconds: 9.99,
    seconds: 10,
    accepted_per_s: n / 9.99,
    accepted_by_send_end: n,
    first_ack_seconds: 0.003,
    ack_p50_ms: 3,
    ack_p90_ms: 3,
    ack_p99_ms: 3,
    ack_max_ms: 3,
    refusal_p50_ms: null,
    refusal_p99_ms: null,
    sent_late: 0,
    ids_file: "/nonexistent",
    cpu_ms: 100,
    ...fields,
  };
  return {
    step: "s1-r100",
    rate: 100,
    report,
    startMs: T0,
    stepEndMs: T0 + 10_000,
    graceEndMs: T0 + 12_000,
    windowS: 13,
    counters: {
      fsyncs: 500,
      walAppends: 900,
      datagramsOut: 4_000,
      datagramsIn: 4_000,
      ackOnlyOut: 1_500,
      retransmits: 0,
      dropsInjected: 0,
      timersFired: 1_000,
    },
    cpuMs: { generator: 100, sink: 50, n1: 200, n2: 200, n3: 200, n4: 200, n5: 50 },
    nodeWakeups: 7_000,
    nodeThreadCpuMs: { main: 4_000, v8Workers: 1_000, other: 500 },
    undrained: 0,
    drainS: 1,
    silent: [],
    ids,
    memory: { rss_mb: 90.5, heap_used_mb: 31.2, external_mb: 4.1 },
    sinkClock: { offsetMs: 0, roundTripMs: 0.2 },
    generatorClock: { offsetMs: 0, roundTripMs: 0.3 },
  };
}

Deno.test("sweepRow: completed within the grace, lost, duplicates, latency from the scheduled time, costs per job", () => {
  const s = record(1000);
  const receipts: Array<SinkReceipt | null> = s.ids.map(([, scheduledMs], i) =>
    i === 7 ? null : {
      // Job i arrives 5 + i/100 ms after its scheduled time; job 9 only in the drain.
      at: i === 9 ? T0 + 20_000 : scheduledMs + 5 + i / 100,
      duplicates: i % 250 === 0 ? 2 : 0,
    }
  );
  const row = sweepRow(OPTIONS, VARIANT, s, receipts, 0);
  assertEquals([row.accepted, row.completed, row.lost, row.duplicates], [1000, 998, 1, 8]);
  assertEquals(row.max_ms, 20_000 - 90);
  // The median job (about number 500) arrived 5 + 5 ms after its scheduled time.
  assert(row.p50_ms !== null && row.p50_ms > 9.9 && row.p50_ms < 10.1, `p50 ${row.p50_ms}`);
  assertEquals([row.fsyncs_per_job, row.datagrams_per_job, row.cpu_ms_per_job], [0.5, 4, 1]);
  assertEquals(row.ack_only_datagrams_per_job, 1.5);
  assertEquals([row.node_rss_mb, row.node_heap_used_mb, row.node_external_mb], [90.5, 31.2, 4.1]);
  assertEquals(row.wakeups_per_job, 7);
  // 4, 1 and 0.5 s of the nodes' threads over the 13-s window.
  assertEquals(row.node_cpu_cores_by_thread, { main: 0.308, v8_workers: 0.077, other: 0.038 });
  assertEquals(row.goodput_per_s, 99.8);
  assert(row.note.includes("1 accepted jobs never reached the sink"), row.note);
});

Deno.test("sweepRow: latencies join the generator's and the sink's clocks through their measured offsets", () => {
  // Every job takes 3 ms. The generator's clock runs 2 ms behind the sweep's and the sink's
  // 5 ms behind: read raw, each job took -4 ms, and p50, p90 and p99 all came out as 0 (the
  // short sweeps of sessions 39 and 40 on this VM).
  const generatorOffsetMs = -2;
  const sinkOffsetMs = -5;
  const s: StepRecord = {
    ...record(1000),
    sinkClock: { offsetMs: sinkOffsetMs, roundTripMs: 0.2 },
    generatorClock: { offsetMs: generatorOffsetMs, roundTripMs: 0.3 },
  };
  s.ids = s.ids.map((
    [id, scheduled, acked, sent, target],
  ) => [
    id,
    scheduled + generatorOffsetMs,
    acked + generatorOffsetMs,
    sent + generatorOffsetMs,
    target,
  ]);
  // The sink's receipts, on its own clock; then moved onto the sweep's as the harness does.
  const raw = record(1000).ids.map(([, scheduledMs]) => ({
    at: scheduledMs + 3 + sinkOffsetMs,
    duplicates: 0,
  }));
  const row = sweepRow(OPTIONS, VARIANT, s, onSweepClock([s], raw), 0);
  assertEquals([row.p50_ms, row.p99_ms, row.max_ms], [3, 3, 3]);
  assertEquals([row.sink_clock_offset_ms, row.generator_clock_offset_ms], [-5, -2]);
  assertEquals(row.completed, 1000);
  assert(row.note.includes("the sink's clock was -5 ms off the sweep's (corrected)"), row.note);
  assert(row.note.includes("the generator's clock was -2 ms off"), row.note);
  // Read raw, as before: every latency clamped to 0.
  const rawRow = sweepRow(
    OPTIONS,
    VARIANT,
    { ...s, generatorClock: { offsetMs: 0, roundTripMs: 0 } },
    raw,
    0,
  );
  assertEquals(rawRow.p99_ms, 0);
});

Deno.test("onSweepClock moves each step's receipts by that step's sink offset, and keeps the missing", () => {
  const a = { ids: record(2).ids, sinkClock: { offsetMs: 4, roundTripMs: 0.1 } };
  const b = { ids: record(1).ids, sinkClock: { offsetMs: -1, roundTripMs: 0.1 } };
  const moved = onSweepClock([a, b], [{ at: 100, duplicates: 1 }, null, {
    at: 200,
    duplicates: 0,
  }]);
  assertEquals(moved, [{ at: 96, duplicates: 1 }, null, { at: 201, duplicates: 0 }]);
});

Deno.test("sweepRow: a step that completed nothing within the step and the grace has no latency", () => {
  const s = record(100);
  // Everything arrived, but only in the drain, 25 s after the step began.
  const receipts = s.ids.map(() => ({ at: T0 + 25_000, duplicates: 0 }));
  const row = sweepRow(OPTIONS, VARIANT, s, receipts, 0);
  assertEquals([row.completed, row.lost], [0, 0]);
  assertEquals([row.p50_ms, row.p90_ms, row.p99_ms, row.max_ms], [null, null, null, null]);
  assert(row.note.includes("nothing completed"), row.note);
});

Deno.test("sweepRow: a generator that sent everything, but late, did not offer the rate, and the row says so", () => {
  // All 1,000 sent, but over 15 s of a 10 s step: 67 jobs/s were offered, not 100.
  const s = record(1000, { send_seconds: 15 });
  const receipts = s.ids.map(([, scheduledMs]) => ({ at: scheduledMs + 5, duplicates: 0 }));
  const row = sweepRow(OPTIONS, VARIANT, s, receipts, 0);
  assertEquals(row.offered, row.asked);
  assertEquals(row.offered_per_s, 66.7);
  assert(row.note.includes("sent over 15 s"), row.note);
  // On time: no note, and the rate it was asked for.
  const onTime = sweepRow(OPTIONS, VARIANT, record(1000), receipts, 0);
  assertEquals([onTime.offered_per_s, onTime.note], [100, ""]);
});

Deno.test("sweepRow: the WALs' filesystem is in every row, and a memory one is in its note", () => {
  const s = record(1000);
  const receipts = s.ids.map(([, scheduledMs]) => ({ at: scheduledMs + 5, duplicates: 0 }));
  const onDisk = sweepRow({ ...OPTIONS, walFs: "ext4" }, VARIANT, s, receipts, 0);
  assertEquals([onDisk.wal_fs, onDisk.note], ["ext4", ""]);
  const warning = walFilesystem({
    known: true,
    path: "/mnt/x/hookd-sweep-1",
    via: "findmnt",
    fsType: "tmpfs",
    mountPoint: "/mnt/x",
    source: "tmpfs",
  }).warning;
  assert(warning !== undefined);
  const inMemory = sweepRow(
    { ...OPTIONS, walFs: "tmpfs", walFsWarning: warning },
    VARIANT,
    s,
    receipts,
    0,
  );
  assertEquals(inMemory.wal_fs, "tmpfs");
  assert(inMemory.note.includes("fsync is free"), inMemory.note);
  assertEquals(sweepRow(OPTIONS, VARIANT, s, receipts, 0).wal_fs, "unknown");
});

Deno.test("sweepRow --fanout: events offered and accepted, jobs made, delivered, lost and duplicated, latency per job", () => {
  const fanout = 3;
  // 100 events accepted; the 202s said 299 jobs (one node missed an endpoint for one event).
  const s = record(100, { asked: 100, offered: 100, jobs_made: 299 });
  const receipts: Array<SinkReceipt | null> = s.ids.flatMap(([, scheduledMs], i) =>
    Array.from({ length: fanout }, (_, k) => {
      // Event 4's third endpoint never got its job; event 5's second got it twice.
      if (i === 4 && k === 2) return null;
      return { at: scheduledMs + 10 * (k + 1), duplicates: i === 5 && k === 1 ? 1 : 0 };
    })
  );
  const row = sweepRow({ ...OPTIONS, fanout }, VARIANT, s, receipts, 0);
  assertEquals([row.submits, row.fanout], ["events", 3]);
  assertEquals([row.offered, row.accepted, row.jobs_made], [100, 100, 299]);
  // Jobs: every endpoint's delivery counts, a delivery to another endpoint is no duplicate.
  assertEquals([row.completed, row.lost, row.duplicates], [299, 1, 1]);
  // Each job from its event's scheduled submit: 10, 20 and 30 ms, a third of the jobs each.
  assert(row.p50_ms !== null && row.p50_ms > 19.9 && row.p50_ms < 20.1, `p50 ${row.p50_ms}`);
  assertEquals(row.max_ms, 30);
  // Costs per job made: 500 fsyncs over 299 jobs.
  assertEquals(row.fsyncs_per_job, 1.672);
  assertEquals(row.goodput_per_s, 29.9);
  assert(row.note.includes("1 jobs of accepted events never reached the sink"), row.note);
  assert(row.note.includes("100 events made 299 jobs, not 300"), row.note);
  // The receipts of an earlier step count fanout per submit in the backlog.
  const windows = [{ from: T0, to: T0 + 12_000 }, { from: T0, to: T0 + 12_000 }];
  assertEquals(backlogIn([s, s], [...receipts, ...receipts], 1, windows, fanout), 299);
});

Deno.test("sweepRow without --fanout: plain jobs, one receipt each, as before", () => {
  const s = record(10);
  const receipts = s.ids.map(([, scheduledMs]) => ({ at: scheduledMs + 5, duplicates: 0 }));
  const row = sweepRow(OPTIONS, VARIANT, s, receipts, 0);
  assertEquals([row.submits, row.fanout, row.jobs_made, row.completed], ["jobs", 1, 10, 10]);
});

Deno.test("waitForReceipts waits for these very ids, not for as many receipts as there are ids", async () => {
  const runtime = new VirtualRuntime();
  const t0 = runtime.nowMs();
  // "b" arrives 700 ms in; an id nobody waits for ("x", a submit that timed out at the
  // generator but was delivered) arrives at once and must not stand in for it.
  const arrivals = new Map([["a", t0], ["x", t0], ["b", t0 + 700], ["c", t0 + 5_000]]);
  const asked: string[][] = [];
  const receipts = (ids: readonly string[]) => {
    asked.push([...ids]);
    return Promise.resolve(ids.map((id) => {
      const at = arrivals.get(id);
      return at !== undefined && at <= runtime.nowMs() ? { at, duplicates: 0 } : null;
    }));
  };
  const missing = await runtime.run(
    waitForReceipts(["a", "b"], receipts, { deadlineMs: t0 + 3_000, pollMs: 100, runtime }),
  );
  assertEquals(missing, []);
  assert(runtime.nowMs() >= t0 + 700, `returned at +${runtime.nowMs() - t0} ms`);
  // Once received, an id is not asked about again.
  assertEquals(asked.at(-1), ["b"]);
  // Bounded: what has not come by the deadline is returned as missing.
  const late = await runtime.run(
    waitForReceipts(["a", "c"], receipts, {
      deadlineMs: runtime.nowMs() + 1_000,
      pollMs: 100,
      runtime,
    }),
  );
  assertEquals(late, ["c"]);
});
