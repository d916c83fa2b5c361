/**
 * Text for people: aligned tables, a job in detail, one-line summaries of attempts and of a
 * finished job. `hookd submit` and `hookd status` print through it; `--json` bypasses it.
 *
 * Owns layout only: pure functions from data to strings (the time to measure against is an
 * argument), no I/O. Every text from a node goes through `safe` or `oneLine`: URLs, attempt
 * details and dead reasons come from submitters and receivers, and a control character
 * (ESC, or the one-byte CSI U+009B) printed raw would drive the reader's terminal.
 */

// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x1f\x7f-\x9f]+/g;

/** `text` with each run of control characters (C0, DEL, C1) shown as one "�". */
export function safe(text: string): string {
  return text.replace(CONTROL, "\ufffd");
}

import type { AttemptJson, JobJson } from "./job_follow.ts";

/** Columns padded to their widest cell, two spaces apart; trailing spaces trimmed. */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const safeRows = rows.map((r) => r.map(safe));
  const widths = header.map((h, i) =>
    Math.max(h.length, ...safeRows.map((r) => (r[i] ?? "").length))
  );
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd();
  return [line(header.map(safe)), ...safeRows.map(line)].join("\n");
}

/** Epoch ms as ISO-8601 UTC, or "-" when unknown. */
export function formatTime(epochMs: number | undefined): string {
  if (epochMs === undefined || !Number.isFinite(epochMs)) return "-";
  return new Date(epochMs).toISOString();
}

/** A duration for people: `850 ms`, `12.3 s`, `4 min 10 s`, `2 h 5 min`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "-";
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "-" : "";
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)} s`;
  if (abs < 3_600_000) {
    return `${sign}${Math.floor(abs / 60_000)} min ${Math.round((abs % 60_000) / 1000)} s`;
  }
  return `${sign}${Math.floor(abs / 3_600_000)} h ${Math.round((abs % 3_600_000) / 60_000)} min`;
}

/** A number for a table cell: `-` when unknown, else at most `digits` decimals. */
export function formatNumber(value: number | undefined, digits = 1): string {
  if (value === undefined || !Number.isFinite(value)) return "-";
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

/** `attempt 2: http_error 500 in 12 ms (node 127.0.0.1:7101): <detail>`. */
export function describeAttempt(attempt: AttemptJson): string {
  const status = attempt.status !== undefined ? ` ${attempt.status}` : "";
  const detail = attempt.detail !== "" ? `: ${oneLine(attempt.detail, 160)}` : "";
  return `attempt ${attempt.attempt}: ${safe(attempt.outcome)}${status} in ${
    formatDuration(attempt.latencyMs)
  } (node ${safe(attempt.node)})${detail}`;
}

/** One line for a job that has not finished, e.g. `pending: attempt 1 of 7 failed; next in 5 s`. */
export function describeProgress(job: JobJson, nowWallMs: number): string {
  const next = job.nextAttemptAtMs !== undefined
    ? `; next attempt in ${formatDuration(Math.max(0, job.nextAttemptAtMs - nowWallMs))}`
    : "";
  return `${safe(job.state)}: ${job.attemptsMade} of ${
    formatNumber(job.maxAttempts)
  } attempts made${next}`;
}

/** One line for a finished job: `delivered after 1 attempt, 23 ms after submit (204 …)`. */
export function describeFinal(job: JobJson): string {
  const lastAttempt = job.attempts.at(-1);
  const attempts = `${job.attemptsMade} attempt${job.attemptsMade === 1 ? "" : "s"}`;
  const took = job.finishedAtMs !== undefined && Number.isFinite(job.submittedAtMs)
    ? `, ${formatDuration(job.finishedAtMs - job.submittedAtMs)} after submit`
    : "";
  if (job.state === "delivered") {
    const status = lastAttempt?.status !== undefined ? `${lastAttempt.status} from ` : "";
    return `delivered after ${attempts}${took} (${status}${safe(job.url)})`;
  }
  if (job.state === "dead") {
    return `dead after ${attempts}${took}: ${oneLine(job.deadReason ?? "no reason given", 300)}`;
  }
  return `${safe(job.state)} after ${attempts}`;
}

/** The job in detail: its fields, then its attempts as a table. */
export function renderJob(job: JobJson, nowWallMs: number): string {
  const fields: Array<[string, string]> = [
    ["job", job.id],
    ["state", job.state],
    ["url", job.url],
    ["owner", job.owner],
    ["submitted", formatTime(job.submittedAtMs)],
  ];
  if (job.finishedAtMs !== undefined) {
    fields.push([
      "finished",
      `${formatTime(job.finishedAtMs)} (${
        formatDuration(job.finishedAtMs - job.submittedAtMs)
      } after submit)`,
    ]);
  }
  fields.push(["attempts", `${job.attemptsMade} of ${formatNumber(job.maxAttempts)}`]);
  if (job.nextAttemptAtMs !== undefined) {
    fields.push([
      "next attempt",
      `${formatTime(job.nextAttemptAtMs)} (in ${
        formatDuration(Math.max(0, job.nextAttemptAtMs - nowWallMs))
      })`,
    ]);
  }
  if (job.deadReason !== undefined) fields.push(["dead reason", oneLine(job.deadReason, 500)]);
  if (job.idempotencyKey !== undefined) fields.push(["idempotency key", job.idempotencyKey]);
  const width = Math.max(...fields.map(([k]) => k.length));
  const lines = fields.map(([k, v]) => `${k.padEnd(width)}  ${safe(v)}`);
  lines.push("");
  if (job.attempts.length === 0) {
    lines.push("no attempts yet");
  } else {
    lines.push(renderTable(
      ["#", "STARTED (UTC)", "NODE", "OUTCOME", "STATUS", "LATENCY", "DETAIL"],
      job.attempts.map((a) => [
        String(a.attempt),
        formatTime(a.startedAtMs),
        a.node,
        a.outcome,
        a.status !== undefined ? String(a.status) : "-",
        formatDuration(a.latencyMs),
        oneLine(a.detail, 80),
      ]),
    ));
  }
  return lines.join("\n");
}

/** `text` on one line (control characters and runs of space collapsed), cut at `charsMax`. */
export function oneLine(text: string, charsMax: number): string {
  // deno-lint-ignore no-control-regex
  const flat = text.replace(/[\x00-\x1f\x7f-\x9f\s]+/g, " ").trim();
  return flat.length > charsMax ? `${flat.slice(0, charsMax - 1)}…` : flat;
}
