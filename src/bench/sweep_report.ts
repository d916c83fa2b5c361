/**
 * The sweep's reports: one CSV row per step (csv-stringify), a markdown table with the run's
 * machine and command, the knee of each rate-sweep variant, and the SVG charts (latency
 * percentiles and goodput against offered rate; percentiles against loss).
 *
 * Owns file names and layouts, and the knee rule (issue 10's): the highest offered rate at
 * which the generator offered what it was asked (its submits, at the rate), every offered job
 * was accepted and completed within its step (plus the grace), nothing was lost, and p99
 * stayed within 2× the p99 of the lowest rate. A slower step that was not clean does not move
 * the knee, but the table says so beside it. With `--fanout K` (events) the rates are events/s
 * and "completed" means every job of every accepted event (K each). It reads rows; it never
 * measures.
 */

import { stringify } from "csv-stringify";
import { lineChart, PALETTE, type Series } from "./sweep_charts.ts";
import { OFFERED_SHARE_MIN, type SweepRow } from "./sweep_row.ts";

export interface RunMeta {
  readonly command: string;
  readonly started: string;
  readonly finished: string;
  readonly machine: Record<string, string | number>;
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
}

const CSV_COLUMNS: ReadonlyArray<keyof SweepRow> = [
  "sweep",
  "rate",
  "loss",
  "submit_via",
  "nodes_kind",
  "wal_sync",
  "duration_s",
  "submits",
  "fanout",
  "asked",
  "offered",
  "offered_per_s",
  "send_s",
  "accepted",
  "jobs_made",
  "rejected",
  "errors",
  "refusals",
  "completed",
  "lost",
  "duplicates",
  "p50_ms",
  "p90_ms",
  "p99_ms",
  "max_ms",
  "fsyncs_per_job",
  "datagrams_per_job",
  "timer_wakeups_per_job",
  "wakeups_per_job",
  "cpu_ms_per_job",
  "goodput_per_s",
  "ack_p99_ms",
  "refusal_p99_ms",
  "cpu_cores",
  "node_rss_mb",
  "node_heap_used_mb",
  "node_external_mb",
  "wal_fs",
  "note",
];

/** The CSV text: a header, then one line per row (`cpu_cores` as JSON, nulls empty). */
export function sweepCsv(rows: readonly SweepRow[]): Promise<string> {
  const records = rows.map((r) =>
    CSV_COLUMNS.map((c) => {
      const v = r[c];
      return c === "cpu_cores" || c === "refusals" ? JSON.stringify(v) : v;
    })
  );
  return new Promise((resolve, reject) => {
    stringify(records, { header: true, columns: CSV_COLUMNS as string[] }, (error, output) => {
      if (error) reject(error);
      else resolve(output);
    });
  });
}

/** What a row's rate counts: "jobs/s", or "events/s" for a `--fanout` row. */
export function rateUnit(row: Pick<SweepRow, "submits">): string {
  return row.submits === "events" ? "events/s" : "jobs/s";
}

/** Rows grouped by variant (submit path and WAL mode), in the order they ran. */
export function variants(rows: readonly SweepRow[]): Map<string, SweepRow[]> {
  const out = new Map<string, SweepRow[]>();
  const oneWal = new Set(rows.map((r) => r.wal_sync)).size === 1;
  for (const r of rows) {
    const what = (r.submits === "events" ? ` of events to ${r.fanout} endpoints` : "") +
      (r.nodes_kind === "skeleton" ? " to the skeleton cluster" : "");
    const key = oneWal
      ? `${r.submit_via} submits${what}`
      : `${r.submit_via}${what}, WAL ${r.wal_sync}`;
    let list = out.get(key);
    if (list === undefined) out.set(key, list = []);
    list.push(r);
  }
  return out;
}

/** Whether a rate-sweep step meets the knee's conditions against `baselineP99Ms`. */
export function cleanStep(row: SweepRow, baselineP99Ms: number | null): boolean {
  return row.offered >= row.asked * OFFERED_SHARE_MIN &&
    row.offered_per_s >= row.rate * OFFERED_SHARE_MIN && row.accepted === row.offered &&
    row.completed === row.accepted * row.fanout && row.lost === 0 && row.p99_ms !== null &&
    baselineP99Ms !== null && row.p99_ms <= 2 * baselineP99Ms;
}

