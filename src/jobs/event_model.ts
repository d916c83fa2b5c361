/**
 * Events (docs/endpoints.md, "Events and fan-out"): what an event is, the fan-out it makes, and
 * the ids of its jobs. Plain data and pure functions (no I/O, no clocks, no randomness).
 *
 * An event is one replicated record (`event`, job_model.ts) that carries the event and, for
 * each endpoint it fans out to, what that endpoint's job is made of, resolved by the node that
 * took the event from its own endpoint table. Every replica derives the same jobs from it
 * (`eventJobSpec`, event_table.ts), so the event and all its jobs are stored by one record: a
 * replica holds all of them or none, and one proposal's majority makes all of them durable.
 */

import { createHash } from "node:crypto";
import type { EndpointState } from "./endpoint_model.ts";

/** Minted event ids are `evt_` and 32 hex digits; keyed ones `evt_k` and a hash of the key. */
export const EVENT_ID_PREFIX = "evt_";
export const KEYED_EVENT_ID_PREFIX = "evt_k";

/** Between an event's id and an endpoint's id in the id of the job it makes for it. */
export const EVENT_JOB_SEPARATOR = ".";

/** The event as submitted: immutable once written. */
export interface EventSpec {
  readonly id: string;
  /** The event type the fan-out matched (`invoice.paid`). */
  readonly type: string;
  /** The body every job of the event delivers. */
  readonly payload: string;
  /** Wall-clock epoch ms at the node that took it. */
  readonly submittedAtMs: number;
  readonly idempotencyKey?: string;
  /** Hash of what the client sent (keyed events only; "" otherwise), as a keyed job's. */
  readonly bodyHash: string;
}

/** One endpoint's job of an event: the endpoint's values as they were when it was submitted. */
export interface FanoutJob {
  readonly endpointId: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** `whsec_` secrets; empty: unsigned. */
  readonly secrets: readonly string[];
  /** Per-attempt timeout, ms; 0: the node's default. */
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  /**
   * The endpoint was ordered when the event was submitted: the job is attempted only as the
   * head of the endpoint's queue, by the endpoint's owner (docs/replication.md, "Ordered
   * endpoints"). Absent: unordered.
   */
  readonly ordered?: true;
}

/** What an `event` record carries: the event and its fan-out, in endpoint id order. */
export interface EventBody {
  readonly event: EventSpec;
  readonly jobs: readonly FanoutJob[];
}

/** The id of the job event `eventId` makes for endpoint `endpointId`. */
export function eventJobId(eventId: string, endpointId: string): string {
  return eventId + EVENT_JOB_SEPARATOR + endpointId;
}

/** The event a job id belongs to, or undefined for a job submitted on its own. */
export function eventIdOfJob(jobId: string): string | undefined {
  const at = jobId.indexOf(EVENT_JOB_SEPARATOR);
  return at > 0 && jobId.startsWith(EVENT_ID_PREFIX) ? jobId.slice(0, at) : undefined;
}

/** The endpoint an event's job delivers to, or undefined for a job submitted on its own. */
export function endpointOfJob(jobId: string): string | undefined {
  const eventId = eventIdOfJob(jobId);
  return eventId === undefined
    ? undefined
    : jobId.slice(eventId.length + EVENT_JOB_SEPARATOR.length);
}

/** Whether an endpoint takes events of `type`: live, enabled, and subscribed to it (or to all). */
export function subscribes(endpoint: EndpointState, type: string): boolean {
  return !endpoint.deleted && !endpoint.disabled &&
    (endpoint.eventTypes.length === 0 || endpoint.eventTypes.includes(type));
}

/** The endpoints an event of `type` fans out to, in id order (every replica lists them alike). */
export function fanoutOf(endpoints: Iterable<EndpointState>, type: string): EndpointState[] {
  const out: EndpointState[] = [];
  for (const e of endpoints) if (subscribes(e, type)) out.push(e);
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The id of the incarnation of an event's idempotency `key` first submitted in `epoch`, as
 * `keyedJobId` (keyed_id.ts) for jobs, under its own prefix so an event and a job keyed alike
 * never share an id.
 */
export function keyedEventId(key: string, epoch: number): string {
  return KEYED_EVENT_ID_PREFIX +
    createHash("sha256").update(`event\u0000${epoch}\u0000${key}`).digest("hex").slice(0, 32);
}

/** The hash of what a client sent for a keyed event: a retry must carry the same. */
export function eventBodyHash(type: string, payload: string): string {
  return createHash("sha256").update(JSON.stringify(["event", type, payload])).digest("hex")
    .slice(0, 32);
}
