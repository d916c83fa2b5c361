/**
 * Pending checks (src/jobs/pending_checks.ts): a replica that missed a job's DONE, with no
 * holder left able to send it the record (their catch-up logs let it go before the origin's
 * restart voided its seq: `hookd sim --events --seed 1802`), asks the owner once the job is
 * long overdue and applies the end it answers. Hand-driven cores
 * (tests/jobs/review_harness.ts): every message and fsync happens when the test says.
 */

import { assert, assertEquals } from "../assert.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { encodeRecord } from "../../src/jobs/job_codec.ts";
import { decodeMessage, encodeMessage } from "../../src/jobs/job_messages.ts";
import { type JobStateSnapshot, snapshotOf } from "../../src/jobs/job_model.ts";
import { endpoint, ReviewCluster, VOTERS } from "./review_harness.ts";

/** Catch-up logs that keep nothing: every record is gone from them as soon as it is applied. */
const NO_LOG = { catchupStragglerWaitMs: 0, catchupLogBytesMax: 1 };

function committedJob(c: ReviewCluster): string {
  const requestId = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.settle();
  const answer = c.answers.get(requestId);
  assert(answer?.ok === true, JSON.stringify(answer));
  assertEquals(c.cores[0]!.ownerOf(answer.id), VOTERS[0], "core 0 owns the jobs it mints");
  return answer.id;
}

function phases(c: ReviewCluster, id: string): (string | undefined)[] {
  return c.cores.map((core) => core.table.get(id)?.phase);
}

function counter(c: ReviewCluster, core: number, result: "asked" | "settled"): number {
  return c.registries.get(VOTERS[core]!)!.sumCounters(
    "hookd_jobs_pending_checks_total",
    (labels) => labels.result === result,
  );
}

/** Advances the clock `totalMs` in steps, letting everything through after each. */
function run(c: ReviewCluster, totalMs: number, stepMs = 1_000): void {
  for (let t = 0; t < totalMs; t += stepMs) {
    c.tick(stepMs);
    c.settle();
  }
}

/**
 * Core 0 delivers a job and crashes with its DONE on cores 1 and 2 only, then restarts and
 * catches up from everyone (by snapshot: the logs keep nothing), so it holds the job
 * delivered; its SKIP voids the DONE's seq, which no holder can send again. Cores 3 and 4 hold
 * the job pending, with no seq left to fetch: seed 1802's state. With `commitLost`, the lazy
 * COMMIT had not left core 0 yet and rode with the DONE: cores 3 and 4 hold the job
 * uncommitted too, and its owner, which holds it delivered, runs no confirm round. Returns
 * the job's id.
 */
function doneLostToTwoReplicas(c: ReviewCluster, commitLost: boolean): string {
  const id = committedJob(c);
  if (!commitLost) run(c, 100, 10);
  assertEquals(c.cores[3]!.table.get(id)?.committed, !commitLost);
  c.delivered(0, id);
  for (let i = 0; i < 20 && !c.inflight.some((m) => m.records.includes("done")); i++) c.tick(5);
  c.step((m) => m.from === 0 && (m.to === 1 || m.to === 2) && m.records.includes("done"));
  c.drop((m) => m.from === 0);
  c.crash(0);
  c.tick(50);
  c.persist(1, 2);
  c.restart(0);
  run(c, 3_000, 100);
  assertEquals(c.cores[0]!.phase, "ready");
  assertEquals(phases(c, id), ["delivered", "delivered", "delivered", "pending", "pending"]);
  return id;
}

Deno.test("a replica that missed a DONE no holder can send again asks the owner once the job is overdue, and ends it", () => {
  const c = new ReviewCluster(NO_LOG);
  c.startAll();
  const id = doneLostToTwoReplicas(c, false);
  // Nothing is asked before the job is `pendingCheckAfterMs` overdue.
  run(c, jobsDefaults.pendingCheckAfterMs - 5_000);
  assertEquals(phases(c, id), ["delivered", "delivered", "delivered", "pending", "pending"]);
  assertEquals([counter(c, 3, "asked"), counter(c, 4, "asked")], [0, 0]);
  run(c, 5_000 + jobsDefaults.pendingCheckIntervalMs);
  assertEquals(phases(c, id), ["delivered", "delivered", "delivered", "delivered", "delivered"]);
  assertEquals([counter(c, 3, "settled"), counter(c, 4, "settled")], [1, 1]);
  // The answer is on core 3's disk: restarted, it holds the job delivered at once, with no
  // seq to fetch and no check to make.
  c.crash(3);
  const restarted = c.restart(3);
  c.settle();
  assertEquals(restarted.phase, "ready");
  assertEquals(restarted.table.get(id)?.phase, "delivered");
});

