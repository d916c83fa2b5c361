import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  applyRecord,
  type AttemptEntry,
  type JobOnlyRecord,
  type JobSpec,
  newEntry,
  numberAttempts,
  snapshotOf,
  type Stamp,
} from "../../src/jobs/job_model.ts";

const SPEC: JobSpec = {
  id: "job_1",
  url: "http://a.test/hook",
  payload: '{"x":1}',
  headers: { "x-a": "1" },
  secrets: [],
  timeoutMs: 0,
  maxAttempts: 7,
  submittedAtMs: 1_700_000_000_000,
  bodyHash: "",
};
const HISTORY_MAX = 4;

function stamp(n: number): Stamp {
  return { origin: `10.0.0.${1 + (n % 3)}:7000`, seq: 1 + n };
}

/** An attempt whose content follows from its number and generation, as one writer makes it. */
function attempt(gen: number, n: number): AttemptEntry {
  return {
    attempt: n,
    startedAtMs: SPEC.submittedAtMs + gen * 100_000 + n * 1000,
    latencyMs: 5,
    outcome: "http_error",
    status: 500,
    detail: `g${gen}a${n}`,
    node: "10.0.0.1:7000",
  };
}

/** The records a cluster could write about one job; fields are functions of their keys. */
const recordArb: fc.Arbitrary<JobOnlyRecord> = fc
  .oneof(
    fc.constant({ type: "submit" as const, stamp: stamp(0), spec: SPEC }),
    fc.constant({ type: "commit" as const, stamp: stamp(1), jobId: "job_1", bodyHash: "" }),
    fc.record({ gen: fc.integer({ min: 0, max: 2 }), n: fc.integer({ min: 1, max: 6 }) }).map((
      { gen, n },
    ) => ({
      type: "retry" as const,
      stamp: stamp(10 + gen * 10 + n),
      jobId: "job_1",
      gen,
      attemptsMade: n,
      nextAttemptAtMs: SPEC.submittedAtMs + gen * 100_000 + n * 1000 + 500,
      attempt: attempt(gen, n),
    })),
    fc.integer({ min: 0, max: 2 }).map((gen) => ({
      type: "done" as const,
      stamp: stamp(50 + gen),
      jobId: "job_1",
      gen,
      finishedAtMs: SPEC.submittedAtMs + gen * 100_000 + 9_000,
      attempt: {
        ...attempt(gen, 7),
        startedAtMs: attempt(gen, 7).startedAtMs + 1,
        outcome: "success" as const,
        status: 204,
      },
    })),
    fc.integer({ min: 0, max: 2 }).map((gen) => ({
      type: "dead" as const,
      stamp: stamp(60 + gen),
      jobId: "job_1",
      gen,
      attemptsMade: 7,
      finishedAtMs: SPEC.submittedAtMs + gen * 100_000 + 8_000,
      reason: `gen ${gen} exhausted`,
      attempt: attempt(gen, 7),
    })),
    fc.integer({ min: 1, max: 3 }).map((gen) => ({
      type: "revive" as const,
      stamp: stamp(70 + gen),
      jobId: "job_1",
      gen,
    })),
    // A revive from a node that held the committed dead letter carries its spec, and the
    // SUBMIT's stamp if that node had it (its spec may have come with the COMMIT).
    fc.tuple(fc.integer({ min: 1, max: 3 }), fc.boolean()).map(([gen, stamped]) => ({
      type: "revive" as const,
      stamp: stamp(80 + gen),
      jobId: "job_1",
      gen,
      spec: SPEC,
      ...(stamped ? { submitStamp: stamp(0) } : {}),
    })),
  );

/**
 * The merged state records leave, in any order. `reviveOf` is left out: it is which REVIVE of the
 * generation this node applied first, a vote's memory of its own (two REVIVEs of one generation
 * in two orders name two), not part of the job's state.
 */
function finalState(
  records: readonly JobOnlyRecord[],
) {
  const entry = newEntry("job_1");
  for (const r of records) applyRecord(entry, r, HISTORY_MAX);
  const { reviveOf: _, ...state } = snapshotOf(entry);
  return state;
}

Deno.test("applyRecord converges: any order and any repeats of a job's records give one state", () => {
  fc.assert(
    fc.property(
      fc.array(recordArb, { minLength: 1, maxLength: 14 }),
      fc.array(fc.nat(), { minLength: 14, maxLength: 14 }),
      fc.array(fc.nat(13), { maxLength: 6 }),
      (records, shuffleKeys, repeats) => {
        const reference = finalState(records);
        const shuffled = records
          .map((r, i) => ({ r, k: shuffleKeys[i % shuffleKeys.length]! * 31 + i }))
          .sort((a, b) => a.k - b.k)
          .map((x) => x.r);
        for (const i of repeats) if (i < records.length) shuffled.push(records[i]!);
        assertEquals(finalState(shuffled), reference);
      },
    ),
    { numRuns: 3000 },
  );
});

