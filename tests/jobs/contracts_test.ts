/**
 * Guards for section 4 of issue 17 ("smaller contract breaks") at the replication core: each
 * drives cores by hand (tests/jobs/review_harness.ts) with the WAL held back where the
 * contract is about durability, so a test sees the moment between "applied" and "durable".
 */

import { assert, assertEquals } from "../assert.ts";
import { ReviewCluster } from "./review_harness.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { numberAttempts } from "../../src/jobs/job_model.ts";

/** A committed job core 0 owns (the node that takes a submit mints ids it ranks first for). */
function committedJob(c: ReviewCluster): string {
  const rid = c.submit(0, { url: "http://a.test/", payload: "{}", maxAttempts: 1 });
  c.settle((m) => m.kind !== "sync-req" && m.kind !== "sync-reply");
  const answer = c.answers.get(rid);
  assert(answer?.ok === true, JSON.stringify(answer));
  return answer.id;
}

function reportDead(c: ReviewCluster, i: number, jobId: string): number | undefined {
  const token = c.cores[i]!.reportDead(c.nowMs, c.wallMs, {
    kind: "dead",
    jobId,
    attempt: {
      attempt: 1,
      startedAtMs: c.wallMs,
      latencyMs: 3,
      outcome: "http_error",
      status: 500,
      detail: "boom",
    },
    attemptsMade: 1,
    reason: "attempts exhausted",
  });
  c.collect();
  return token;
}

const listed = (c: ReviewCluster, i: number) =>
  c.cores[i]!.deadLetters(100).items.map((e) => e.jobId);

Deno.test("a dead letter is listed, and can be retried, only once its DEAD record is durable", () => {
  const c = new ReviewCluster();
  c.startAll();
  const id = committedJob(c);
  const token = reportDead(c, 0, id);
  assert(token !== undefined, "the report is recorded");
  assertEquals(c.cores[0]!.table.get(id)?.phase, "dead", "applied at once");
  assertEquals(listed(c, 0), [], "not durable: not a dead letter yet");
  const requestId = 9_001;
  c.cores[0]!.revive(c.nowMs, c.wallMs, requestId, id);
  c.collect();
  assertEquals(
    c.reviveAnswers.get(requestId),
    { ok: false, code: "not_ready" },
    "not durable: no manual retry yet",
  );
  c.persist(0);
  assertEquals(listed(c, 0), [id], "durable: listed");
});

Deno.test("a replica lists a dead letter only once the DEAD it received is on its disk", () => {
  const c = new ReviewCluster();
  c.startAll();
  const id = committedJob(c);
  reportDead(c, 0, id);
  c.persist(0);
  c.tick(jobsDefaults.lazySendMs); // the DEAD rides lazily: nobody waits for its majority
  c.pass((m) => m.from === 0 && m.to === 1 && m.kind === "repl");
  assertEquals(c.cores[1]!.table.get(id)?.phase, "dead");
  assertEquals(listed(c, 1), [], "the replica's copy is not durable yet");
  c.persist(1);
  assertEquals(listed(c, 1), [id]);
});

Deno.test("a manual retry's attempts say which retry they belong to and continue the numbering", () => {
  const c = new ReviewCluster();
  c.startAll();
  const id = committedJob(c);
  reportDead(c, 0, id);
  c.persist(0);
  const requestId = 9_002;
  c.cores[0]!.revive(c.nowMs, c.wallMs, requestId, id);
  c.settle((m) => m.kind !== "sync-req" && m.kind !== "sync-reply");
  assertEquals(c.reviveAnswers.get(requestId), { ok: true });
  c.tick(1);
  c.delivered(0, id); // the retry's first attempt, numbered 1 in its round by the engine
  const entry = c.cores[0]!.table.get(id)!;
  assertEquals(entry.phase, "delivered");
  assertEquals(entry.history.map((h) => [h.attempt, h.retry ?? 0]), [[1, 0], [1, 1]]);
  const numbered = numberAttempts(entry);
  assertEquals(numbered.numbers, [1, 2]);
  assertEquals(numbered.total, 2);
  // The record carries the round to the replicas.
  c.tick(jobsDefaults.lazySendMs);
  c.settle((m) => m.kind !== "sync-req" && m.kind !== "sync-reply");
  assertEquals(c.cores[1]!.table.get(id)!.history.map((h) => h.retry ?? 0), [0, 1]);
});

Deno.test("a node that learns by snapshot that a compacted job ended does not call it delivered", () => {
  // Core 5 was away while its pending copy of a job died elsewhere and was compacted there,
  // tombstone and all (deadLettersMax and finishedTombstonesMax of 1, two later dead letters).
  // Its snapshot catch-up then saw the job gone from the server's table with the job's SUBMIT
  // covered by the server's held summary: finished, but not how. The node made it `delivered`
  // (shown so, for an hour, and it could not be retried there) although it died. Now it does
  // as the server did: it compacts the job and keeps a tombstone against late records.
  const c = new ReviewCluster({
    catchupLogBytesMax: 1,
    deadLettersMax: 1,
    finishedTombstonesMax: 1,
  });
  c.startAll();
  const died = committedJob(c);
  c.crash(4);
  reportDead(c, 0, died);
  c.settle();
  for (let n = 0; n < 2; n++) {
    const later = committedJob(c);
    reportDead(c, 0, later);
    c.settle();
  }
  c.tick(60_000);
  c.settle();
  assertEquals(c.cores[0]!.table.get(died), undefined, "compacted on the server");
  assertEquals(c.cores[0]!.table.goneTombstone(died), undefined, "its tombstone evicted");
  const restarted = c.restart(4);
  assertEquals(restarted.table.get(died)?.phase, "pending", "held pending before catch-up");
  for (let round = 0; round < 50 && restarted.phase !== "ready"; round++) {
    c.settle();
    c.tick(100);
  }
  assertEquals(restarted.phase, "ready");
  assert(
    restarted.table.get(died)?.phase !== "delivered",
    `a job that died is shown ${restarted.table.get(died)?.phase}`,
  );
  assertEquals(restarted.table.get(died), undefined, "compacted here too");
  assert(
    restarted.table.goneTombstone(died) !== undefined,
    "with a tombstone against late records",
  );
});

Deno.test("a manual retry of a job that is not a dead letter is refused not_dead_letter, saying what it is", () => {
  // Before session 41 a retry of a pending or delivered job answered 404 "no dead letter", as
  // if the job did not exist. Mutation: `retry-of-live-job-not-found`.
  const c = new ReviewCluster();
  c.startAll();
  const id = committedJob(c);
  c.cores[0]!.revive(c.nowMs, c.wallMs, 9_101, id);
  c.collect();
  assertEquals(c.reviveAnswers.get(9_101), { ok: false, code: "not_dead_letter" });
  c.delivered(0, id);
  // Straight from the core's outputs: the harness keeps only the code.
  c.collect();
  c.cores[0]!.revive(c.nowMs, c.wallMs, 9_102, id);
  const answer = c.cores[0]!.takeOutputs().find((o) => o.type === "revive-done");
  assert(answer?.type === "revive-done" && !answer.outcome.ok, JSON.stringify(answer));
  assertEquals(answer.outcome.code, "not_dead_letter");
  assert(answer.outcome.message.includes("was delivered"), answer.outcome.message);
  c.cores[0]!.revive(c.nowMs, c.wallMs, 9_103, "no-such-job");
  c.collect();
  assertEquals(c.reviveAnswers.get(9_103), { ok: false, code: "not_found" });
});
