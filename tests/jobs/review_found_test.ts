/**
 * Bugs the second-engineer review of the replicated job store found (issue 8), each as a
 * scenario of hand-driven replication cores (tests/jobs/review_harness.ts): every message and
 * every fsync happens when the test says, so each race happens in the same order every time.
 * Each test failed on the code before its fix; its header says what broke.
 */

import { assert, assertEquals } from "../assert.ts";
import {
  avoiding,
  between,
  type InFlight,
  type Pick,
  ReviewCluster,
  WALL,
} from "./review_harness.ts";
import { snapshotOf } from "../../src/jobs/job_model.ts";
import { submitBodyHash } from "../../src/jobs/replication_core.ts";
import { keyedJobId, keyEpoch } from "../../src/jobs/keyed_id.ts";
import type { SubmitRequest } from "../../src/jobs/service.ts";
import { JobTable } from "../../src/jobs/job_table.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { decodeMessage } from "../../src/jobs/job_messages.ts";
import type { AttemptRecord } from "../../src/delivery/types.ts";

const QUORUM = 3;

Deno.test("a node whose WAL failed never acknowledges a record that its failed append held", () => {
  // The WAL failed while an append holding a SUBMIT from core 0 was being written. The core
  // dropped its pending appends but kept the record's stamp as 'on its way to disk'; when the
  // SUBMIT came again (the owner's confirm round), the ACK was deferred to an append that no
  // longer existed, taken for 'already durable', and sent at once: a vote from a node whose
  // disk does not hold the job, after fail-stop. With it a keyed retry was acknowledged on
  // two disks.
  const c = new ReviewCluster();
  c.startAll();
  const request: SubmitRequest = { url: "http://a.test/", payload: "{}", idempotencyKey: "k-1" };
  const id = keyedJobId(request.idempotencyKey!, keyEpoch(WALL, jobsDefaults.idempotencyWindowMs));
  // Nodes 3 and 5 are unreachable (not yet declared dead); node 4's disk fails.
  const cut = (m: { from: number; to: number }) => [2, 4].includes(m.to) || [2, 4].includes(m.from);
  const first = c.submit(0, request);
  c.pass((m) => !cut(m));
  c.cores[3]!.storageFailed("injected fsync failure (EIO)");
  c.pending[3] = [];
  c.persist(0, 1);
  c.pass((m) => !cut(m));
  c.tick(1_001);
  assertEquals(c.answers.get(first)?.ok, false, "no majority: refused");
  // The client retries on node 1: its copy is confirmed with every voter again.
  const retry = c.submit(0, request);
  c.pass((m) => !cut(m));
  c.persist(0, 1);
  c.pass((m) => !cut(m));
  const answer = c.answers.get(retry);
  const holders = c.durableHolders(id, submitBodyHash(request));
  assert(
    answer === undefined || !answer.ok || holders.length >= QUORUM,
    `acknowledged while durable on ${holders.length} disks [${holders}]`,
  );
  const acksFromFailed = c.inflight.filter((m) => m.from === 3 && m.kind === "ack");
  assertEquals(acksFromFailed.length, 0, "no ACK leaves a failed node");
});

Deno.test("a replica that counts a SUBMIT's seq as held (voided by a restart's SKIP) but does not hold the job stores it before it votes", () => {
  // Core 0 took a keyed submit; only core 1 stored it before core 0 crashed unsynced. Core 0
  // restarted, caught up from cores 2 and 3 and voided its seqs past what they knew (with the
  // margin), the SUBMIT's among them. Later the client retried on core 1, which confirmed its
  // copy: cores 2, 3 and 4 found the seq 'held' and answered 'ok' without holding the job,
  // so the retry was acknowledged while one disk held it.
  // A majority's answers end the catch-up at once (no wait for the voters out of reach).
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const request: SubmitRequest = { url: "http://a.test/", payload: "{}", idempotencyKey: "k-2" };
  const id = keyedJobId(request.idempotencyKey!, keyEpoch(WALL, jobsDefaults.idempotencyWindowMs));
  c.submit(0, request);
  c.pass(between(0, 1, "repl"));
  c.persist(1);
  c.crash(0);
  c.drop();
  // Core 0 comes back and catches up from cores 2 and 3 only.
  const restarted = c.restart(0);
  c.settle(avoiding(1, 4));
  assertEquals(restarted.phase, "ready");
  // Its SKIP reaches everyone.
  c.settle();
  // The client retries on core 1. Every answer comes back; nothing else is written yet.
  const retry = c.submit(1, request);
  c.pass();
  const answer = c.answers.get(retry);
  const holders = c.durableHolders(id, submitBodyHash(request));
  assert(
    answer === undefined || !answer.ok || holders.length >= QUORUM,
    `acknowledged while durable on [${holders}]`,
  );
  // Once the copies are written it is acknowledged, on a majority.
  c.settle();
  assertEquals(c.answers.get(retry)?.ok, true);
  assert(c.durableHolders(id, submitBodyHash(request)).length >= QUORUM);
});

