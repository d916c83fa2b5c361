/**
 * Issue 17, section 2: an Idempotency-Key used again after its window. The key's first job
 * and the new one are two incarnations of the key: they must never merge, never share an id
 * (the `webhook-id`), and the new one must be delivered like any acknowledged job, with or
 * without a restart of its owner, whatever the skew between the nodes' clocks. A retry within
 * the window, also one straddling an epoch boundary of the ids, still names the first job.
 * The window is shortened by config (10 s); hand-driven cores (review_harness.ts).
 */

import { assert, assertEquals, assertNotEquals } from "../assert.ts";
import { among, avoiding, ReviewCluster, WALL } from "./review_harness.ts";
import type { SubmitOutcome, SubmitRequest } from "../../src/jobs/service.ts";
import { keyedJobId, keyEpoch } from "../../src/jobs/keyed_id.ts";
import { snapshotOf } from "../../src/jobs/job_model.ts";

const WINDOW_MS = 10_000;

function ok(outcome: SubmitOutcome | undefined): { id: string; existing: boolean } {
  assert(outcome?.ok === true, `acknowledged, not ${JSON.stringify(outcome)}`);
  return { id: outcome.id, existing: outcome.existing };
}

function ownerOf(c: ReviewCluster, jobId: string): number {
  const i = c.cores.findIndex((core) => core.ownerOf(jobId) === core.self);
  assert(i >= 0, "the job has an owner");
  return i;
}

/** Submits on core `at`, lets it replicate, and has its owner deliver it. */
function submitAndDeliver(c: ReviewCluster, at: number, request: SubmitRequest): string {
  const requestId = c.submit(at, request);
  c.settle();
  const { id } = ok(c.answers.get(requestId));
  c.delivered(ownerOf(c, id), id);
  // The DONE is sent lazily (`lazySendMs`).
  c.tick(50);
  c.settle();
  for (const core of c.cores) assertEquals(core.table.get(id)?.phase, "delivered");
  return id;
}

const FIRST: SubmitRequest = { url: "http://a.test/", payload: "first", idempotencyKey: "k-17" };

/**
 * FIRST, acknowledged and delivered by its owner, while core 2 got its SUBMIT and its DONE but
 * lost its COMMIT: core 2 holds it delivered and uncommitted. Returns its id.
 */
function deliveredWithoutCommitOnTwo(c: ReviewCluster): string {
  const commitTo1 = (m: { to: number; records: readonly string[] }) =>
    m.to === 1 && m.records.includes("commit");
  const requestId = c.submit(0, FIRST);
  c.settle((m) => !commitTo1(m));
  c.drop(commitTo1);
  const { id } = ok(c.answers.get(requestId));
  assertEquals(c.cores[1]!.table.get(id)?.committed, false, "core 2 missed the COMMIT");
  const owner = ownerOf(c, id);
  assert(owner !== 1, "core 2 holds a copy and does not deliver it");
  c.delivered(owner, id);
  c.tick(50); // the DONE rides lazily
  c.settle((m) => !commitTo1(m));
  c.drop(commitTo1);
  return id;
}

/**
 * 0.5 s before an epoch boundary, core 1 takes FIRST and only core 2 stores it: refused, no
 * majority. Returns the id of that first try (its epoch's).
 */
function firstTryOnTwo(c: ReviewCluster): string {
  c.tick(WINDOW_MS - 500 - c.nowMs);
  const first = c.submit(0, FIRST);
  c.settle(among(0, 1));
  c.tick(1_001);
  c.settle(among(0, 1));
  assertEquals(c.answers.get(first)?.ok, false, "no majority: refused");
  return keyedJobId(FIRST.idempotencyKey!, keyEpoch(WALL, WINDOW_MS));
}
const REUSES: Record<string, SubmitRequest> = {
  "the same body": FIRST,
  "another body": { ...FIRST, payload: "second" },
};

