/** fast-check generators of job-store values, shared by the job-store property tests. */

import fc from "fast-check";

/** `fc.record` with ordinary objects (the codec builds plain objects, not null-prototype ones). */
// deno-lint-ignore no-explicit-any
const rec: typeof fc.record = ((model: any) => fc.record(model, { noNullPrototype: true })) as any;
import type {
  AttemptEntry,
  JobRecord,
  JobSpec,
  ReplicatedRecord,
  Stamp,
} from "../../src/jobs/job_model.ts";
import { ATTEMPT_OUTCOMES } from "../../src/delivery/types.ts";
import type { EventBody } from "../../src/jobs/event_model.ts";
import type { JobTableOptions } from "../../src/jobs/job_table.ts";
import {
  DISABLED_REASONS,
  type EndpointFields,
  type EndpointState,
  type EndpointVersion,
} from "../../src/jobs/endpoint_model.ts";

/**
 * A small job spec for table and core tests, submitted at `submittedAtMs`; keyed (body hash "h")
 * when `key` is given.
 */
export function plainSpec(id: string, submittedAtMs: number, key?: string): JobSpec {
  return {
    id,
    url: "http://a.test/",
    payload: "p",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs,
    bodyHash: key === undefined ? "" : "h",
    ...(key !== undefined ? { idempotencyKey: key } : {}),
  };
}

/** A job table's options for table tests: short retention, few dead letters, a day's window. */
export function tableTestOptions(): JobTableOptions {
  const hourMs = 3_600_000;
  return {
    historyMax: 5,
    finishedRetentionMs: hourMs,
    finishedJobsMax: 1_000,
    deadRetentionMs: 24 * hourMs,
    deadLettersMax: 3,
    idempotencyWindowMs: 24 * hourMs,
    idempotencyClockSkewMs: 0,
    stubRetentionMs: hourMs,
    uncommittedRetentionMs: 24 * hourMs,
    finishedTombstoneMs: 24 * hourMs,
    finishedTombstonesMax: 1_000,
  };
}

export const ORIGINS = ["10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"];

export const stampArb: fc.Arbitrary<Stamp> = rec({
  origin: fc.constantFrom(...ORIGINS),
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
});

const wallArb = fc.double({ min: 1.6e12, max: 2e12, noNaN: true });

export function specArb(id: fc.Arbitrary<string> = fc.constant("job_1")): fc.Arbitrary<JobSpec> {
  return rec({
    id,
    url: fc.constantFrom("http://a.test/hook", "https://b.test/x?y=1"),
    payload: fc.string({ maxLength: 200 }),
    headers: fc.dictionary(fc.constantFrom("x-a", "x-b", "x-c"), fc.string({ maxLength: 20 }), {
      noNullPrototype: true,
    }),
    secrets: fc.array(fc.constant("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), { maxLength: 2 }),
    timeoutMs: fc.integer({ min: 0, max: 60_000 }),
    maxAttempts: fc.integer({ min: 1, max: 100 }),
    submittedAtMs: wallArb,
    idempotencyKey: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: undefined }),
    bodyHash: fc.constantFrom("", "h1", "h2"),
    webhookId: fc.option(fc.constantFrom("evt_1", "evt_k2"), { nil: undefined }),
  }).map((s) => {
    const { idempotencyKey, webhookId, ...rest } = s;
    return {
      ...rest,
      ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      ...(webhookId !== undefined ? { webhookId } : {}),
    };
  });
}

export const attemptArb: fc.Arbitrary<AttemptEntry> = rec({
  attempt: fc.integer({ min: 1, max: 20 }),
  retry: fc.integer({ min: 0, max: 3 }),
  startedAtMs: wallArb,
  latencyMs: fc.double({ min: 0, max: 60_000, noNaN: true }),
  outcome: fc.constantFrom(...ATTEMPT_OUTCOMES),
  status: fc.integer({ min: 0, max: 599 }),
  detail: fc.string({ maxLength: 40 }),
  node: fc.constantFrom(...ORIGINS),
  // The first round's attempts carry no retry field (the codec writes them as before it).
}).map(({ retry, ...rest }) => retry === 0 ? rest : { ...rest, retry });