Deno.test("a delivered job stays delivered whatever arrives after, and drops its payload", () => {
  const entry = newEntry("job_1");
  applyRecord(entry, { type: "submit", stamp: stamp(0), spec: SPEC }, HISTORY_MAX);
  applyRecord(
    entry,
    { type: "done", stamp: stamp(1), jobId: "job_1", gen: 0, finishedAtMs: 5 },
    HISTORY_MAX,
  );
  assertEquals(entry.phase, "delivered");
  assertEquals(entry.spec?.payload, "");
  assert(entry.payloadDropped);
  for (
    const r of [
      { type: "revive" as const, stamp: stamp(2), jobId: "job_1", gen: 3 },
      {
        type: "dead" as const,
        stamp: stamp(3),
        jobId: "job_1",
        gen: 5,
        attemptsMade: 7,
        finishedAtMs: 9,
        reason: "x",
      },
    ]
  ) {
    applyRecord(entry, r, HISTORY_MAX);
    assertEquals(entry.phase, "delivered");
    assertEquals(entry.spec?.payload, "");
  }
});

Deno.test("a revive starts a new generation from attempt 0; older updates are ignored", () => {
  const entry = newEntry("job_1");
  applyRecord(entry, { type: "submit", stamp: stamp(0), spec: SPEC }, HISTORY_MAX);
  applyRecord(entry, {
    type: "dead",
    stamp: stamp(1),
    jobId: "job_1",
    gen: 0,
    attemptsMade: 7,
    finishedAtMs: 10,
    reason: "exhausted",
  }, HISTORY_MAX);
  assertEquals(entry.phase, "dead");
  applyRecord(entry, { type: "revive", stamp: stamp(2), jobId: "job_1", gen: 1 }, HISTORY_MAX);
  assertEquals([entry.phase, entry.gen, entry.attemptsMade], ["pending", 1, 0]);
  const stale = applyRecord(entry, {
    type: "retry",
    stamp: stamp(3),
    jobId: "job_1",
    gen: 0,
    attemptsMade: 6,
    nextAttemptAtMs: 99,
    attempt: attempt(0, 6),
  }, HISTORY_MAX);
  assertEquals(stale, "unchanged");
  assertEquals(entry.attemptsMade, 0);
});

Deno.test("a keyed submit with another body conflicts; a commit with the winning spec replaces an uncommitted loser", () => {
  const entry = newEntry("job_k1");
  const a: JobSpec = { ...SPEC, id: "job_k1", idempotencyKey: "k", bodyHash: "ha", payload: "A" };
  const b: JobSpec = { ...a, bodyHash: "hb", payload: "B" };
  assertEquals(applyRecord(entry, { type: "submit", stamp: stamp(0), spec: a }, 4), "changed");
  assertEquals(applyRecord(entry, { type: "submit", stamp: stamp(1), spec: b }, 4), "conflict");
  assertEquals(entry.spec?.payload, "A");
  // B won the majority elsewhere: its commit carries the spec and replaces A here.
  assertEquals(
    applyRecord(entry, {
      type: "commit",
      stamp: stamp(2),
      jobId: "job_k1",
      bodyHash: "hb",
      spec: b,
    }, 4),
    "changed",
  );
  assertEquals([entry.spec?.payload, entry.committed, entry.bodyHash], ["B", true, "hb"]);
  // A committed body is never replaced.
  assertEquals(
    applyRecord(entry, {
      type: "commit",
      stamp: stamp(3),
      jobId: "job_k1",
      bodyHash: "ha",
      spec: a,
    }, 4),
    "conflict",
  );
  assertEquals(entry.spec?.payload, "B");
});

Deno.test("updates before the SUBMIT make a stub that the SUBMIT fills", () => {
  const entry = newEntry("job_1");
  applyRecord(entry, {
    type: "retry",
    stamp: stamp(5),
    jobId: "job_1",
    gen: 0,
    attemptsMade: 2,
    nextAttemptAtMs: 77,
    attempt: attempt(0, 2),
  }, HISTORY_MAX);
  assertEquals(entry.spec, undefined);
  applyRecord(
    entry,
    { type: "commit", stamp: stamp(6), jobId: "job_1", bodyHash: "" },
    HISTORY_MAX,
  );
  applyRecord(entry, { type: "submit", stamp: stamp(0), spec: SPEC }, HISTORY_MAX);
  assertEquals([
    (entry.spec as JobSpec | undefined)?.id,
    entry.committed,
    entry.attemptsMade,
    entry.nextAttemptAtMs,
  ], [
    "job_1",
    true,
    2,
    77,
  ]);
});