for (const [what, reuse] of Object.entries(REUSES)) {
  for (const restart of [false, true]) {
    Deno.test(`a key reused with ${what} after its window makes a new job, delivered ${restart ? "after its owner restarts" : "by its owner"}`, () => {
      // Before: the key's id was a hash of the key alone. The reuse was answered with the old
      // job (`existing`, or 409 for another body) while the delivered old job was still in
      // the table; once only its key was left, the new job took the old id, and replaying
      // the owner's WAL fused the old SUBMIT, COMMIT and DONE with it: it came back
      // delivered and nobody delivered it.
      const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS, finishedRetentionMs: 2_000 });
      c.startAll();
      const oldId = submitAndDeliver(c, 0, FIRST);
      c.tick(WINDOW_MS + 1_000);
      c.settle();
      const second = c.submit(1, reuse);
      c.settle();
      // The COMMIT is written lazily (`lazyAppendMs`): on disk before the crash below.
      c.tick(50);
      c.settle();
      const { id, existing } = ok(c.answers.get(second));
      assertEquals(existing, false, "a new job, not the old one");
      assertNotEquals(id, oldId, "its own id, so its own webhook-id");
      let owner = ownerOf(c, id);
      if (restart) {
        c.crash(owner);
        c.restart(owner);
        c.settle();
        assertEquals(c.cores[owner]!.phase, "ready");
        c.scheduled[owner] = [];
        c.view(owner, {});
        owner = ownerOf(c, id);
        c.tick(10);
        c.settle();
      }
      const entry = c.cores[owner]!.table.get(id);
      assertEquals(
        [entry?.committed, entry?.phase, entry?.spec?.payload],
        [true, "pending", reuse.payload],
        "the owner holds the new job, to deliver",
      );
      assert(
        c.scheduled[owner]!.includes(id) || c.cores[owner]!.isScheduled(id),
        "the owner delivers the new job",
      );
      // The old job stays what it was, wherever it is still held.
      for (const core of c.cores) {
        const old = core.table.get(oldId);
        if (old !== undefined) assertEquals(old.phase, "delivered");
      }
    });
  }
}

Deno.test("a key reused after its window while the new job's owner still keeps the old key (its clock behind) makes a job that owner delivers", () => {
  // Key expiry runs on each node's clock. Every node but core 1 runs 5 s behind, so they
  // still keep the old job's key when core 1 (on time) takes the reuse past the window.
  // Before: the new submit had the old id; the holders of the old key answered 'finished',
  // and the reuse was answered with the old job, which nobody delivers again.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS, finishedRetentionMs: 1_000 });
  c.skewMs = [-5_000, 0, -5_000, -5_000, -5_000];
  c.startAll();
  const oldId = submitAndDeliver(c, 0, FIRST);
  c.tick(3_000);
  c.settle();
  assertEquals(c.cores[0]!.table.get(oldId), undefined, "the old job left the table");
  assert(c.cores[0]!.table.keyTombstone(oldId) !== undefined, "its key is kept");
  c.tick(WINDOW_MS - 1_000);
  c.settle();
  const second = c.submit(1, FIRST);
  c.settle();
  const { id, existing } = ok(c.answers.get(second));
  assertEquals(existing, false);
  assertNotEquals(id, oldId);
  const owner = ownerOf(c, id);
  assert(c.cores[owner]!.table.keyTombstone(oldId) !== undefined, "the owner keeps the old key");
  assertEquals(c.cores[owner]!.table.get(id)?.committed, true);
  assert(c.cores[owner]!.isScheduled(id), "and delivers the new job");
});

Deno.test("a retry within the window on a node that missed the first submit, across an epoch boundary, names the first job", () => {
  // Ids derive from the key and the window-sized epoch of the first submit. The first submit
  // falls 0.5 s before a boundary, the retry 0.5 s after it, on core 5, which missed it: the
  // replicas answer with the live incarnation of the key, and the retry returns it.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  // WALL is a multiple of the window: an epoch starts there.
  assertEquals(WALL % WINDOW_MS, 0);
  c.tick(WINDOW_MS - 500 - c.nowMs);
  const first = c.submit(0, FIRST);
  c.settle(avoiding(4));
  const { id } = ok(c.answers.get(first));
  assertEquals(id, keyedJobId(FIRST.idempotencyKey!, keyEpoch(WALL, WINDOW_MS)));
  assertEquals(c.cores[4]!.table.get(id), undefined, "core 5 missed it");
  c.tick(1_000);
  const retry = c.submit(4, FIRST);
  c.pass(avoiding());
  c.settle();
  assertEquals(ok(c.answers.get(retry)), { id, existing: true });
  // Another body within the window is a conflict, as before.
  const other = c.submit(4, { ...FIRST, payload: "other" });
  c.settle();
  const conflict = c.answers.get(other);
  assertEquals(conflict?.ok === false && conflict.code, "idempotency_conflict");
});

