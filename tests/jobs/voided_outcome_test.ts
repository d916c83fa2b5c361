/**
 * Records sent just before their origin crashed, held by some replicas, and then voided by the
 * origin's restart (its SKIP): the replicas that hold a record that merges whatever its stamp
 * (a DONE, DEAD, RETRY, REVIVE, COMMIT...) send it again under their own stamps, so the ones
 * that missed it learn it (`hookd sim --revives --seed 1183`). Hand-driven cores
 * (tests/jobs/review_harness.ts): every message and fsync happens when the test says.
 */

import { assert, assertEquals } from "../assert.ts";
import { avoiding, endpoint, ReviewCluster } from "./review_harness.ts";
import { endpointOfJob } from "../../src/jobs/event_model.ts";

/** A settled, committed job on all five cores; its id. */
function committedJob(c: ReviewCluster): string {
  const requestId = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.settle();
  const answer = c.answers.get(requestId);
  assert(answer?.ok === true, JSON.stringify(answer));
  return answer.id;
}

/** Core `from`'s DONE of the job reaches the cores `to` only; the rest of its sends are lost. */
function doneReaches(c: ReviewCluster, from: number, to: number[]): void {
  // A DONE may wait in the lazy window: ticks let it out.
  for (let i = 0; i < 20 && !c.inflight.some((m) => m.records.includes("done")); i++) c.tick(5);
  assert(c.inflight.some((m) => m.from === from && m.records.includes("done")), "DONE sent");
  c.step((m) => m.from === from && to.includes(m.to) && m.records.includes("done"));
  c.drop((m) => m.from === from);
}

/** Lets everything through, with ticks for the lazy sends and appends, until it is quiet. */
function drain(c: ReviewCluster): void {
  c.settle();
  for (let i = 0; i < 40 && (c.inflight.length > 0 || i < 5); i++) {
    c.tick(5);
    c.settle();
  }
}

function phases(c: ReviewCluster, id: string): (string | undefined)[] {
  return c.cores.map((core) => core.table.get(id)?.phase);
}

/**
 * Core 0 delivers a job and crashes with its DONE only on core 1, which writes it (a lazy
 * append: ticks let it out). Returns the job's id.
 */
function onlyCore1HoldsTheDone(c: ReviewCluster): string {
  const id = committedJob(c);
  c.delivered(0, id);
  doneReaches(c, 0, [1]);
  c.crash(0);
  c.tick(50);
  c.persist(1);
  return id;
}

/** A committed job its owner recorded dead (attempts exhausted) on every core; its id, owner. */
function deadLetter(c: ReviewCluster): { id: string; owner: number } {
  const id = committedJob(c);
  const owner = c.cores.findIndex((core) => core.ownerOf(id) === core.self);
  c.dead(owner, id);
  drain(c);
  assertEquals(phases(c, id), ["dead", "dead", "dead", "dead", "dead"]);
  return { id, owner };
}

const ALL_DELIVERED = ["delivered", "delivered", "delivered", "delivered", "delivered"];

Deno.test("a DONE its origin's restart voided reaches the replicas that missed it, sent again by those that hold it", () => {
  // Core 0 delivered the job and sent its DONE; only cores 1 and 2 got it before core 0
  // crashed with the DONE not on its own disk. Core 0 came back, caught up from cores 3 and 4
  // (neither holds the DONE) and voided the DONE's seq. Cores 3 and 4 then counted that seq
  // as held and never fetched the DONE: the job stayed pending on them, to be delivered again
  // once either owned it.
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const id = committedJob(c);
  c.delivered(0, id);
  doneReaches(c, 0, [1, 2]);
  c.crash(0);
  const restarted = c.restart(0);
  c.settle(avoiding(1, 2));
  assertEquals(restarted.phase, "ready");
  for (const i of [3, 4]) assertEquals(c.cores[i]!.table.get(id)?.phase, "pending");
  // The SKIP reaches cores 1 and 2, which hold the DONE under a seq it voids.
  drain(c);
  assertEquals(phases(c, id), ALL_DELIVERED);
  const resent = c.cores.map((core) =>
    c.registries.get(core.self)!.sumCounters("hookd_jobs_voided_records_resent_total")
  );
  assertEquals(resent, [0, 1, 1, 0, 0], "the DONE, once by each holder");
});

Deno.test("the only holder of a voided DONE, catching up after its own restart, sends it once it is ready, on a seq of its own that names nothing else", () => {
  // Core 1 alone holds core 0's DONE, and both crash (a rolling restart, a power loss). Core 1
  // also crashed with a SUBMIT of its own on the others' disks and not on its own. Its
  // catch-up brings core 0's SKIP: a stamp given then would come from the seqs its restart is
  // about to void (its lost SUBMIT's among them), so the DONE waits until core 1 is ready.
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const id = onlyCore1HoldsTheDone(c);
  c.submit(1, { url: "http://b.test/", payload: "{}" });
  c.step((m) => m.from === 1 && m.kind === "repl" && m.records.includes("submit"));
  c.persist(2, 3, 4);
  c.crash(1);
  c.restart(0);
  c.settle(avoiding(1));
  const catchingUp = c.restart(1);
  c.settle();
  assertEquals(catchingUp.phase, "ready");
  drain(c);
  assertEquals(c.stampConflicts(), [], "no seq names two records");
  assertEquals(phases(c, id), ALL_DELIVERED);
});

