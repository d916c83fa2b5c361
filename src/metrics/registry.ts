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

  counter(name: string, help: string, labels: Labels = {}): Counter {
    return this.#register(name, help, labels, () => new Counter()) as Counter;
  }

  gauge(name: string, help: string, labels: Labels = {}): Gauge {
    return this.#register(name, help, labels, () => new Gauge()) as Gauge;
  }

  histogram(name: string, help: string, labels: Labels = {}, resolution = 0.001): Histogram {
    return this.#register(name, help, labels, () => new Histogram(resolution)) as Histogram;
  }

  #register(
    name: string,
    help: string,
    labels: Labels,
    make: () => Counter | Gauge | Histogram,
  ): Counter | Gauge | Histogram {
    const key = `${name}${renderLabels(labels)}`;
    const existing = this.#keys.get(key);
    if (existing !== undefined) return existing.metric;
    const entry: Entry = { name, help, labels, metric: make() };
    this.#entries.push(entry);
    this.#keys.set(key, entry);
    return entry.metric;
  }

  /** Prometheus text exposition format; histograms as summaries with quantiles. */
  renderPrometheus(): string {
    const lines: string[] = [];
    const described = new Set<string>();
    for (const { name, help, labels, metric } of this.#entries) {
      if (!described.has(name)) {
        described.add(name);
        const type = metric instanceof Counter
          ? "counter"
          : metric instanceof Gauge
          ? "gauge"
          : "summary";
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      }
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
    return lines.join("\n") + "\n";
  }

  /** A flat JSON-friendly snapshot: `name{labels}` to a number or a histogram summary. */
  snapshot(): Record<string, number | HistogramSummary> {
    const out: Record<string, number | HistogramSummary> = {};
    for (const { name, labels, metric } of this.#entries) {
      out[`${name}${renderLabels(labels)}`] = metric instanceof Histogram
        ? metric.summary()
        : metric.value;
    }
    return out;
  }
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