Deno.test("a retry whose first try saw no majority, in the previous epoch, moves over to it: one window makes one job", () => {
  // The first try (core 1) reached only core 2 and was refused (no majority); the retry, on
  // core 4 after the epoch boundary, proposes the new epoch's id; cores 1 and 2 answer with
  // the earlier incarnation they hold, and the retry moves over to it instead of making a
  // second job of one window.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  const firstId = firstTryOnTwo(c);
  assertEquals(c.durableHolders(firstId), [0, 1]);
  const retry = c.submit(3, FIRST);
  c.settle();
  assertEquals(ok(c.answers.get(retry)).id, firstId, "the retry names the first try's job");
  const newId = keyedJobId(FIRST.idempotencyKey!, keyEpoch(WALL, WINDOW_MS) + 1);
  for (const [i, core] of c.cores.entries()) {
    assertEquals(core.table.get(firstId)?.committed, true, `core ${i + 1} holds it committed`);
    assertEquals(core.table.get(newId), undefined, `core ${i + 1} holds no second job`);
  }
});

Deno.test("a retry near the end of the window, stamped by a slower clock, still finds the job where faster clocks passed the window", () => {
  // Keys are kept `idempotencyClockSkewMs` past their window. Cores 1-4 run 5 s ahead; core 5,
  // on time, missed the first submit and takes a retry 2 s before the window ends by the
  // submit stamps. Without the margin the others had dropped the key, and the retry was
  // taken for a first submit: a new job under the old job's id (same epoch), whose records
  // a replay would fuse with the old job's DONE.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS, finishedRetentionMs: 1_000 });
  c.skewMs = [5_000, 5_000, 5_000, 5_000, 0];
  c.startAll();
  for (const i of [0, 1, 2, 3]) c.view(i, { 4: "dead" });
  c.tick(6_000 - c.nowMs);
  assertEquals(c.wallOf(0), WALL + WINDOW_MS + 1_000, "the first stamp: 1 s into an epoch");
  const away = avoiding(4);
  const first = c.submit(0, FIRST);
  c.settle(away);
  const { id } = ok(c.answers.get(first));
  const owner = c.cores.findIndex((core, i) => i !== 4 && core.ownerOf(id) === core.self);
  c.delivered(owner, id);
  c.tick(50);
  c.settle(away);
  c.tick(2_000);
  c.settle(away);
  assertEquals(c.cores[0]!.table.get(id), undefined, "compacted, its key kept");
  c.tick(19_000 - c.nowMs);
  c.settle(away);
  for (const i of [0, 1, 2, 3]) {
    assert(c.wallOf(i) >= WALL + WINDOW_MS + 1_000 + WINDOW_MS, "past the window by their clocks");
    assert(c.cores[i]!.table.keyTombstone(id) !== undefined, `core ${i + 1} keeps the key`);
  }
  c.drop((m) => m.to === 4 || m.from === 4);
  const retry = c.submit(4, FIRST);
  c.settle();
  assertEquals(ok(c.answers.get(retry)), { id, existing: true });
});

