/**
 * The delivery engine's vocabulary: a job, one attempt's result and record, the outcome
 * reports the engine sends to its store, and the `DeliveryStore` interface the replicated job
 * store (a later issue) implements.
 *
 * Owns types only; no behaviour. Must not import I/O modules.
 *
 * Durability contract (what the store must have persisted before what):
 * - `retry` report: durable BEFORE the next attempt of that job starts. The engine awaits
 *   `recordRetry` and only then arms the job's timer, so a new owner taking over after a crash
 *   never repeats more attempts than were counted, nor retries earlier than agreed.
 * - `dead` report: durable BEFORE the job is listed as a dead letter or revived by hand; the
 *   engine awaits it and forgets the job afterwards.
 * - `delivered` report: may be lost (fire and forget). Losing it costs one duplicate delivery
 *   with the same `webhook-id`, which receivers drop (at-least-once).
 * - Every report carries the record of the attempt that produced it ("attempt recorded"), so
 *   there is no separate attempt write. An attempt in flight when its owner crashes is simply
 *   not counted; the next owner repeats it.
 */

/** A job as the engine sees it. Immutable while the engine holds it. */
export interface DeliveryJob {
  /** Unique id, sent as `webhook-id` on every attempt so receivers can drop duplicates. */
  readonly id: string;
  /**
   * Sent as `webhook-id` instead of `id` when set: an event's jobs carry the event's id, the
   * same for every endpoint it fans out to (docs/endpoints.md).
   */
  readonly webhookId?: string;
  /** http(s) target. */
  readonly url: string;
  /** Request body, sent as UTF-8 and signed exactly as given. */
  readonly payload: string;
  /** Extra request headers (content-type defaults to application/json). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * `whsec_<base64>` signing secrets; during rotation several, each producing one signature in
   * the space-separated `webhook-signature` header. Empty: the request is not signed.
   */
  readonly secrets: readonly string[];
  /** Per-attempt timeout for this job, ms; capped at `attemptTimeoutMaxMs`. */
  readonly timeoutMs?: number;
  /** Attempts in all before the job is dead-lettered; absent: `jobs.maxAttemptsDefault`. */
  readonly maxAttempts?: number;
  /**
   * When the job was submitted (epoch ms, fractional allowed). Sent as `hookd-submitted-at` so a
   * sink can measure end-to-end latency; also the start of the delivery latency histogram.
   */
  readonly submittedAtMs?: number;
}

/** The `webhook-id` a job's attempts carry (and sign): its event's id, or its own. */
export function webhookIdOf(job: Pick<DeliveryJob, "id" | "webhookId">): string {
  return job.webhookId ?? job.id;
}

/**
 * The endpoint an event's job goes to, or undefined for a plain job. An event's job id is
 * `eventId + "." + endpointId` (`eventJobId`, src/jobs/event_model.ts) and its `webhookId` the
 * event id, so the endpoint is what follows the event id and its dot; a job without a
 * `webhookId` has none.
 */
export function endpointIdOf(job: Pick<DeliveryJob, "id" | "webhookId">): string | undefined {
  const eventId = job.webhookId;
  if (eventId === undefined) return undefined;
  const dot = eventId.length;
  if (job.id.length <= dot + 1 || job.id[dot] !== "." || !job.id.startsWith(eventId)) {
    return undefined;
  }
  return job.id.slice(dot + 1);
}

/** Where a job resumes when its store hands it over with attempts already made. */
export interface ResumeState {
  /** Attempts already made by earlier owners. */
  readonly attemptsMade: number;
  /** Epoch ms before which the next attempt must not start. */
  readonly nextAttemptAtMs: number;
}

/** What the transport observed for one attempt. */
export type AttemptResult =
  | {
    readonly kind: "response";
    readonly status: number;
    /** Raw `Retry-After` header, if any. */
    readonly retryAfter?: string;
    /** First `responseBodyBytesMax` bytes of the body, as text. */
    readonly body: string;
    readonly latencyMs: number;
  }
  | {
    readonly kind: "timeout";
    readonly latencyMs: number;
    /**
     * The transport keeps the request open past the timeout (`lateAnswerWaitMs`) and will
     * report what it gets through the request's `onLateAnswer`: the next attempt waits for it.
     */
    readonly listening?: boolean;
  }
  | { readonly kind: "network_error"; readonly message: string; readonly latencyMs: number }
  /** Refused before sending: bad scheme, private address with the guard on, payload too big. */
  | { readonly kind: "refused"; readonly message: string; readonly latencyMs: number };

/**
 * The outcomes an attempt can have: the one list the engine's classification, its metrics'
 * labels, the job's history, the WAL codec (by index: append only, never reorder) and the API
 * use.
 */
export const ATTEMPT_OUTCOMES = [
  "success",
  "gone",
  "http_error",
  "timeout",
  "network_error",
  "refused",
] as const;

/** Outcome label of an attempt, used in metrics and records. */
export type AttemptOutcome = typeof ATTEMPT_OUTCOMES[number];

/** One attempt, as kept in a job's history. */
export interface AttemptRecord {
  /** 1-based within its round (the retry policy's count): a manual retry starts again at 1. */
  readonly attempt: number;
  readonly startedAtMs: number;
  readonly latencyMs: number;
  readonly outcome: AttemptOutcome;
  readonly status?: number;
  /** Error message or truncated response body. */
  readonly detail: string;
}

