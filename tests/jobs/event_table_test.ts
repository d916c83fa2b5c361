/**
 * Events in one node's job table: an `event` record makes every job at once, an event-commit
 * arriving first makes a stub that commits the jobs when the event comes, retention drops an
 * event only once its jobs have left (leaving a tombstone a late record cannot pass), and an
 * unacknowledged event is dropped whole.
 */

import { assert, assertEquals } from "../assert.ts";
import { JobTable } from "../../src/jobs/job_table.ts";
import type { EventBody } from "../../src/jobs/event_model.ts";
import { eventJobIds, eventJobSpec } from "../../src/jobs/event_table.ts";
import type { JobRecord, JobSpec, JobStateSnapshot, Stamp } from "../../src/jobs/job_model.ts";
import { plainSpec, tableTestOptions } from "./arbitraries.ts";

const HOUR = 3_600_000;
const T0 = 1_800_000_000_000;

function table(): JobTable {
  return new JobTable(tableTestOptions());
}

const BODY: EventBody = {
  event: { id: "evt_1", type: "invoice.paid", payload: "{}", submittedAtMs: T0, bodyHash: "" },
  jobs: ["ep_a", "ep_b", "ep_c"].map((endpointId) => ({
    endpointId,
    url: `https://${endpointId}.test/`,
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
  })),
};
const EVENT: JobRecord = { type: "event", stamp: { origin: "n1", seq: 1 }, body: BODY };
const COMMIT: JobRecord = {
  type: "event-commit",
  stamp: { origin: "n1", seq: 2 },
  eventId: "evt_1",
  bodyHash: "",
};
const IDS = eventJobIds(BODY);

Deno.test("an event record makes all its jobs; its commit commits all of them, in either order", () => {
  for (const order of [[EVENT, COMMIT], [COMMIT, EVENT]]) {
    const t = table();
    const results = order.map((r) => t.apply(r, T0));
    assertEquals(results.map((r) => r.effect), ["changed", "changed"]);
    for (const id of IDS) {
      const job = t.get(id);
      assert(job?.spec !== undefined && job.committed, `${id} held committed`);
      assertEquals(job.spec.webhookId, "evt_1");
    }
    assertEquals(t.event("evt_1")?.committed, true);
    // The record that made or committed the jobs names each for the caller to react to.
    assertEquals(results.at(-1)!.fanout?.map((e) => e.jobId).sort(), IDS);
  }
});

Deno.test("an event leaves only once its jobs have, and a late record of it is then dropped", () => {
  const t = table();
  t.apply(EVENT, T0);
  t.apply(COMMIT, T0);
  for (const [i, id] of IDS.entries()) {
    if (i === 2) continue;
    t.apply({
      type: "done",
      stamp: { origin: "n2", seq: i + 1 },
      jobId: id,
      gen: 0,
      finishedAtMs: T0,
    }, T0);
  }
  t.expire(T0 + 2 * HOUR);
  assert(t.event("evt_1") !== undefined, "a pending job keeps its event");
  t.apply({
    type: "done",
    stamp: { origin: "n2", seq: 9 },
    jobId: IDS[2]!,
    gen: 0,
    finishedAtMs: T0 + 2 * HOUR,
  }, T0 + 2 * HOUR);
  t.expire(T0 + 4 * HOUR);
  t.expire(T0 + 6 * HOUR);
  assertEquals(t.event("evt_1"), undefined);
  for (const id of IDS) assertEquals(t.get(id), undefined);
  // A late copy of the event (a confirm round, anti-entropy) makes neither it nor its jobs.
  const late = t.apply(EVENT, T0 + 6 * HOUR);
  assertEquals(late.effect, "unchanged");
  assertEquals(t.event("evt_1"), undefined);
  for (const id of IDS) assertEquals(t.get(id), undefined);
  // The tombstone is in the checkpoint, so a restarted node drops it too.
  const fresh = table();
  for (const r of t.snapshotRecords()) fresh.apply(r, T0 + 6 * HOUR);
  assertEquals(fresh.apply(EVENT, T0 + 6 * HOUR).effect, "unchanged");
  assertEquals(fresh.event("evt_1"), undefined);
});