Deno.test("a submit the replicas refused for another live incarnation is not taken for finished by a snapshot that lacks it", () => {
  // Found by `hookd sim --seed 319`. Core 5 missed the key's first job and took a retry
  // under its own epoch's id; the replicas refused it (the first job is live) but their ACKs
  // were lost, so core 5 kept its copy, uncommitted. After a restart core 5 caught up by
  // snapshot: the server held the copy's SUBMIT stamp but not the job, which a snapshot's
  // reader takes for "finished and compacted there". The copy went with a kept key, as if it
  // had been acknowledged; checkpoints spread that key, and a later retry was answered with
  // the id of a job no node held, never delivered. Cores 1-4 run 3 s ahead, so the refused
  // copy's stamp is the earlier one and would win a tie between kept keys.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS, catchupLogBytesMax: 1 });
  c.skewMs = [3_000, 3_000, 3_000, 3_000, 0];
  c.startAll();
  c.tick(7_500 - c.nowMs);
  const first = c.submit(0, FIRST);
  c.settle(avoiding(4));
  const { id } = ok(c.answers.get(first));
  assertEquals(id, keyedJobId(FIRST.idempotencyKey!, keyEpoch(WALL, WINDOW_MS) + 1));
  c.tick(1_000);
  const retry = c.submit(4, FIRST);
  const refusedId = keyedJobId(FIRST.idempotencyKey!, keyEpoch(WALL, WINDOW_MS));
  assertEquals(c.cores[4]!.table.get(refusedId)?.committed, false, "core 5 proposes its own id");
  // The replicas take the SUBMIT (and refuse it); their answers are lost.
  c.settle((m) => m.to !== 4);
  c.drop((m) => m.to === 4);
  c.persist(4);
  c.tick(1_001);
  assertEquals(c.answers.get(retry)?.ok, false, "no answer came: not acknowledged");
  c.crash(4);
  const restarted = c.restart(4);
  for (let round = 0; round < 50 && restarted.phase !== "ready"; round++) {
    c.settle();
    c.tick(100);
  }
  assertEquals(restarted.phase, "ready");
  assert(c.syncPages.snapshot > 0, "caught up by snapshot");
  c.tick(50);
  c.settle();
  for (const [i, core] of c.cores.entries()) {
    assertEquals(
      core.table.keyTombstone(refusedId),
      undefined,
      `core ${i + 1} keeps no key for a job never acknowledged`,
    );
    assertEquals(core.table.goneTombstone(refusedId), undefined, `core ${i + 1}: not finished`);
  }
  const again = c.submit(4, FIRST);
  c.settle();
  assertEquals(ok(c.answers.get(again)), { id, existing: true });
});

Deno.test("a replica that learned of a keyed job's delivery before its COMMIT refuses a retry of it, and stores no second SUBMIT under its stamp", () => {
  // Sim seed 319 (found with lazy acknowledgements, bench/results/session36/): the COMMIT to
  // one replica was lost, the DONE reached it, and its copy's payload was dropped as delivered.
  // A retry to that replica started a confirm round from that copy, which stored the SUBMIT
  // again under the job's stamp with an empty payload: one seq naming two records.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  const id = deliveredWithoutCommitOnTwo(c);
  const held = c.cores[1]!.table.get(id);
  assertEquals([held?.phase, held?.committed, held?.payloadDropped], ["delivered", false, true]);
  const retry = c.submit(1, FIRST);
  const answer = c.answers.get(retry);
  assert(answer?.ok === false && answer.code === "not_ready", JSON.stringify(answer));
  assert(
    !c.inflight.some((m) => m.from === 1 && m.records.includes("submit")),
    "no confirm round from a copy without its payload",
  );
});

Deno.test("a retry that takes over a losing try's first-submit time is not answered with an incarnation whose window closed since", () => {
  // Sim seed 512 (found with lazy acknowledgements, bench/results/session36/): cores 2 and 3
  // missed the first job; a retry on core 2 inside its window (in the next epoch, so under
  // another id) lost to it, but core 3 kept its uncommitted copy of that try. Past the first
  // job's window, a retry on core 3 took that copy over with its first-submit time, at which
  // the first job was still live: the replicas said so, and the retry was answered with the
  // first job, 12 s after its first submit with a 10-s window.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  // The first submit 2 s before an epoch ends: the retry 5 s later falls in the next one.
  c.tick((WINDOW_MS - 2_000 - (c.wallOf(0) % WINDOW_MS) + WINDOW_MS) % WINDOW_MS);
  c.settle();
  const replication = (m: { kind: string }) => m.kind === "repl" || m.kind === "ack";
  const first = c.submit(0, FIRST);
  c.settle(avoiding(2, 3));
  c.drop((m) => m.to === 2 || m.to === 3 || m.from === 2 || m.from === 3);
  const firstId = ok(c.answers.get(first)).id;
  assertEquals(c.cores[3]!.table.get(firstId), undefined, "core 3 missed the first job");
  c.tick(5_000);
  c.drop((m) => !replication(m));
  // Inside the window, on core 2 (which missed it too): the replicas that hold it answer with it.
  const second = c.submit(2, FIRST);
  c.settle(replication);
  const answered = ok(c.answers.get(second));
  assertEquals([answered.id, answered.existing], [firstId, true]);
  const lostTry = [...c.cores[3]!.table.entries()].find((e) =>
    e.spec?.idempotencyKey === FIRST.idempotencyKey && e.jobId !== firstId
  );
  assert(lostTry !== undefined && !lostTry.committed, "core 3 kept the losing try, uncommitted");
  // Past the first job's window, still inside the losing try's.
  c.tick(7_000);
  c.drop((m) => !replication(m));
  const third = c.submit(3, FIRST);
  c.settle(replication);
  const outcome = c.answers.get(third);
  assert(
    !(outcome?.ok === true && outcome.id === firstId),
    `answered with the first job 12 s after it: ${JSON.stringify(outcome)}`,
  );
});