Deno.test("a restarted node never reuses a seq that its peer holds but had not yet made durable when it answered the catch-up", () => {
  // Two voters. Core 0 sent a SUBMIT and crashed before its own fsync; core 1 had it on its
  // way to disk when core 0's catch-up asked. Core 1 answered with the highest seq of core 0
  // it held durably, one short; having heard from every voter, core 0 added no margin and
  // gave its next record the same seq. Core 1 took the new SUBMIT for the one it already had
  // and acknowledged it without storing it: a job acknowledged on one disk of two.
  const voters = ["10.0.0.1:7000", "10.0.0.2:7000"];
  const c = new ReviewCluster({}, voters);
  c.startAll();
  c.submit(0, { url: "http://a.test/", payload: "first" });
  c.pass(between(0, 1, "repl"));
  c.crash(0);
  const restarted = c.restart(0);
  // Catch-up runs while core 1's append is still being written.
  c.pass((m) => m.kind === "sync-req" || m.kind === "sync-reply");
  assertEquals(restarted.phase, "ready");
  const second = c.submit(0, { url: "http://a.test/", payload: "second" });
  c.settle();
  const answer = c.answers.get(second);
  assert(answer?.ok === true, JSON.stringify(answer));
  const holders = c.durableHolders(answer.id);
  assertEquals(holders, [0, 1], "acknowledged only once both disks hold it");
  assertEquals(c.stampConflicts(), [], "no seq names two records");
});

for (const via of ["snapshot", "records"] as const) {
  Deno.test(`a node that needs a catch-up (${via}) larger than the transport's send queue still catches up`, () => {
    // A catch-up reply was cut into parts that all left at once, and a reply counted only
    // once all its parts arrived. A reply larger than the per-peer send queue (8 MiB by
    // default: a snapshot of some 35,000 delivered jobs, an hour of retention at 10 jobs/s;
    // or the records of a 64 MiB catch-up log) had its tail refused by the transport every
    // time, so the restarted node asked again every 500 ms, got a fresh reply with the same
    // fate, and never became ready. Here the queue is scaled down with the table, 64 KiB
    // against about 150 KiB of job states, and the reply's page with it (an eighth of the
    // queue, as the defaults are).
    const c = new ReviewCluster({
      ...(via === "snapshot" ? { catchupLogBytesMax: 1 } : {}),
      messageBytesMax: 4096,
      syncReplyBytesMax: 8 * 1024,
    });
    c.startAll();
    // Core 5 is away while 600 jobs are taken.
    c.crash(4);
    for (let n = 0; n < 600; n++) c.submit(n % 4, { url: "http://a.test/", payload: `${n}` });
    c.settle();
    assertEquals(c.cores[0]!.table.size, 600);
    c.queueBytesMax = 64 * 1024;
    const restarted = c.restart(4);
    for (let round = 0; round < 200 && restarted.phase !== "ready"; round++) {
      c.settle();
      c.tick(100);
    }
    assertEquals(
      restarted.phase,
      "ready",
      `still ${restarted.phase}; ${c.refusedSends} sends refused`,
    );
    assertEquals(restarted.table.size, 600);
    assert(c.syncPages[via] > 10, `paged: ${JSON.stringify(c.syncPages)}`);
  });
}

Deno.test("a job table's memory follows the jobs it holds, not the job rate times the 24 h uncommitted window", () => {
  // Every job a replica stores arrives uncommitted (its COMMIT comes later), and each put an
  // item in the uncommitted-retention queue due 24 h after its submit; a queue only drops
  // items once due, so it held every job of the last day, long after the jobs themselves
  // were compacted (after 1 h): at 1,000 jobs/s, 86 million items. Likewise the dead-letter
  // queue kept an item per dead letter for 7 days past the deadLettersMax bound.
  const table = new JobTable({
    historyMax: 5,
    finishedRetentionMs: 1_000,
    finishedJobsMax: 1_000_000,
    deadRetentionMs: 7 * 86_400_000,
    deadLettersMax: 10,
    idempotencyWindowMs: 86_400_000,
    idempotencyClockSkewMs: 0,
    stubRetentionMs: 1_000,
    uncommittedRetentionMs: 86_400_000,
    finishedTombstoneMs: 24 * 3_600_000,
    finishedTombstonesMax: 1_000,
  });
  const jobs = 2_000;
  for (let n = 0; n < jobs; n++) {
    const id = `job_${n}`;
    const stamp = (seq: number) => ({ origin: "a", seq });
    table.apply({
      type: "submit",
      stamp: stamp(3 * n + 1),
      spec: {
        id,
        url: "http://a.test/",
        payload: "{}",
        headers: {},
        secrets: [],
        timeoutMs: 0,
        maxAttempts: 3,
        submittedAtMs: WALL,
        bodyHash: "",
      },
    }, WALL);
    table.apply({ type: "commit", stamp: stamp(3 * n + 2), jobId: id, bodyHash: "" }, WALL);
    const end = n % 2 === 0
      ? { type: "done" as const, stamp: stamp(3 * n + 3), jobId: id, gen: 0, finishedAtMs: WALL }
      : {
        type: "dead" as const,
        stamp: stamp(3 * n + 3),
        jobId: id,
        gen: 0,
        attemptsMade: 3,
        finishedAtMs: WALL,
        reason: "gave up",
      };
    table.apply(end, WALL);
  }
  table.expire(WALL + 2_000);
  assertEquals(table.size, 10, "the delivered ones left, 10 dead letters stay");
  assert(
    table.retentionItems <= 2 * table.size,
    `${table.retentionItems} retention items for ${table.size} jobs`,
  );
});

