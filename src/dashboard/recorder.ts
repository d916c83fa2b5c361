/**
 * The node's dashboard recorder: runs `DashboardStats` on a `Runtime`. It closes one interval
 * every `sampleIntervalMs` with the submit totals read from the metrics registry, feeds the
 * delivery engine's reports in (`onReport`, passed to the job store), and answers the API's
 * `DashboardSource` reads with the engine's live origin loads merged in.
 *
 * Owns its one timer (a `DeadlineTimer`, closed by `close`). Must not change anything it
 * reads: the registry, the engine's origins and the reports are read-only here.
 */

import type { DashboardConfig } from "../config/dashboard.ts";
import type { OriginLoad } from "../delivery/delivery_core.ts";
import type { DeliveryJob, DeliveryReport } from "../delivery/types.ts";
import { DeadlineTimer } from "../lib/deadline_timer.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import type { Labels, MetricsRegistry } from "../metrics/registry.ts";
import { DashboardStats, type SubmitTotals } from "./stats.ts";
import type { DashboardSource, ReceiversView, SeriesView } from "./view.ts";

export interface DashboardRecorderOptions {
  /** The node's registry: the submit counters are read from it. */
  readonly registry: MetricsRegistry;
  /** The delivery engine's origins now (`DeliveryEngine.originLoads`); empty without one. */
  readonly origins: () => readonly OriginLoad[];
  /** @default realRuntime */
  readonly runtime?: Runtime;
  readonly config?: Partial<DashboardConfig>;
}

/**
 * API error codes a submit is refused with before it reaches the job store (the store's own
 * refusals are counted once, in hookd_jobs_submits_total).
 */
const API_ONLY_REJECTIONS: ReadonlySet<string> = new Set([
  "invalid",
  "payload_too_large",
  "malformed_json",
  "unsupported_media_type",
  "body_timeout",
]);

/** Submits accepted and refused so far, from the job store's and the API's counters. */
export function submitTotals(registry: MetricsRegistry): SubmitTotals {
  const storeAccepted = (l: Labels) => l.result === "accepted" || l.result === "existing";
  const accepted = registry.sumCounters("hookd_jobs_submits_total", storeAccepted);
  const refusedByStore = registry.sumCounters(
    "hookd_jobs_submits_total",
    (l) => !storeAccepted(l),
  );
  const refusedByApi = registry.sumCounters(
    "hookd_api_jobs_total",
    (l) => l.outcome === "rejected" && API_ONLY_REJECTIONS.has(l.reason ?? ""),
  );
  // A whole request refused at the admission bound, body unread: one rejection each.
  const refusedAtAdmission = registry.sumCounters(
    "hookd_api_admission_rejected_total",
    (l) => l.route === "submit" || l.route === "batch",
  );
  return { accepted, rejected: refusedByStore + refusedByApi + refusedAtAdmission };
}

export class DashboardRecorder implements DashboardSource {
  readonly stats: DashboardStats;
  readonly #registry: MetricsRegistry;
  readonly #origins: () => readonly OriginLoad[];
  readonly #runtime: Runtime;
  readonly #timer: DeadlineTimer;
  #nextCloseMs: number;

  constructor(options: DashboardRecorderOptions) {
    this.#registry = options.registry;
    this.#origins = options.origins;
    this.#runtime = options.runtime ?? realRuntime;
    this.stats = new DashboardStats(
      this.#runtime.wallMs(),
      submitTotals(this.#registry),
      options.config,
    );
    this.#timer = new DeadlineTimer(this.#runtime, () => this.#tick());
    this.#nextCloseMs = this.#runtime.nowMs() + this.stats.config.sampleIntervalMs;
    this.#timer.arm(this.#nextCloseMs);
  }

  /** The delivery engine's report of one job (pass as the job store's `onReport`). */
  onReport(report: DeliveryReport, job: DeliveryJob): void {
    const wallMs = this.#runtime.wallMs();
    const attempt = report.attempt;
    if (attempt !== undefined) {
      let origin: string;
      try {
        origin = new URL(job.url).origin;
      } catch {
        // The engine refuses such a job before any attempt; nothing to attribute.
        return;
      }
      this.stats.attempt(wallMs, {
        origin,
        delivered: report.kind === "delivered",
        outcome: attempt.outcome,
        ...(attempt.status !== undefined ? { status: attempt.status } : {}),
        detail: attempt.detail,
      });
    }
    if (report.kind === "delivered" && job.submittedAtMs !== undefined) {
      this.stats.delivered(wallMs - job.submittedAtMs);
    }
  }

  series(): SeriesView {
    return this.stats.series();
  }

  receivers(): ReceiversView {
    return this.stats.receivers(this.#runtime.wallMs(), this.#origins());
  }

  close(): void {
    this.#timer.close();
  }

  #tick(): void {
    const nowMs = this.#runtime.nowMs();
    this.stats.closeInterval(this.#runtime.wallMs(), submitTotals(this.#registry));
    // Keep a steady grid; after a long stall, start again from now rather than catch up
    // with a burst of empty intervals.
    this.#nextCloseMs += this.stats.config.sampleIntervalMs;
    if (this.#nextCloseMs <= nowMs) this.#nextCloseMs = nowMs + this.stats.config.sampleIntervalMs;
    this.#timer.arm(this.#nextCloseMs);
  }
}
