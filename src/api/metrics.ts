/**
 * The API's metrics, registered once in the node's registry: submits accepted and rejected
 * by reason (per job, batches included), requests refused at the admission gate, submits in
 * flight, body bytes held, the store's submit latency, and responses by route and status.
 *
 * Owns metric names and labels. Every label set is bounded: reasons are the error codes,
 * routes the route table's ids, statuses the few this API sends.
 */

import type { ApiErrorCode } from "./errors.ts";
import type { Counter, Gauge, MetricsRegistry } from "../metrics/registry.ts";
import type { Histogram } from "../metrics/histogram.ts";

/** Codes a submitted job can be rejected with (the reason label). */
const JOB_REJECT_REASONS: readonly ApiErrorCode[] = [
  "invalid",
  "payload_too_large",
  "malformed_json",
  "unsupported_media_type",
  "body_timeout",
  "idempotency_conflict",
  "no_quorum",
  "overloaded",
  "not_ready",
  "shutting_down",
  "storage_failed",
  "internal",
];

export type AdmissionRoute = "submit" | "batch" | "retry" | "endpoint" | "event";

export class ApiMetrics {
  readonly #registry: MetricsRegistry;
  readonly #accepted: Counter;
  readonly #existing: Counter;
  readonly #rejected = new Map<string, Counter>();
  readonly #admission = new Map<AdmissionRoute, Counter>();
  readonly #responses = new Map<string, Counter>();
  readonly inFlight: Gauge;
  readonly bodyBytesHeld: Gauge;
  readonly submitMs: Histogram;

  constructor(registry: MetricsRegistry) {
    this.#registry = registry;
    const jobs = "Jobs submitted through the API (batch items each count), by outcome and reason";
    this.#accepted = registry.counter("hookd_api_jobs_total", jobs, { outcome: "accepted" });
    this.#existing = registry.counter("hookd_api_jobs_total", jobs, { outcome: "existing" });
    // Registered up front so every series exists at 0 and rate() works from the first scrape.
    for (const reason of JOB_REJECT_REASONS) this.#rejectedCounter(reason);
    for (const route of ["submit", "batch", "retry", "endpoint", "event"] as const) {
      this.#admission.set(
        route,
        registry.counter(
          "hookd_api_admission_rejected_total",
          "Submit requests refused 503 at the HTTP edge: every slot taken (body unread), " +
            "or the body bytes held at their bound",
          { route },
        ),
      );
    }
    this.inFlight = registry.gauge(
      "hookd_api_submits_in_flight",
      "Submit requests (job, batch, retry) inside the node now",
    );
    this.bodyBytesHeld = registry.gauge(
      "hookd_api_body_bytes_held",
      "Bytes of request bodies the API holds now, those still arriving included",
    );
    this.submitMs = registry.histogram(
      "hookd_api_submit_ms",
      "Time the job store took to accept or refuse one POST /v1/jobs, ms",
    );
  }

  jobAccepted(existing: boolean): void {
    (existing ? this.#existing : this.#accepted).inc();
  }

  jobRejected(reason: ApiErrorCode): void {
    this.#rejectedCounter(reason).inc();
  }

  admissionRejected(route: AdmissionRoute): void {
    this.#admission.get(route)!.inc();
  }

  response(route: string, status: number): void {
    const key = `${route} ${status}`;
    let counter = this.#responses.get(key);
    if (counter === undefined) {
      counter = this.#registry.counter(
        "hookd_api_responses_total",
        "HTTP responses by route and status",
        { route, status: String(status) },
      );
      this.#responses.set(key, counter);
    }
    counter.inc();
  }

  #rejectedCounter(reason: ApiErrorCode): Counter {
    let counter = this.#rejected.get(reason);
    if (counter === undefined) {
      counter = this.#registry.counter(
        "hookd_api_jobs_total",
        "Jobs submitted through the API (batch items each count), by outcome and reason",
        { outcome: "rejected", reason },
      );
      this.#rejected.set(reason, counter);
    }
    return counter;
  }
}