Deno.test("a node confirming a job votes with a SUBMIT on its own disk, not with a seq its tracker counts", () => {
  // The confirm round counted the proposer's own vote at once when its tracker held the
  // SUBMIT's seq. As on the replica side, that does not prove the job is on its disk: here
  // core 3 counts the seq (voided by core 1's restart) and holds the job only by a handoff
  // still being written when the client's retry reaches it. Its vote, core 2's copy and core
  // 4's made three: acknowledged while two disks held the job.
  // A majority's answers end the catch-up at once (no wait for the voters out of reach).
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const request: SubmitRequest = { url: "http://a.test/", payload: "{}", idempotencyKey: "k-5" };
  const id = keyedJobId(request.idempotencyKey!, keyEpoch(WALL, jobsDefaults.idempotencyWindowMs));
  c.submit(0, request);
  c.pass(between(0, 1, "repl"));
  c.persist(1);
  c.crash(0);
  c.restart(0);
  c.settle(avoiding(1, 4));
  c.settle(avoiding(4)); // the SKIP reaches core 2, 3 and 4's links stay quiet
  assertEquals(c.durableHolders(id), [1]);
  // Core 2 gets the job's state by a handoff from core 1 (its view changed): not yet durable.
  c.handOff(2, 1, snapshotOf(c.cores[1]!.table.get(id)!));
  // The client retries on core 3; nodes 1 and 5 are out of reach.
  const retry = c.submit(2, request);
  const reach = avoiding(0, 4);
  c.pass(reach);
  c.persist(1, 3);
  c.pass(reach);
  const answer = c.answers.get(retry);
  const holders = c.durableHolders(id, submitBodyHash(request));
  assert(
    answer === undefined || !answer.ok || holders.length >= QUORUM,
    `acknowledged while durable on [${holders}]`,
  );
  c.persist(2);
  c.pass(reach);
  assertEquals(c.answers.get(retry)?.ok, true, "acknowledged once its own copy is on disk");
});

Deno.test("a catch-up goes on when its server restarts in the middle of a paged reply", () => {
  // The first version of paged replies numbered each page's sending on the server, and the
  // requester followed the highest number: a server that restarted numbered from 0 again,
  // and its answers were ignored until it had sent as many pages again as in its last life
  // (one per retry: hours, for a server that had run a while). Now the requester numbers
  // its askings and the reply echoes the number. Three voters: core 3 catches up, core 2 is
  // down, core 1 restarts between two pages.
  const voters = ["10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"];
  const c = new ReviewCluster({ messageBytesMax: 1024, syncReplyBytesMax: 2048 }, voters);
  c.startAll();
  // A server that has answered many pages in its life (anti-entropy, a minute of it).
  for (let s = 0; s < 60; s++) {
    c.tick(1_000);
    c.settle();
  }
  c.crash(2);
  for (let n = 0; n < 60; n++) c.submit(n % 2, { url: "http://a.test/", payload: `${n}` });
  c.settle();
  c.crash(1);
  const restarted = c.restart(2);
  // Pages go one at a time; after the second, core 1 (the server) restarts.
  const sync = (m: { kind: string }) => m.kind === "sync-req" || m.kind === "sync-reply";
  for (let leg = 0; leg < 4; leg++) c.step(sync);
  const phase = (): string => restarted.phase;
  assert(phase() === "catching_up" && c.inflight.some((m) => m.kind === "sync-req"));
  c.crash(0);
  c.restart(0);
  for (let round = 0; round < 10 && phase() !== "ready"; round++) {
    c.settle(avoiding(1));
    c.tick(jobsDefaults.catchupRetryMs);
  }
  assertEquals(phase(), "ready");
  assertEquals(restarted.table.size, 60);
});

for (const tombstone of ["kept", "expired"] as const) {
  Deno.test(`a handoff of a pending job that finished and was compacted here does not bring it back (tombstone ${tombstone})`, () => {
    // Found by sim seed 111: node 2 missed a job's DONE behind a partition, took its owner for
    // dead and handed the job, pending, to node 5, which had seen the DONE and compacted the
    // job. Node 5 took the stale state as new: the job was pending there for ever (its DONE is
    // held, so anti-entropy never brings it again) and would be delivered again on the next
    // failover. The finished-job tombstone now drops such a state first; with the tombstone
    // expired, the SUBMIT on disk (`#finishedHere`) still does. Mutation: apply every handoff
    // (`#finishedHere` false) and the "expired" case fails.
    const retentionMs = 1_000;
    const c = new ReviewCluster({
      finishedRetentionMs: retentionMs,
      expireIntervalMs: 100,
      ...(tombstone === "expired" ? { finishedTombstoneMs: 1 } : {}),
    });
    c.startAll();
    const request: SubmitRequest = { url: "http://a.test/", payload: "{}" };
    c.submit(0, request);
    c.settle();
    c.tick(jobsDefaults.lazySendMs); // the COMMIT leaves
    c.settle();
    const id = c.scheduled[0]![0]!;
    const stale = snapshotOf(c.cores[1]!.table.get(id)!);
    assertEquals([stale.phase, stale.committed], ["pending", true]);
    c.delivered(0, id);
    c.tick(jobsDefaults.lazySendMs); // the DONE leaves
    c.settle();
    c.tick(jobsDefaults.lazyAppendMs); // and is written where it arrived
    c.settle();
    assertEquals(c.cores[4]!.table.get(id)?.phase, "delivered");
    for (let t = 0; t < retentionMs + 500; t += 100) c.tick(100);
    c.settle();
    assertEquals(c.cores[4]!.table.get(id), undefined, "compacted after the retention");
    if (tombstone === "expired") {
      assertEquals(c.cores[4]!.table.goneTombstone(id), undefined, "the tombstone is gone");
    }
    c.handOff(4, 1, stale);
    c.settle();
    assertEquals(c.cores[4]!.table.get(id), undefined, "the stale handoff is ignored");
    assertEquals(c.scheduled[4]!.includes(id), false);
  });
}