Deno.test("numberAttempts counts across manual retries from each round's highest attempt", () => {
  const at = (attempt: number, retry: number, startedAtMs: number): AttemptEntry => ({
    attempt,
    ...(retry > 0 ? { retry } : {}),
    startedAtMs,
    latencyMs: 1,
    outcome: "http_error",
    status: 500,
    detail: "",
    node: "n1",
  });
  // Two attempts, dead; retried: one more attempt, dead again; retried and now pending with
  // one attempt made whose record is not in this history yet.
  const history = [at(1, 0, 10), at(2, 0, 20), at(1, 1, 30)];
  assertEquals(numberAttempts({ gen: 1, attemptsMade: 1, history }), {
    numbers: [1, 2, 3],
    total: 3,
  });
  assertEquals(numberAttempts({ gen: 2, attemptsMade: 1, history }), {
    numbers: [1, 2, 3],
    total: 4,
  });
  // History trimmed to the newest: a round's highest attempt still numbers it.
  assertEquals(numberAttempts({ gen: 1, attemptsMade: 2, history: [at(2, 0, 20), at(2, 1, 40)] }), {
    numbers: [2, 4],
    total: 4,
  });
  assertEquals(numberAttempts({ gen: 0, attemptsMade: 0, history: [] }), { numbers: [], total: 0 });
});

Deno.test("a revive that carries the committed spec fills and commits a copy without one", () => {
  // A replica that compacted the dead letter holds nothing of the job when its REVIVE comes: the
  // spec in the record is all it will get (no SUBMIT comes again). Mutation: ignore the spec
  // (`revive-spec-ignored`), and the copy stays a stub.
  const revive = {
    type: "revive" as const,
    stamp: stamp(2),
    jobId: "job_1",
    gen: 1,
    spec: SPEC,
    submitStamp: stamp(0),
  };
  const made = newEntry("job_1");
  assertEquals(applyRecord(made, revive, HISTORY_MAX), "changed");
  assertEquals(
    [made.phase, made.gen, made.spec, made.committed, made.submitStamp],
    ["pending", 1, SPEC, true, stamp(0)],
  );
  // A stub made by the COMMIT of another body keeps waiting for that body's SUBMIT.
  const other = newEntry("job_1");
  applyRecord(
    other,
    { type: "commit", stamp: stamp(1), jobId: "job_1", bodyHash: "other" },
    HISTORY_MAX,
  );
  applyRecord(other, revive, HISTORY_MAX);
  assertEquals([other.spec, other.gen], [undefined, 1]);
});

Deno.test("a state's REVIVE claim is taken only while its generation is pending here", () => {
  // A finished generation refuses every REVIVE of it anyway: taking the claim there would only
  // make the state count as a change, written again, payload and all (second review, session 42).
  const claim = { gen: 1, stamp: stamp(9) };
  const pending = newEntry("job_1");
  applyRecord(pending, { type: "submit", stamp: stamp(0), spec: SPEC }, HISTORY_MAX);
  applyRecord(pending, { type: "revive", stamp: stamp(3), jobId: "job_1", gen: 1 }, HISTORY_MAX);
  pending.reviveOf = undefined; // as if the generation came by the owner's RETRY
  const state = { ...snapshotOf(pending), reviveOf: claim };
  assertEquals(applyRecord(pending, { type: "state", state }, HISTORY_MAX), "changed");
  assertEquals(pending.reviveOf, claim);
  const dead = newEntry("job_1");
  applyRecord(dead, { type: "submit", stamp: stamp(0), spec: SPEC }, HISTORY_MAX);
  applyRecord(dead, { type: "revive", stamp: stamp(3), jobId: "job_1", gen: 1 }, HISTORY_MAX);
  applyRecord(
    dead,
    {
      type: "dead",
      stamp: stamp(4),
      jobId: "job_1",
      gen: 1,
      attemptsMade: 1,
      finishedAtMs: 9,
      reason: "r",
    },
    HISTORY_MAX,
  );
  dead.reviveOf = undefined;
  assertEquals(
    applyRecord(
      dead,
      { type: "state", state: { ...snapshotOf(dead), reviveOf: claim } },
      HISTORY_MAX,
    ),
    "unchanged",
  );
  assertEquals(dead.reviveOf, undefined);
});
