/**
 * What a node's dashboard reads beyond the `JobService`: the node's short series and its
 * receivers' recent health, as the API serves them (`GET /v1/series`, `GET /v1/receivers`).
 *
 * Owns types only; no behaviour, no I/O. Times are wall-clock epoch milliseconds.
 */

import type { BreakerState } from "../delivery/circuit_breaker.ts";

/** One closed interval of this node's activity. Counts are per interval, not per second. */
export interface SeriesPoint {
  /** When the interval ended. */
  readonly atMs: number;
  /** How long the interval was, ms: the sample interval, longer after a stalled event loop. */
  readonly spanMs: number;
  /** Submits this node's job store accepted (new or matched by idempotency key). */
  readonly accepted: number;
  /** Submits refused: by the store, by the API's validation, or at its admission bound. */
  readonly rejected: number;
  /** Jobs this node delivered (2xx). */
  readonly delivered: number;
  /** Attempts this node made that did not deliver (retried or dead-lettered after). */
  readonly failedAttempts: number;
  /** Submit-to-delivery latency of the interval's deliveries, ms; null when none. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface SeriesView {
  /** Length of one interval, ms. */
  readonly intervalMs: number;
  /** Most points kept: the series reaches back intervalMs × pointsMax at most. */
  readonly pointsMax: number;
  /** Oldest first. */
  readonly points: readonly SeriesPoint[];
}

/** The last failed attempt to an origin. */
export interface FailureView {
  readonly atMs: number;
  /** http_error, timeout, network_error, refused, gone */
  readonly outcome: string;
  readonly status?: number;
  /** The error, or the first characters of the receiver's answer. */
  readonly detail: string;
}

/** One receiver origin as this node sees it. */
export interface ReceiverView {
  /** e.g. `https://receiver.example:8443` */
  readonly origin: string;
  readonly breaker: BreakerState;
  /** When an open breaker lets its next trial through. */
  readonly reopenAtMs?: number;
  /** Attempts to it in flight now. */
  readonly inflight: number;
  /** Jobs this node's engine holds for it now (waiting, queued or in flight). */
  readonly jobsHeld: number;
  /** Attempts that ended within the window. */
  readonly attempts: number;
  /** Of those, the ones that did not deliver. */
  readonly failures: number;
  /** failures / attempts; null when there were none. */
  readonly failureRate: number | null;
  readonly lastAttemptAtMs?: number;
  readonly lastFailure?: FailureView;
}

export interface ReceiversView {
  /** How far back `attempts` and `failures` reach, ms. */
  readonly windowMs: number;
  /** Failing first (open breaker, then highest failure rate), then by origin. */
  readonly items: readonly ReceiverView[];
}

/** Where the API reads the dashboard's data; the node's `DashboardRecorder` implements it. */
export interface DashboardSource {
  series(): SeriesView;
  receivers(): ReceiversView;
}
