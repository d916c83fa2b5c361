/**
 * Named counters, gauges and histograms, rendered as Prometheus text or a JSON snapshot.
 *
 * Owns metric registration and rendering. Subsystems create their metrics here once at
 * construction and bump them on their hot paths (a counter bump is a property increment);
 * nothing here allocates per observation.
 */

import { Histogram, type HistogramSummary } from "./histogram.ts";

export type Labels = Readonly<Record<string, string>>;

export class Counter {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class Gauge {
  value = 0;
  set(value: number): void {
    this.value = value;
  }
}

interface Entry {
  name: string;
  help: string;
  labels: Labels;
  metric: Counter | Gauge | Histogram;
}

export class MetricsRegistry {
  readonly #entries: Entry[] = [];
  readonly #keys = new Map<string, Entry>();
  readonly #kinds = new Map<string, MetricKind>();
  readonly #collectors: Array<() => void> = [];

  /**
   * `collect` runs before every render and snapshot: for figures kept outside the registry
   * (process-wide counts such as timer wake-ups) that are copied into a metric only when read.
   */
  onCollect(collect: () => void): void {
    this.#collectors.push(collect);
  }

  counter(name: string, help: string, labels: Labels = {}): Counter {
    return this.#register(name, help, labels, "counter", () => new Counter()) as Counter;
  }

  gauge(name: string, help: string, labels: Labels = {}): Gauge {
    return this.#register(name, help, labels, "gauge", () => new Gauge()) as Gauge;
  }

  histogram(name: string, help: string, labels: Labels = {}, resolution = 0.001): Histogram {
    return this.#register(
      name,
      help,
      labels,
      "histogram",
      () => new Histogram(resolution),
    ) as Histogram;
  }

  #register(
    name: string,
    help: string,
    labels: Labels,
    kind: MetricKind,
    make: () => Counter | Gauge | Histogram,
  ): Counter | Gauge | Histogram {
    // One name is one kind of metric: handing a Counter to a caller that asked for a Gauge
    // would fail later, far from the cause, and Prometheus rejects a family of mixed types.
    const registered = this.#kinds.get(name);
    if (registered !== undefined && registered !== kind) {
      throw new TypeError(`metric ${name} is already registered as a ${registered}, not a ${kind}`);
    }
    const key = `${name}${renderLabels(labels)}`;
    const existing = this.#keys.get(key);
    if (existing !== undefined) return existing.metric;
    this.#kinds.set(name, kind);
    const entry: Entry = { name, help, labels, metric: make() };
    this.#entries.push(entry);
    this.#keys.set(key, entry);
    return entry.metric;
  }

  /**
   * Prometheus text exposition format; histograms as summaries with quantiles. Samples are
   * grouped by name (the format requires a family's samples together), in the order the
   * names were first registered.
   */
  renderPrometheus(): string {
    for (const collect of this.#collectors) collect();
    const lines: string[] = [];
    const families = new Map<string, Entry[]>();
    for (const entry of this.#entries) {
      const family = families.get(entry.name);
      if (family === undefined) families.set(entry.name, [entry]);
      else family.push(entry);
    }
    for (const [name, family] of families) {
      const first = family[0]!;
      const type = kindOf(first.metric) === "histogram" ? "summary" : kindOf(first.metric);
      lines.push(`# HELP ${name} ${escapeHelp(first.help)}`, `# TYPE ${name} ${type}`);
      for (const { labels, metric } of family) renderSamples(lines, name, labels, metric);
    }
    return lines.join("\n") + "\n";
  }

  /**
   * The sum of the counters named `name` whose labels satisfy `where` (all of them when it is
   * absent): a read for in-process consumers (the dashboard's series) that costs no rendering.
   */
  sumCounters(name: string, where?: (labels: Labels) => boolean): number {
    let sum = 0;
    for (const entry of this.#entries) {
      if (entry.name !== name || !(entry.metric instanceof Counter)) continue;
      if (where === undefined || where(entry.labels)) sum += entry.metric.value;
    }
    return sum;
  }

  /** A flat JSON-friendly snapshot: `name{labels}` to a number or a histogram summary. */
  snapshot(): Record<string, number | HistogramSummary> {
    for (const collect of this.#collectors) collect();
    const out: Record<string, number | HistogramSummary> = {};
    for (const { name, labels, metric } of this.#entries) {
      out[`${name}${renderLabels(labels)}`] = metric instanceof Histogram
        ? metric.summary()
        : metric.value;
    }
    return out;
  }
}

type MetricKind = "counter" | "gauge" | "histogram";

function kindOf(metric: Counter | Gauge | Histogram): MetricKind {
  return metric instanceof Counter ? "counter" : metric instanceof Gauge ? "gauge" : "histogram";
}

function renderSamples(
  lines: string[],
  name: string,
  labels: Labels,
  metric: Counter | Gauge | Histogram,
): void {
  if (metric instanceof Histogram) {
    const s = metric.summary();
    for (const [q, v] of [["0.5", s.p50], ["0.9", s.p90], ["0.99", s.p99], ["1", s.max]]) {
      lines.push(`${name}${renderLabels({ ...labels, quantile: String(q) })} ${v}`);
    }
    lines.push(`${name}_sum${renderLabels(labels)} ${metric.sum}`);
    lines.push(`${name}_count${renderLabels(labels)} ${s.count}`);
  } else {
    lines.push(`${name}${renderLabels(labels)} ${metric.value}`);
  }
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function renderLabels(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return "";
  const parts = keys.sort().map((k) => `${k}="${escapeLabel(labels[k]!)}"`);
  return `{${parts.join(",")}}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