Deno.test("an owner that compacted the job answers with its tombstone: the replica's copy, never committed, is compacted too", () => {
  const c = new ReviewCluster({ ...NO_LOG, finishedRetentionMs: 5_000 });
  c.startAll();
  const id = doneLostToTwoReplicas(c, true);
  run(c, jobsDefaults.pendingCheckAfterMs + jobsDefaults.pendingCheckIntervalMs);
  assertEquals(phases(c, id), [undefined, undefined, undefined, undefined, undefined]);
  for (const core of c.cores) assertEquals(core.table.goneTombstone(id)?.gen, 0xffff_ffff);
  assertEquals([counter(c, 3, "settled"), counter(c, 4, "settled")], [1, 1]);
  // A walk after the compaction finds nothing left to ask about.
  const asked = counter(c, 3, "asked");
  run(c, 2 * jobsDefaults.pendingCheckIntervalMs);
  assertEquals(counter(c, 3, "asked"), asked);
});

Deno.test("a job its owner still holds pending is answered nothing, and asked again after twice the wait", () => {
  // Core 0 owns the job and never reports an attempt (its receiver hangs, its circuit is
  // open). Each replica first sees the job overdue at its first walk, asks `after` later,
  // then twice that after the asking, then four times.
  const after = jobsDefaults.pendingCheckAfterMs;
  const walkMs = jobsDefaults.pendingCheckIntervalMs;
  const c = new ReviewCluster();
  c.startAll();
  const id = committedJob(c);
  const asked = () => [1, 2, 3, 4].map((i) => counter(c, i, "asked"));
  const at = (targetMs: number) => run(c, targetMs - c.nowMs, 5_000);
  at(after - 5_000);
  assertEquals(asked(), [0, 0, 0, 0], "not before the job was seen unmoved for `after`");
  at(after + walkMs + 5_000);
  assertEquals(asked(), [1, 1, 1, 1]);
  at(after + 2 * after - 5_000);
  assertEquals(asked(), [1, 1, 1, 1], "the second wait is twice the first");
  at(3 * after + walkMs + 5_000);
  assertEquals(asked(), [2, 2, 2, 2]);
  at(3 * after + 4 * after - 5_000);
  assertEquals(asked(), [2, 2, 2, 2], "the third wait is twice the second");
  at(7 * after + walkMs + 5_000);
  assertEquals(asked(), [3, 3, 3, 3]);
  assertEquals(phases(c, id), ["pending", "pending", "pending", "pending", "pending"]);
  assertEquals(counter(c, 0, "asked"), 0, "the owner asks nobody about its own job");
});

Deno.test("an answer to a check a node did not make ends nothing there", () => {
  // A peer (a bug, or a stale answer) says the job is compacted: core 3 did not ask, so its
  // pending copy stays.
  const c = new ReviewCluster();
  c.startAll();
  const id = committedJob(c);
  const gone = { jobId: id, gen: 0, expiresAtMs: c.wallMs + 60_000 };
  c.cores[3]!.receive(
    c.nowMs,
    c.wallMs,
    VOTERS[1]!,
    encodeMessage({
      kind: "pending-check-reply",
      from: VOTERS[1]!,
      records: [encodeRecord({ type: "gone", gone })],
    }),
  );
  c.collect();
  assertEquals(c.cores[3]!.table.get(id)?.phase, "pending");
  assertEquals(counter(c, 3, "settled"), 0);
});

Deno.test("of an ordered endpoint's jobs, only the head is asked about: the others wait for it", () => {
  // The owner attempts the head and never reports (its receiver hangs): the jobs behind it
  // are rightly held back, and asking about each would cost a message per job per wait.
  const c = new ReviewCluster();
  c.startAll();
  const ordered = endpoint(c, { url: "https://o.test/hook", ordered: true });
  for (let n = 0; n < 3; n++) {
    const requestId = c.submitEvent(n % 5, { type: "invoice.paid", payload: `{"n":${n}}` });
    run(c, 20, 10);
    assert(c.eventAnswers.get(requestId)?.ok === true, "the event is acknowledged");
  }
  const owner = c.cores.findIndex((core) => core.ownerOf(ordered.id) === core.self);
  const jobs = c.cores[owner]!.table.pendingEntries();
  assertEquals([...jobs].length, 3);
  run(c, jobsDefaults.pendingCheckAfterMs + 2 * jobsDefaults.pendingCheckIntervalMs, 5_000);
  assertEquals(c.scheduled[owner]!.filter((id) => id.endsWith("." + ordered.id)).length, 1);
  const replicas = [0, 1, 2, 3, 4].filter((i) => i !== owner);
  assertEquals(replicas.map((i) => counter(c, i, "asked")), [1, 1, 1, 1]);
});