/**
 * The knee of one variant's rate sweep (null when no step is clean), the rate its p99 baseline
 * comes from, and the slower rates that were not clean (a knee above them is the rule's
 * answer, but not a rate the cluster can be trusted with without reading them).
 */
export function knee(
  rows: readonly SweepRow[],
): {
  rate: number | null;
  baselineP99Ms: number | null;
  baselineRate: number | null;
  uncleanBelow: number[];
} {
  const sorted = [...rows].sort((a, b) => a.rate - b.rate);
  const baseline = sorted[0]?.p99_ms ?? null;
  let rate: number | null = null;
  for (const r of sorted) if (cleanStep(r, baseline)) rate = r.rate;
  const uncleanBelow = rate === null
    ? []
    : sorted.filter((r) => r.rate < rate! && !cleanStep(r, baseline)).map((r) => r.rate);
  return { rate, baselineP99Ms: baseline, baselineRate: sorted[0]?.rate ?? null, uncleanBelow };
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return "—";
  return String(v).replace(/\|/g, "\\|");
}

/** The markdown table of every row, variant by variant, with the knee of each rate sweep. */
export function sweepMarkdown(rows: readonly SweepRow[], meta?: RunMeta): string {
  const lines: string[] = [];
  const sweep = rows[0]?.sweep ?? "rate";
  lines.push(`# ${sweep === "rate" ? "Rate" : "Loss"} sweep`, "");
  if (meta !== undefined) {
    lines.push(
      `Command: \`${meta.command}\`  `,
      `Ran ${meta.started} → ${meta.finished} on ${meta.machine.cpu} (${meta.machine.cores} cores, ` +
        `${meta.machine.memory_gib} GiB, ${meta.machine.os}, Deno ${meta.machine.deno}); load ` +
        `average (1/5/15 min) ${meta.loadBefore.join("/")} before, ${
          meta.loadAfter.join("/")
        } after.`,
      "",
    );
  }
  for (const [name, list] of variants(rows)) {
    lines.push(`## ${name}`, "");
    const events = list[0]?.submits === "events";
    const unit = rateUnit(list[0] ?? { submits: "jobs" });
    if (events) {
      lines.push(
        `Each event goes to ${list[0]!.fanout} endpoints: rate, offered, accepted, rejected ` +
          `and errors count events; jobs, completed, lost, dup, the latencies (from the ` +
          `event's submit to each job's receipt) and the costs count jobs.`,
        "",
      );
    }
    if (sweep === "rate") {
      const k = knee(list);
      const below = k.uncleanBelow.length === 0
        ? ""
        : ` Beware: ${k.uncleanBelow.map((r) => `${r} ${unit}`).join(", ")}, below it, ${
          k.uncleanBelow.length === 1 ? "was" : "were"
        } not clean.`;
      const offered = events ? "every offered event accepted and each of its jobs" : "every " +
        "offered job accepted and";
      lines.push(
        k.rate === null
          ? `Knee: none — no rate met every condition.`
          : `Knee: **${k.rate} ${unit}** (the rate offered in full, ${offered} ` +
            `completed in its step, lost 0, p99 within 2× the ${k.baselineRate} ${unit} ` +
            `p99 of ${k.baselineP99Ms} ms).${below}`,
        "",
      );
    }
    lines.push(
      "| rate | loss | offered | accepted | jobs | rejected | errors | completed | lost | dup | p50 ms | p90 ms | p99 ms | max ms | fsyncs/job | datagrams/job | cpu ms/job | note |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    );
    for (const r of list) {
      lines.push(
        `| ${r.rate} | ${r.loss} | ${r.offered}/${r.asked} | ${r.accepted} | ${r.jobs_made} | ` +
          `${r.rejected} | ` +
          `${r.errors} | ${r.completed} | ${r.lost} | ${r.duplicates} | ${cell(r.p50_ms)} | ` +
          `${cell(r.p90_ms)} | ${cell(r.p99_ms)} | ${cell(r.max_ms)} | ${
            cell(r.fsyncs_per_job)
          } | ` +
          `${cell(r.datagrams_per_job)} | ${cell(r.cpu_ms_per_job)} | ${cell(r.note)} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** The charts of one sweep: file name → SVG. */
export function sweepCharts(rows: readonly SweepRow[]): Map<string, string> {
  const out = new Map<string, string>();
  const groups = [...variants(rows)];
  if (rows.length === 0) return out;
  const sweep = rows[0]!.sweep;
  const xOf = (r: SweepRow) => sweep === "rate" ? r.rate : r.loss;
  const xs = [...new Set(rows.map(xOf))].sort((a, b) => a - b);
  const unit = rateUnit(rows[0]!);
  const at = (list: SweepRow[], pick: (r: SweepRow) => number | null) =>
    xs.map((x) => {
      const r = list.find((row) => xOf(row) === x);
      return r === undefined ? null : pick(r);
    });
  const latency: Series[] = [];
  groups.forEach(([name, list], g) => {
    const dashed = g > 0;
    const names = groups.length > 1 ? ` (${name})` : "";
    latency.push(
      { name: `p50${names}`, values: at(list, (r) => r.p50_ms), color: PALETTE[0]!, dashed },
      { name: `p90${names}`, values: at(list, (r) => r.p90_ms), color: PALETTE[2]!, dashed },
      { name: `p99${names}`, values: at(list, (r) => r.p99_ms), color: PALETTE[1]!, dashed },
    );
  });
  if (sweep === "rate") {
    out.set(
      "rate_latency.svg",
      lineChart({
        title: "Submit → receipt latency against offered rate",
        xLabel: `offered ${unit} (asked)`,
        yLabel: "latency, ms",
        xs,
        xLog: true,
        yLog: true,
        series: latency,
      }),
    );
    const goodput: Series[] = [];
    groups.forEach(([name, list], g) => {
      goodput.push({
        name: groups.length > 1 ? `done/s (${name})` : "completed/s",
        values: at(list, (r) => r.goodput_per_s),
        color: PALETTE[(g + 2) % PALETTE.length]!,
        dashed: g > 0,
      });
    });
    // In jobs/s, as goodput is: an event asked or sent is `fanout` jobs.
    const fanout = rows[0]!.fanout;
    goodput.unshift({ name: "asked", values: xs.map((x) => x * fanout), color: "#bbb" });
    groups.forEach(([name, list], g) => {
      goodput.splice(1 + g, 0, {
        name: groups.length > 1 ? `sent/s (${name})` : "sent/s (really offered)",
        values: at(list, (r) => r.offered_per_s * r.fanout),
        color: "#777",
        dashed: g > 0,
      });
    });
    out.set(
      "rate_goodput.svg",
      lineChart({
        title: "Goodput against offered rate",
        xLabel: `offered ${unit} (asked)`,
        yLabel: "jobs/s (done: completed within the step)",
        xs,
        xLog: true,
        series: goodput,
      }),
    );
  } else {
    out.set(
      "loss_latency.svg",
      lineChart({
        title: `Submit → receipt latency against ingress loss (${rows[0]!.rate} ${unit})`,
        xLabel: "ingress loss on every node",
        yLabel: "latency, ms",
        xs,
        xFormat: (x) => `${Math.round(x * 100)} %`,
        yLog: true,
        series: latency,
      }),
    );
  }
  return out;
}

/** Writes `<sweep>_sweep.csv`, `.md`, `.json` and the charts under `dir`; returns the paths. */
export async function writeSweepReports(
  dir: string,
  rows: readonly SweepRow[],
  meta: RunMeta,
): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const sweep = rows[0]?.sweep ?? "rate";
  const written: string[] = [];
  const write = async (name: string, text: string) => {
    const path = `${dir}/${name}`;
    await Deno.writeTextFile(path, text);
    written.push(path);
  };
  await write(`${sweep}_sweep.csv`, await sweepCsv(rows));
  await write(`${sweep}_sweep.md`, sweepMarkdown(rows, meta) + "\n");
  await write(`${sweep}_sweep.json`, JSON.stringify({ meta, rows }, null, 2) + "\n");
  for (const [name, svg] of sweepCharts(rows)) await write(name, svg);
  return written;
}
