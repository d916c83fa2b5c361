/**
 * The sweeps: a short real run of each kind (nodes, sink and generator as processes) checks
 * the rows' shape and that nothing accepted is lost; the report's rules (knee, CSV, charts)
 * are checked on rows made by hand.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import type { SweepRow } from "../../src/bench/sweep_row.ts";
import { knee, sweepCharts, sweepCsv, sweepMarkdown } from "../../src/bench/sweep_report.ts";
import { sweepOptionsFromFlags } from "../../src/bench/sweep.ts";
import { UsageError } from "../../src/process/args.ts";

const ROW_KEYS = [
  "rate",
  "loss",
  "submit_via",
  "offered",
  "accepted",
  "rejected",
  "errors",
  "completed",
  "lost",
  "duplicates",
  "p50_ms",
  "p90_ms",
  "p99_ms",
  "max_ms",
  "fsyncs_per_job",
  "datagrams_per_job",
  "cpu_ms_per_job",
  "wal_fs",
  "note",
];

async function sweep(args: string[]): Promise<SweepRow[]> {
  // Correctness, not figures: runs where /tmp is a tmpfs too (the rows then say so).
  const output = await hookdCommand(["bench", ...args, "--json", "--allow-tmpfs"]).output();
  const stderr = new TextDecoder().decode(output.stderr);
  const last = new TextDecoder().decode(output.stdout).trim().split("\n").pop()!;
  assertEquals(output.code, 0, `${stderr}\n${last}`);
  assert(stderr.includes("offered"), "progress lines on stderr");
  return JSON.parse(last) as SweepRow[];
}

function checkRow(row: SweepRow): void {
  for (const key of ROW_KEYS) assert(key in row, `row has ${key}`);
  assertEquals(row.lost, 0, JSON.stringify(row));
  assertEquals(row.offered, row.asked, JSON.stringify(row));
  assertEquals(row.accepted + row.rejected + row.errors, row.offered);
  assertEquals(row.jobs_made, row.accepted * row.fanout, JSON.stringify(row));
  assert(row.completed <= row.jobs_made);
  assertEquals(row.duplicates, 0, JSON.stringify(row));
  for (const key of ["p50_ms", "p99_ms", "max_ms"] as const) {
    assert(row[key] === null || row[key]! >= 0, `${key}: ${row[key]}`);
  }
}

Deno.test("hookd bench --rates runs one step per rate over HTTP and loses nothing", async () => {
  const rows = await sweep([
    "--rates",
    "50,100",
    "--duration",
    "1",
    "--drain-limit",
    "20",
    "--warmup",
    "1",
    "--warmup-rate",
    "40",
  ]);
  assertEquals(rows.map((r) => r.rate), [50, 100]);
  for (const row of rows) {
    checkRow(row);
    assertEquals(row.warmup_s, 1, "the warm-up before the first step is in every row");
    assertEquals(row.warmup_rate, 40, "and its rate");
    assertEquals([row.submits, row.fanout], ["jobs", 1], "without --fanout: plain jobs");
    assertEquals(row.submit_via, "http");
    assertEquals(row.loss, 0);
    assert(row.completed > 0 && row.p99_ms !== null);
  }
});

Deno.test("hookd bench --rates --skeleton runs the same steps against the skeleton cluster", async () => {
  const rows = await sweep(["--rates", "50", "--duration", "1", "--warmup", "0", "--skeleton"]);
  assertEquals(rows.length, 1);
  const row = rows[0]!;
  checkRow(row);
  assertEquals(row.nodes_kind, "skeleton");
  assert(row.completed > 0 && row.p99_ms !== null, JSON.stringify(row));
  // The rows read the skeleton's counters under hookd's names: every node fsyncs a job.
  assert(row.fsyncs_per_job !== null && row.fsyncs_per_job > 0, JSON.stringify(row));
  assert(row.datagrams_per_job !== null && row.datagrams_per_job > 0, JSON.stringify(row));
});

Deno.test("--skeleton takes HTTP submits of jobs at loss 0 in one WAL mode only", () => {
  const nodesKind = sweepOptionsFromFlags({ rates: "20", skeleton: true }).skeleton;
  assertEquals(nodesKind, true);
  assert(!("skeleton" in sweepOptionsFromFlags({ rates: "20" })), "hookd's nodes by default");
  assertEquals(sweepOptionsFromFlags({ loss: "0", skeleton: true }).losses, [0]);
  for (
    const bad of [
      { rates: "20", "submit-via": "udp" },
      { rates: "20", fanout: "2" },
      { rates: "20", "compare-unbatched": true },
      { loss: "0,0.1" },
    ]
  ) {
    let threw = false;
    try {
      sweepOptionsFromFlags({ ...bad, skeleton: true });
    } catch (error) {
      threw = error instanceof UsageError;
    }
    assert(threw, `--skeleton with ${JSON.stringify(bad)} is refused`);
  }
});

Deno.test("hookd bench --loss runs a cluster per loss, over UDP submits too, and loses nothing", async () => {
  const rows = await sweep([
    "--loss",
    "0.1",
    "--rate",
    "50",
    "--duration",
    "1",
    "--submit-via",
    "udp",
    "--drain-limit",
    "20",
    "--warmup",
    "0",
  ]);
  assertEquals(rows.length, 1);
  assertEquals(rows[0]!.warmup_s, 0);
  checkRow(rows[0]!);
  assertEquals(rows[0]!.submit_via, "udp");
  assertEquals(rows[0]!.loss, 0.1);
});

Deno.test("hookd bench --rates --fanout 3 sends events to three endpoints and counts every job once", async () => {
  const rows = await sweep([
    "--rates",
    "20",
    "--duration",
    "1",
    "--fanout",
    "3",
    "--drain-limit",
    "20",
    "--warmup",
    "0",
  ]);
  assertEquals(rows.length, 1);
  const r = rows[0]!;
  checkRow(r);
  assertEquals([r.submits, r.fanout, r.rate], ["events", 3, 20]);
  // Every event reached all three endpoints once: K receipts each, none a duplicate.
  assert(r.accepted > 0 && r.completed > 0, JSON.stringify(r));
  assert(r.p99_ms !== null && r.p99_ms >= 0, JSON.stringify(r));
});

Deno.test("--fanout is an integer in [1, 100], over HTTP submits only; absent, the sweep sends jobs", () => {
  const base = { rates: "20" };
  assertEquals(sweepOptionsFromFlags({ ...base, fanout: "4" }).fanout, 4);
  assert(!("fanout" in sweepOptionsFromFlags(base)), "no --fanout: plain jobs");
  for (const bad of ["0", "101", "2.5", "x"]) {
    let threw = false;
    try {
      sweepOptionsFromFlags({ ...base, fanout: bad });
    } catch (error) {
      threw = error instanceof UsageError;
    }
    assert(threw, `--fanout ${bad} is refused`);
  }
  let udp = false;
  try {
    sweepOptionsFromFlags({ ...base, fanout: "2", "submit-via": "udp" });
  } catch (error) {
    udp = error instanceof UsageError;
  }
  assert(udp, "--fanout with --submit-via udp is refused");
});

function row(rate: number, fields: Partial<SweepRow> = {}): SweepRow {
  const n = rate * 20;
  return {
    sweep: "rate",
    rate,
    loss: 0,
    submit_via: "http",
    nodes_kind: "hookd",
    wal_sync: "batched",
    duration_s: 20,
    warmup_s: 5,
    warmup_rate: 100,
    submits: "jobs",
    fanout: 1,
    asked: n,
    offered: n,
    offered_per_s: rate,
    send_s: 20,
    accepted: n,
    jobs_made: n,
    rejected: 0,
    errors: 0,
    refusals: {},
    completed: n,
    lost: 0,
    duplicates: 0,
    p50_ms: 3,
    p90_ms: 5,
    p99_ms: 8,
    max_ms: 12,
    sink_clock_offset_ms: 0,
    generator_clock_offset_ms: 0,
    fsyncs_per_job: 0.5,
    datagrams_per_job: 3,
    ack_only_datagrams_per_job: 1,
    timer_wakeups_per_job: 2,
    wakeups_per_job: 9,
    cpu_ms_per_job: 0.3,
    goodput_per_s: rate,
    ack_p99_ms: 4,
    refusal_p99_ms: null,
    cpu_cores: { n1: 0.2 },
    node_cpu_cores_by_thread: null,
    node_rss_mb: null,
    node_heap_used_mb: null,
    node_external_mb: null,
    wal_fs: "ext4",
    note: "",
    ...fields,
  };
}

Deno.test("knee is the highest rate that offered, accepted and completed all, lost 0, p99 within 2x", () => {
  assertEquals(
    knee([row(200), row(400), row(800, { p99_ms: 16 }), row(1600, { p99_ms: 17 })]).rate,
    800,
  );
  // Any one condition broken disqualifies a step.
  assertEquals(knee([row(200), row(400, { completed: 7999 })]).rate, 200);
  assertEquals(
    knee([row(200), row(400, { offered: 7000, accepted: 7000, completed: 7000 })]).rate,
    200,
  );
  assertEquals(knee([row(200), row(400, { accepted: 7999, rejected: 1 })]).rate, 200);
  assertEquals(knee([row(200), row(400, { lost: 1 })]).rate, 200);
  assertEquals(knee([row(200), row(400, { p99_ms: null, p50_ms: null })]).rate, 200);
  assertEquals(knee([row(200, { lost: 2 }), row(400)]).rate, 400);
  // Everything sent, but late: the rate was not offered.
  assertEquals(knee([row(200), row(400, { offered_per_s: 380, send_s: 21 })]).rate, 200);
});

Deno.test("the markdown names the knee's baseline rate and any slower step that was not clean", () => {
  // Run out of order: the baseline is still the lowest rate's p99.
  const md = sweepMarkdown([row(400), row(200, { p99_ms: 10 }), row(800, { p99_ms: 19 })]);
  assert(md.includes("Knee: **800 jobs/s**"), md);
  assert(md.includes("the 200 jobs/s p99 of 10 ms"), md);
  // A clean step above one that was not: the knee by the rule, and the exception said.
  const gap = sweepMarkdown([row(200), row(400, { lost: 1 }), row(800)]);
  assert(gap.includes("Knee: **800 jobs/s**"), gap);
  assert(gap.includes("400 jobs/s, below it, was not clean"), gap);
});

Deno.test("the CSV has one line per row and leaves missing latencies empty, never a sentinel", async () => {
  const rows = [
    row(200),
    row(400, { p50_ms: null, p90_ms: null, p99_ms: null, max_ms: null, completed: 0 }),
  ];
  const csv = (await sweepCsv(rows)).trim().split("\n");
  assertEquals(csv.length, 3);
  const header = csv[0]!.split(",");
  const p99 = header.indexOf("p99_ms");
  assert(p99 > 0);
  assertEquals(csv[2]!.split(",")[p99], "");
  const md = sweepMarkdown(rows);
  assert(md.includes("Knee: **200 jobs/s**"), md);
  const svg = sweepCharts(rows).get("rate_latency.svg")!;
  assert(svg.includes("n/a"), "a step with no completions is marked, not drawn");
  // Points only for the step that has latencies: p50, p90 and p99 of 200 jobs/s.
  assertEquals(svg.match(/<circle /g)?.length, 3, svg);
  assert(sweepCharts(rows).has("rate_goodput.svg"));
});

Deno.test("--fanout rows: the knee wants every job of every event, the reports say events/s and jobs", async () => {
  const ev = (rate: number, fields: Partial<SweepRow> = {}) =>
    row(rate, {
      submits: "events",
      fanout: 3,
      jobs_made: rate * 20 * 3,
      completed: rate * 20 * 3,
      ...fields,
    });
  assertEquals(knee([ev(100), ev(200)]).rate, 200);
  // Completed as many as the events accepted: two thirds of the jobs missing.
  assertEquals(knee([ev(100), ev(200, { completed: 4000 })]).rate, 100);
  const md = sweepMarkdown([ev(100), ev(200)]);
  assert(md.includes("## http submits of events to 3 endpoints"), md);
  assert(md.includes("Knee: **200 events/s**"), md);
  assert(md.includes("count events; jobs, completed"), md);
  const csv = (await sweepCsv([ev(100)])).trim().split("\n");
  const header = csv[0]!.split(",");
  const line = csv[1]!.split(",");
  for (const [column, value] of [["submits", "events"], ["fanout", "3"], ["jobs_made", "6000"]]) {
    assertEquals(line[header.indexOf(column!)], value, column);
  }
  assert(sweepCharts([ev(100)]).get("rate_latency.svg")!.includes("offered events/s"));
});
