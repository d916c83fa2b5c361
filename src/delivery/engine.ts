/**
 * The delivery engine: the thin shell that runs `DeliveryCore` on real time. It starts the
 * core's attempts on an `AttemptTransport` (HTTP by default), passes outcome reports to a
 * `DeliveryStore` in the order the durability contract demands (types.ts), and keeps ONE
 * timer armed at the core's next wake time. Event-driven: nothing polls.
 *
 * Owns: the wake timer, the attempt promises in flight, store calls. Must not make delivery
 * decisions (the core does) or persist anything itself (the store does).
 */

import { type DeliveryConfig, validateDeliveryConfig } from "../config/delivery.ts";
import type { JobsConfig } from "../config/jobs.ts";
import { DeadlineTimer } from "../lib/deadline_timer.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import { err, type Result } from "../lib/result.ts";
import { randomRng, type Rng } from "../lib/rng.ts";
import { type Counter, MetricsRegistry } from "../metrics/registry.ts";
import { DeliveryCore, type DeliveryOutput, type OriginLoad } from "./delivery_core.ts";
import { type AttemptTransport, HttpTransport } from "./http_transport.ts";
import { DeliveryMetrics } from "./metrics.ts";
import type { Resolver } from "./ssrf_guard.ts";
import type {
  AttemptResult,
  DeadLetter,
  DeliveryJob,
  DeliveryReport,
  DeliveryScheduler,
  DeliveryStore,
  DeliveryWiring,
  ResumeState,
} from "./types.ts";

/** The delivery config, and `jobs.maxAttemptsDefault` for jobs that name no `maxAttempts`. */
export type EngineConfig = DeliveryConfig & Partial<Pick<JobsConfig, "maxAttemptsDefault">>;

export interface DeliveryEngineOptions {
  config: EngineConfig;
  store: DeliveryStore;
  /** @default an `HttpTransport` built from `config` */
  transport?: AttemptTransport;
  /** @default randomRng() */
  rng?: Rng;
  /** Timers and clocks. @default realRuntime */
  runtime?: Runtime;
  /**
   * Epoch ms with sub-ms resolution, for scheduling and latency. The `webhook-timestamp` comes
   * from the wall clock instead (see `HttpTransportOptions.wallClockMs`).
   * @default the runtime's wall clock at start, advanced by its monotonic clock (never jumps)
   */
  clock?: () => number;
  /** @default a private registry */
  metrics?: MetricsRegistry;
  /** DNS for the SSRF guard of the default transport. @default Deno.resolveDns */
  resolve?: Resolver;
  /**
   * Called with every report after the store has it (after the durable write for `retry` and
   * `dead`). For harnesses and tests; must not throw.
   */
  onReport?: (report: DeliveryReport, job: DeliveryJob) => void;
  /**
   * Called before every step that can start an attempt (a timer, a finished attempt, a
   * durable retry, a schedule). The job store passes its freeze check (src/lib/stall_monitor.ts)
   * here: after the process was frozen it takes its jobs back (cancels them) before an expired
   * timer starts an attempt on stale state. Must not throw.
   */
  beforeStep?: () => void;
  /**
   * This node's share of an endpoint's `rate_limit_per_s` (0: none), read at every attempt of
   * an event's job to it; the job store passes it (`DeliveryWiring.rateLimitPerS`).
   * @default no limits
   */
  rateLimitPerS?: (endpointId: string) => number;
  /**
   * The secrets each attempt is signed with (`DeliveryWiring.secretsFor`): the job store's
   * endpoint table, for an event's job. @default the job's own
   */
  secretsFor?: DeliveryWiring["secretsFor"];
}

export class DeliveryEngine implements DeliveryScheduler {
  readonly #core: DeliveryCore;
  readonly #store: DeliveryStore;
  readonly #transport: AttemptTransport;
  readonly #clock: () => number;
  readonly #onReport: ((report: DeliveryReport, job: DeliveryJob) => void) | undefined;
  readonly #beforeStep: () => void;
  readonly #secretsFor: DeliveryWiring["secretsFor"];
  readonly #pending = new Set<Promise<void>>();
  readonly metrics: MetricsRegistry;
  readonly #storeFailures: Counter;
  readonly #runtime: Runtime;
  readonly #timer: DeadlineTimer;
  readonly #lateAnswerWaitMs: number;
  #closed = false;
  /** Draining: attempts in flight finish, no new one starts. */
  #draining = false;

