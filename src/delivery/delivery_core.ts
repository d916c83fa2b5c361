/**
 * The delivery engine's sans-I/O core: which job to attempt next, when, and what follows each
 * attempt. Driven by (nowMs, input): `schedule`, `cancel`, `attemptDone`, `persisted`, `tick`;
 * it answers with outputs (`takeOutputs`: attempts to start, reports for the store) and the
 * time it next needs waking (`nextWakeMs`). The same core runs under real timers
 * (engine.ts) and under the simulator's virtual clock.
 *
 * Owns: the job table, the retry timer heap, per-origin ready queues, concurrency limits and
 * circuit breakers, and fairness between origins: a free slot goes to the origin with the
 * fewest attempts in flight, round-robin among equals. Round-robin alone was not enough: slow
 * origins keep their slots for seconds while a fast one hands its slot back at once, so the
 * slow ones collected every slot and a fast origin starved (32 deliveries in 10 s in the test
 * that now asserts thousands). Least-loaded-first keeps handing freed slots to the fast origin
 * until the shares even out. Must not do I/O, read clocks or
 * call Math.random.
 *
 * Also owns endpoint rate limits (docs/endpoints.md, "Rate limits across the cluster"): an
 * event's job whose endpoint has a limit (`rateOf`, read at every attempt, so a PATCH applies
 * to jobs already held) takes a token of that endpoint's bucket (rate_bucket.ts) as it leaves
 * its origin's queue. Without one it is held back in the endpoint's own queue: it takes no
 * slot, is not attempted (so nothing counts it as a failure), and one timer per endpoint puts
 * as many back in their origins' queues as the bucket has tokens when they come. Other
 * endpoints' jobs, on the same origin too, pass it by.
 *
 * Ordering contract with the shell: a `retry` report must be persisted (then `persisted()`
 * called) before the job's timer is armed, so no attempt starts before the store knows the
 * previous one failed. A `dead` report is likewise persisted by the shell before the job is
 * listed; `delivered` needs no acknowledgement.
 */

import type { DeliveryConfig } from "../config/delivery.ts";
import { type JobsConfig, jobsDefaults } from "../config/jobs.ts";
import { assert, fail } from "../lib/assert.ts";
import { MinHeap } from "../lib/min_heap.ts";
import { err, ok, type Result } from "../lib/result.ts";
import type { Rng } from "../lib/rng.ts";
import type { Gauge } from "../metrics/registry.ts";
import { type BreakerState, CircuitBreaker } from "./circuit_breaker.ts";
import { Fifo } from "./fifo.ts";
import { BREAKER_STATE_VALUE, type DeliveryMetrics } from "./metrics.ts";
import { classifyAttempt, decideRetry, isOriginFailure } from "./retry_policy.ts";
import { checkJob } from "./job_check.ts";
import { RateBucket } from "./rate_bucket.ts";
import {
  type AttemptRecord,
  type AttemptResult,
  type DeliveryJob,
  type DeliveryReport,
  endpointIdOf,
  type ResumeState,
} from "./types.ts";

export type DeliveryOutput =
  | {
    readonly type: "attempt";
    readonly job: DeliveryJob;
    /** 1-based attempt number. */
    readonly attempt: number;
    readonly timeoutMs: number;
  }
  | { readonly type: "report"; readonly job: DeliveryJob; readonly report: DeliveryReport };

/** One origin as the core holds it now (`DeliveryCore.originLoads`), for a node's dashboard. */
export interface OriginLoad {
  /** e.g. `https://receiver.example:8443` */
  readonly origin: string;
  readonly inflight: number;
  /** Jobs the engine holds for it, in any phase (waiting, queued, in flight, persisting). */
  readonly jobsHeld: number;
  readonly breaker: BreakerState;
  /** When an open breaker next lets a trial through (epoch ms); only while `open`. */
  readonly reopenAtMs?: number;
}

/** `limited`: due, but held back in its endpoint's queue by the endpoint's rate limit. */
type Phase = "waiting" | "ready" | "limited" | "inflight" | "persisting";

interface JobEntry {
  readonly job: DeliveryJob;
  readonly origin: OriginState;
  /** The endpoint of an event's job (`endpointIdOf`), whose rate limit applies to it. */
  readonly endpointId: string | undefined;
  /** Put back in its origin's queue by its endpoint's limit (counted in `released`). */
  released: boolean;
  readonly firstScheduledMs: number;
  attemptsMade: number;
  phase: Phase;
  dueMs: number;
  /** Matches the live heap item; older heap items for this job are stale. */
  timerSeq: number;
  /** Ownership moved away while an attempt or a store write was in flight. */
  cancelled: boolean;
  attemptStartedMs: number;
  isTrial: boolean;
  /**
   * Until when (epoch ms) the request of its last, timed-out attempt stays open for a late
   * answer (`lateAnswer`); 0 when none is open. The next attempt waits for that answer.
   */
  listeningUntilMs: number;
}

