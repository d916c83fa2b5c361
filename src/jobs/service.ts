/**
 * What a node's job store offers the layers above it (the HTTP API, the CLI, the dashboard):
 * the `JobService` interface and the plain data it speaks. The replicated store implements it
 * (src/jobs/job_store.ts); API tests may implement it in memory.
 *
 * Owns types only; no behaviour, no I/O. Times are wall-clock epoch milliseconds.
 */

/** One job as a client submits it (delivery/types.ts; checked by delivery/submit_validation.ts). */
import type { SubmitRequest } from "../delivery/types.ts";
export type { SubmitRequest };
import type { DisabledReason, EndpointFields } from "./endpoint_model.ts";
import type { EndpointHealthView } from "./endpoint_attempt_stats.ts";
export type { DisabledReason, EndpointFields };

/** Why a submit (or a retry by hand) was refused. */
export type RefusalCode =
  /** No majority of the configured voters answered in time: 503 + Retry-After. */
  | "no_quorum"
  /** A bounded queue is full (replication, WAL, delivery): 503 + Retry-After. */
  | "overloaded"
  /** This node is recovering or catching up and takes no submits yet: 503 + Retry-After. */
  | "not_ready"
  /** This node's WAL failed (fail-stop): 503; another node must take the submit. */
  | "storage_failed"
  /** The node is shutting down: 503 + Retry-After. */
  | "shutting_down"
  /** The idempotency key was used with a different body: 409. */
  | "idempotency_conflict"
  /** The request is valid JSON but not an acceptable job: 400 (names `field`). */
  | "invalid"
  /** No such job (or, for a retry, none held here with its spec): 404. */
  | "not_found"
  /**
   * A retry by hand of a job that is not a dead letter (pending, being delivered, or
   * delivered): 409, the message says which.
   */
  | "not_dead_letter";

export interface Refusal {
  readonly ok: false;
  readonly code: RefusalCode;
  readonly message: string;
  /** The offending request field, for `invalid`. */
  readonly field?: string;
  /** Seconds a client should wait before trying again, for the 503 codes. */
  readonly retryAfterS?: number;
}

export type SubmitOutcome =
  | {
    readonly ok: true;
    readonly id: string;
    /** True when an idempotency key matched an earlier accepted submit. */
    readonly existing: boolean;
  }
  | Refusal;

export type JobState =
  /** Accepted; waiting for its first attempt or for a retry. */
  | "pending"
  /** An attempt is in flight. */
  | "delivering"
  /** A receiver answered 2xx. */
  | "delivered"
  /** The retry policy gave up (or the job could never succeed): a dead letter. */
  | "dead";

export interface AttemptView {
  /** 1-based, numbered across manual retries: a retry continues the count. */
  readonly attempt: number;
  /** The round it belongs to: 0 for the job's own attempts, n for the n-th manual retry. */
  readonly retry: number;
  /** When it started, epoch ms. */
  readonly startedAtMs: number;
  readonly latencyMs: number;
  /**
   * One of ATTEMPT_OUTCOMES (delivery/types.ts); typed as text, as a client reads it, since a
   * newer node may add one.
   */
  readonly outcome: string;
  /** HTTP status, when the receiver answered. */
  readonly status?: number;
  /** Error message or the first bytes of the response body. */
  readonly detail: string;
  /** The node that made the attempt. */
  readonly node: string;
}

export interface JobView {
  readonly id: string;
  readonly state: JobState;
  readonly url: string;
  readonly submittedAtMs: number;
  /** When it was delivered or dead-lettered. */
  readonly finishedAtMs?: number;
  /** Attempts in the current round (since the latest manual retry); out of `maxAttempts`. */
  readonly attemptsMade: number;
  /** Attempt budget of each round: a manual retry gets a fresh one. */
  readonly maxAttempts: number;
  /** Manual retries of this job so far: the current round (0: never retried). */
  readonly retry: number;
  /** Attempts in all rounds (what the attempts' numbers count up to). */
  readonly attemptsTotal: number;
  /** When the next attempt is due, for pending jobs. */
  readonly nextAttemptAtMs?: number;
  /** The node that delivers it, as this node's membership view says. */
  readonly owner: string;
  /** Why it is dead, for dead letters. */
  readonly deadReason?: string;
  /** Newest last; bounded (the oldest are dropped). */
  readonly attempts: readonly AttemptView[];
  /** Its payload, while the node still holds it (dropped once delivered). */
  readonly payload?: string;
  readonly idempotencyKey?: string;
}

