/**
 * Guards the review of issue 8 added where a mechanism had no test that fails without it
 * (mutation checks: break it on purpose, see a test fail). Each drives replication cores by
 * hand (tests/jobs/review_harness.ts) through the one path that needs the mechanism, with
 * anti-entropy kept out of the way (no tick reaches its interval) where it could hide the
 * break by filling the gap later.
 */

import { assert, assertEquals } from "../assert.ts";
import { between, ReviewCluster, VOTERS } from "./review_harness.ts";
import { ownerOf, preferenceList } from "../../src/jobs/preference.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";

const QUORUM = 3;

Deno.test("the coordinator's own copy votes only once it is on its disk", () => {
  // Mutation: count the coordinator's vote when it appends instead of when the append is
  // durable. Two replicas' ACKs and the coordinator's unsynced copy would then make three.
  const c = new ReviewCluster();
  c.startAll();
  const id = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.pass();
  c.persist(1, 2);
  c.pass();
  assertEquals(c.answers.has(id), false, "two disks: no answer");
  c.persist(0);
  c.pass();
  const answer = c.answers.get(id);
  assert(answer?.ok === true, JSON.stringify(answer));
  assertEquals(c.durableHolders(answer.id), [0, 1, 2]);
});

/** A committed job whose owner is core 0, acknowledged with cores 1 and 2 only. */
function ackedOnThree(c: ReviewCluster, request = 1): string {
  const rid = c.submit(0, { url: "http://a.test/", payload: `${request}` });
  c.pass(between(0, [1, 2], "repl"));
  c.persist(0, 1, 2);
  c.pass(between([1, 2], 0, "ack"));
  const answer = c.answers.get(rid);
  assert(answer?.ok === true, JSON.stringify(answer));
  return answer.id;
}

Deno.test("a job whose coordinator died before its COMMIT left is confirmed and delivered by the next owner", () => {
  // Mutation: drop the confirm round. The unkeyed COMMIT rides lazily (lazySendMs); the
  // coordinator acknowledged the job and died within that window. The replicas hold it
  // uncommitted; only the new owner's confirm round makes it deliverable.
  const c = new ReviewCluster();
  c.startAll();
  const id = ackedOnThree(c);
  c.crash(0);
  for (const i of [1, 2, 3, 4]) c.view(i, { 0: "dead" });
  c.pass((m) => m.kind === "handoff" || m.kind === "repl" || m.kind === "ack");
  c.persistAll();
  const owner = VOTERS.indexOf(ownerOf(id, VOTERS, (v) => v === VOTERS[0])!);
  assert(owner > 0, "a live voter owns it");
  assertEquals(c.scheduled[owner], [], "uncommitted: not delivered yet");
  // The confirm round, its ACKs, the COMMIT.
  c.tick(jobsDefaults.confirmDelayMs);
  c.settle((m) => m.kind !== "sync-req" && m.kind !== "sync-reply");
  assertEquals(c.cores[owner]!.table.get(id)?.committed, true);
  assertEquals(c.scheduled[owner], [id], "the new owner delivers it");
});

Deno.test("a new owner that missed the submit gets the job by handoff when the old owner dies", () => {
  // Mutation: skip the handoff. Cores 4 and 5 were cut off while core 1 took the job with
  // cores 2 and 3; core 1 dies for good. A job whose next voter is core 4 or 5 reaches it
  // only by handoff (anti-entropy would bring its SUBMIT later, seconds later; none runs
  // here).
  const c = new ReviewCluster();
  c.startAll();
  let id: string | undefined;
  for (let n = 1; n <= 50 && id === undefined; n++) {
    const candidate = ackedOnThree(c, n);
    const next = preferenceList(candidate, VOTERS)[1]!;
    if (next === VOTERS[3] || next === VOTERS[4]) id = candidate;
    c.drop(); // the COMMITs and the cut-off nodes' copies never arrive
  }
  assert(id !== undefined, "a job whose next voter missed it");
  const next = VOTERS.indexOf(preferenceList(id, VOTERS)[1]!);
  assertEquals(c.cores[next]!.table.get(id), undefined, "the next owner missed it");
  c.crash(0);
  for (const i of [1, 2, 3, 4]) c.view(i, { 0: "dead" });
  c.pass((m) => m.kind === "handoff");
  c.persistAll();
  const entry = c.cores[next]!.table.get(id);
  assert(entry?.spec !== undefined, "the new owner holds the job");
  // Committed by the handoff's state (cores 2 and 3 had the COMMIT? no: dropped) or by its
  // own confirm round: either way it delivers.
  c.tick(jobsDefaults.confirmDelayMs);
  c.settle((m) => m.kind !== "sync-req" && m.kind !== "sync-reply");
  assertEquals(c.scheduled[next], [id], "the new owner delivers it");
});