Deno.test("a job held only through a handoff's state and compacted is not made anew by its SUBMIT arriving late", () => {
  // Found by sim seed 383: node 5 missed a job's SUBMIT and COMMIT and learnt of the job from a
  // handoff `state`, which carries no stamp of the records it sums up, so node 5 never counted
  // them as held. It saw the DONE, compacted the job after the retention, and then an
  // anti-entropy round shipped it the SUBMIT and COMMIT it still lacked: the job was made
  // anew, pending for ever there (its DONE is held, so nothing ever finished it again).
  // Mutation: no finished-job tombstone (`jobs-no-gone-tombstone`) and this test fails.
  const retentionMs = 1_000;
  const c = new ReviewCluster({ finishedRetentionMs: retentionMs, expireIntervalMs: 100 });
  c.startAll();
  const request: SubmitRequest = { url: "http://a.test/", payload: "{}" };
  c.submit(0, request);
  c.drop(between(0, 4)); // node 5 misses the SUBMIT
  c.settle(avoiding(4));
  c.tick(jobsDefaults.lazySendMs); // the COMMIT leaves
  c.drop(between(0, 4)); // and node 5 misses it too
  c.settle(avoiding(4));
  const id = c.scheduled[0]![0]!;
  assertEquals(c.cores[4]!.table.get(id), undefined, "node 5 never got the job's records");
  c.handOff(4, 1, snapshotOf(c.cores[1]!.table.get(id)!));
  c.settle(avoiding(4));
  assertEquals(c.cores[4]!.table.get(id)?.phase, "pending", "node 5 holds the job by its state");
  c.delivered(0, id);
  c.tick(jobsDefaults.lazySendMs); // the DONE leaves, node 5 gets it this time
  c.settle((m) => m.kind !== "sync-req");
  c.tick(jobsDefaults.lazyAppendMs);
  c.settle((m) => m.kind !== "sync-req");
  assertEquals(c.cores[4]!.table.get(id)?.phase, "delivered");
  for (let t = 0; t < retentionMs + 500; t += 100) {
    c.tick(100);
    c.drop((m) => m.kind === "sync-req"); // no anti-entropy round brings the SUBMIT yet
  }
  c.settle((m) => m.kind !== "sync-req");
  assertEquals(c.cores[4]!.table.get(id), undefined, "compacted after the retention");
  // Anti-entropy rounds now ship node 5 the SUBMIT and COMMIT it still lacks.
  for (let t = 0; t < 4 * jobsDefaults.antiEntropyIntervalMs; t += 100) {
    c.tick(100);
    c.settle();
  }
  const back = c.cores[4]!.table.get(id);
  assertEquals(back?.phase, undefined, `the job came back ${back?.phase} on node 5`);
  assertEquals(c.scheduled[4]!.includes(id), false);
});

Deno.test("a catch-up page whose parts arrive more slowly than catchupRetryMs is not asked again while it is still coming", () => {
  // Sim seed 30109 (`hookd sim --events`, session 38): a snapshot page cut into 183 parts of
  // 4-KiB messages took 690 ms to arrive, and the requester asked again 500 ms after asking
  // (`catchupRetryMs`). A page is assembled from the parts of one asking, so the new ask threw
  // away the parts already in and the server sent every part again, on top of the old ones
  // still in flight: the restarted node never caught up. Now the wait runs from the last part
  // that came. Here two parts a round reach the restarted node, 100 ms apart. Mutation: do not
  // count a part as progress (`catchup-page-reasked-while-arriving`), and it stays catching up.
  const c = new ReviewCluster({
    catchupLogBytesMax: 1,
    messageBytesMax: 4096,
    syncReplyBytesMax: 64 * 1024,
  });
  c.startAll();
  c.crash(4);
  for (let n = 0; n < 300; n++) c.submit(n % 4, { url: "http://a.test/", payload: `${n}` });
  c.settle();
  const restarted = c.restart(4);
  for (let round = 0; round < 300 && restarted.phase !== "ready"; round++) {
    let parts = 0;
    c.step((m) => m.kind !== "sync-reply" || m.to !== 4 || parts++ < 2);
    c.persistAll();
    c.tick(100);
  }
  assertEquals(restarted.phase, "ready");
  assertEquals(restarted.table.size, 300);
});