/** A committed job core 0 owns, dead on every core (its one attempt failed). */
function deadOnAll(c: ReviewCluster): string {
  const id = committedJob(c);
  c.dead(0, id);
  run(c, 1_000, 100);
  assertEquals(phases(c, id), ["dead", "dead", "dead", "dead", "dead"]);
  return id;
}

/** Job `id`'s dead letter as a retry by hand of it makes it: generation 1, pending. */
function retriedState(c: ReviewCluster, id: string): JobStateSnapshot {
  return {
    ...snapshotOf(c.cores[1]!.table.get(id)!),
    gen: 1,
    phase: "pending",
    attemptsMade: 0,
    nextAttemptAtMs: c.wallMs,
    finishedAtMs: 0,
    deadReason: "",
  };
}

Deno.test("an owner that missed a retry by hand answers the dead letter it holds: it is handed the retry, and delivers it", () => {
  // Every replica but the owner holds generation 1 pending (a REVIVE its restart voided and
  // no log could send again; here brought by a handoff, which no seq names): the owner holds
  // the dead letter of generation 0 and would never attempt the retry.
  const c = new ReviewCluster();
  c.startAll();
  const id = deadOnAll(c);
  const retried = retriedState(c, id);
  for (const i of [1, 2, 3, 4]) c.handOff(i, i === 1 ? 2 : 1, retried);
  assertEquals(phases(c, id), ["dead", "pending", "pending", "pending", "pending"]);
  const scheduledBefore = c.scheduled[0]!.filter((j) => j === id).length;
  run(c, jobsDefaults.pendingCheckAfterMs + jobsDefaults.pendingCheckIntervalMs);
  assertEquals(phases(c, id), ["pending", "pending", "pending", "pending", "pending"]);
  assertEquals(c.cores[0]!.table.get(id)?.gen, 1);
  assertEquals(c.scheduled[0]!.filter((j) => j === id).length, scheduledBefore + 1);
});

Deno.test("a retry by hand of an old dead letter is not taken for overdue while it runs", () => {
  // A REVIVE clears the next-attempt time, so by its times alone the retry of a job submitted
  // ten minutes ago looks ten minutes overdue. It is asked about only once it has been seen
  // unmoved for `pendingCheckAfterMs` (second-engineer review of the first form, which asked
  // at once: four replicas per retry, each answered with the dead letter's whole payload).
  const c = new ReviewCluster();
  c.startAll();
  const id = deadOnAll(c);
  run(c, 600_000, 10_000);
  const before = [1, 2, 3, 4].map((i) => counter(c, i, "asked"));
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 9_001, id);
  run(c, 1_000, 100);
  assert(c.reviveAnswers.get(9_001)?.ok === true, "the retry is acknowledged");
  assertEquals(phases(c, id), ["pending", "pending", "pending", "pending", "pending"]);
  run(c, jobsDefaults.pendingCheckAfterMs - 5_000, 5_000);
  assertEquals([1, 2, 3, 4].map((i) => counter(c, i, "asked")), before);
});

Deno.test("an owner that compacted a dead letter and missed its retry by hand is handed the retry", () => {
  // As above, but the owner's dead letter is gone (compacted: its tombstone answers for it).
  const c = new ReviewCluster({ deadRetentionMs: 5_000 });
  c.startAll();
  const id = deadOnAll(c);
  const retried = retriedState(c, id);
  run(c, 10_000, 1_000);
  assertEquals(c.cores[0]!.table.goneTombstone(id)?.gen, 0);
  for (const i of [1, 2, 3, 4]) c.handOff(i, i === 1 ? 2 : 1, retried);
  assertEquals(phases(c, id), [undefined, "pending", "pending", "pending", "pending"]);
  run(c, jobsDefaults.pendingCheckAfterMs + 2 * jobsDefaults.pendingCheckIntervalMs);
  assertEquals(c.cores[0]!.table.get(id)?.gen, 1);
  assertEquals(c.cores[0]!.table.get(id)?.phase, "pending");
  assert(c.scheduled[0]!.includes(id), "the owner schedules the retry");
});

