/**
 * Latency and size histograms, behind one small module over `hdr-histogram-js`.
 *
 * Owns the HDR wrapper and its unit convention: values are recorded as numbers in the unit the
 * metric's name carries (`..._ms`, `..._records`) and kept at 3 significant digits. Fractional
 * milliseconds are kept by recording microseconds internally.
 */

import * as hdr from "hdr-histogram-js";

export interface HistogramSummary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export class Histogram {
  readonly #hdr: hdr.Histogram;
  /** Internal fixed-point scale so that 0.05 ms is not rounded to 0. */
  readonly #scale: number;
  #sum = 0;

  /** `resolution` is the smallest step kept (e.g. 0.001 for ms with µs precision). */
  constructor(resolution = 0.001) {
    this.#scale = 1 / resolution;
    this.#hdr = hdr.build({
      useWebAssembly: false,
      bitBucketSize: 64,
      autoResize: true,
      lowestDiscernibleValue: 1,
      highestTrackableValue: 2,
      numberOfSignificantValueDigits: 3,
    });
  }

  record(value: number): void {
    if (!(value >= 0) || !Number.isFinite(value)) return;
    this.#sum += value;
    this.#hdr.recordValue(Math.max(1, Math.round(value * this.#scale)));
  }

  get count(): number {
    return this.#hdr.totalCount;
  }

  get sum(): number {
    return this.#sum;
  }

  percentile(p: number): number {
    if (this.#hdr.totalCount === 0) return 0;
    // HDR reports the top of the value's bucket, which can exceed the exact maximum; a p99
    // above the max would be nonsense in a report.
    return Math.min(this.#hdr.getValueAtPercentile(p), this.#hdr.maxValue) / this.#scale;
  }

  summary(): HistogramSummary {
    const count = this.#hdr.totalCount;
    if (count === 0) return { count: 0, min: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };
    return {
      count,
      min: this.#hdr.minNonZeroValue / this.#scale,
      mean: this.#sum / count,
      p50: this.percentile(50),
      p90: this.percentile(90),
      p99: this.percentile(99),
      p999: this.percentile(99.9),
      max: this.#hdr.maxValue / this.#scale,
    };
  }

  reset(): void {
    this.#hdr.reset();
    this.#sum = 0;
  }
}
