/**
 * The sweeps: a short real run of each kind (nodes, sink and generator as processes) checks
 * the rows' shape and that nothing accepted is lost; the report's rules (knee, CSV, charts)
 * are checked on rows made by hand.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import type { SweepRow } from "../../src/bench/sweep_row.ts";
import { knee, sweepCharts, sweepCsv, sweepMarkdown } from "../../src/bench/sweep_report.ts";

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
  "note",
];

async function sweep(args: string[]): Promise<SweepRow[]> {
  const output = await hookdCommand(["bench", ...args, "--json"]).output();
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
  assert(row.completed <= row.accepted);
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
  ]);
  assertEquals(rows.map((r) => r.rate), [50, 100]);
  for (const row of rows) {
    checkRow(row);
    assertEquals(row.warmup_s, 1, "the warm-up before the first step is in every row");
    assertEquals(row.submit_via, "http");
    assertEquals(row.loss, 0);
    assert(row.completed > 0 && row.p99_ms !== null);
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

function row(rate: number, fields: Partial<SweepRow> = {}): SweepRow {
  const n = rate * 20;
  return {
    sweep: "rate",
    rate,
    loss: 0,
    submit_via: "http",
    wal_sync: "batched",
    duration_s: 20,
    warmup_s: 5,
    asked: n,
    offered: n,
    offered_per_s: rate,
    send_s: 20,
    accepted: n,
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
    fsyncs_per_job: 0.5,
    datagrams_per_job: 3,
    timer_wakeups_per_job: 2,
    wakeups_per_job: 9,
    cpu_ms_per_job: 0.3,
    goodput_per_s: rate,
    ack_p99_ms: 4,
    cpu_cores: { n1: 0.2 },
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