Deno.test("a retry moved over to its key's first try late in its round is still answered within submitTimeoutMs of its arrival", () => {
  // Sim seed 30702 (session 38): the only ACK naming the earlier incarnation came 992 ms into
  // the retry's round; the retry was moved over to it and proposed again, with a deadline a
  // whole second later, so its client waited 1,992 ms for a 503 (the bound is
  // submitTimeoutMs, 1 s). A moved request now keeps its first round's deadline.
  // Mutation: resubmit moved requests without `answerByMs`, and this fails.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  const firstId = firstTryOnTwo(c);
  // The retry (core 4, the next epoch) hears nothing for 900 ms, then core 2's answer only.
  const retry = c.submit(3, FIRST);
  const retryAtMs = c.nowMs;
  c.tick(900);
  c.exchange(among(1, 3), 1);
  assertEquals(c.cores[3]!.table.get(firstId)?.committed, false, "moved over to the first try");
  assertEquals(c.answers.get(retry), undefined, "its new round is open");
  c.drop();
  c.tick(retryAtMs + 1_000 - c.nowMs);
  const answer = c.answers.get(retry);
  assert(answer !== undefined && !answer.ok, "refused by its first round's deadline");
  assertEquals(answer.code, "no_quorum");
});

Deno.test("a keyed copy finished here whose COMMIT never comes is dropped, with a tombstone and no key, after uncommittedRetentionMs", () => {
  // Session 38: such a copy waits for its COMMIT before retention may take it (sim seed 233,
  // job_table.ts's `expire`), and it waited for ever if none came: a job held in memory with
  // no bound on a node that missed the COMMIT for good. It now leaves `uncommittedRetentionMs`
  // after its submit, like every uncommitted copy, and names no body with a key.
  // Mutation: keep only pending copies in `dueUncommitted`, and it is still held.
  const HOUR = 3_600_000;
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS, finishedRetentionMs: 2_000 });
  c.startAll();
  const id = deliveredWithoutCommitOnTwo(c);
  const held = () => c.cores[1]!.table.get(id);
  assertEquals([held()?.phase, held()?.committed], ["delivered", false]);
  // Nothing reaches core 1 any more: its COMMIT never comes.
  const cut = (m: { from: number; to: number }) => m.to === 1 || m.from === 1;
  for (let hour = 1; hour <= 23; hour++) {
    c.tick(HOUR);
    c.drop(cut);
    c.settle((m) => !cut(m));
  }
  assertEquals(held()?.phase, "delivered", "kept for its COMMIT within the retention");
  c.tick(HOUR + 1_000);
  c.drop(cut);
  assertEquals(held(), undefined, "dropped once its submit is uncommittedRetentionMs old");
  assertEquals(c.cores[1]!.table.keyTombstone(id), undefined, "and it names no body");
  assert(c.cores[1]!.table.goneTombstone(id) !== undefined, "a tombstone guards the id");
  assertEquals(c.cores[1]!.table.uncommitted, 0);
});

