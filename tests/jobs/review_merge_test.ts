/**
 * The merge rule over what tests/jobs/job_model_test.ts does not generate: a keyed job with
 * two bodies (a losing SUBMIT and the committed one, whose COMMIT carries its spec) and whole
 * states (handoffs, snapshots) taken from replicas part-way through, arriving in any order
 * and any number of times. Every replica that has seen the same records and states must hold
 * the same job.
 */

import fc from "fast-check";
import { assertEquals } from "../assert.ts";
import {
  applyRecord,
  type AttemptEntry,
  type JobOnlyRecord,
  type JobSpec,
  newEntry,
  snapshotOf,
  type Stamp,
} from "../../src/jobs/job_model.ts";

type JobUpdate = JobOnlyRecord;

const HISTORY_MAX = 4;
const T0 = 1_700_000_000_000;

function body(bodyHash: string, payload: string): JobSpec {
  return {
    id: "job_k1",
    url: "http://a.test/hook",
    payload,
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 7,
    submittedAtMs: T0,
    idempotencyKey: "k1",
    bodyHash,
  };
}

const LOSER = body("loser", "L");
const WINNER = body("winner", "W");

function stamp(n: number): Stamp {
  return { origin: `10.0.0.${1 + (n % 3)}:7000`, seq: 1 + n };
}

function attempt(gen: number, n: number): AttemptEntry {
  return {
    attempt: n,
    startedAtMs: T0 + gen * 100_000 + n * 1000,
    latencyMs: 5,
    outcome: "http_error",
    status: 500,
    detail: `g${gen}a${n}`,
    node: "10.0.0.1:7000",
  };
}

/** The winner's COMMIT: every replica gets it in the end (until then, bodies may differ). */
const COMMIT: JobUpdate = {
  type: "commit",
  stamp: stamp(2),
  jobId: "job_k1",
  bodyHash: "winner",
  spec: WINNER,
};

/** What a cluster writes about the job: both SUBMITs, the winner's COMMIT, its progress. */
const recordArb: fc.Arbitrary<JobUpdate> = fc.oneof(
  fc.constant({ type: "submit" as const, stamp: stamp(0), spec: LOSER }),
  fc.constant({ type: "submit" as const, stamp: stamp(1), spec: WINNER }),
  fc.constant(COMMIT),
  fc.record({ gen: fc.integer({ min: 0, max: 1 }), n: fc.integer({ min: 1, max: 4 }) }).map((
    { gen, n },
  ) => ({
    type: "retry" as const,
    stamp: stamp(10 + gen * 10 + n),
    jobId: "job_k1",
    gen,
    attemptsMade: n,
    nextAttemptAtMs: T0 + gen * 100_000 + n * 1000 + 500,
    attempt: attempt(gen, n),
  })),
  fc.integer({ min: 0, max: 1 }).map((gen) => ({
    type: "done" as const,
    stamp: stamp(50 + gen),
    jobId: "job_k1",
    gen,
    finishedAtMs: T0 + gen * 100_000 + 9_000,
    // Another attempt than the one a DEAD of this generation records (another owner's).
    attempt: {
      ...attempt(gen, 5),
      startedAtMs: attempt(gen, 5).startedAtMs + 1,
      outcome: "success" as const,
      status: 204,
    },
  })),
  fc.integer({ min: 0, max: 1 }).map((gen) => ({
    type: "dead" as const,
    stamp: stamp(60 + gen),
    jobId: "job_k1",
    gen,
    attemptsMade: 5,
    finishedAtMs: T0 + gen * 100_000 + 8_000,
    reason: `gen ${gen} exhausted`,
    attempt: attempt(gen, 5),
  })),
  fc.constant({ type: "revive" as const, stamp: stamp(71), jobId: "job_k1", gen: 1 }),
);

function apply(entry = newEntry("job_k1"), updates: readonly JobUpdate[]) {
  for (const u of updates) applyRecord(entry, u, HISTORY_MAX);
  return entry;
}

/** What must agree: the body, whether it is committed, the progress and the history. */
function view(updates: readonly JobUpdate[]) {
  const s = snapshotOf(apply(undefined, updates));
  return {
    body: s.spec?.bodyHash,
    payload: s.spec?.payload,
    committed: s.committed,
    gen: s.gen,
    phase: s.phase,
    attemptsMade: s.attemptsMade,
    nextAttemptAtMs: s.nextAttemptAtMs,
    finishedAtMs: s.finishedAtMs,
    deadReason: s.deadReason,
    history: s.history,
  };
}

function shuffle<T>(items: readonly T[], keys: readonly number[]): T[] {
  return items
    .map((item, i) => ({ item, k: keys[i % keys.length]! * 31 + i }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.item);
}

Deno.test("two bodies and whole states merge to one job in any order", () => {
  fc.assert(
    fc.property(
      fc.array(recordArb, { minLength: 1, maxLength: 10 }),
      // States handed over or shipped in snapshots: each what a replica held after some of
      // the records, in its own order.
      fc.array(
        fc.record({
          take: fc.array(fc.nat(9), { maxLength: 8 }),
        }),
        { maxLength: 3 },
      ),
      fc.array(fc.nat(), { minLength: 16, maxLength: 16 }),
      fc.array(fc.nat(), { minLength: 16, maxLength: 16 }),
      (records, donors, keysA, keysB) => {
        const states: JobUpdate[] = donors.map(({ take }) => {
          const seen = take.filter((i) => i < records.length).map((i) => records[i]!);
          return { type: "state" as const, state: snapshotOf(apply(undefined, seen)) };
        });
        const all = [...records, COMMIT, ...states];
        const a = view(shuffle(all, keysA));
        const b = view(shuffle([...all, ...all.slice(0, 3)], keysB));
        assertEquals(a, b);
      },
    ),
    { numRuns: 5000 },
  );
});