Deno.test("quorum is three of five configured voters, whatever the view says", () => {
  // Mutation: quorum 2 (or counted from the live members). With two voters held dead, a
  // submit that two disks hold is not acknowledged; it takes a third.
  const c = new ReviewCluster();
  c.startAll();
  assertEquals(c.cores[0]!.quorum, QUORUM);
  c.view(0, { 3: "dead" });
  const id = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.pass(between(0, [1, 2]));
  c.persist(0, 1);
  c.pass();
  assertEquals(c.answers.has(id), false, "two of five is no majority");
  c.persist(2);
  c.pass();
  assertEquals(c.answers.get(id)?.ok, true);
});

Deno.test("a node whose WAL failed answers its waiting submits storage_failed, refuses new ones, and votes no more", () => {
  // Mutation: ignore the WAL failure (fail-stop off). Invariant 5.
  const c = new ReviewCluster();
  c.startAll();
  const waiting = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.cores[0]!.storageFailed("injected fsync failure (EIO)");
  c.pending[0] = [];
  c.collect();
  const answer = c.answers.get(waiting);
  assert(answer !== undefined && !answer.ok && answer.code === "storage_failed", "refused");
  const later = c.submit(0, { url: "http://a.test/", payload: "{}" });
  const refused = c.answers.get(later);
  assert(refused !== undefined && !refused.ok && refused.code === "storage_failed", "refused");
  // Another node's submit reaches it: it stores nothing and acknowledges nothing.
  const other = c.submit(1, { url: "http://a.test/", payload: "{}" });
  c.pass();
  c.persist(1, 2, 3, 4);
  c.pass();
  assertEquals(c.answers.get(other)?.ok, true, "the others still make a majority");
  assertEquals(c.inflight.filter((m) => m.from === 0 && m.kind === "ack").length, 0);
  assertEquals(c.cores[0]!.phase, "failed");
});

Deno.test("a replica that missed records while it was held dead gets them by anti-entropy", () => {
  // Mutation: no anti-entropy. Senders skip voters they hold dead, so a node declared dead
  // by mistake (alive all along: no restart, no catch-up) misses what was taken meanwhile;
  // only anti-entropy brings it.
  const c = new ReviewCluster();
  c.startAll();
  for (const i of [0, 1, 2, 3]) c.view(i, { 4: "dead" });
  const ids: string[] = [];
  for (let n = 0; n < 5; n++) {
    const rid = c.submit(n % 4, { url: "http://a.test/", payload: `${n}` });
    c.settle();
    const answer = c.answers.get(rid);
    assert(answer?.ok === true);
    ids.push(answer.id);
  }
  assertEquals(ids.filter((id) => c.cores[4]!.table.get(id) !== undefined), []);
  for (const i of [0, 1, 2, 3]) c.view(i, {});
  // Two anti-entropy periods (each node's next round is 0.5-1.5 periods away).
  for (let t = 0; t < 4 * jobsDefaults.antiEntropyIntervalMs; t += 250) {
    c.tick(250);
    c.settle();
  }
  assertEquals(ids.filter((id) => c.cores[4]!.table.get(id)?.spec === undefined), []);
});

Deno.test("a node woken from a freeze stops delivering and catches up before it schedules again", () => {
  // Mutation: ignore the freeze (no resync). Core 1 owned a job and was frozen; the others
  // held it dead, core 2 (say) took the job over and delivered it. On waking, core 1's
  // expired retry timer would attempt it again at once; the freeze must cancel it, and the
  // catch-up brings the DONE, so it is not scheduled again.
  const c = new ReviewCluster();
  c.startAll();
  const id = ackedOnThree(c);
  c.tick(jobsDefaults.lazySendMs); // the COMMIT leaves
  c.settle();
  assertEquals(c.scheduled[0], [id]);
  for (const i of [1, 2, 3, 4]) c.view(i, { 0: "dead" });
  c.settle((m) => m.from !== 0 && m.to !== 0);
  const next = VOTERS.indexOf(ownerOf(id, VOTERS, (v) => v === VOTERS[0])!);
  assertEquals(c.scheduled[next], [id], "the next owner took it over");
  c.delivered(next, id);
  c.tick(jobsDefaults.lazySendMs); // the DONE leaves
  c.settle((m) => m.from !== 0 && m.to !== 0);
  c.tick(jobsDefaults.lazyAppendMs); // and is written where it arrived (nobody waits on it)
  c.settle((m) => m.from !== 0 && m.to !== 0);
  c.drop((m) => m.from === 0 || m.to === 0); // what the frozen node would have missed
  // Core 1 wakes; the others see it alive again.
  c.tick(1);
  c.cores[0]!.stalled(c.nowMs, c.wallMs, 5_000);
  c.collect();
  assertEquals(c.cancelled[0], [id], "the stale job is taken back from delivery at once");
  const phase = (): string => c.cores[0]!.phase;
  assertEquals(phase(), "catching_up");
  for (const i of [1, 2, 3, 4]) c.view(i, {});
  for (let round = 0; round < 5 && phase() !== "ready"; round++) {
    c.settle();
    c.tick(jobsDefaults.catchupRetryMs);
  }
  assertEquals(phase(), "ready");
  assertEquals(c.cores[0]!.table.get(id)?.phase, "delivered");
  assertEquals(c.scheduled[0], [id], "not scheduled again");
});
