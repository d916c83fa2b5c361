/**
 * Endpoint limits: what one endpoint may hold (docs/endpoints.md). The API refuses an endpoint
 * past one (400 naming the field), the endpoint codec asserts them when it encodes and refuses
 * bytes past them when it decodes.
 *
 * Part of hookd's configuration (see src/config.ts). Like `JOB_LIMITS`, they are part of the
 * wire and WAL formats, so every node must agree on them: constants, not per-node options.
 * An endpoint's URL, headers and secret use `JOB_LIMITS`' bounds, since its jobs carry them.
 */
import { nonNegative, positiveInteger, relation } from "./checks.ts";

export const ENDPOINT_LIMITS = Object.freeze({
  /** Endpoint id, bytes: `ep_` and 24 hex digits are minted; this stops hostile bytes. */
  idBytesMax: 64,
  /** Event types one endpoint subscribes to: far above a product's event catalogue. */
  eventTypesMax: 256,
  /**
   * One event type, characters (printable ASCII without spaces, e.g. `invoice.paid`): Svix
   * allows 256; 128 is plenty and keeps a job's routing data small.
   */
  eventTypeCharsMax: 128,
  /** The free-text description, UTF-8 bytes. */
  descriptionBytesMax: 4096,
  /**
   * `rate_limit_per_s`, attempts per second, across the cluster. A receiver taking more than
   * this wants no limit (0).
   */
  rateLimitPerSMax: 100_000,
  /**
   * Endpoints one cluster holds (tombstones not counted); a create past it is refused. Every
   * node holds every endpoint in memory and walks them for a list page and for each event's
   * fan-out, so the bound keeps both small.
   */
  endpointsMax: 10_000,
  /**
   * One endpoint's value encoded (every field; the version's origin address not counted, so
   * every node measures a value alike), bytes: a create or PATCH past it is refused (400). The
   * per-field bounds alone allow about 53 KB (an 8 KiB URL, 256 event types of 128 characters,
   * 8 KiB of headers, a 4 KiB description); times `endpointsMax` that was about 0.5 GB on every
   * node. 16 KiB still takes any one field at its bound, and bounds the whole table at about
   * 160 MB (a real endpoint is a few hundred bytes).
   */
  endpointBytesMax: 16 * 1024,
  /** Endpoints a list page returns by default, and at most. */
  listLimitDefault: 100,
  listLimitMax: 1000,
});

/**
 * Endpoint health and rotation timing (docs/endpoints.md, "Secret rotation" and "Disabling,
 * recovering"). Unlike `ENDPOINT_LIMITS` these are per-node options, not wire constants: a
 * rotation's overlap is written into the endpoint value as an absolute time by the node that
 * takes it, and the health rules run at each job's owner. They ride in `JobsConfig` (which
 * extends this), so the replication core gets them with the rest of its configuration.
 */
export interface EndpointHealthConfig {
  /**
   * After `POST /v1/endpoints/{id}/secret/rotate`, deliveries are signed under the old secret
   * too for this long (from the rotation's version time), so a receiver can switch over
   * without losing a delivery. Svix and the Standard Webhooks guidance use 24 hours.
   * @default 86_400_000 (24 h)
   */
  secretRotationOverlapMs: number;
  /**
   * An endpoint whose every attempt failed for this long is disabled (`disabled_reason:
   * "failing"`): an owner whose attempt fails more than this after the window's start (the
   * latest of the endpoint's creation, its last write and its last success) writes the
   * disable. Svix disables after 5 days of failures; the retry schedule spans under a day,
   * so 5 days means several events in a row died.
   * @default 432_000_000 (5 days)
   */
  endpointFailingWindowMs: number;
  /**
   * An owner that delivers a job raises the endpoint's `last_success_at` (an
   * `endpoint-health` record) at most once per this long per endpoint, judged by the value
   * its own table holds: at 1,000 deliveries/s to one endpoint that is a record a minute per
   * owner, not a thousand a second. It must stay far below the failing window (checked).
   * @default 60_000 (1 min)
   */
  endpointHealthWriteMs: number;
  /**
   * Revives a recover (`POST /v1/endpoints/{id}/recover`) makes at once: one batch shares a
   * WAL append and a message per peer, and the next starts once its majorities answered.
   * Far below `jobs.proposalsMax` (20,000), so a recover leaves room for submits.
   * @default 256
   */
  endpointRecoverBatchMax: number;
}

export const endpointHealthDefaults: Readonly<EndpointHealthConfig> = Object.freeze({
  secretRotationOverlapMs: 24 * 3_600_000,
  endpointFailingWindowMs: 5 * 24 * 3_600_000,
  endpointHealthWriteMs: 60_000,
  endpointRecoverBatchMax: 256,
});

/** Checks the health timing's relations (called by `validateJobsConfig`). */
export function validateEndpointHealthConfig(config: EndpointHealthConfig): void {
  nonNegative("jobs.secretRotationOverlapMs", config.secretRotationOverlapMs);
  positiveInteger("jobs.endpointFailingWindowMs", config.endpointFailingWindowMs);
  positiveInteger("jobs.endpointHealthWriteMs", config.endpointHealthWriteMs);
  positiveInteger("jobs.endpointRecoverBatchMax", config.endpointRecoverBatchMax);
  // A success must be recorded well within the window, or a healthy endpoint whose successes
  // were not yet written could look failing.
  relation(
    "jobs.endpointHealthWriteMs",
    config.endpointHealthWriteMs,
    "<",
    "jobs.endpointFailingWindowMs",
    config.endpointFailingWindowMs,
  );
}
