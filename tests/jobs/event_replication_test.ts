/**
 * Events across the replication cores (docs/endpoints.md, "Events and fan-out"): an event and
 * all its jobs are durable on a majority before the answer, one EVENT-COMMIT commits them all,
 * and no replica ever holds part of an event, whatever path brought it (live replication,
 * catch-up by records and by snapshot, WAL replay, checkpoints, confirm rounds).
 */

import { assert, assertEquals } from "../assert.ts";
import type { EndpointState } from "../../src/jobs/endpoint_model.ts";
import type { ReplicationCore } from "../../src/jobs/replication_core.ts";
import { eventJobId } from "../../src/jobs/event_model.ts";
import { eventJobIds } from "../../src/jobs/event_table.ts";
import { decodeWalBatch } from "../../src/jobs/job_codec.ts";
import { endpoint, type EventDone, ReviewCluster } from "./review_harness.ts";

type Accepted = Extract<EventDone, { ok: true }>;

function accepted(c: ReviewCluster, requestId: number): Accepted {
  const answer = c.eventAnswers.get(requestId);
  assert(answer !== undefined, "the event is answered");
  assert(answer.ok, answer.ok ? "" : `${answer.code}: ${answer.message}`);
  return answer;
}

/**
 * A ready cluster with three endpoints: two take `invoice.paid`, one `user.created`; the
 * second paid one with its own URL, header and secret.
 */
function withEndpoints(config = {}): {
  c: ReviewCluster;
  paid: EndpointState[];
  user: EndpointState;
} {
  const c = new ReviewCluster(config);
  c.startAll();
  const a = endpoint(c, { url: "https://a.test/hook", eventTypes: ["invoice.paid"] });
  const b = endpoint(c, {
    url: "https://b.test/hook",
    eventTypes: ["invoice.paid", "invoice.void"],
    headers: { "x-b": "1" },
    secret: "whsec_dGhlIHNlY29uZCBlbmRwb2ludA==",
  });
  const user = endpoint(c, { url: "https://u.test/hook", eventTypes: ["user.created"] });
  return { c, paid: [a, b].sort((x, y) => (x.id < y.id ? -1 : 1)), user };
}

/**
 * Settles, then lets the records that ride along (an unkeyed EVENT-COMMIT: sent and written
 * lazily, `lazySendMs` and `lazyAppendMs`) leave, arrive and reach the disks.
 */
function settleAll(c: ReviewCluster): void {
  c.settle();
  for (let i = 0; i < 2; i++) {
    c.tick(25);
    c.settle();
  }
}

const PAID = { type: "invoice.paid", payload: '{"invoice":42}' };

/**
 * No part of an event on `core`: every event it holds has every one of its jobs, and every
 * event job it holds has its event (nothing in these tests finishes and compacts a job).
 */
function assertWhole(core: ReplicationCore, label: string): void {
  for (const event of core.table.events.values()) {
    if (event.body === undefined) continue;
    for (const jobId of eventJobIds(event.body)) {
      const job = core.table.get(jobId);
      assert(job?.spec !== undefined, `${label}: event ${event.id} without its job ${jobId}`);
      assertEquals(job.committed, event.committed, `${label}: ${jobId} committed as its event`);
    }
  }
  for (const job of core.table.entries()) {
    const eventId = job.spec?.webhookId;
    if (eventId === undefined) continue;
    assert(core.table.event(eventId) !== undefined, `${label}: job ${job.jobId} without its event`);
  }
}

/** Every record on core i's disk that holds an event's job is its whole event, or a state. */
function assertWholeOnDisk(c: ReviewCluster, i: number): void {
  for (const payload of c.disk[i]!) {
    const d = decodeWalBatch(payload);
    assert(d.ok, "a WAL batch decodes");
    for (const { record } of d.value) {
      if (record.type === "submit") {
        assertEquals(record.spec.webhookId, undefined, `core ${i}: a job of an event on its own`);
      }
    }
  }
}

