/**
 * What a node's dashboard plots and lists that no other part of the node keeps: a short
 * series of closed intervals (submits accepted and rejected, deliveries, failed attempts,
 * submit-to-delivery p50/p99 of the interval's deliveries) and, per receiver origin, attempts
 * and failures over a sliding window with the last failure.
 *
 * Why not the metrics registry: its histograms are cumulative since the node started, so they
 * cannot say what p99 was a minute ago, and the engine forgets an origin as soon as it holds no
 * job for it — which is exactly when a receiver that failed everything is worth showing.
 *
 * Owns those two bounded memories (seriesPoints points; receiverOriginsMax origins of
 * receiverWindowBuckets buckets each; an origin quiet past the window is only hidden, so the
last failure behind a breaker that stays open is still there). Sans-I/O: time comes in as `wallMs`, counter totals as
 * arguments; the shell (recorder.ts) reads clocks and counters and arms the timer. Must not
 * read clocks, counters or the engine itself.
 */

import {
  type DashboardConfig,
  dashboardDefaults,
  validateDashboardConfig,
} from "../config/dashboard.ts";
import type { OriginLoad } from "../delivery/delivery_core.ts";
import { assert } from "../lib/assert.ts";
import { round } from "../lib/round.ts";
import { Histogram } from "../metrics/histogram.ts";
import type { FailureView, ReceiversView, ReceiverView, SeriesPoint, SeriesView } from "./view.ts";

/** Submit counters since the node started; the series keeps their differences. */
export interface SubmitTotals {
  readonly accepted: number;
  readonly rejected: number;
}

/** One attempt that ended (its report reached the store). */
export interface AttemptSeen {
  /** The job's target origin (`new URL(url).origin`). */
  readonly origin: string;
  readonly delivered: boolean;
  /** success, gone, http_error, timeout, network_error, refused */
  readonly outcome: string;
  readonly status?: number;
  readonly detail: string;
}

interface OriginWindow {
  readonly origin: string;
  /** Which bucket (floor(wallMs / bucketMs)) each slot currently counts. */
  readonly slotBucket: Float64Array;
  readonly attempts: Uint32Array;
  readonly failures: Uint32Array;
  lastAttemptAtMs: number;
  lastFailure: FailureView | undefined;
}

/** Breaker states in the order a failing receiver should stand out: open first. */
const BREAKER_RANK = { open: 0, half_open: 1, closed: 2 } as const;

export class DashboardStats {
  readonly config: Readonly<DashboardConfig>;
  readonly #bucketMs: number;
  readonly #points: SeriesPoint[] = [];
  #baseline: SubmitTotals;
  #intervalStartMs: number;
  #delivered = 0;
  #failedAttempts = 0;
  readonly #latencyMs = new Histogram();
  readonly #origins = new Map<string, OriginWindow>();

  /** `startMs` and `totals` are the node's wall clock and counters when recording starts. */
  constructor(startMs: number, totals: SubmitTotals, config: Partial<DashboardConfig> = {}) {
    this.config = validateDashboardConfig({ ...dashboardDefaults, ...config });
    this.#bucketMs = this.config.receiverWindowMs / this.config.receiverWindowBuckets;
    this.#baseline = totals;
    this.#intervalStartMs = startMs;
  }