/** The engine's outcome reports, in the order it emits them for one job. */
export type DeliveryReport =
  | {
    readonly kind: "delivered";
    readonly jobId: string;
    readonly attempt: AttemptRecord;
  }
  | {
    readonly kind: "retry";
    readonly jobId: string;
    readonly attempt: AttemptRecord;
    /** Attempts made so far (equals `attempt.attempt`). */
    readonly attemptsMade: number;
    /** Epoch ms at which the next attempt is due. */
    readonly nextAttemptAtMs: number;
  }
  | {
    readonly kind: "dead";
    readonly jobId: string;
    /** Absent when the job was refused before any attempt (bad URL, payload too large). */
    readonly attempt?: AttemptRecord;
    readonly attemptsMade: number;
    readonly reason: string;
  };

/** A dead letter as listed by the store. */
export interface DeadLetter {
  readonly job: DeliveryJob;
  readonly attemptsMade: number;
  readonly reason: string;
  readonly history: readonly AttemptRecord[];
}

/**
 * Where the engine's outcome reports go. The replicated job store implements this on the WAL;
 * `MemoryDeliveryStore` implements it in memory for tests and the bench.
 */
export interface DeliveryStore {
  /** Must be durable when the promise resolves; the next attempt starts only after. */
  recordRetry(report: Extract<DeliveryReport, { kind: "retry" }>): Promise<void>;
  /** Must be durable when the promise resolves; the job is then a dead letter. */
  recordDead(job: DeliveryJob, report: Extract<DeliveryReport, { kind: "dead" }>): Promise<void>;
  /** May be lost (costs a duplicate delivery); the engine does not wait for it. */
  recordDelivered(report: Extract<DeliveryReport, { kind: "delivered" }>): void;
  /** Dead letters, oldest first, at most `limit`. */
  listDead(limit: number): readonly DeadLetter[];
  /**
   * Takes a dead letter back for a manual retry: durably resets its attempt count and returns
   * the job, or undefined when no such dead letter exists.
   */
  reviveDead(jobId: string): Promise<DeliveryJob | undefined>;
}

/**
 * What the job store asks of the engine that delivers its jobs (`DeliveryEngine` has it): the
 * store hands it the jobs this node owns and takes them back, and reads what is in flight for
 * its views. The node builds the engine (src/node/node.ts); the store sees only this.
 */
export interface DeliveryScheduler {
  /**
   * The job became this node's to deliver (committed, or handed over with `resume`). Says no
   * (`ok: false`) when the engine is full or closed; the store offers the job again later.
   */
  schedule(job: DeliveryJob, resume?: ResumeState): { readonly ok: boolean };
  /** The job stopped being this node's; an attempt in flight finishes and is still reported. */
  cancel(jobId: string): void;
  /** Attempts in flight now. */
  readonly inflight: number;
  /** Whether an attempt of `jobId` is in flight now. */
  isInflight(jobId: string): boolean;
  /** Stops timers, aborts attempts in flight and waits for them to settle. */
  close(): Promise<void>;
  /**
   * An endpoint's rate limit or this node's share of it may have changed (an endpoint write
   * applied, a voter went down or came back): jobs held back by a limit are looked at again.
   */
  limitsChanged?(): void;
}

/**
 * What a job store gives the engine it is built with, once the store exists: itself, for the
 * engine's reports, and, when it watches for freezes, its freeze check (the engine's
 * `beforeStep`).
 */
export interface DeliveryWiring {
  readonly store: DeliveryStore;
  readonly beforeStep?: () => void;
  /**
   * This node's share of an endpoint's `rate_limit_per_s`, attempts per second (0: no limit),
   * read at every attempt of an event's job to it (`endpointIdOf`). The job store answers it
   * from its endpoint table and its view of the voters (docs/endpoints.md).
   */
  readonly rateLimitPerS?: (endpointId: string) => number;
  /**
   * The secrets an attempt of `job` is signed with, asked as each attempt starts: an event's
   * job is signed under its endpoint's secrets valid now (a rotation's new and, during the
   * overlap, old one; docs/endpoints.md), not those it was made with. Undefined: the job's own.
   */
  readonly secretsFor?: (job: DeliveryJob) => readonly string[] | undefined;
}

/** One job as a client submits it, checked by `validateSubmit`
 * (submit_validation.ts) on every path that takes one (HTTP API, UDP clients). */
export interface SubmitRequest {
  /** http(s) URL the job is POSTed to. */
  readonly url: string;
  /** Request body, exactly as it will be sent and signed (the API stores JSON text). */
  readonly payload: string;
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** `whsec_<base64>` signing secret; absent: requests are not signed. */
  readonly secret?: string;
  /** Attempts in all before the job is dead-lettered; absent: the node's default. */
  readonly maxAttempts?: number;
  /** Per-attempt timeout, ms; absent: the node's default. */
  readonly timeoutMs?: number;
  /**
   * Client-chosen key: the same key (with the same body) returns the same job id instead of a
   * second job, on any node, for the idempotency window; with another body it is a conflict.
   */
  readonly idempotencyKey?: string;
}