Deno.test("an event and all its jobs are durable on a majority before the answer", () => {
  const { c, paid, user } = withEndpoints();
  const requestId = c.submitEvent(0, PAID);
  c.pass();
  c.persist(0, 1);
  c.pass();
  assertEquals(c.eventAnswers.get(requestId), undefined, "2 of 5 disks is not a majority");
  c.persist(2);
  c.pass();
  const answer = accepted(c, requestId);
  assertEquals(answer.jobs, 2);
  assertEquals(answer.type, "invoice.paid");
  assert(answer.id.startsWith("evt_"), answer.id);
  // At the answer, on at least three disks: the event's every job, from one record.
  for (const e of paid) {
    const holders = c.durableHolders(eventJobId(answer.id, e.id));
    assert(holders.length >= 3, `${e.id} on ${holders.length} disks`);
  }
  assertEquals(c.durableHolders(eventJobId(answer.id, user.id)), []);
  settleAll(c);
  for (const [i, core] of c.cores.entries()) {
    assertWhole(core, `core ${i}`);
    assertWholeOnDisk(c, i);
    const event = core.table.event(answer.id);
    assert(event !== undefined && event.committed, `core ${i} holds the event committed`);
    for (const e of paid) {
      const job = core.table.get(eventJobId(answer.id, e.id))!;
      assertEquals(job.spec?.url, e.url);
      assertEquals(job.spec?.headers, e.headers);
      assertEquals(job.spec?.secrets, [e.secret]);
      assertEquals(job.spec?.payload, PAID.payload);
      assertEquals(job.spec?.webhookId, answer.id, "webhook-id is the event's id");
    }
  }
  assertEquals(c.stampConflicts(), []);
});

Deno.test("an event no endpoint takes is still recorded, with no jobs", () => {
  const { c } = withEndpoints();
  const answer = accepted(
    c,
    (() => {
      const id = c.submitEvent(3, { type: "nobody.cares", payload: "{}" });
      settleAll(c);
      return id;
    })(),
  );
  assertEquals(answer.jobs, 0);
  for (const core of c.cores) assertEquals(core.table.event(answer.id)?.committed, true);
});

Deno.test("an event that reaches no majority in time is answered no_quorum", () => {
  const { c } = withEndpoints();
  const requestId = c.submitEvent(0, PAID);
  c.drop();
  c.persist(0);
  c.tick(2_000);
  const answer = c.eventAnswers.get(requestId);
  assert(answer !== undefined && !answer.ok && answer.code === "no_quorum", "no_quorum");
});

Deno.test("a fan-out resolved at submit time: a later endpoint change does not touch its jobs", () => {
  const { c, paid } = withEndpoints();
  const requestId = c.submitEvent(1, PAID);
  settleAll(c);
  const answer = accepted(c, requestId);
  const write = c.writeEndpoint(2, {
    kind: "update",
    id: paid[0]!.id,
    patch: { url: "https://moved.test/" },
  });
  settleAll(c);
  assert(c.endpointAnswers.get(write)?.ok);
  for (const core of c.cores) {
    assertEquals(core.table.get(eventJobId(answer.id, paid[0]!.id))?.spec?.url, paid[0]!.url);
  }
  // A disabled endpoint gets no new event.
  c.writeEndpoint(2, { kind: "update", id: paid[1]!.id, patch: { disabled: true } });
  settleAll(c);
  const next = c.submitEvent(2, PAID);
  settleAll(c);
  assertEquals(accepted(c, next).jobs, 1);
});

Deno.test("a node down during the event catches up on all of it, by records and by snapshot", () => {
  for (const catchupLogBytesMax of [64 * 1024 * 1024, 1]) {
    const { c, paid } = withEndpoints({ catchupLogBytesMax });
    c.crash(4);
    const requestId = c.submitEvent(0, PAID);
    settleAll(c);
    const answer = accepted(c, requestId);
    c.disk[4] = [];
    const back = c.restart(4);
    for (let i = 0; i < 5; i++) {
      settleAll(c);
      c.tick(10);
      assertWhole(back, `catching up (${catchupLogBytesMax})`);
    }
    assertEquals(back.phase, "ready");
    assertEquals(back.table.event(answer.id)?.committed, true);
    for (const e of paid) {
      assertEquals(back.table.get(eventJobId(answer.id, e.id))?.committed, true);
    }
    if (catchupLogBytesMax === 1) assert(c.syncPages.snapshot > 0, "caught up by snapshot");
    assertWholeOnDisk(c, 4);
  }
});