Deno.test("a dead letter retried through a node that still holds it is delivered by an owner that compacted it", () => {
  // Session 38's review: the retry was acknowledged, but its bare REVIVE made the owner a stub
  // of generation 1, and no SUBMIT comes again (the owner counts its seq as held), so the owner
  // never delivered it. The REVIVE now carries the committed spec. Mutation: send it bare
  // (`revive-carries-no-spec`), and the owner holds a stub it never schedules.
  reviveThroughHolder(undefined);
});

Deno.test("a keyed dead letter retried through a node that still holds it is delivered by an owner that kept only its key", () => {
  // Found while building the test above: an owner that compacted a keyed dead letter keeps its
  // key, and the key dropped every later record of the job, the REVIVE of generation 1 too, so
  // the acknowledged retry was never delivered. A key now blocks only the generation it ended.
  // Mutation: it blocks every generation (`key-blocks-later-generation`).
  reviveThroughHolder("k-1");
});

/** Anti-entropy's messages: left out while a scenario steps records by hand. */
const noSync = (m: { kind: string }) => m.kind !== "sync-req" && m.kind !== "sync-reply";

/**
 * A job submitted through core 1 (its owner) with one attempt allowed, which fails: a dead
 * letter on every core. Returns its id.
 */
function deadLetterOnEveryCore(c: ReviewCluster, idempotencyKey: string | undefined): string {
  const rid = c.submit(0, {
    url: "http://a.test/",
    payload: "{}",
    maxAttempts: 1,
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  });
  c.settle(noSync);
  const answer = c.answers.get(rid);
  assert(answer?.ok === true, JSON.stringify(answer));
  const id = answer.id;
  assertEquals(c.cores[0]!.ownerOf(id), c.cores[0]!.self);
  failOnOwner(c, id);
  c.settle(noSync);
  for (const core of c.cores) assertEquals(core.table.get(id)?.phase, "dead");
  return id;
}

/** Attempt 1 by core 1, the owner, answered HTTP 500. */
function failedAttemptOnOwner(c: ReviewCluster): AttemptRecord {
  return {
    attempt: 1,
    startedAtMs: c.wallOf(0),
    latencyMs: 3,
    outcome: "http_error",
    status: 500,
    detail: "HTTP 500",
  };
}

/** Core 1, job `id`'s owner, reports its one allowed attempt failed: the job is dead there. */
function failOnOwner(c: ReviewCluster, id: string): void {
  c.cores[0]!.reportDead(c.nowMs, c.wallOf(0), {
    kind: "dead",
    jobId: id,
    attempt: failedAttemptOnOwner(c),
    attemptsMade: 1,
    reason: "attempts exhausted",
  });
  c.collect();
  c.tick(100);
}

/**
 * A dead letter on every core, and a client's retry of it through core 2 (its REVIVE made and
 * in flight); `cutFive` picks what core 5 sends or is sent, for the tests that cut it off.
 */
function firstRetryThroughTwo(): { c: ReviewCluster; id: string; cutFive: Pick } {
  const c = new ReviewCluster();
  c.startAll();
  const id = deadLetterOnEveryCore(c, undefined);
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 1, id);
  c.collect();
  return { c, id, cutFive: (m: InFlight) => m.from === 4 || m.to === 4 };
}

/** The statuses of the ACKs in flight from core `from` to core `to`, in order. */
function ackStatuses(c: ReviewCluster, from: number, to: number): string[] {
  return c.inflight
    .filter((m) => m.from === from && m.to === to && m.kind === "ack")
    .flatMap((m) => {
      const d = decodeMessage(m.bytes);
      return d.ok && d.value.kind === "ack" ? d.value.entries.map((e) => e.status) : [];
    });
}

/** Core i's copy of job `id` as [phase, generation]. */
function phaseGen(
  c: ReviewCluster,
  i: number,
  id: string,
): [string | undefined, number | undefined] {
  const entry = c.cores[i]!.table.get(id);
  return [entry?.phase, entry?.gen];
}

/** A client's retry through core 5, caught up, starts generation 2, and the owner attempts it. */
function retryThroughFiveStartsGenerationTwo(
  c: ReviewCluster,
  id: string,
  requestId: number,
): void {
  const before = c.scheduled[0]!.length;
  c.cores[4]!.revive(c.nowMs, c.wallOf(4), requestId, id);
  c.collect();
  c.settle(noSync);
  assertEquals(c.reviveAnswers.get(requestId)?.ok, true);
  assertEquals(c.cores[0]!.table.get(id)?.gen, 2);
  assert(c.scheduled[0]!.slice(before).includes(id), "the owner attempts the new retry");
}