/** Records about one job ("job_1"), as a cluster might write them. */
export function jobRecordArb(
  spec: fc.Arbitrary<JobSpec> = specArb(),
): fc.Arbitrary<ReplicatedRecord> {
  const jobId = "job_1";
  const gen = fc.integer({ min: 0, max: 3 });
  return fc.oneof(
    rec({ type: fc.constant("submit" as const), stamp: stampArb, spec }),
    rec({
      type: fc.constant("commit" as const),
      stamp: stampArb,
      jobId: fc.constant(jobId),
      bodyHash: fc.constantFrom("", "h1", "h2"),
    }),
    rec({
      type: fc.constant("retry" as const),
      stamp: stampArb,
      jobId: fc.constant(jobId),
      gen,
      attemptsMade: fc.integer({ min: 1, max: 10 }),
      nextAttemptAtMs: wallArb,
      attempt: attemptArb,
    }),
    rec({
      type: fc.constant("done" as const),
      stamp: stampArb,
      jobId: fc.constant(jobId),
      gen,
      finishedAtMs: wallArb,
      attempt: attemptArb,
    }),
    rec({
      type: fc.constant("dead" as const),
      stamp: stampArb,
      jobId: fc.constant(jobId),
      gen,
      attemptsMade: fc.integer({ min: 1, max: 10 }),
      finishedAtMs: wallArb,
      reason: fc.string({ maxLength: 30 }),
      attempt: attemptArb,
    }),
    rec({
      type: fc.constant("revive" as const),
      stamp: stampArb,
      jobId: fc.constant(jobId),
      gen: fc.integer({ min: 1, max: 4 }),
    }),
    // With the committed spec a reviver sends (its id is the job's).
    rec({
      type: fc.constant("revive" as const),
      stamp: stampArb,
      jobId: fc.constant(jobId),
      gen: fc.integer({ min: 1, max: 4 }),
      spec: spec.map((s) => ({ ...s, id: jobId })),
      submitStamp: fc.option(stampArb, { nil: undefined }),
    }).map(({ submitStamp, ...rest }) =>
      submitStamp !== undefined ? { ...rest, submitStamp } : rest
    ),
  );
}

/** One endpoint's fields, for tests that need a plain one. */
export const SAMPLE_ENDPOINT: EndpointFields = Object.freeze({
  url: "https://a.test/hook",
  eventTypes: ["invoice.paid"],
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  description: "billing",
  headers: { "x-tenant": "7" },
  rateLimitPerS: 5,
  ordered: true,
  disabled: false,
  disabledReason: "",
});

/** An endpoint's version: few times and seqs, so equal times (ties by origin) come up. */
export const endpointVersionArb: fc.Arbitrary<EndpointVersion> = rec({
  atMs: fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_005 }),
  origin: fc.constantFrom(...ORIGINS),
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
});