Deno.test("an event never acknowledged is dropped whole; a committed one is not", () => {
  const t = table();
  t.apply(EVENT, T0);
  assertEquals(t.dropUncommittedEvent("evt_1").sort(), IDS);
  assertEquals(t.event("evt_1"), undefined);
  for (const id of IDS) assertEquals(t.get(id), undefined);
  const c = table();
  c.apply(EVENT, T0);
  c.apply(COMMIT, T0);
  assertEquals(c.dropUncommittedEvent("evt_1"), []);
  for (const id of IDS) assert(c.get(id) !== undefined);
});

Deno.test("a keyed event held with another body refuses it, unless the commit carries it", () => {
  const keyed = (payload: string, hash: string): EventBody => ({
    event: { ...BODY.event, id: "evt_k1", payload, idempotencyKey: "k", bodyHash: hash },
    jobs: BODY.jobs.slice(0, 2),
  });
  const t = table();
  t.apply({ type: "event", stamp: { origin: "n1", seq: 1 }, body: keyed("{}", "h1") }, T0);
  const other = keyed("[]", "h2");
  assertEquals(
    t.apply({ type: "event", stamp: { origin: "n2", seq: 1 }, body: other }, T0).effect,
    "conflict",
  );
  const won = t.apply({
    type: "event-commit",
    stamp: { origin: "n2", seq: 2 },
    eventId: "evt_k1",
    bodyHash: "h2",
    body: other,
  }, T0);
  assertEquals(won.effect, "changed");
  assertEquals(t.event("evt_k1")?.body?.event.payload, "[]");
  for (const id of eventJobIds(other)) assertEquals(t.get(id)?.spec?.payload, "[]");
  assertEquals(t.get(eventJobIds(other)[0]!)?.committed, true);
});

Deno.test("an event held from a snapshot's event-state without its jobs gets them from its own record", () => {
  // Sim seed 139 with --events (session 38): a snapshot broke off (its server crashed) after
  // the event's `event-state`, which makes no job, and before its jobs' `state` records. The
  // event's own record came later and made nothing, the event being held; yet the node's log
  // now counted that record as held, so its next snapshot told a requester the event's jobs
  // had finished there. The requester compacted its pending copies, the tombstones spread, and
  // the acknowledged event was lost on every node. Mutation: make no job for an event already
  // held (`events-record-makes-no-missing-job`), and this fails.
  for (const committed of [false, true]) {
    const t = table();
    const state = { id: "evt_1", body: BODY, stamp: EVENT.stamp, bodyHash: "", committed };
    t.apply({ type: "event-state", state }, T0);
    assertEquals(IDS.map((id) => t.get(id)), [undefined, undefined, undefined], "no job yet");
    const result = t.apply(EVENT, T0);
    assertEquals(result.fanout?.map((e) => e.jobId).sort(), IDS);
    for (const id of IDS) {
      const job = t.get(id);
      assert(job?.spec !== undefined && job.phase === "pending", `${id} held`);
      assertEquals(job.committed, committed, `${id} committed as its event is`);
    }
  }
  // A job of it finished and compacted here stays so: its tombstone drops its SUBMIT.
  const t = table();
  t.apply(EVENT, T0);
  t.apply(COMMIT, T0);
  t.apply({
    type: "done",
    stamp: { origin: "n2", seq: 1 },
    jobId: IDS[0]!,
    gen: 0,
    finishedAtMs: T0,
  }, T0);
  t.expire(T0 + HOUR + 1);
  assertEquals(t.get(IDS[0]!), undefined, "compacted");
  t.apply(EVENT, T0 + HOUR + 2);
  assertEquals(t.get(IDS[0]!), undefined, "the event's record does not bring it back");
});