export interface DeadLetterPage {
  readonly items: readonly JobView[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  readonly nextCursor?: string;
}

export type MemberStateView = "alive" | "suspect" | "dead" | "left";

export interface MemberView {
  readonly nodeId: string;
  /** Transport (UDP) address. */
  readonly address: string;
  readonly state: MemberStateView;
  readonly incarnation: number;
  /** Whether it is one of the configured voters. */
  readonly voter: boolean;
}

export interface ClusterView {
  readonly nodeId: string;
  readonly address: string;
  /** Configured voters (the peer list and this node). */
  readonly voters: number;
  /** Voters needed for a majority: floor(voters / 2) + 1. */
  readonly quorum: number;
  /** Voters this node does not hold dead (itself included). */
  readonly votersReachable: number;
  /** recovering | catching_up | ready | shutting_down | failed */
  readonly role: string;
  readonly members: readonly MemberView[];
  readonly jobs: Readonly<Record<JobState, number>>;
}

export interface ReadinessCheck {
  readonly name: "recovered" | "caught_up" | "quorum" | "wal";
  readonly ok: boolean;
  readonly detail: string;
}

export interface Readiness {
  readonly ready: boolean;
  readonly checks: readonly ReadinessCheck[];
}

/** An endpoint as the API shows it (docs/endpoints.md). */
export interface EndpointView extends EndpointFields {
  readonly id: string;
  /** When it was created, epoch ms (at the node that took the create). */
  readonly createdAtMs: number;
  /** Its value's version time, epoch ms: when the write that made it was taken. */
  readonly updatedAtMs: number;
  /** The secret the last rotation replaced, while deliveries are still signed under it. */
  readonly previousSecret?: string;
  /** Until when (epoch ms) `previousSecret` signs; absent with it. */
  readonly previousSecretUntilMs?: number;
  /** The latest delivery an owner recorded (epoch ms); absent before the first. */
  readonly lastSuccessAtMs?: number;
}

/** `POST /v1/endpoints/{id}/recover`'s answer: the dead jobs revived, or why none was. */
export type RecoverOutcome =
  | {
    readonly ok: true;
    /** Dead jobs of the endpoint revived (a REVIVE each, durable on a majority). */
    readonly recovered: number;
    /** Revives refused (no majority in time, overloaded): those jobs stay dead. */
    readonly failed: number;
  }
  | Refusal;

/** An endpoint write durable on a majority (with the value written), or why not. */
export type EndpointOutcome = { readonly ok: true; readonly endpoint: EndpointView } | Refusal;

/** A create's `Idempotency-Key`, and whether the client chose the secret (or it was generated). */
export interface EndpointCreateKey {
  readonly idempotencyKey: string;
  readonly secretGiven: boolean;
}

export interface EndpointPage {
  readonly items: readonly EndpointView[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  readonly nextCursor?: string;
}

/**
 * An endpoint as the dashboard shows it (`GET /v1/endpoint-health`): its settings without its
 * secret and without its headers' values (a header often carries the receiver's credentials;
 * their names are shown), its recent attempts as this node knows them, and, for an ordered
 * endpoint, the pending jobs this node holds for it in its queue.
 */
export interface EndpointHealthItem {
  readonly id: string;
  readonly url: string;
  readonly description: string;
  readonly eventTypes: readonly string[];
  readonly headerNames: readonly string[];
  readonly rateLimitPerS: number;
  readonly ordered: boolean;
  readonly disabled: boolean;
  /** "" when enabled; "manual", "gone" or "failing" otherwise. */
  readonly disabledReason: string;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  readonly health: EndpointHealthView;
  /** Ordered endpoints only: its pending jobs held here, in its queue (0: none). */
  readonly backlog?: number;
}

export interface EndpointHealthPage {
  /** How far back `health.attempts` and `health.failures` reach, ms. */
  readonly windowMs: number;
  readonly items: readonly EndpointHealthItem[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  readonly nextCursor?: string;
}

/** An event to fan out (docs/endpoints.md): validated by the API before it gets here. */
export interface EventRequest {
  /** The event type endpoints subscribe to (`invoice.paid`). */
  readonly type: string;
  /** The body every job delivers, as given (a JSON text). */
  readonly payload: string;
  readonly idempotencyKey?: string;
}

export type EventOutcome =
  | {
    readonly ok: true;
    readonly id: string;
    readonly type: string;
    /** Jobs the event fanned out to (0: no endpoint took it; the event is still recorded). */
    readonly jobs: number;
    /** True when an idempotency key matched an earlier accepted event. */
    readonly existing: boolean;
  }
  | Refusal;

/** One job of an event, as `GET /v1/events/{id}` shows it. */
export interface EventJobView {
  readonly endpointId: string;
  readonly jobId: string;
  /** Absent when this node no longer holds the job (finished and compacted). */
  readonly state?: JobState;
  readonly attemptsTotal: number;
  readonly attempts: readonly AttemptView[];
}

export interface EventView {
  readonly id: string;
  readonly type: string;
  readonly payload: string;
  /** When it was submitted, epoch ms (at the node that took it). */
  readonly createdAtMs: number;
  readonly jobs: readonly EventJobView[];
}

export interface JobService {
  /** Resolves once the job is durable on a majority, or with a refusal (never hangs). */
  submit(request: SubmitRequest): Promise<SubmitOutcome>;
  /** Many submits sharing fsyncs and datagrams; one outcome per request, in order. */
  submitBatch(requests: readonly SubmitRequest[]): Promise<SubmitOutcome[]>;
  /** A job from this node's table, or from a peer when this node does not hold it. */
  getJob(id: string): Promise<JobView | undefined>;
  /** The newest jobs this node holds, newest first. */
  recentJobs(limit: number): readonly JobView[];
  /** Dead letters, oldest first, `limit` per page. */
  listDeadLetters(limit: number, cursor?: string): DeadLetterPage;
  /** Retries a dead letter by hand (attempts start again from 1). */
  retryDeadLetter(id: string): Promise<{ readonly ok: true } | Refusal>;
  cluster(): ClusterView;
  readiness(): Readiness;
  /** Creates an endpoint; resolves once it is durable on a majority, or with a refusal. */
  /**
   * With `key`, a retry names the endpoint the key made (docs/endpoints.md, "Idempotent
   * creates"): the same body gets it (201 again), another body `idempotency_conflict`.
   */
  createEndpoint(fields: EndpointFields, key?: EndpointCreateKey): Promise<EndpointOutcome>;
  /** Changes the fields given; `not_found` for an endpoint this node does not hold. */
  updateEndpoint(id: string, patch: Partial<EndpointFields>): Promise<EndpointOutcome>;
  /** Deletes an endpoint (a tombstone, majority-durable before it resolves). */
  deleteEndpoint(id: string): Promise<EndpointOutcome>;
  /**
   * A new signing secret (`secret`, minted by the API when the client gave none); the old
   * one keeps signing for the rotation overlap. A write like `updateEndpoint`.
   */
  rotateEndpointSecret(id: string, secret: string): Promise<EndpointOutcome>;
  /**
   * Revives every dead job of the endpoint whose event was submitted at or after `sinceMs`,
   * in event order; `not_found` for an endpoint this node does not hold.
   */
  recoverEndpoint(id: string, sinceMs: number): Promise<RecoverOutcome>;
  /** An endpoint from this node's table (every node holds every endpoint). */
  getEndpoint(id: string): EndpointView | undefined;
  /**
   * An endpoint as a majority of the voters holds it (a client's GET): the newest value any
   * of them has, so a write acknowledged through another node is seen. undefined: a majority
   * holds no such endpoint (or its tombstone); a refusal: no majority answered in time.
   */
  readEndpoint(id: string): Promise<EndpointView | undefined | Refusal>;
  /** Endpoints in id order, `limit` per page. */
  listEndpoints(limit: number, cursor?: string): EndpointPage;
  /** Endpoints in id order with their health here, no secrets (the dashboard's read). */
  endpointHealth(limit: number, cursor?: string): EndpointHealthPage;
  /**
   * Fans an event out to the endpoints that take its type, all its jobs durable on a majority
   * together before it resolves, or refused (never hangs).
   */
  submitEvent(request: EventRequest): Promise<EventOutcome>;
  /** An event this node holds, with its jobs' states; undefined if not held here. */
  getEvent(id: string): EventView | undefined;
}