Deno.test("the only holder of a voided DONE, resyncing after a freeze when the SKIP comes, sends it once it is ready", () => {
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const id = onlyCore1HoldsTheDone(c);
  c.restart(0);
  c.settle(avoiding(1));
  // Core 1 wakes from a freeze just as core 0's SKIP reaches it.
  c.cores[1]!.stalled(c.nowMs, c.wallOf(1), 5_000);
  assertEquals(c.cores[1]!.phase, "catching_up");
  c.settle();
  assertEquals(c.cores[1]!.phase, "ready");
  drain(c);
  assertEquals(phases(c, id), ALL_DELIVERED);
});

Deno.test("a voided REVIVE held by one replica is sent again: every copy ends in the retry's generation", () => {
  // A retry by hand through core 1 reached core 2 only before core 1 crashed unsynced; its
  // restart voided the REVIVE. Core 2 held the job pending in generation 1, the others dead
  // in generation 0, and nothing ever told either side of the other.
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const { id, owner } = deadLetter(c);
  const reviver = owner === 1 ? 3 : 1;
  const holder = owner === 2 ? 4 : 2;
  c.cores[reviver]!.revive(c.nowMs, c.wallOf(reviver), 77, id);
  c.collect();
  c.step((m) => m.from === reviver && m.to === holder && m.records.includes("revive"));
  c.persist(holder);
  c.crash(reviver);
  c.restart(reviver);
  c.settle(avoiding(holder));
  drain(c);
  const gens = c.cores.map((core) => core.table.get(id)?.gen);
  assertEquals(gens, [1, 1, 1, 1, 1], phases(c, id).join(" "));
});

Deno.test("an attempt told again by the replicas that held its voided record counts once on each node's dashboard", () => {
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const ep = endpoint(c, { url: "https://a.test/hook", eventTypes: ["invoice.paid"] });
  const requestId = c.submitEvent(0, { type: "invoice.paid", payload: "{}" });
  drain(c);
  assert(c.eventAnswers.get(requestId)?.ok === true, "the event is acknowledged");
  const jobId = [...c.cores[0]!.table.entries()].find((e) => endpointOfJob(e.jobId) === ep.id)!
    .jobId;
  const owner = c.cores.findIndex((core) => core.ownerOfJob(jobId) === core.self);
  const [h1, h2] = [0, 1, 2, 3, 4].filter((i) => i !== owner);
  c.delivered(owner, jobId);
  doneReaches(c, owner, [h1!, h2!]);
  c.crash(owner);
  c.restart(owner);
  c.settle(avoiding(h1!, h2!));
  drain(c);
  assertEquals(phases(c, jobId), ALL_DELIVERED);
  const counts = c.cores.map((core) => core.endpointAttempts.read(ep.id, c.wallMs).attempts);
  // The owner's restart forgot its own tally (a replay counts nothing): 0 there.
  assertEquals(counts.filter((_, i) => i !== owner), [1, 1, 1, 1]);
});

Deno.test("a holder back after a day sends no voided REVIVE of a retry that was delivered and compacted meanwhile", () => {
  // A retry by hand through core R reached only core H before both crashed (H with it on
  // disk); R's restart voided it. The client, unanswered, retried through another node: that
  // retry was acknowledged, delivered, compacted, and its tombstones expired (24 h). Then H
  // came back: its catch-up brought R's old SKIP, and a REVIVE sent again then (it carries the
  // spec) made the job anew on every peer, and its owner delivered it a third time.
  const c = new ReviewCluster({ catchupStragglerWaitMs: 0 });
  c.startAll();
  const { id, owner } = deadLetter(c);
  const [reviver, holder, retryVia] = [0, 1, 2, 3, 4].filter((i) => i !== owner);
  c.cores[reviver!]!.revive(c.nowMs, c.wallOf(reviver!), 77, id);
  c.collect();
  c.step((m) => m.from === reviver && m.to === holder && m.records.includes("revive"));
  c.persist(holder!);
  c.crash(reviver!);
  c.crash(holder!);
  c.restart(reviver!);
  const withoutHolder = avoiding(holder!);
  c.settle(withoutHolder);
  c.cores[retryVia!]!.revive(c.nowMs, c.wallOf(retryVia!), 78, id);
  c.collect();
  c.settle(withoutHolder);
  c.tick(50);
  c.settle(withoutHolder);
  assertEquals(c.reviveAnswers.get(78)?.ok, true, "the second retry is acknowledged");
  c.delivered(owner, id);
  c.tick(50);
  c.settle(withoutHolder);
  const scheduled = c.scheduled[owner]!.filter((j) => j === id).length;
  // Compacted after the retention (1 h), its tombstones expired (24 h).
  for (let h = 0; h < 27; h++) {
    c.nowMs += 3_600_000;
    for (const [i, core] of c.cores.entries()) {
      if (!c.down.has(i)) core.tick(c.nowMs, c.wallOf(i));
    }
    c.collect();
    c.settle(withoutHolder);
  }
  for (const [i, core] of c.cores.entries()) {
    if (i === holder) continue;
    assertEquals(core.table.get(id), undefined, `compacted on core ${i}`);
    assertEquals(core.table.goneTombstone(id), undefined, `no tombstone left on core ${i}`);
  }
  c.restart(holder!);
  drain(c);
  assertEquals(c.scheduled[owner]!.filter((j) => j === id).length, scheduled, "not again");
  for (const [i, core] of c.cores.entries()) {
    assert(core.table.get(id)?.phase !== "pending", `pending again on core ${i}`);
  }
});