Deno.test("a keyed event's losing job copy is replaced, not committed, by the winner's spec", () => {
  // Session 39's review: an event's job carries no body hash of its own (""), so a copy of the
  // losing body of a keyed event, held uncommitted, took the winner's spec (a REVIVE carrying
  // it, or a committed handoff `state`) for its own body: it was committed with the loser's
  // payload, which its owner would deliver. Mutation: tell bodies apart by the hash alone
  // (`event-job-loser-committed`).
  const body = (payload: string, bodyHash: string): EventBody => ({
    event: {
      id: "evt_k1",
      type: "t",
      payload,
      submittedAtMs: T0,
      idempotencyKey: "key-1",
      bodyHash,
    },
    jobs: [{
      endpointId: "ep_a",
      url: "https://a.test/",
      headers: {},
      secrets: [],
      timeoutMs: 0,
      maxAttempts: 3,
    }],
  });
  const loser = body("LOSER", "hA");
  const winner = body("WINNER", "hB");
  const jobId = eventJobIds(winner)[0]!;
  const spec = eventJobSpec(winner.event, winner.jobs[0]!);
  const records: JobRecord[] = [
    {
      type: "revive",
      stamp: { origin: "n2", seq: 5 },
      jobId,
      gen: 1,
      spec,
      submitStamp: { origin: "n1", seq: 1 },
    },
    { type: "state", state: pendingState(spec, { origin: "n1", seq: 1 }) },
  ];
  for (const record of records) {
    const t = table();
    t.apply({ type: "event", stamp: { origin: "n3", seq: 1 }, body: loser }, T0);
    assertEquals([t.get(jobId)?.spec?.payload, t.get(jobId)?.committed], ["LOSER", false]);
    t.apply(record, T0 + 1000);
    assertEquals(
      [t.get(jobId)?.spec?.payload, t.get(jobId)?.committed],
      ["WINNER", true],
      record.type,
    );
    t.apply({
      type: "event-commit",
      stamp: { origin: "n1", seq: 2 },
      eventId: "evt_k1",
      bodyHash: "hB",
      body: winner,
    }, T0 + 1000);
    assertEquals(t.get(jobId)?.spec?.payload, "WINNER", record.type);
  }
});

Deno.test("an event job's copy without a stamp does not take a losing body's SUBMIT stamp", () => {
  // Session 39's review: a copy held without its SUBMIT's stamp learns it from a later SUBMIT of
  // the same body; an event's jobs all carry bodyHash "", so the losing body of a keyed event
  // stamped the winner's copy (the stamp is its ordered-queue key and its confirm round's).
  // Mutation: learn from any SUBMIT of the hash (`stamp-from-losing-body`).
  const id = "evt_kabc.ep_1";
  const winner = {
    ...plainSpec(id, T0),
    payload: "winner",
    webhookId: "evt_kabc",
    ordered: true as const,
  };
  const t = table();
  t.apply({ type: "state", state: pendingState(winner, undefined) }, T0);
  const loserStamp = { origin: "10.0.0.9:7000", seq: 42 };
  t.apply({ type: "submit", stamp: loserStamp, spec: { ...winner, payload: "loser" } }, T0);
  assertEquals([t.get(id)?.spec?.payload, t.get(id)?.submitStamp], ["winner", undefined]);
  const winnerStamp = { origin: "10.0.0.8:7000", seq: 7 };
  t.apply({ type: "submit", stamp: winnerStamp, spec: winner }, T0);
  assertEquals(t.get(id)?.submitStamp, winnerStamp, "the winner's own SUBMIT stamps it");
});

/** A committed event job's state, pending and never attempted (a handoff's or a snapshot's). */
function pendingState(spec: JobSpec, submitStamp: Stamp | undefined): JobStateSnapshot {
  return {
    jobId: spec.id,
    spec,
    ...(submitStamp !== undefined ? { submitStamp } : {}),
    bodyHash: "",
    committed: true,
    gen: 0,
    phase: "pending",
    attemptsMade: 0,
    nextAttemptAtMs: 0,
    finishedAtMs: 0,
    deadReason: "",
    history: [],
  };
}