function reviveThroughHolder(idempotencyKey: string | undefined): void {
  // The owner's clock runs 5 s ahead, so its dead retention ends first and it compacts the dead
  // letter; then a manual retry goes through node 2, which still holds it.
  const c = new ReviewCluster({ deadRetentionMs: 60_000 });
  c.skewMs = [5_000, 0, 0, 0, 0];
  c.startAll();
  const id = deadLetterOnEveryCore(c, idempotencyKey);
  for (let t = 0; t < 62_000; t += 1_000) c.tick(1_000);
  c.settle(noSync);
  assertEquals(c.cores[0]!.table.get(id), undefined, "the owner compacted the dead letter");
  assertEquals(c.cores[1]!.table.get(id)?.phase, "dead", "node 2 still holds it");
  const before = c.scheduled[0]!.length;
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 77, id);
  c.collect();
  c.settle(noSync);
  assertEquals(c.reviveAnswers.get(77)?.ok, true);
  for (let t = 0; t < 10; t++) {
    c.tick(1_000);
    c.settle();
  }
  const owners = c.cores[0]!.table.get(id);
  assertEquals([owners?.phase, owners?.gen, owners?.spec?.payload], ["pending", 1, "{}"]);
  assert(c.scheduled[0]!.slice(before).includes(id), "the owner schedules the revived job");
}

Deno.test("a snapshot from a replica that compacted a dead letter before its retry does not compact the retry", () => {
  // Session 39's review: after a snapshot, a pending job whose SUBMIT the server held but which
  // its table lacks is taken as finished there and compacted here (`finished-elsewhere`). A
  // dead letter retried by hand is not: the server may have compacted the dead letter before
  // the REVIVE reached it. Here cores 4 and 5 compact it and are cut off; the retry is
  // acknowledged by 1-3; the owner (core 1) restarts and core 4 answers its catch-up with a
  // snapshot. The owner compacted the acknowledged retry, and its tombstone then spread.
  // Mutation: judge revived jobs too (`snapshot-compacts-revived-job`).
  const c = new ReviewCluster({ deadRetentionMs: 60_000, catchupLogBytesMax: 1 });
  c.skewMs = [0, 0, 0, 5_000, 5_000];
  c.startAll();
  const id = deadLetterOnEveryCore(c, undefined);
  const cut = (m: InFlight) => [3, 4].includes(m.from) || [3, 4].includes(m.to);
  for (let t = 0; t < 58_000; t += 1_000) c.tick(1_000);
  c.settle((m) => noSync(m) && !cut(m));
  c.drop(cut);
  assertEquals([c.cores[3]!.table.get(id), c.cores[4]!.table.get(id)], [undefined, undefined]);
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 77, id);
  c.collect();
  c.settle((m) => noSync(m) && !cut(m));
  c.drop(cut);
  assertEquals(c.reviveAnswers.get(77)?.ok, true, "acknowledged by cores 1-3");
  c.crash(0);
  // A record of core 4's own that the owner lacks, so core 4 answers with a snapshot.
  c.submit(3, { url: "http://b.test/", payload: "{}" });
  c.drop((m) => m.to === 0);
  const restarted = c.restart(0);
  assertEquals([restarted.table.get(id)?.phase, restarted.table.get(id)?.gen], ["pending", 1]);
  const cut2 = (m: InFlight) =>
    ([3, 4].includes(m.from) && [1, 2].includes(m.to)) ||
    ([3, 4].includes(m.to) && [1, 2].includes(m.from));
  for (let round = 0; round < 50 && restarted.phase !== "ready"; round++) {
    c.settle((m) => !cut2(m));
    c.drop(cut2);
    c.tick(100);
  }
  assertEquals(restarted.phase, "ready");
  assert(c.syncPages.snapshot > 0, "caught up through a snapshot");
  for (let t = 0; t < 10; t++) {
    c.tick(1_000);
    c.settle((m) => !cut2(m));
    c.drop(cut2);
  }
  assertEquals(restarted.table.get(id)?.phase, "pending", "the owner still holds the retry");
  assert(c.scheduled[0]!.includes(id), "and delivers it");
});

Deno.test("a dead letter held uncommitted is not retried through that node: refused, not lost", () => {
  // Session 39's review: core 2 missed the COMMIT of a keyed job, so its dead copy stayed
  // uncommitted (perhaps a losing body, which the COMMIT replaces); every other core compacted
  // the dead letter. A retry through core 2 sent a REVIVE without the spec (only a committed
  // body may travel with it), acknowledged, and the owner got a stub it never delivered. Such a
  // retry is refused now (`not_ready`); a client tries again once the node knows. Mutation: retry
  // an uncommitted copy (`revive-uncommitted-copy`).
  const c = new ReviewCluster({ deadRetentionMs: 60_000 });
  c.startAll();
  const noCommitTo1 = (m: InFlight) => noSync(m) && !(m.to === 1 && m.records.includes("commit"));
  const rid = c.submit(0, {
    url: "http://a.test/",
    payload: "{}",
    maxAttempts: 1,
    idempotencyKey: "k-bare",
  });
  const step = () => {
    c.settle(noCommitTo1);
    c.drop((m) => !noCommitTo1(m));
  };
  step();
  const answer = c.answers.get(rid);
  assert(answer?.ok === true, JSON.stringify(answer));
  const id = answer.id;
  assertEquals(c.cores[1]!.table.get(id)?.committed, false, "core 2 missed the COMMIT");
  c.dead(0, id);
  c.tick(100);
  step();
  for (let t = 0; t < 62_000; t += 1_000) {
    c.tick(1_000);
    step();
  }
  assertEquals(c.cores[0]!.table.get(id), undefined, "the owner compacted the dead letter");
  assertEquals(c.cores[1]!.table.get(id)?.phase, "dead", "core 2 still holds it, uncommitted");
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 77, id);
  c.collect();
  c.settle(noSync);
  const refused = c.reviveAnswers.get(77);
  assert(refused?.ok === false && refused.code === "not_ready", JSON.stringify(refused));
  assertEquals(c.cores[0]!.table.get(id), undefined, "no stub anywhere");
  assertEquals(c.cores[1]!.table.get(id)?.gen, 0);
});

