/**
 * Reads the Prometheus text exposition format (version 0.0.4) back into samples: what
 * `hookd status` (and any other client of a node's `GET /metrics`) scrapes.
 *
 * Owns parsing only, of text that may come from anywhere: it never throws on hostile input.
 * A line it cannot read is skipped and counted in `malformedLines`; the work is bounded by
 * `linesMax` and by the caller's bound on the text it read. It keeps no state and does no I/O.
 */

import { fail } from "../lib/assert.ts";

export type SampleLabels = Readonly<Record<string, string>>;

export interface Sample {
  /** Metric name as written, suffixes included (`hookd_api_submit_ms_count`). */
  readonly name: string;
  readonly labels: SampleLabels;
  /** NaN, +Inf and -Inf are kept as such. */
  readonly value: number;
}

export interface ParsedMetrics {
  readonly samples: readonly Sample[];
  /** Lines that were neither a comment, blank, nor a readable sample. */
  readonly malformedLines: number;
  /** Lines past `linesMax`, not looked at. */
  readonly skippedLines: number;
}

export interface ParseOptions {
  /** Most lines read; the rest count as `skippedLines`. @default 200_000 */
  linesMax?: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

export function parsePrometheusText(text: string, options: ParseOptions = {}): ParsedMetrics {
  const linesMax = options.linesMax ?? 200_000;
  if (!(Number.isInteger(linesMax) && linesMax > 0)) {
    fail(`linesMax must be positive, got ${linesMax}`);
  }
  const samples: Sample[] = [];
  let malformedLines = 0;
  let skippedLines = 0;
  let start = 0;
  let lineNo = 0;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === "" || line.startsWith("#")) continue;
    if (++lineNo > linesMax) {
      skippedLines++;
      continue;
    }
    const sample = parseSampleLine(line);
    if (sample === undefined) malformedLines++;
    else samples.push(sample);
  }
  return { samples, malformedLines, skippedLines };
}

/** `name{a="b",c="d"} value [timestamp]`, or undefined when the line is not one. */
function parseSampleLine(line: string): Sample | undefined {
  const name = NAME.exec(line)?.[0];
  if (name === undefined) return undefined;
  let rest = line.slice(name.length);
  let labels: Record<string, string> = Object.create(null);
  if (rest.startsWith("{")) {
    const parsed = parseLabels(rest);
    if (parsed === undefined) return undefined;
    labels = parsed.labels;
    rest = rest.slice(parsed.consumed);
  }
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === "") return undefined;
  const value = parseValue(fields[0]!);
  if (value === undefined) return undefined;
  return { name, labels, value };
}

/** Labels from `{` to the matching `}`; `consumed` counts the characters taken. */
function parseLabels(
  text: string,
): { labels: Record<string, string>; consumed: number } | undefined {
  // No prototype: a label named `constructor` or `__proto__` is just a label.
  const labels: Record<string, string> = Object.create(null);
  let i = 1;
  for (;;) {
    while (text[i] === " ") i++;
    if (text[i] === "}") return { labels, consumed: i + 1 };
    const key = LABEL_NAME.exec(text.slice(i, i + 256))?.[0];
    if (key === undefined) return undefined;
    i += key.length;
    if (text[i] !== "=" || text[i + 1] !== '"') return undefined;
    i += 2;
    let value = "";
    for (;;) {
      const c = text[i];
      if (c === undefined) return undefined;
      if (c === '"') break;
      if (c === "\\") {
        const next = text[i + 1];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else return undefined;
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    i++;
    labels[key] = value;
    while (text[i] === " ") i++;
    if (text[i] === ",") i++;
    else if (text[i] !== "}") return undefined;
  }
}

function parseValue(text: string): number | undefined {
  switch (text) {
    case "+Inf":
    case "Inf":
      return Infinity;
    case "-Inf":
      return -Infinity;
    case "NaN":
      return NaN;
  }
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** Whether `sample` carries every label in `wanted` with that value (others may be present). */
function matches(sample: Sample, name: string, wanted: SampleLabels): boolean {
  if (sample.name !== name) return false;
  for (const [key, value] of Object.entries(wanted)) {
    if (sample.labels[key] !== value) return false;
  }
  return true;
}

/** The first sample of `name` carrying `labels`, or undefined when there is none. */
export function sampleValue(
  parsed: ParsedMetrics,
  name: string,
  labels: SampleLabels = {},
): number | undefined {
  return parsed.samples.find((s) => matches(s, name, labels))?.value;
}

/** The sum of every sample of `name` carrying `labels`; undefined when none matches. */
export function sumSamples(
  parsed: ParsedMetrics,
  name: string,
  labels: SampleLabels = {},
): number | undefined {
  let sum: number | undefined;
  for (const s of parsed.samples) {
    if (matches(s, name, labels)) sum = (sum ?? 0) + s.value;
  }
  return sum;
}