/** Any valid endpoint value of id `id` (a reason exactly when disabled). */
export function endpointStateArb(
  id: fc.Arbitrary<string> = fc.constant("ep_1"),
  version: fc.Arbitrary<EndpointVersion> = endpointVersionArb,
): fc.Arbitrary<EndpointState> {
  return rec({
    id,
    url: fc.constantFrom("https://a.test/hook", "http://b.test/x?y=1", "https://é.test/ü"),
    eventTypes: fc.array(fc.constantFrom("invoice.paid", "user.created", "a.b.c"), {
      maxLength: 3,
    }),
    secret: fc.constantFrom("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_AAAA"),
    description: fc.string({ maxLength: 40 }),
    headers: fc.dictionary(fc.constantFrom("x-a", "x-b"), fc.string({ maxLength: 20 }), {
      noNullPrototype: true,
    }),
    rateLimitPerS: fc.integer({ min: 0, max: 100_000 }),
    ordered: fc.boolean(),
    disabledReason: fc.constantFrom(...DISABLED_REASONS),
    createdAtMs: wallArb,
    previousSecret: fc.constantFrom("", "whsec_AAAA", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    previousSecretUntilMs: fc.constantFrom(0, 1_700_000_000_000, 1_700_086_400_000),
    // Few values, so equal and unequal success times meet in the merge's properties.
    lastSuccessAtMs: fc.constantFrom(0, 1_700_000_000_000, 1_700_000_060_000),
    deleted: fc.boolean(),
    version,
  }).map((s) => ({ ...s, disabled: s.disabledReason !== "" }));
}

/** Endpoint records: replicated (version = stamp) and local-only. */
export const endpointRecordArb: fc.Arbitrary<JobRecord> = fc.oneof(
  endpointStateArb(fc.string({ minLength: 1, maxLength: 40 })).map((state) => ({
    type: "endpoint" as const,
    stamp: { origin: state.version.origin, seq: state.version.seq },
    state,
  })),
  endpointStateArb().map((state) => ({ type: "endpoint-state" as const, state })),
  rec({
    stamp: rec({ origin: fc.constantFrom(...ORIGINS), seq: fc.integer({ min: 1, max: 2 ** 40 }) }),
    endpointId: fc.string({ minLength: 1, maxLength: 40 }),
    lastSuccessAtMs: wallArb,
  }).map((r) => ({ type: "endpoint-health" as const, ...r })),
);

/** An event and its fan-out (endpoint ids ascending, as the submit path makes them). */
export const eventBodyArb: fc.Arbitrary<EventBody> = rec({
  event: rec({
    id: fc.constantFrom("evt_0123", "evt_kabc"),
    type: fc.constantFrom("invoice.paid", "user.created"),
    payload: fc.string({ maxLength: 200 }),
    submittedAtMs: wallArb,
    idempotencyKey: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: undefined }),
    bodyHash: fc.constantFrom("", "h1"),
  }).map(({ idempotencyKey, ...rest }) =>
    idempotencyKey === undefined ? rest : { ...rest, idempotencyKey }
  ),
  jobs: fc.uniqueArray(fc.stringMatching(/^ep_[0-9a-f]{1,24}$/), { maxLength: 4 }).chain((ids) =>
    fc.tuple(
      ...[...ids].sort().map((endpointId) =>
        rec({
          endpointId: fc.constant(endpointId),
          url: fc.constantFrom("http://a.test/hook", "https://b.test/x?y=1"),
          headers: fc.dictionary(fc.constantFrom("x-a", "x-b"), fc.string({ maxLength: 20 }), {
            noNullPrototype: true,
          }),
          secrets: fc.array(fc.constant("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), {
            maxLength: 2,
          }),
          timeoutMs: fc.integer({ min: 0, max: 60_000 }),
          maxAttempts: fc.integer({ min: 1, max: 100 }),
        })
      ),
    )
  ),
});

/** Event records: the replicated `event` and `event-commit`, and the local `event-state`. */
export const eventRecordArb: fc.Arbitrary<JobRecord> = fc.oneof(
  rec({ type: fc.constant("event" as const), stamp: stampArb, body: eventBodyArb }),
  fc.tuple(stampArb, eventBodyArb, fc.boolean()).map(([stamp, body, withBody]) => ({
    type: "event-commit" as const,
    stamp,
    eventId: body.event.id,
    bodyHash: body.event.bodyHash,
    ...(withBody ? { body } : {}),
  })),
  rec({
    type: fc.constant("event-state" as const),
    state: rec({ body: eventBodyArb, stamp: stampArb, committed: fc.boolean() }),
  }),
);

/** Any record, local-only kinds included, for codec round trips. */
export const anyRecordArb: fc.Arbitrary<JobRecord> = fc.oneof(
  jobRecordArb(specArb(fc.string({ minLength: 1, maxLength: 40 }))),
  endpointRecordArb,
  eventRecordArb,
  rec({
    type: fc.constant("skip" as const),
    stamp: stampArb,
    ranges: fc.constant([[1, 5], [9, 9]] as Array<[number, number]>),
  }),
  rec({
    type: fc.constant("key" as const),
    key: rec({
      key: fc.string({ maxLength: 40 }),
      jobId: fc.string({ minLength: 1, maxLength: 40 }),
      bodyHash: fc.string({ maxLength: 32 }),
      expiresAtMs: wallArb,
      gen: fc.integer({ min: 0, max: 3 }),
    }).map(({ gen, ...key }) => gen > 0 ? { ...key, gen } : key),
  }),
  rec({
    type: fc.constant("meta" as const),
    nextOwnSeq: fc.integer({ min: 1, max: 2 ** 50 }),
    held: fc.constant([{
      origin: ORIGINS[0]!,
      contiguous: 7,
      above: [[9, 12]] as Array<[number, number]>,
    }]),
  }),
);