Deno.test("a retry through a node a generation behind is refused, and one after it catches up is attempted", () => {
  // Session 39's review: core 5, cut off, missed a first retry and its death. A client's retry
  // through it made a REVIVE of the generation that had already died, which every replica
  // absorbed (dead beats pending within a generation): acknowledged, never attempted. A replica
  // past the generation a REVIVE starts now answers `finished`, and the retry is refused
  // (`not_ready`); once core 5 catches up, a retry starts the next generation. Mutation: vote
  // `ok` for a stale REVIVE (`revive-stale-acknowledged`).
  const c = new ReviewCluster();
  c.startAll();
  const id = deadLetterOnEveryCore(c, undefined);
  const cut = (m: InFlight) => m.from === 4 || m.to === 4;
  const stepCut = () => {
    c.settle((m) => noSync(m) && !cut(m));
    c.drop(cut);
  };
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 1, id);
  c.collect();
  stepCut();
  assertEquals(c.reviveAnswers.get(1)?.ok, true);
  failOnOwner(c, id);
  stepCut();
  assertEquals(phaseGen(c, 0, id), ["dead", 1]);
  assertEquals(phaseGen(c, 4, id), ["dead", 0]);
  c.cores[4]!.revive(c.nowMs, c.wallOf(4), 2, id);
  c.collect();
  c.settle(noSync);
  const refused = c.reviveAnswers.get(2);
  assert(refused?.ok === false && refused.code === "not_ready", JSON.stringify(refused));
  // Anti-entropy brings core 5 the first retry and its end; a retry then starts generation 2.
  for (let t = 0; t < 3 * jobsDefaults.antiEntropyIntervalMs; t += 500) {
    c.tick(500);
    c.settle();
  }
  assertEquals(phaseGen(c, 4, id), ["dead", 1]);
  retryThroughFiveStartsGenerationTwo(c, id, 3);
});

Deno.test("a retry through a node a generation behind is refused while that generation still runs elsewhere", () => {
  // Session 39's known limit: core 5, cut off, missed a first retry; the owner's attempt of
  // it failed, but its DEAD reached nobody (the owner was cut off too). The other replicas
  // still held the first retry pending, so a client's retry through core 5 (a REVIVE of that
  // same generation) changed nothing there and they voted `ok`: acknowledged, then absorbed
  // by the owner's DEAD once it spread, never attempted. A replica whose generation another
  // REVIVE claimed now answers `finished`, and the retry is refused (`not_ready`); after the
  // heal a retry starts the next generation. Mutation: `revive-other-start-acknowledged`.
  const { c, id, cutFive } = firstRetryThroughTwo();
  c.settle((m) => noSync(m) && !cutFive(m));
  c.drop(cutFive);
  assertEquals(c.reviveAnswers.get(1)?.ok, true);
  // The owner is cut off as well; its attempt of generation 1 fails, and its DEAD stays home.
  const cutOwnerToo = (m: InFlight) => cutFive(m) || m.from === 0 || m.to === 0;
  failOnOwner(c, id);
  c.drop(cutOwnerToo);
  assertEquals(phaseGen(c, 0, id), ["dead", 1]);
  for (const i of [1, 2, 3]) {
    assertEquals(phaseGen(c, i, id), [
      "pending",
      1,
    ]);
  }
  assertEquals(phaseGen(c, 4, id), ["dead", 0]);
  // Core 5 rejoins cores 2-4 (the owner stays cut off) and a client retries through it.
  c.cores[4]!.revive(c.nowMs, c.wallOf(4), 2, id);
  c.collect();
  c.settle((m) => noSync(m) && !(m.from === 0 || m.to === 0));
  c.drop((m) => m.from === 0 || m.to === 0);
  const refused = c.reviveAnswers.get(2);
  assert(refused?.ok === false && refused.code === "not_ready", JSON.stringify(refused));
  // The heal: the owner's DEAD spreads (anti-entropy asks a peer at random each round), and a
  // retry then starts generation 2, attempted.
  const deadOne = () =>
    c.cores.every((core) => core.table.get(id)?.gen === 1 && core.table.get(id)?.phase === "dead");
  for (let t = 0; t < 20 * jobsDefaults.antiEntropyIntervalMs && !deadOne(); t += 500) {
    c.tick(500);
    c.settle();
  }
  for (const [i, core] of c.cores.entries()) {
    assertEquals([i, core.table.get(id)?.phase, core.table.get(id)?.gen], [i, "dead", 1]);
  }
  retryThroughFiveStartsGenerationTwo(c, id, 3);
});