Deno.test("a replica that drops a finished copy it never saw committed keeps the job from coming back when the COMMIT arrives after the drop", () => {
  // Session 38's review of the drop above, default config: the owner's first submit of a key
  // saw no majority and its confirm rounds failed for nearly a day; then one succeeded, and
  // replica x got the job's SUBMIT and DONE but its COMMIT only after x's uncommitted
  // retention (counted from the first submit) had dropped its copy. With no key and no
  // tombstone left, the COMMIT (which carries the spec) made the job anew on x, pending and
  // committed, for ever. Mutation: give keyed ids no tombstone (`jobs-keyed-finished-no-
  // tombstone`), and x holds it pending at the end.
  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;
  const c = new ReviewCluster();
  c.startAll();
  const key = "zk-1";
  const id = keyedJobId(key, keyEpoch(c.wallMs, DAY));
  const o = ownerOf(c, id);
  const x = (o + 1) % 5;
  const startMs = c.nowMs;
  const fromOwner = (m: { from: number }) => m.from === o;
  const first = c.submit(o, { url: "http://a.test/", payload: "body", idempotencyKey: key });
  for (let i = 0; i < 30; i++) {
    c.drop(fromOwner);
    c.settle((m) => !fromOwner(m));
    c.tick(100);
  }
  assertEquals(c.answers.get(first)?.ok, false, "not acknowledged");
  const healMs = startMs + DAY - 2 * 60_000;
  while (c.nowMs < healMs) {
    c.tick(Math.min(HOUR, healMs - c.nowMs));
    c.drop(fromOwner);
    c.settle((m) => !fromOwner(m));
  }
  // Healed: a confirm round commits it; x alone misses the COMMIT.
  const commitToX = (m: { to: number; records: readonly string[] }) =>
    m.to === x && m.records.includes("commit");
  for (let i = 0; i < 20 && c.cores[o]!.table.get(id)?.committed !== true; i++) {
    c.tick(1_000);
    c.drop(commitToX);
    c.settle((m) => !commitToX(m));
    c.drop(commitToX);
  }
  assertEquals(c.cores[o]!.table.get(id)?.committed, true, "a confirm round committed it");
  c.delivered(o, id);
  c.tick(50);
  c.drop(commitToX);
  c.settle((m) => !commitToX(m) && !(m.to === x && m.kind !== "repl"));
  assertEquals(
    [c.cores[x]!.table.get(id)?.phase, c.cores[x]!.table.get(id)?.committed],
    ["delivered", false],
  );
  // x is cut off until its retention has dropped the copy, then anti-entropy brings the COMMIT.
  const withX = (m: { from: number; to: number }) => m.to === x || m.from === x;
  while (c.nowMs < startMs + DAY + 3_000) {
    c.tick(1_000);
    c.drop(withX);
    c.settle((m) => !withX(m));
  }
  assertEquals(c.cores[x]!.table.get(id), undefined, "x dropped its copy");
  for (let i = 0; i < 10; i++) {
    c.tick(2_500);
    c.settle();
  }
  for (let h = 0; h < 72; h++) {
    c.tick(HOUR);
    c.settle();
  }
  assertEquals(c.cores[x]!.table.get(id), undefined, "the job did not come back on x");
  assertEquals(c.cores[x]!.table.counts.pending, 0);
});

Deno.test("a moved request's deadline refuses it alone: another client's round it joined runs its full time", () => {
  // The review of 934ca03: a moved request joining a round another client had started moved
  // that round's deadline forward to its own, so that client was refused 900 ms into its own
  // second although the vote that would have committed its round came 50 ms later. Now the
  // moved request has a timer of its own. Mutation: move the shared round's deadline forward
  // instead (`idem-moved-deadline-shared`), and X is refused.
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  const firstId = firstTryOnTwo(c);
  c.drop();
  // Y: a retry on core 4, in the next epoch (core 4 holds nothing of the key).
  const y = c.submit(3, FIRST);
  const yAtMs = c.nowMs;
  c.tick(100);
  // Core 4 is handed core 2's copy of the first try; X, the same retry, then confirms it.
  c.handOff(3, 1, snapshotOf(c.cores[1]!.table.get(firstId)!));
  const x = c.submit(3, FIRST);
  const xAtMs = c.nowMs;
  c.persist(3);
  // 800 ms on, core 2's answers move Y over to the first try, into X's confirm round.
  c.tick(800);
  c.exchange(among(1, 3), 1, 3);
  assertEquals([c.answers.get(x), c.answers.get(y)], [undefined, undefined], "both wait");
  c.tick(yAtMs + 1_000 - c.nowMs);
  const answerY = c.answers.get(y);
  assert(answerY !== undefined && !answerY.ok, "Y is refused by its first round's deadline");
  assertEquals(c.answers.get(x), undefined, "X's round goes on");
  // Core 1's vote, 950 ms into X's round, commits it.
  c.tick(50);
  c.exchange(among(0, 3), 0);
  assert(c.nowMs < xAtMs + 1_000);
  assertEquals(ok(c.answers.get(x)).id, firstId, "X is acknowledged with the first try's job");
});