Deno.test("an event survives a restart and a checkpoint whole", () => {
  const { c, paid } = withEndpoints();
  const requestId = c.submitEvent(2, PAID);
  settleAll(c);
  const answer = accepted(c, requestId);
  c.crash(1);
  const restarted = c.restart(1);
  assertWhole(restarted, "replayed");
  assertEquals(restarted.table.event(answer.id)?.committed, true);
  // What core 3 would write as its checkpoint, replayed alone into a fresh core.
  const checkpoint = Array.from(c.cores[3]!.snapshotRecords(), (b) => b.slice());
  const fresh = new ReviewCluster().cores[3]!;
  for (const bytes of checkpoint) {
    assertEquals(fresh.replay("snapshot", bytes, c.wallMs), undefined);
  }
  assertWhole(fresh, "from a checkpoint");
  assertEquals(fresh.table.event(answer.id)?.committed, true);
  for (const e of paid) {
    assertEquals(fresh.table.get(eventJobId(answer.id, e.id))?.committed, true);
  }
});

Deno.test("a coordinator that dies before its EVENT-COMMIT: the jobs' owners confirm the whole event", () => {
  const { c, paid } = withEndpoints();
  const requestId = c.submitEvent(0, PAID);
  // The event reaches every replica and their ACKs come back; the commit never leaves core 0.
  c.pass((m) => m.kind !== "repl" || !m.records.includes("event-commit"));
  c.persistAll();
  c.pass((m) => m.kind === "ack");
  const answer = accepted(c, requestId);
  c.crash(0);
  for (let i = 1; i < 5; i++) c.view(i, { 0: "dead" });
  for (let i = 1; i < 5; i++) {
    for (const e of paid) {
      assertEquals(c.cores[i]!.table.get(eventJobId(answer.id, e.id))?.committed, false);
    }
  }
  for (let round = 0; round < 4; round++) {
    c.tick(3_100);
    settleAll(c);
  }
  for (let i = 1; i < 5; i++) {
    assertWhole(c.cores[i]!, `core ${i}`);
    assertWholeOnDisk(c, i);
    for (const e of paid) {
      assertEquals(
        c.cores[i]!.table.get(eventJobId(answer.id, e.id))?.committed,
        true,
        `core ${i}: ${e.id}`,
      );
    }
  }
  assertEquals(c.stampConflicts(), []);
});

Deno.test("a keyed event retried on another node names the same event; another body is a conflict", () => {
  const { c } = withEndpoints();
  const first = c.submitEvent(0, { ...PAID, idempotencyKey: "order-7" });
  settleAll(c);
  const a = accepted(c, first);
  assert(a.id.startsWith("evt_k"), a.id);
  const again = c.submitEvent(3, { ...PAID, idempotencyKey: "order-7" });
  settleAll(c);
  const b = accepted(c, again);
  assertEquals(b.id, a.id);
  assertEquals(b.existing, true);
  assertEquals(b.jobs, 2);
  const other = c.submitEvent(2, { ...PAID, payload: "{}", idempotencyKey: "order-7" });
  settleAll(c);
  const refused = c.eventAnswers.get(other);
  assert(refused !== undefined && !refused.ok && refused.code === "idempotency_conflict");
  for (const [i, core] of c.cores.entries()) assertWhole(core, `core ${i}`);
});

Deno.test("an unkeyed event's commit goes at once to the owners of its jobs, not after the lazy window", () => {
  const c = new ReviewCluster();
  c.startAll();
  const endpoints = Array.from(
    { length: 6 },
    (_, i) => endpoint(c, { url: `https://e${i}.test/hook`, eventTypes: ["invoice.paid"] }),
  );
  const requestId = c.submitEvent(0, PAID);
  // No tick: nothing that waits for `lazySendMs` leaves core 0.
  c.settle();
  const answer = accepted(c, requestId);
  assertEquals(answer.jobs, endpoints.length);
  let elsewhere = 0;
  for (const e of endpoints) {
    const jobId = eventJobId(answer.id, e.id);
    const owner = c.cores.findIndex((core) => core.ownerOfJob(jobId) === core.self);
    assert(owner >= 0, `${jobId} has an owner`);
    if (owner === 0) continue;
    elsewhere++;
    assert(
      c.cores[owner]!.table.get(jobId)?.committed === true,
      `core ${owner} holds ${jobId} committed`,
    );
    assert(c.scheduled[owner]!.includes(jobId), `core ${owner} delivers ${jobId} at once`);
  }
  assert(elsewhere > 0, "some job of the event is owned by another core");
  // The other peers still get it, riding along within the window.
  const bystanders = c.cores.filter((core, i) =>
    i !== 0 && endpoints.every((e) => core.ownerOfJob(eventJobId(answer.id, e.id)) !== core.self)
  );
  for (const core of bystanders) assertEquals(core.table.event(answer.id)?.committed, false);
  settleAll(c);
  for (const core of c.cores) assertEquals(core.table.event(answer.id)?.committed, true);
});
