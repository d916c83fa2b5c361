/**
 * The delivery engine's metrics, registered once in a `MetricsRegistry`.
 *
 * Owns metric names and labels only. A per-origin breaker gauge is created the first time that
 * origin's breaker leaves `closed`; the registry never forgets a series, so a node grows one
 * series per origin whose breaker ever opened (a registry that can drop series is the fix).
 */

import type { Counter, Gauge, MetricsRegistry } from "../metrics/registry.ts";
import type { Histogram } from "../metrics/histogram.ts";
import { ATTEMPT_OUTCOMES, type AttemptOutcome } from "./types.ts";
import type { BreakerState } from "./circuit_breaker.ts";

export const BREAKER_STATE_VALUE: Readonly<Record<BreakerState, number>> = {
  closed: 0,
  half_open: 1,
  open: 2,
};

export class DeliveryMetrics {
  readonly #registry: MetricsRegistry;
  readonly attempts: Readonly<Record<AttemptOutcome, Counter>>;
  /** Submit (or first schedule) to the 2xx, ms. */
  readonly deliveryLatencyMs: Histogram;
  /** One attempt, request start to response body read, ms. */
  readonly attemptLatencyMs: Histogram;
  readonly retriesScheduled: Counter;
  readonly deadLetters: Counter;
  readonly delivered: Counter;
  /** Jobs delivered by an answer heard after the attempt's timeout (no retry needed). */
  readonly lateAnswers: Counter;
  readonly rejectedFull: Counter;
  readonly storeFailures: Counter;
  readonly inflight: Gauge;
  readonly jobs: Gauge;
  readonly breakersOpen: Gauge;

  constructor(registry: MetricsRegistry) {
    this.#registry = registry;
    const attempts = {} as Record<AttemptOutcome, Counter>;
    for (const outcome of ATTEMPT_OUTCOMES) {
      attempts[outcome] = registry.counter(
        "hookd_delivery_attempts_total",
        "Delivery attempts by outcome",
        { outcome },
      );
    }
    this.attempts = attempts;
    this.deliveryLatencyMs = registry.histogram(
      "hookd_delivery_latency_ms",
      "Submit (or first schedule) to a 2xx from the receiver, ms",
    );
    this.attemptLatencyMs = registry.histogram(
      "hookd_delivery_attempt_ms",
      "One delivery attempt, request start to response read, ms",
    );
    this.retriesScheduled = registry.counter(
      "hookd_delivery_retries_scheduled_total",
      "Retries scheduled after a failed attempt",
    );
    this.deadLetters = registry.counter(
      "hookd_delivery_dead_letters_total",
      "Jobs that became dead letters",
    );
    this.delivered = registry.counter("hookd_delivery_delivered_total", "Jobs delivered (2xx)");
    this.lateAnswers = registry.counter(
      "hookd_delivery_late_answers_total",
      "Jobs delivered by a 2xx heard after the attempt's timeout, instead of a retry",
    );
    this.rejectedFull = registry.counter(
      "hookd_delivery_rejected_full_total",
      "schedule() refused because the engine held jobsMax jobs",
    );
    this.storeFailures = registry.counter(
      "hookd_delivery_store_failures_total",
      "Durable store writes that failed; the job was dropped from the engine",
    );
    this.inflight = registry.gauge("hookd_delivery_inflight", "Attempts in flight");
    this.jobs = registry.gauge("hookd_delivery_jobs", "Jobs held by the engine");
    this.breakersOpen = registry.gauge(
      "hookd_delivery_breakers_open",
      "Origins whose circuit breaker is open or half-open",
    );
  }

  breakerGauge(origin: string): Gauge {
    return this.#registry.gauge(
      "hookd_delivery_breaker_state",
      "Circuit breaker per origin: 0 closed, 1 half-open, 2 open",
      { origin },
    );
  }
}