Deno.test("walks go on where the last stopped: with more overdue jobs than a walk takes, each is asked in turn", () => {
  // A walk looks at 2 pending jobs and asks about 1; the second asking of the first jobs
  // comes soon (backoff capped at the first wait), yet no job is left behind (second-engineer
  // review: every walk began at the index's head, and the front jobs took every turn).
  const c = new ReviewCluster({
    pendingCheckScanMax: 2,
    pendingChecksPerWalkMax: 1,
    pendingCheckBackoffMaxMs: jobsDefaults.pendingCheckAfterMs,
  });
  c.startAll();
  const ids = Array.from({ length: 7 }, () => committedJob(c));
  const askedIds = new Set<string>();
  for (let walk = 0; walk < 40; walk++) {
    for (const m of c.inflight.filter((m) => m.kind === "pending-check")) {
      const d = decodeMessage(m.bytes);
      if (d.ok && d.value.kind === "pending-check") d.value.jobIds.forEach((j) => askedIds.add(j));
    }
    c.tick(jobsDefaults.pendingCheckIntervalMs);
  }
  assertEquals(ids.filter((id) => !askedIds.has(id)), [], "every overdue job asked about");
});

Deno.test("an owner holding two guards of a job answers with the later life's", () => {
  // A finished stub's tombstone of generation 0, and the key a delivered retry by hand left
  // (every generation): answered with the tombstone, the asker would hand the owner the retry
  // it delivered, again and again, and once the key expired the owner would take it (second
  // review of the pending checks).
  const c = new ReviewCluster();
  c.startAll();
  const jobId = "job_kguards";
  const table = c.cores[0]!.table;
  table.apply(
    { type: "gone", gone: { jobId, gen: 0, expiresAtMs: c.wallMs + 86_400_000 } },
    c.wallMs,
  );
  table.apply({
    type: "key",
    key: { key: "k", jobId, bodyHash: "h", expiresAtMs: c.wallMs + 3_600_000, gen: 0xffff_ffff },
  }, c.wallMs);
  c.cores[0]!.receive(
    c.nowMs,
    c.wallOf(0),
    VOTERS[1]!,
    encodeMessage({ kind: "pending-check", from: VOTERS[1]!, jobIds: [jobId] }),
  );
  c.collect();
  const replies = c.inflight.filter((m) => m.kind === "pending-check-reply" && m.to === 1);
  assertEquals(replies.length, 1);
  const d = decodeMessage(replies[0]!.bytes);
  assert(d.ok && d.value.kind === "pending-check-reply");
  assertEquals(d.value.records.map((r) => r.record.type), ["key"]);
});

Deno.test("a replica that missed a run of an ordered endpoint's DONEs has them all repaired in one walk", () => {
  // The owner delivered three ordered jobs in turn; core `x` missed every DONE and, with no
  // anti-entropy round in the test's time, fetches none. Asked about one head a walk, a long
  // run took hours (second review); each answer now asks about the next head at once.
  const c = new ReviewCluster({ antiEntropyIntervalMs: 100_000_000 });
  c.startAll();
  const ordered = endpoint(c, { url: "https://o.test/hook", ordered: true });
  const owner = c.cores.findIndex((core) => core.ownerOf(ordered.id) === core.self);
  const x = (owner + 1) % 5;
  const ids: string[] = [];
  for (let n = 0; n < 3; n++) {
    const requestId = c.submitEvent(owner, { type: "invoice.paid", payload: `{"n":${n}}` });
    run(c, 20, 10);
    const answer = c.eventAnswers.get(requestId);
    assert(answer?.ok === true, "the event is acknowledged");
  }
  for (const entry of c.cores[owner]!.table.pendingEntries()) ids.push(entry.jobId);
  assertEquals(ids.length, 3);
  const noDoneToX = (m: { to: number; records: readonly string[] }) =>
    m.to === x && m.records.includes("done");
  for (let round = 0; round < 10; round++) {
    for (const id of c.scheduled[owner]!.filter((id) => ids.includes(id))) {
      if (c.cores[owner]!.table.get(id)?.phase === "pending") c.delivered(owner, id);
    }
    for (let i = 0; i < 30; i++) {
      c.tick(100);
      c.drop(noDoneToX);
      c.settle((m) => !noDoneToX(m));
    }
  }
  assertEquals(ids.map((id) => c.cores[owner]!.table.get(id)?.phase), [
    "delivered",
    "delivered",
    "delivered",
  ]);
  assertEquals(ids.map((id) => c.cores[x]!.table.get(id)?.phase), [
    "pending",
    "pending",
    "pending",
  ]);
  // Watched from its first walk, the head is asked `after` later, and the answer that ends it
  // asks about the next at once: the whole run ends in the turn the first answer comes.
  let settled = 0;
  for (let t = 0; t < 2 * jobsDefaults.pendingCheckAfterMs && settled === 0; t += 1_000) {
    c.tick(1_000);
    c.drop(noDoneToX);
    c.settle((m) => !noDoneToX(m));
    settled = counter(c, x, "settled");
  }
  assertEquals(settled, 3, "all three in the step the first was settled");
  assertEquals(ids.map((id) => c.cores[x]!.table.get(id)?.phase), [
    "delivered",
    "delivered",
    "delivered",
  ]);
});