interface OriginState {
  readonly key: string;
  readonly breaker: CircuitBreaker;
  /** Queued entries; a cancelled one stays until shifted or compacted (`staleReady`). */
  ready: Fifo<JobEntry>;
  /** Entries in `ready` that were forgotten while queued. */
  staleReady: number;
  /**
   * Its breaker-state series, created the first time the breaker leaves `closed`: the
   * registry never forgets a series, so one per origin ever seen would grow without end.
   */
  gauge: Gauge | undefined;
  /** The breaker state last reported (BREAKER_STATE_VALUE). */
  breakerValue: number;
  inflight: number;
  /** Jobs held by the engine for this origin (any phase). */
  jobs: number;
  /** Seq of this origin's live item in the runnable heap; 0 when it has none. */
  runnableSeq: number;
  /** `inflight` when that item was pushed (its key); attempts ending since lower the truth. */
  runnableInflight: number;
}

/** An endpoint with a rate limit, while it holds jobs back or its bucket is not full. */
interface LimitState {
  readonly endpointId: string;
  readonly bucket: RateBucket;
  /** Jobs held back, in the order they came due; forgotten ones stay until shifted. */
  held: Fifo<JobEntry>;
  /** Entries in `held` still held (phase `limited`). */
  heldLive: number;
  /** Entries put back in their origins' queues that have not yet left them. */
  released: number;
  /** Seq of its live timer item (0: none) and when that item fires. */
  timerSeq: number;
  timerAtMs: number;
}

interface RunnableItem {
  readonly origin: OriginState;
  readonly inflight: number;
  readonly seq: number;
}

interface TimerItem {
  readonly atMs: number;
  readonly seq: number;
  readonly entry?: JobEntry;
  readonly origin?: OriginState;
  readonly limit?: LimitState;
}

export type CoreConfig =
  & Pick<
    DeliveryConfig,
    | "retryScheduleMs"
    | "retryJitterRatio"
    | "retryAfterMinMs"
    | "retryAfterMaxMs"
    | "attemptTimeoutMs"
    | "attemptTimeoutMaxMs"
    | "lateAnswerWaitMs"
    | "concurrentDeliveriesMax"
    | "originConcurrencyMax"
    | "rateLimitBurstMs"
    | "jobsMax"
    | "heldPayloadBytesMax"
    | "payloadBytesMax"
    | "jobHeadersBytesMax"
    | "responseBodyBytesMax"
    | "breakerFailureThreshold"
    | "breakerOpenMs"
    | "breakerOpenMaxMs"
  >
  // The one attempts default (config/jobs.ts) for a job that names none; the store's always do.
  & Partial<Pick<JobsConfig, "maxAttemptsDefault">>;

/** Stale runnable items tolerated beyond twice the origins held before a compaction. */
const RUNNABLE_COMPACT_MIN = 1_024;
/** Stale timer items tolerated beyond twice the jobs and origins held before a compaction. */
const STALE_COMPACT_MIN = 1_024;
/** Cancelled entries an origin's ready queue may hold (when half its length) before compaction. */
const READY_STALE_MIN = 64;

/** Memory a job's payload takes as V8 holds it: at most 2 bytes per UTF-16 unit. */
function heldBytes(job: DeliveryJob): number {
  return 2 * job.payload.length;
}

function timerLess(a: TimerItem, b: TimerItem): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}

/** Fewest attempts in flight first; among equals, first queued first (round-robin). */
function runnableLess(a: RunnableItem, b: RunnableItem): boolean {
  return a.inflight < b.inflight || (a.inflight === b.inflight && a.seq < b.seq);
}

/** Reads the state through a call so the type checker does not keep an earlier narrowing. */
function stateOf(breaker: CircuitBreaker): BreakerState {
  return breaker.state;
}

/**
 * Driven like every core (docs/architecture.md, "Driving a core"): inputs by named methods
 * (`schedule`, `cancel`, `attemptDone`, `persisted`, each taking `nowMs`); `tick(nowMs)`;
 * `takeOutputs()` for its `DeliveryOutput`s; `nextWakeMs()` for the next tick (Infinity: none).
 */
