/**
 * Each endpoint's recent health as this node knows it, for the dashboard (docs/endpoints.md,
 * "The dashboard"): attempts to it that delivered and that failed within a sliding window, and
 * its last success and last failure. Fed from the delivery records this node applies (RETRY,
 * DEAD and DONE carry the attempt they report): every node applies every job's records, so
 * every node counts every node's attempts, not only its own, once they reach it.
 *
 * Owns the tallies only. Sans-I/O: the times are the attempts' own start times and the wall
 * clock passed in; no clock is read here. Bounded: an attempt outside the window (before it,
 * or further ahead than it, a skewed clock) is not counted, each endpoint keeps at most the
 * window's buckets, and at most `endpointsMax` endpoints are tallied (past it an endpoint whose
 * every bucket has expired is forgotten first; when none has, a new endpoint is not tallied and
 * `untallied` counts it). Must not read the table, the endpoint table or the ordered queues:
 * the core (replication_core.ts) calls `attempt` as it applies a record, and the store joins
 * the tallies with the endpoints for a read.
 */

import { assert } from "../lib/assert.ts";

export interface AttemptStatsConfig {
  /** How far back "recent" reaches, ms. */
  readonly windowMs: number;
  /** The window slides in buckets of this many ms. */
  readonly bucketMs: number;
  /** Most endpoints tallied at once. */
  readonly endpointsMax: number;
  /** Longest last-failure detail kept, characters. */
  readonly detailCharsMax: number;
}

/** One attempt as the tally takes it (an `AttemptEntry`'s fields it reads). */
export interface HealthAttempt {
  readonly startedAtMs: number;
  readonly outcome: string;
  /** 0 when the receiver did not answer. */
  readonly status: number;
  readonly detail: string;
}

/** An endpoint's recent attempts, as the dashboard shows them. */
export interface EndpointHealthView {
  /** Attempts that started within the window. */
  readonly attempts: number;
  /** Of those, the ones that did not deliver. */
  readonly failures: number;
  /** The latest attempt that delivered, epoch ms (within or before the window). */
  readonly lastSuccessAtMs?: number;
  /** The latest attempt that failed: when, how, and the receiver's status or error. */
  readonly lastFailure?: {
    readonly atMs: number;
    readonly outcome: string;
    readonly status?: number;
    readonly detail: string;
  };
}

interface Tally {
  /** Bucket number (`floor(startedAtMs / bucketMs)`) → counts. */
  readonly buckets: Map<number, { ok: number; failed: number }>;
  lastSuccessAtMs?: number;
  lastFailure?: EndpointHealthView["lastFailure"];
}

export class EndpointAttemptStats {
  readonly config: AttemptStatsConfig;
  readonly #tallies = new Map<string, Tally>();
  /** Attempts not counted because `endpointsMax` endpoints with live buckets were tallied. */
  untallied = 0;

  constructor(config: AttemptStatsConfig) {
    assert(
      config.windowMs > 0 && config.bucketMs > 0 && config.bucketMs <= config.windowMs,
      "the health window holds at least one bucket",
    );
    assert(config.endpointsMax > 0, "at least one endpoint is tallied");
    this.config = config;
  }

  /** Endpoints with a tally now. */
  get size(): number {
    return this.#tallies.size;
  }

  /** One attempt to `endpointId`, applied at `nowWallMs`: counted once if within the window. */
  attempt(endpointId: string, attempt: HealthAttempt, delivered: boolean, nowWallMs: number): void {
    const atMs = attempt.startedAtMs;
    if (!Number.isFinite(atMs) || Math.abs(nowWallMs - atMs) > this.config.windowMs) return;
    let tally = this.#tallies.get(endpointId);
    if (tally === undefined) {
      if (this.#tallies.size >= this.config.endpointsMax) this.#forgetExpired(nowWallMs);
      if (this.#tallies.size >= this.config.endpointsMax) {
        this.untallied++;
        return;
      }
      tally = { buckets: new Map() };
      this.#tallies.set(endpointId, tally);
    }
    this.#expire(tally, nowWallMs);
    const bucket = Math.floor(atMs / this.config.bucketMs);
    let counts = tally.buckets.get(bucket);
    if (counts === undefined) tally.buckets.set(bucket, counts = { ok: 0, failed: 0 });
    if (delivered) {
      counts.ok++;
      if (tally.lastSuccessAtMs === undefined || atMs > tally.lastSuccessAtMs) {
        tally.lastSuccessAtMs = atMs;
      }
    } else {
      counts.failed++;
      if (tally.lastFailure === undefined || atMs > tally.lastFailure.atMs) {
        tally.lastFailure = {
          atMs,
          outcome: attempt.outcome,
          ...(attempt.status !== 0 ? { status: attempt.status } : {}),
          detail: attempt.detail.slice(0, this.config.detailCharsMax),
        };
      }
    }
    assert(
      tally.buckets.size <= 2 * Math.ceil(this.config.windowMs / this.config.bucketMs) + 2,
      "an endpoint keeps at most the window's buckets",
    );
  }

  /** `endpointId`'s attempts within the window ending at `nowWallMs` (zeros when none). */
  read(endpointId: string, nowWallMs: number): EndpointHealthView {
    const tally = this.#tallies.get(endpointId);
    if (tally === undefined) return { attempts: 0, failures: 0 };
    const fromBucket = Math.floor((nowWallMs - this.config.windowMs) / this.config.bucketMs);
    let ok = 0;
    let failed = 0;
    for (const [bucket, counts] of tally.buckets) {
      if (bucket <= fromBucket) continue;
      ok += counts.ok;
      failed += counts.failed;
    }
    return {
      attempts: ok + failed,
      failures: failed,
      ...(tally.lastSuccessAtMs !== undefined ? { lastSuccessAtMs: tally.lastSuccessAtMs } : {}),
      ...(tally.lastFailure !== undefined ? { lastFailure: tally.lastFailure } : {}),
    };
  }

  /** Drops the buckets that ended before the window. */
  #expire(tally: Tally, nowWallMs: number): void {
    const fromBucket = Math.floor((nowWallMs - this.config.windowMs) / this.config.bucketMs);
    for (const bucket of tally.buckets.keys()) {
      if (bucket <= fromBucket) tally.buckets.delete(bucket);
    }
  }

  /** Forgets the endpoints with no bucket left in the window. */
  #forgetExpired(nowWallMs: number): void {
    for (const [id, tally] of this.#tallies) {
      this.#expire(tally, nowWallMs);
      if (tally.buckets.size === 0) this.#tallies.delete(id);
    }
  }
}