Deno.test("a replica that got a retry's generation by a state refuses another REVIVE of it, as its writer does", () => {
  // Session 41's known limit: `reviveOf` was not in `state` records, so a replica that got the
  // generation by one (a checkpoint replayed, a snapshot, a handoff) knew no REVIVE of it and
  // voted `ok` for a stale one from core 5, a generation behind. The state now names the
  // REVIVE that claimed the generation where it was written. Mutation: `state-revive-of-dropped`.
  const { c, id, cutFive } = firstRetryThroughTwo();
  const first = c.inflight.find((m) =>
    m.from === 1 && m.kind === "repl" && m.records.includes("revive")
  );
  assert(first !== undefined, "the first retry's REVIVE is on its way");
  const toCore4 = (m: InFlight) => m.to === 3 && m.from === 1;
  for (const m of c.inflight.filter(toCore4)) c.inflight.splice(c.inflight.indexOf(m), 1);
  c.settle((m) => noSync(m) && !cutFive(m) && !toCore4(m));
  c.drop((m) => cutFive(m) || toCore4(m));
  assertEquals(c.reviveAnswers.get(1)?.ok, true);
  assertEquals(phaseGen(c, 3, id), ["dead", 0], "core 4 missed the REVIVE");
  c.handOff(3, 2, snapshotOf(c.cores[2]!.table.get(id)!));
  assertEquals(phaseGen(c, 3, id), ["pending", 1]);
  // Core 5, cut off through the first retry, takes a client's retry: a REVIVE of generation 1.
  c.cores[4]!.revive(c.nowMs, c.wallOf(4), 2, id);
  c.collect();
  c.step((m) => m.from === 4 && m.to === 3 && m.kind === "repl");
  c.persist(3);
  assertEquals(ackStatuses(c, 3, 4), ["finished"]);
});

Deno.test("a REVIVE answered again (a retransmission, its seq held) is still voted for", () => {
  // The vote for a REVIVE is worked out again when its record comes a second time; the
  // generation it started here must not then count as started by another REVIVE. Mutation:
  // `revive-start-not-recorded` (every REVIVE's second answer would be `finished`).
  const c = new ReviewCluster();
  c.startAll();
  const id = deadLetterOnEveryCore(c, undefined);
  c.cores[1]!.revive(c.nowMs, c.wallOf(1), 1, id);
  c.collect();
  const revive = c.inflight.find((m) =>
    m.from === 1 && m.to === 2 && m.kind === "repl" && m.records.includes("revive")
  );
  assert(revive !== undefined, "the REVIVE is on its way to core 3");
  c.settle(noSync);
  assertEquals(c.reviveAnswers.get(1)?.ok, true);
  assertEquals(phaseGen(c, 2, id), ["pending", 1]);
  // The same message once more: core 3 holds the seq and answers at once.
  c.inflight.push(revive);
  c.step((m) => m === revive);
  assertEquals(ackStatuses(c, 2, 1), ["ok"]);
});

Deno.test("a retry through a node a generation behind is refused where the owner's RETRY came before the first REVIVE", () => {
  // The review of session 41's change: `reviveOf` was set only when the REVIVE itself moved
  // the generation. Cores 3 and 4 got generation 1 from the owner's RETRY first (the REVIVE
  // to them was slow), so no REVIVE claimed it there, and they voted `ok` for core 5's stale
  // one: acknowledged, then absorbed by the owner's DEAD. The first REVIVE of a generation
  // applied here claims it, whatever record moved the generation. Mutation:
  // `revive-claims-only-when-moving`.
  const { c, id, cutFive } = firstRetryThroughTwo();
  const slow = c.inflight.filter((m) =>
    m.from === 1 && (m.to === 2 || m.to === 3) && m.kind === "repl"
  );
  for (const m of slow) c.inflight.splice(c.inflight.indexOf(m), 1);
  c.settle((m) => noSync(m) && !cutFive(m));
  c.drop(cutFive);
  c.cores[0]!.reportRetry(c.nowMs, c.wallOf(0), {
    kind: "retry",
    jobId: id,
    attempt: failedAttemptOnOwner(c),
    attemptsMade: 1,
    nextAttemptAtMs: c.wallOf(0) + 1_000,
  });
  c.tick(jobsDefaults.lazySendMs + 1);
  c.settle((m) => noSync(m) && !cutFive(m));
  c.drop(cutFive);
  for (const i of [2, 3]) {
    assertEquals(phaseGen(c, i, id), [
      "pending",
      1,
    ]);
  }
  c.inflight.push(...slow);
  c.settle((m) => noSync(m) && !cutFive(m));
  c.drop(cutFive);
  assertEquals(c.reviveAnswers.get(1)?.ok, true);
  // The owner is cut off; its last attempt fails, and its DEAD stays home.
  const cutOwner = (m: InFlight) => m.from === 0 || m.to === 0;
  c.dead(0, id, 2);
  c.tick(100);
  c.drop((m) => cutFive(m) || cutOwner(m));
  assertEquals(phaseGen(c, 4, id), ["dead", 0]);
  c.cores[4]!.revive(c.nowMs, c.wallOf(4), 2, id);
  c.collect();
  c.settle((m) => noSync(m) && !cutOwner(m));
  c.drop(cutOwner);
  const refused = c.reviveAnswers.get(2);
  assert(refused?.ok === false && refused.code === "not_ready", JSON.stringify(refused));
});