export class DeliveryCore {
  readonly #config: CoreConfig;
  readonly #rng: Rng;
  readonly #metrics: DeliveryMetrics;
  readonly #jobs = new Map<string, JobEntry>();
  /**
   * Requests of timed-out attempts still open for a late answer, of jobs that left the engine
   * meanwhile: job id → until when (ms) the request may still be answered. A job scheduled
   * again takes its deadline over, so it does not reach the receiver a second time while the
   * first request may still be handled (simulator seed 504). At most the transport's
   * listeningMax entries, each dropped by its `lateAnswer` (answer or give-up).
   */
  readonly #openRequests = new Map<string, number>();
  readonly #origins = new Map<string, OriginState>();
  /** Endpoints with a rate limit that hold jobs back or whose bucket is not yet full. */
  readonly #limits = new Map<string, LimitState>();
  /** This node's share of an endpoint's rate limit, attempts per second; 0: none. */
  readonly #rateOf: (endpointId: string) => number;
  #runnable = new MinHeap<RunnableItem>(runnableLess);
  #timers = new MinHeap<TimerItem>(timerLess);
  #outputs: DeliveryOutput[] = [];
  #inflight = 0;
  #seq = 0;
  #breakersNotClosed = 0;
  #heldPayloadBytes = 0;

  /**
   * `rateOf`: this node's share of an endpoint's `rate_limit_per_s`, attempts per second (0:
   * none), read at every attempt of an event's job. @default no limits
   */
  constructor(
    config: CoreConfig,
    rng: Rng,
    metrics: DeliveryMetrics,
    rateOf: (endpointId: string) => number = () => 0,
  ) {
    this.#config = config;
    this.#rng = rng;
    this.#metrics = metrics;
    this.#rateOf = rateOf;
  }

  /** Jobs held (any phase). */
  get jobCount(): number {
    return this.#jobs.size;
  }

  /** Attempts in flight on this node. */
  get inflight(): number {
    return this.#inflight;
  }

  /**
   * Items in the core's queues (timer heap, runnable heap, ready queues), stale ones included.
   * O(origins); for tests that check cancelled jobs do not pile up.
   */
  get queuedItems(): number {
    let ready = 0;
    for (const origin of this.#origins.values()) ready += origin.ready.size;
    return this.#timers.size + this.#runnable.size + ready;
  }

  /** Jobs of `endpointId` held back by its rate limit now. */
  limitedCount(endpointId: string): number {
    return this.#limits.get(endpointId)?.heldLive ?? 0;
  }

  /** Attempts in flight to `origin` (e.g. `http://127.0.0.1:8080`). */
  originInflight(origin: string): number {
    return this.#origins.get(origin)?.inflight ?? 0;
  }

  breakerState(origin: string): "closed" | "open" | "half_open" {
    return this.#origins.get(origin)?.breaker.state ?? "closed";
  }

  /**
   * Every origin held now (read-only; O(origins), and origins with nothing held are dropped,
   * so this is bounded by the jobs held).
   */
  originLoads(): OriginLoad[] {
    const out: OriginLoad[] = [];
    for (const o of this.#origins.values()) {
      const breaker = o.breaker.state;
      out.push({
        origin: o.key,
        inflight: o.inflight,
        jobsHeld: o.jobs,
        breaker,
        ...(breaker === "open" ? { reopenAtMs: o.breaker.reopenAtMs } : {}),
      });
    }
    return out;
  }

  isInflight(jobId: string): boolean {
    return this.#jobs.get(jobId)?.phase === "inflight";
  }

  has(jobId: string): boolean {
    const entry = this.#jobs.get(jobId);
    return entry !== undefined && !entry.cancelled;
  }

  /** Outputs produced since the last call, in order. */
  takeOutputs(): DeliveryOutput[] {
    const out = this.#outputs;
    this.#outputs = [];
    return out;
  }

  /**
   * The job became this node's to deliver. Idempotent for a job already held. A job that can
   * never be delivered (see job_check.ts: bad URL, id, headers, secrets, payload too large), or
   * that is handed over with its attempts already used up, becomes a `dead` report at once.
   * Says no (error value) when the engine already holds `jobsMax` jobs or `heldPayloadBytesMax`
   * of payloads; the store offers the job again later.
   */
  schedule(nowMs: number, job: DeliveryJob, resume?: ResumeState): Result<void> {
    const existing = this.#jobs.get(job.id);
    if (existing !== undefined) {
      existing.cancelled = false;
      return ok(undefined);
    }
    if (this.#jobs.size >= this.#config.jobsMax) {
      this.#metrics.rejectedFull.inc();
      return err(`delivery engine full: it holds jobsMax (${this.#config.jobsMax}) jobs`);
    }
    if (this.#heldPayloadBytes + heldBytes(job) > this.#config.heldPayloadBytesMax) {
      this.#metrics.rejectedFull.inc();
      return err(
        `delivery engine full: it holds heldPayloadBytesMax (${this.#config.heldPayloadBytesMax}) ` +
          "bytes of payloads",
      );
    }
    const attemptsMade = resume?.attemptsMade ?? 0;
    const check = checkJob(job, this.#config);
    const refusal = !check.ok
      ? `refused: ${check.reason}`
      : attemptsMade >= this.#attemptsMax(job)
      ? `${attemptsMade} attempts already made (maxAttempts ${this.#attemptsMax(job)})`
      : undefined;
    if (refusal !== undefined) {
      this.#metrics.deadLetters.inc();
      this.#outputs.push({
        type: "report",
        job,
        report: { kind: "dead", jobId: job.id, attemptsMade, reason: refusal },
      });
      return ok(undefined);
    }
    const origin = this.#origin(new URL(job.url).origin);
    const entry: JobEntry = {
      job,
      origin,
      endpointId: endpointIdOf(job),
      released: false,
      firstScheduledMs: nowMs,
      attemptsMade,
      phase: "waiting",
      dueMs: resume?.nextAttemptAtMs ?? nowMs,
      timerSeq: 0,
      cancelled: false,
      attemptStartedMs: 0,
      isTrial: false,
      listeningUntilMs: this.#openRequests.get(job.id) ?? 0,
    };
    this.#openRequests.delete(job.id);
    this.#jobs.set(job.id, entry);
    this.#heldPayloadBytes += heldBytes(job);
    origin.jobs++;
    this.#metrics.jobs.set(this.#jobs.size);
    this.#wait(nowMs, entry);
    this.#pump(nowMs);
    return ok(undefined);
  }