  /** An attempt ended at `wallMs`. */
  attempt(wallMs: number, seen: AttemptSeen): void {
    if (!seen.delivered) this.#failedAttempts++;
    const window = this.#window(seen.origin);
    const bucket = Math.floor(wallMs / this.#bucketMs);
    const slot = bucket % this.config.receiverWindowBuckets;
    if (window.slotBucket[slot] !== bucket) {
      window.slotBucket[slot] = bucket;
      window.attempts[slot] = 0;
      window.failures[slot] = 0;
    }
    window.attempts[slot]!++;
    window.lastAttemptAtMs = Math.max(window.lastAttemptAtMs, wallMs);
    if (!seen.delivered) {
      window.failures[slot]!++;
      window.lastFailure = {
        atMs: wallMs,
        outcome: seen.outcome,
        ...(seen.status !== undefined ? { status: seen.status } : {}),
        detail: seen.detail.slice(0, this.config.failureDetailCharsMax),
      };
    }
  }

  /** A job was delivered `latencyMs` after it was submitted. */
  delivered(latencyMs: number): void {
    this.#delivered++;
    this.#latencyMs.record(Math.max(0, latencyMs));
  }

  /** Closes the interval that ends at `wallMs`, with the submit totals read at that moment. */
  closeInterval(wallMs: number, totals: SubmitTotals): void {
    const hasLatency = this.#latencyMs.count > 0;
    this.#points.push({
      atMs: wallMs,
      // A clock step backwards must not make a negative span; a stalled loop makes a long one.
      spanMs: Math.max(1, wallMs - this.#intervalStartMs),
      // Counters only grow; a smaller total is a registry we were not given before, not news.
      accepted: Math.max(0, totals.accepted - this.#baseline.accepted),
      rejected: Math.max(0, totals.rejected - this.#baseline.rejected),
      delivered: this.#delivered,
      failedAttempts: this.#failedAttempts,
      p50Ms: hasLatency ? round(this.#latencyMs.percentile(50), 3) : null,
      p99Ms: hasLatency ? round(this.#latencyMs.percentile(99), 3) : null,
    });
    if (this.#points.length > this.config.seriesPoints) this.#points.shift();
    assert(this.#points.length <= this.config.seriesPoints, "series grew past seriesPoints");
    this.#baseline = totals;
    this.#intervalStartMs = wallMs;
    this.#delivered = 0;
    this.#failedAttempts = 0;
    this.#latencyMs.reset();
  }

  series(): SeriesView {
    return {
      intervalMs: this.config.sampleIntervalMs,
      pointsMax: this.config.seriesPoints,
      points: [...this.#points],
    };
  }

  /**
   * Every origin the engine holds now (`loads`) or that saw an attempt within the window,
   * failing ones first.
   */
  receivers(wallMs: number, loads: readonly OriginLoad[]): ReceiversView {
    const items: ReceiverView[] = [];
    const loaded = new Map(loads.map((l) => [l.origin, l]));
    const origins = new Set([...loaded.keys(), ...this.#origins.keys()]);
    for (const origin of origins) {
      const load = loaded.get(origin);
      const window = this.#origins.get(origin);
      const { attempts, failures } = window === undefined
        ? { attempts: 0, failures: 0 }
        : this.#windowSums(window, wallMs);
      if (load === undefined && attempts === 0) continue;
      items.push({
        origin,
        // The engine forgets an origin (and its breaker) once it holds no job for it.
        breaker: load?.breaker ?? "closed",
        ...(load?.reopenAtMs !== undefined ? { reopenAtMs: load.reopenAtMs } : {}),
        inflight: load?.inflight ?? 0,
        jobsHeld: load?.jobsHeld ?? 0,
        attempts,
        failures,
        failureRate: attempts === 0 ? null : round(failures / attempts, 4),
        ...(window !== undefined && window.lastAttemptAtMs > 0
          ? { lastAttemptAtMs: window.lastAttemptAtMs }
          : {}),
        ...(window?.lastFailure !== undefined ? { lastFailure: window.lastFailure } : {}),
      });
    }
    items.sort((a, b) =>
      BREAKER_RANK[a.breaker] - BREAKER_RANK[b.breaker] ||
      (b.failureRate ?? -1) - (a.failureRate ?? -1) ||
      (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0)
    );
    return { windowMs: this.config.receiverWindowMs, items };
  }

  /** Origins remembered now (for tests of the bound). */
  get originsRemembered(): number {
    return this.#origins.size;
  }

  #window(origin: string): OriginWindow {
    let window = this.#origins.get(origin);
    if (window !== undefined) return window;
    if (this.#origins.size >= this.config.receiverOriginsMax) this.#forgetOldestOrigin();
    const buckets = this.config.receiverWindowBuckets;
    window = {
      origin,
      slotBucket: new Float64Array(buckets).fill(-1),
      attempts: new Uint32Array(buckets),
      failures: new Uint32Array(buckets),
      lastAttemptAtMs: 0,
      lastFailure: undefined,
    };
    this.#origins.set(origin, window);
    return window;
  }

  #windowSums(window: OriginWindow, wallMs: number): { attempts: number; failures: number } {
    const current = Math.floor(wallMs / this.#bucketMs);
    const oldest = current - this.config.receiverWindowBuckets + 1;
    let attempts = 0;
    let failures = 0;
    for (let slot = 0; slot < this.config.receiverWindowBuckets; slot++) {
      const bucket = window.slotBucket[slot]!;
      if (bucket < oldest || bucket > current) continue;
      attempts += window.attempts[slot]!;
      failures += window.failures[slot]!;
    }
    return { attempts, failures };
  }

  #forgetOldestOrigin(): void {
    let oldest: OriginWindow | undefined;
    for (const window of this.#origins.values()) {
      if (oldest === undefined || window.lastAttemptAtMs < oldest.lastAttemptAtMs) oldest = window;
    }
    if (oldest !== undefined) this.#origins.delete(oldest.origin);
  }
}