  constructor(options: DeliveryEngineOptions) {
    const config = validateDeliveryConfig(options.config);
    this.#store = options.store;
    this.#lateAnswerWaitMs = config.lateAnswerWaitMs;
    const runtime = options.runtime ?? realRuntime;
    this.#runtime = runtime;
    const anchorMs = runtime.wallMs() - runtime.nowMs();
    this.#clock = options.clock ?? (() => anchorMs + runtime.nowMs());
    this.#beforeStep = options.beforeStep ?? (() => {});
    this.#secretsFor = options.secretsFor;
    this.#timer = new DeadlineTimer(runtime, () => {
      this.#beforeStep();
      this.#core.tick(this.#clock());
      this.#flush();
    });
    this.metrics = options.metrics ?? new MetricsRegistry();
    this.#onReport = options.onReport;
    const metrics = new DeliveryMetrics(this.metrics);
    this.#storeFailures = metrics.storeFailures;
    this.#core = new DeliveryCore(
      {
        ...config,
        ...(options.config.maxAttemptsDefault !== undefined
          ? { maxAttemptsDefault: options.config.maxAttemptsDefault }
          : {}),
      },
      options.rng ?? randomRng(),
      metrics,
      options.rateLimitPerS,
    );
    this.#transport = options.transport ?? new HttpTransport({
      allowPrivateTargets: config.allowPrivateTargets,
      responseBodyBytesMax: config.responseBodyBytesMax,
      listeningMax: config.concurrentDeliveriesMax,
      ...(options.resolve !== undefined ? { resolve: options.resolve } : {}),
    });
  }

  /** Jobs held (waiting, queued, in flight or being persisted). */
  get jobCount(): number {
    return this.#core.jobCount;
  }

  get inflight(): number {
    return this.#core.inflight;
  }

  /** Whether an attempt of `jobId` is in flight now. */
  isInflight(jobId: string): boolean {
    return this.#core.isInflight(jobId);
  }

  breakerState(origin: string): "closed" | "open" | "half_open" {
    return this.#core.breakerState(origin);
  }

  /** Every origin held now, with its attempts in flight and breaker state (read-only). */
  originLoads(): OriginLoad[] {
    return this.#core.originLoads();
  }

  /**
   * The job became this node's to deliver (committed, or handed over with `resume`). Says no
   * when the engine is full or closed; the store offers the job again later.
   */
  schedule(job: DeliveryJob, resume?: ResumeState): Result<void> {
    if (this.#closed) return err("delivery engine is closed");
    this.#beforeStep();
    const result = this.#core.schedule(this.#clock(), job, resume);
    this.#flush();
    return result;
  }

  /** The job stopped being this node's; an attempt in flight finishes and is still reported. */
  cancel(jobId: string): boolean {
    const held = this.#core.cancel(this.#clock(), jobId);
    this.#flush();
    return held;
  }

  /** Endpoints' rate limits or this node's shares may have changed: held jobs look again. */
  limitsChanged(): void {
    if (this.#closed) return;
    this.#core.limitsChanged(this.#clock());
    this.#flush();
  }

  listDeadLetters(limit = 100): readonly DeadLetter[] {
    return this.#store.listDead(limit);
  }

  /** Retries a dead letter by hand: the store durably revives it, then it is scheduled afresh. */
  async retryDeadLetter(jobId: string): Promise<Result<void>> {
    const job = await this.#store.reviveDead(jobId);
    if (job === undefined) return err(`no dead letter ${JSON.stringify(jobId)}`);
    return this.schedule(job);
  }

  /** Resolves once nothing is in flight and no store write is pending (jobs may still wait). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /**
   * Graceful stop: starts no new attempt, lets those in flight finish (and be reported) for up
   * to `graceMs`, then closes (aborting any still running, which the next owner repeats).
   */
  async drain(graceMs: number): Promise<void> {
    this.#draining = true;
    let cancelTimer: (() => void) | undefined;
    const grace = new Promise<void>((resolve) => {
      cancelTimer = this.#runtime.setTimer(graceMs, resolve);
    });
    await Promise.race([this.settled(), grace]);
    cancelTimer?.();
    await this.close();
  }

  /**
   * Stops timers, aborts attempts in flight and waits for them to settle. An attempt that ends
   * in an error after close (our own abort, most likely) is not reported: like an attempt cut
   * short by a crash it is not counted, and the job's next owner makes it again. Counting it
   * would spend one of the job's attempts on every restart, and dead-letter a job on its last.
   * An attempt that got its HTTP response is reported as usual.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timer.close();
    this.#transport.close();
    await this.settled();
  }

  #flush(): void {
    for (const output of this.#core.takeOutputs()) this.#handle(output);
    this.#arm();
  }

  #handle(output: DeliveryOutput): void {
    if (output.type === "attempt") {
      // A closed or draining engine starts nothing new; the store still holds the job for its
      // next owner.
      if (this.#closed || this.#draining) return;
      // Signed under the secrets valid as the attempt starts (a rotation since the job was
      // made), not only those the job carries.
      const secrets = this.#secretsFor?.(output.job);
      const attempt = secrets === undefined
        ? output
        : { ...output, job: { ...output.job, secrets } };
      const request = this.#lateAnswerWaitMs > 0
        ? {
          ...attempt,
          lateAnswerMs: this.#lateAnswerWaitMs,
          onLateAnswer: (result: AttemptResult) => {
            if (this.#closed) return;
            this.#core.lateAnswer(this.#clock(), output.job, output.attempt, result);
            this.#flush();
          },
        }
        : attempt;
      this.#track(
        this.#transport.send(request).then(
          (result) => {
            if (this.#closed && result.kind !== "response") return;
            this.#beforeStep();
            this.#core.attemptDone(this.#clock(), output.job.id, result);
          },
          (error: unknown) => {
            if (this.#closed) return;
            this.#beforeStep();
            this.#core.attemptDone(this.#clock(), output.job.id, {
              kind: "network_error",
              message: `transport failed: ${
                error instanceof Error ? error.message : String(error)
              }`,
              latencyMs: 0,
            });
          },
        ),
      );
      return;
    }
    const { report, job } = output;
    switch (report.kind) {
      case "delivered":
        this.#store.recordDelivered(report);
        this.#onReport?.(report, job);
        return;
      case "retry":
        this.#track(
          this.#store.recordRetry(report).then(
            () => {
              this.#onReport?.(report, job);
              this.#beforeStep();
              this.#core.persisted(this.#clock(), report.jobId, true);
            },
            (error: unknown) => {
              console.error(`delivery: store failed to persist retry of ${report.jobId}: ${error}`);
              this.#core.persisted(this.#clock(), report.jobId, false);
            },
          ),
        );
        return;
      case "dead":
        this.#track(
          this.#store.recordDead(job, report).then(
            () => this.#onReport?.(report, job),
            (error: unknown) => {
              // The store still holds the job as pending and offers it again later.
              this.#storeFailures.inc();
              console.error(
                `delivery: store failed to persist dead letter ${report.jobId}: ${error}`,
              );
            },
          ),
        );
        return;
    }
  }

  /** Keeps `promise` in the pending set and flushes the core's outputs after it. */
  #track(promise: Promise<void>): void {
    const tracked = promise.finally(() => {
      this.#pending.delete(tracked);
      this.#flush();
    });
    this.#pending.add(tracked);
  }

  #arm(): void {
    if (this.#closed) return;
    const wakeMs = this.#core.nextWakeMs();
    // The core keeps epoch-ms deadlines; the timer runs on the runtime's monotonic clock.
    this.#timer.arm(
      wakeMs === Infinity ? Infinity : this.#runtime.nowMs() + (wakeMs - this.#clock()),
    );
  }
}

/**
 * How a job store gets its engine (`JobStoreOptions.scheduler`): the engine reports to the
 * store, so it is built once the store exists. The store calls this with itself and its freeze
 * check before it carries out its first output.
 */
export function deliveryEngineFor(
  options: Omit<DeliveryEngineOptions, keyof DeliveryWiring>,
): (wiring: DeliveryWiring) => DeliveryEngine {
  return (wiring) => new DeliveryEngine({ ...options, ...wiring });
}