  /**
   * The job stopped being this node's. A waiting or queued job is dropped at once; an attempt
   * in flight finishes and its outcome is still reported, but nothing follows it.
   * Returns whether the engine held the job.
   */
  cancel(_nowMs: number, jobId: string): boolean {
    const entry = this.#jobs.get(jobId);
    if (entry === undefined) return false;
    if (entry.phase === "waiting" || entry.phase === "ready" || entry.phase === "limited") {
      this.#forget(entry);
    } else {
      entry.cancelled = true;
    }
    return true;
  }

  /** Virtual or real time passed: start what became due. */
  tick(nowMs: number): void {
    for (;;) {
      const top = this.#timers.peek();
      if (top === undefined || top.atMs > nowMs) break;
      this.#timers.pop();
      if (this.#isStaleTimer(top)) continue;
      if (top.entry !== undefined) {
        this.#makeReady(nowMs, top.entry);
      } else if (top.origin !== undefined) {
        const origin = top.origin;
        // canStart moves open → half-open; the gauge follows.
        origin.breaker.canStart(nowMs);
        this.#updateBreakerGauge(origin);
        this.#markRunnable(nowMs, origin);
        this.#maybeDropOrigin(origin);
      } else if (top.limit !== undefined) {
        this.#limitDue(nowMs, top.limit);
      }
    }
    this.#pump(nowMs);
  }

  /**
   * Endpoints' limits or this node's shares may have changed (the shell calls this when an
   * endpoint write is applied or a voter went down or came back): each endpoint holding jobs
   * back reads its rate again, and what it may now start starts.
   */
  limitsChanged(nowMs: number): void {
    for (const limit of [...this.#limits.values()]) {
      if (limit.heldLive > 0) this.#limitDue(nowMs, limit);
    }
    this.tick(nowMs);
  }

  /** When the core next needs `tick` (epoch ms), or Infinity when nothing waits on time. */
  nextWakeMs(): number {
    for (;;) {
      const top = this.#timers.peek();
      if (top === undefined) return Infinity;
      if (!this.#isStaleTimer(top)) return top.atMs;
      this.#timers.pop();
    }
  }

  /** An attempt started by an `attempt` output ended. */
  attemptDone(nowMs: number, jobId: string, result: AttemptResult): void {
    const entry = this.#jobs.get(jobId);
    if (!(entry !== undefined && entry.phase === "inflight")) {
      fail(`attemptDone: ${jobId} not in flight`);
    }
    const origin = entry.origin;
    origin.inflight--;
    this.#inflight--;
    this.#metrics.inflight.set(this.#inflight);
    const wasOpen = origin.breaker.state === "open";
    // A timeout shorter than the node's default says more about the job's own setting than
    // about the receiver: it must not open the breaker on everyone else's jobs to that origin.
    const ownShortTimeout = result.kind === "timeout" &&
      this.#timeoutMs(entry.job) < this.#config.attemptTimeoutMs;
    origin.breaker.onResult(nowMs, isOriginFailure(result) && !ownShortTimeout, entry.isTrial);
    if (!wasOpen && stateOf(origin.breaker) === "open") {
      this.#pushTimer({ atMs: origin.breaker.reopenAtMs, seq: ++this.#seq, origin });
    }
    this.#updateBreakerGauge(origin);

    entry.listeningUntilMs = result.kind === "timeout" && result.listening === true
      ? nowMs + this.#config.lateAnswerWaitMs
      : 0;
    const outcome = classifyAttempt(result);
    this.#metrics.attempts[outcome].inc();
    this.#metrics.attemptLatencyMs.record(result.latencyMs);
    const record: AttemptRecord = {
      attempt: entry.attemptsMade,
      startedAtMs: entry.attemptStartedMs,
      latencyMs: result.latencyMs,
      outcome,
      ...(result.kind === "response" ? { status: result.status } : {}),
      detail: result.kind === "response"
        ? result.body.slice(0, this.#config.responseBodyBytesMax)
        : result.kind === "timeout"
        ? `timed out after ${Math.round(result.latencyMs)} ms`
        : result.message,
    };
    const policy = { ...this.#config, attemptsMax: this.#attemptsMax(entry.job) };
    const decision = decideRetry(policy, result, entry.attemptsMade, nowMs, this.#rng);
    switch (decision.kind) {
      case "delivered":
        this.#metrics.delivered.inc();
        this.#metrics.deliveryLatencyMs.record(
          nowMs - (entry.job.submittedAtMs ?? entry.firstScheduledMs),
        );
        this.#forget(entry);
        this.#outputs.push({
          type: "report",
          job: entry.job,
          report: { kind: "delivered", jobId, attempt: record },
        });
        break;
      case "dead":
        this.#metrics.deadLetters.inc();
        this.#forget(entry);
        this.#outputs.push({
          type: "report",
          job: entry.job,
          report: {
            kind: "dead",
            jobId,
            attempt: record,
            attemptsMade: entry.attemptsMade,
            reason: decision.reason,
          },
        });
        break;
      case "retry":
        this.#metrics.retriesScheduled.inc();
        entry.phase = "persisting";
        entry.dueMs = nowMs + decision.delayMs;
        this.#outputs.push({
          type: "report",
          job: entry.job,
          report: {
            kind: "retry",
            jobId,
            attempt: record,
            attemptsMade: entry.attemptsMade,
            nextAttemptAtMs: entry.dueMs,
          },
        });
        break;
    }
    this.#markRunnable(nowMs, origin);
    this.#maybeDropOrigin(origin);
    this.#pump(nowMs);
  }

  /**
   * The answer to a timed-out attempt's request came after all (`listening` timeout), or the
   * transport gave up on it. A 2xx ends the job: it is reported delivered instead of being
   * attempted again (the retry record already written only counted the attempt), also when the
   * job left the engine meanwhile (ownership moved: the store's DONE then stops whoever holds
   * it) or another attempt of it is in flight (its outcome follows; nothing comes after it).
   * Anything else lets the job's retry go ahead when due.
   */
  lateAnswer(nowMs: number, job: DeliveryJob, attempt: number, result: AttemptResult): void {
    this.#openRequests.delete(job.id);
    const entry = this.#jobs.get(job.id);
    const held = entry !== undefined && entry.listeningUntilMs !== 0 && entry.phase !== "inflight";
    if (held) entry.listeningUntilMs = 0;
    if (result.kind === "response" && result.status >= 200 && result.status < 300) {
      this.#metrics.lateAnswers.inc();
      this.#metrics.delivered.inc();
      const record: AttemptRecord = {
        attempt,
        startedAtMs: nowMs - result.latencyMs,
        latencyMs: result.latencyMs,
        outcome: "success",
        status: result.status,
        detail: result.body.slice(0, this.#config.responseBodyBytesMax),
      };
      this.#outputs.push({
        type: "report",
        job,
        report: { kind: "delivered", jobId: job.id, attempt: record },
      });
      if (entry !== undefined) {
        // A retry record still being written, or another attempt in flight, ends with it.
        if (entry.phase === "persisting" || entry.phase === "inflight") entry.cancelled = true;
        else this.#forget(entry);
      }
    } else if (held && entry.phase === "waiting") {
      this.#wait(nowMs, entry);
    }
    this.#pump(nowMs);
  }

  /**
   * The store made a `retry` report durable (`durable`), or failed to (the job is dropped from
   * the engine: without a durable record a retry could repeat uncounted; the store re-offers it).
   */
  persisted(nowMs: number, jobId: string, durable: boolean): void {
    const entry = this.#jobs.get(jobId);
    if (!(entry !== undefined && entry.phase === "persisting")) {
      fail(`persisted: ${jobId} not persisting`);
    }
    if (!durable) this.#metrics.storeFailures.inc();
    if (entry.cancelled || !durable) {
      this.#forget(entry);
      return;
    }
    this.#wait(nowMs, entry);
    this.#pump(nowMs);
  }

  #origin(key: string): OriginState {
    let origin = this.#origins.get(key);
    if (origin === undefined) {
      origin = {
        key,
        breaker: new CircuitBreaker({
          failureThreshold: this.#config.breakerFailureThreshold,
          openMs: this.#config.breakerOpenMs,
          openMaxMs: this.#config.breakerOpenMaxMs,
        }),
        ready: new Fifo(),
        staleReady: 0,
        gauge: undefined,
        breakerValue: BREAKER_STATE_VALUE.closed,
        inflight: 0,
        jobs: 0,
        runnableSeq: 0,
        runnableInflight: 0,
      };
      this.#origins.set(key, origin);
    }
    return origin;
  }

  /**
   * Pushes a timer item; first rebuilds the heap without stale items when they could
   * outnumber live ones (at most one per held job plus one per origin).
   */
  #pushTimer(item: TimerItem): void {
    const held = this.#jobs.size + this.#origins.size + this.#limits.size;
    if (this.#timers.size >= STALE_COMPACT_MIN + 2 * held) {
      const live = new MinHeap<TimerItem>(timerLess);
      for (let t = this.#timers.pop(); t !== undefined; t = this.#timers.pop()) {
        if (!this.#isStaleTimer(t)) live.push(t);
      }
      this.#timers = live;
    }
    this.#timers.push(item);
  }

  #isStaleTimer(top: TimerItem): boolean {
    const entry = top.entry;
    return entry !== undefined
      ? this.#jobs.get(entry.job.id) !== entry || entry.phase !== "waiting" ||
        entry.timerSeq !== top.seq
      : top.limit !== undefined
      ? this.#limits.get(top.limit.endpointId) !== top.limit || top.limit.timerSeq !== top.seq
      : this.#origins.get(top.origin!.key) !== top.origin;
  }

  /** Arms the job's timer, or queues it at once when it is already due. */
  #wait(nowMs: number, entry: JobEntry): void {
    if (entry.dueMs <= nowMs) {
      this.#makeReady(nowMs, entry);
      return;
    }
    entry.phase = "waiting";
    entry.timerSeq = ++this.#seq;
    this.#pushTimer({ atMs: entry.dueMs, seq: entry.timerSeq, entry });
  }

  #makeReady(nowMs: number, entry: JobEntry): void {
    if (entry.listeningUntilMs > nowMs) {
      // The last attempt's request is still open: a retry now would reach a receiver that
      // may be handling it, and deliver the job twice. Wait for its answer (`lateAnswer`),
      // at most until the transport gives up on it.
      entry.phase = "waiting";
      entry.timerSeq = ++this.#seq;
      this.#pushTimer({ atMs: entry.listeningUntilMs, seq: entry.timerSeq, entry });
      return;
    }
    const limit = entry.endpointId === undefined ? undefined : this.#limits.get(entry.endpointId);
    if (limit !== undefined && limit.heldLive > 0) {
      // Behind the ones its endpoint already holds back: they go first.
      this.#hold(limit, entry);
      return;
    }
    entry.phase = "ready";
    entry.origin.ready.push(entry);
    this.#markRunnable(nowMs, entry.origin);
  }

  #canRun(nowMs: number, origin: OriginState): boolean {
    return origin.ready.size > 0 && origin.inflight < this.#config.originConcurrencyMax &&
      origin.breaker.canStart(nowMs);
  }

  /**
   * Queues the origin for a slot, keyed by its attempts in flight. An origin already queued
   * under a higher count (an attempt ended since) is queued again under the lower one; the
   * old item goes stale and is skipped.
   */
  #markRunnable(nowMs: number, origin: OriginState): void {
    if (origin.runnableSeq !== 0 && origin.runnableInflight <= origin.inflight) return;
    if (!this.#canRun(nowMs, origin)) return;
    origin.runnableSeq = ++this.#seq;
    origin.runnableInflight = origin.inflight;
    this.#runnable.push({ origin, inflight: origin.inflight, seq: origin.runnableSeq });
    if (this.#runnable.size > RUNNABLE_COMPACT_MIN + 2 * this.#origins.size) {
      this.#compactRunnable();
    }
  }

  /** Drops stale items so the heap stays within a small multiple of the origins held. */
  #compactRunnable(): void {
    const live = new MinHeap<RunnableItem>(runnableLess);
    for (let item = this.#runnable.pop(); item !== undefined; item = this.#runnable.pop()) {
      if (item.seq === item.origin.runnableSeq) live.push(item);
    }
    this.#runnable = live;
  }

  /** Starts attempts while node slots are free, each to the least-loaded runnable origin. */
  #pump(nowMs: number): void {
    while (this.#inflight < this.#config.concurrentDeliveriesMax) {
      const item = this.#runnable.pop();
      if (item === undefined) break;
      const origin = item.origin;
      if (item.seq !== origin.runnableSeq) continue;
      origin.runnableSeq = 0;
      if (!this.#canRun(nowMs, origin)) continue;
      const entry = this.#nextReady(nowMs, origin);
      if (entry === undefined) {
        this.#maybeDropOrigin(origin);
        continue;
      }
      this.#start(nowMs, entry);
      this.#markRunnable(nowMs, origin);
    }
    this.#metrics.inflight.set(this.#inflight);
  }

  /**
   * The origin's next queued job that may start now: one whose endpoint has a rate limit and
   * no token left is held back in its endpoint's queue instead, and the next one is looked at.
   */
  #nextReady(nowMs: number, origin: OriginState): JobEntry | undefined {
    for (;;) {
      const entry = origin.ready.shift();
      if (entry === undefined) return undefined;
      if (this.#jobs.get(entry.job.id) !== entry || entry.phase !== "ready") {
        origin.staleReady--;
        continue;
      }
      const limit = this.#unreleased(entry);
      if (entry.endpointId === undefined) return entry;
      const ratePerS = this.#endpointRate(entry.endpointId);
      if (ratePerS === 0) return entry;
      const held = limit ?? this.#limit(nowMs, entry.endpointId, ratePerS);
      if (held.bucket.take(nowMs)) {
        this.#armLimit(held);
        return entry;
      }
      this.#hold(held, entry);
    }
  }

  /** Clears a released entry's mark as it leaves its origin's queue; returns its limit. */
  #unreleased(entry: JobEntry): LimitState | undefined {
    if (!entry.released) return undefined;
    entry.released = false;
    const limit = this.#limits.get(entry.endpointId!);
    assert(limit !== undefined && limit.released > 0, "released job without its limit");
    limit.released--;
    return limit;
  }

  /** The endpoint's rate for this node now, checked. */
  #endpointRate(endpointId: string): number {
    const ratePerS = this.#rateOf(endpointId);
    if (!(Number.isFinite(ratePerS) && ratePerS >= 0)) fail(`rate of ${endpointId}: ${ratePerS}`);
    return ratePerS;
  }

  /** The endpoint's limit state, made or brought to `ratePerS` (> 0). */
  #limit(nowMs: number, endpointId: string, ratePerS: number): LimitState {
    const burstMs = this.#config.rateLimitBurstMs;
    const existing = this.#limits.get(endpointId);
    if (existing !== undefined) {
      existing.bucket.setRate(nowMs, ratePerS, burstMs);
      return existing;
    }
    const limit: LimitState = {
      endpointId,
      bucket: new RateBucket(ratePerS, burstMs),
      held: new Fifo(),
      heldLive: 0,
      released: 0,
      timerSeq: 0,
      timerAtMs: Infinity,
    };
    this.#limits.set(endpointId, limit);
    return limit;
  }

  #hold(limit: LimitState, entry: JobEntry): void {
    entry.phase = "limited";
    limit.held.push(entry);
    limit.heldLive++;
    this.#armLimit(limit);
  }

  /**
   * Arms the endpoint's one timer: when its next token comes, if it holds jobs back and none
   * it put back is still queued (that one takes the token first, and re-arms it as it leaves);
   * else when its bucket is full again, to forget it. No timer while a put-back job is queued.
   */
  #armLimit(limit: LimitState): void {
    const atMs = limit.released > 0
      ? Infinity
      : limit.heldLive > 0
      ? limit.bucket.nextAllowedMs()
      : limit.bucket.fullAtMs();
    if (atMs === limit.timerAtMs && limit.timerSeq !== 0) return;
    limit.timerAtMs = atMs;
    limit.timerSeq = atMs === Infinity ? 0 : ++this.#seq;
    if (atMs !== Infinity) this.#pushTimer({ atMs, seq: limit.timerSeq, limit });
  }

  /** The endpoint's timer fired (or its rate may have changed): put back what may start. */
  #limitDue(nowMs: number, limit: LimitState): void {
    limit.timerSeq = 0;
    const ratePerS = this.#endpointRate(limit.endpointId);
    if (ratePerS > 0) limit.bucket.setRate(nowMs, ratePerS, this.#config.rateLimitBurstMs);
    if (limit.heldLive === 0 && limit.released === 0 && limit.bucket.fullAtMs() <= nowMs) {
      // A full bucket is a new one: nothing to remember.
      this.#limits.delete(limit.endpointId);
      return;
    }
    // No limit any more: every job held back goes. Else as many as there are tokens, less
    // those put back earlier and still queued.
    let free = ratePerS === 0 ? Infinity : limit.bucket.available(nowMs) - limit.released;
    while (free > 0) {
      const entry = limit.held.shift();
      if (entry === undefined) break;
      if (this.#jobs.get(entry.job.id) !== entry || entry.phase !== "limited") continue;
      limit.heldLive--;
      free--;
      entry.released = true;
      limit.released++;
      entry.phase = "ready";
      entry.origin.ready.push(entry);
      this.#markRunnable(nowMs, entry.origin);
    }
    this.#armLimit(limit);
  }

  #start(nowMs: number, entry: JobEntry): void {
    const origin = entry.origin;
    entry.isTrial = origin.breaker.onStart(nowMs);
    this.#updateBreakerGauge(origin);
    entry.phase = "inflight";
    entry.attemptsMade++;
    entry.attemptStartedMs = nowMs;
    origin.inflight++;
    this.#inflight++;
    assert(origin.inflight <= this.#config.originConcurrencyMax, "origin concurrency exceeded");
    assert(this.#inflight <= this.#config.concurrentDeliveriesMax, "node concurrency exceeded");
    this.#outputs.push({
      type: "attempt",
      job: entry.job,
      attempt: entry.attemptsMade,
      timeoutMs: this.#timeoutMs(entry.job),
    });
  }

  /** The job's per-attempt timeout: its own, capped, or the node's default. */
  /** A job's own attempt budget (the job store validates it) or `jobs.maxAttemptsDefault`. */
  #attemptsMax(job: DeliveryJob): number {
    return job.maxAttempts ?? this.#config.maxAttemptsDefault ?? jobsDefaults.maxAttemptsDefault;
  }

  #timeoutMs(job: DeliveryJob): number {
    return Math.min(
      job.timeoutMs ?? this.#config.attemptTimeoutMs,
      this.#config.attemptTimeoutMaxMs,
    );
  }

  #forget(entry: JobEntry): void {
    const deleted = this.#jobs.delete(entry.job.id);
    if (!deleted) fail(`forget: ${entry.job.id} not held`);
    if (entry.listeningUntilMs !== 0) this.#openRequests.set(entry.job.id, entry.listeningUntilMs);
    this.#heldPayloadBytes -= heldBytes(entry.job);
    assert(this.#heldPayloadBytes >= 0, "held payload bytes went negative");
    const origin = entry.origin;
    const limit = this.#unreleased(entry);
    if (limit !== undefined) this.#armLimit(limit);
    if (entry.phase === "limited") this.#forgetHeld(entry);
    if (entry.phase === "ready") {
      // Still queued behind a busy or open origin: compact before cancelled jobs (and their
      // payloads) pile up there under schedule/cancel churn.
      origin.staleReady++;
      if (origin.staleReady >= READY_STALE_MIN && 2 * origin.staleReady >= origin.ready.size) {
        const live = new Fifo<JobEntry>();
        for (let e = origin.ready.shift(); e !== undefined; e = origin.ready.shift()) {
          if (this.#jobs.get(e.job.id) === e && e.phase === "ready") live.push(e);
        }
        origin.ready = live;
        origin.staleReady = 0;
      }
    }
    // A forgotten waiting job leaves its timer item in the heap until due (hours, for a
    // retry); `#pushTimer` compacts before those pile up.
    origin.jobs--;
    assert(origin.jobs >= 0, "origin job count went negative");
    this.#metrics.jobs.set(this.#jobs.size);
    this.#maybeDropOrigin(origin);
  }

  /** A job held back by its endpoint's limit left the engine; compacts the endpoint's queue. */
  #forgetHeld(entry: JobEntry): void {
    const limit = this.#limits.get(entry.endpointId!);
    assert(limit !== undefined && limit.heldLive > 0, "held job without its limit");
    limit.heldLive--;
    const stale = limit.held.size - limit.heldLive;
    if (stale >= READY_STALE_MIN && 2 * stale >= limit.held.size) {
      const live = new Fifo<JobEntry>();
      for (let e = limit.held.shift(); e !== undefined; e = limit.held.shift()) {
        if (this.#jobs.get(e.job.id) === e && e.phase === "limited") live.push(e);
      }
      limit.held = live;
    }
    this.#armLimit(limit);
  }

  /** Forgets an origin with nothing held and nothing to remember (bounded origin table). */
  #maybeDropOrigin(origin: OriginState): void {
    if (origin.jobs > 0 || origin.inflight > 0 || origin.runnableSeq !== 0) return;
    if (this.#origins.get(origin.key) !== origin) return;
    // A breaker with no jobs left behind it protects nobody; its memory goes with the origin.
    if (origin.breakerValue !== BREAKER_STATE_VALUE.closed) this.#breakersNotClosed--;
    origin.gauge?.set(BREAKER_STATE_VALUE.closed);
    this.#metrics.breakersOpen.set(this.#breakersNotClosed);
    this.#origins.delete(origin.key);
  }

  #updateBreakerGauge(origin: OriginState): void {
    const value = BREAKER_STATE_VALUE[origin.breaker.state];
    const before = origin.breakerValue;
    if (value === before) return;
    if (before === BREAKER_STATE_VALUE.closed) this.#breakersNotClosed++;
    if (value === BREAKER_STATE_VALUE.closed) this.#breakersNotClosed--;
    origin.breakerValue = value;
    origin.gauge ??= this.#metrics.breakerGauge(origin.key);
    origin.gauge.set(value);
    assert(this.#breakersNotClosed >= 0, "breakers-open count went negative");
    this.#metrics.breakersOpen.set(this.#breakersNotClosed);
  }
}
