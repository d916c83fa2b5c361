/**
 * Ordered endpoints across the replication cores (docs/replication.md, "Ordered endpoints"):
 * one owner per endpoint, its jobs scheduled one at a time in order-key order (the event's
 * submit time and stamp, not arrival), a failing head holding the rest until it is delivered
 * or dead, an acknowledged event whose COMMIT was lost holding its place, and the same order
 * after the owner fails over or restarts.
 */

import { assert, assertEquals } from "../assert.ts";
import type { EndpointState } from "../../src/jobs/endpoint_model.ts";
import { eventJobId } from "../../src/jobs/event_model.ts";
import { decodeRecord, encodeRecord } from "../../src/jobs/job_codec.ts";
import { endpoint, type EventDone, ReviewCluster } from "./review_harness.ts";
import { compareOrderKeys } from "../../src/jobs/ordered_queues.ts";

const PAID = (n: number) => ({ type: "invoice.paid", payload: `{"n":${n}}` });
/** Past every settle wait: `submitTimeoutMs` + `orderedClockSkewMs` (1 s each by default). */
const SETTLE_MS = 2_100;

function settleAll(c: ReviewCluster): void {
  c.settle();
  for (let i = 0; i < 2; i++) {
    c.tick(25);
    c.settle();
  }
}

function eventId(c: ReviewCluster, requestId: number): string {
  const answer: EventDone | undefined = c.eventAnswers.get(requestId);
  assert(answer !== undefined && answer.ok, "the event is acknowledged");
  return answer.id;
}

/** A ready cluster with one ordered endpoint (and one unordered one beside it). */
function setup(): { c: ReviewCluster; ordered: EndpointState; plain: EndpointState } {
  const c = new ReviewCluster();
  c.startAll();
  const ordered = endpoint(c, { url: "https://o.test/hook", ordered: true });
  const plain = endpoint(c, { url: "https://p.test/hook", ordered: false });
  return { c, ordered, plain };
}

function ownerIndex(c: ReviewCluster, endpointId: string): number {
  const i = c.cores.findIndex((core, i) =>
    !c.down.has(i) && core.ownerOf(endpointId) === core.self
  );
  assert(i >= 0, "the endpoint has a live owner");
  return i;
}

/** The ordered endpoint's jobs each core scheduled, in order. */
function scheduledOf(c: ReviewCluster, endpointId: string): string[][] {
  return c.scheduled.map((ids) => ids.filter((id) => id.endsWith("." + endpointId)));
}

/** Events sent one after another (each acknowledged before the next), `gapMs` apart. */
function sendEvents(c: ReviewCluster, n: number, nodes: number[], gapMs = 10): string[] {
  const ids: string[] = [];
  for (let k = 0; k < n; k++) {
    const requestId = c.submitEvent(nodes[k % nodes.length]!, PAID(k));
    settleAll(c);
    ids.push(eventId(c, requestId));
    c.tick(gapMs);
  }
  return ids;
}

/** Lets the settle wait pass and the order barrier run. */
function settleOrder(c: ReviewCluster): void {
  c.tick(SETTLE_MS);
  settleAll(c);
}

function attempt(at: number) {
  return {
    attempt: 1,
    startedAtMs: at,
    latencyMs: 2,
    outcome: "http_error" as const,
    status: 500,
    detail: "",
  };
}

Deno.test("an ordered job carries `ordered` from its event's fan-out entry; codecs keep it", () => {
  const { c, ordered, plain } = setup();
  const [id] = sendEvents(c, 1, [1]);
  for (const core of c.cores) {
    assertEquals(core.table.get(eventJobId(id!, ordered.id))?.spec?.ordered, true);
    assertEquals(core.table.get(eventJobId(id!, plain.id))?.spec?.ordered, undefined);
  }
  const spec = c.cores[2]!.table.get(eventJobId(id!, ordered.id))!.spec!;
  const back = decodeRecord(encodeRecord({ type: "submit", stamp: { origin: "x", seq: 1 }, spec }));
  assert(back.ok && back.value.type === "submit");
  assertEquals(back.value.spec, spec);
  const event = c.cores[2]!.table.event(id!)!;
  assertEquals(
    event.body!.jobs.map((j) => j.ordered === true),
    [true, false].sort((a, b) =>
      // Jobs are in endpoint id order.
      (a ? ordered.id : plain.id) < (b ? ordered.id : plain.id) ? -1 : 1
    ),
  );
});

Deno.test("an ordered endpoint's jobs: one owner, one at a time, in commit order", () => {
  const { c, ordered, plain } = setup();
  const ids = sendEvents(c, 4, [0, 1, 2, 3, 4]);
  const jobs = ids.map((id) => eventJobId(id, ordered.id));
  const owner = ownerIndex(c, ordered.id);
  for (const core of c.cores) {
    for (const job of jobs) assertEquals(core.ownerOfJob(job), c.cores[owner]!.self);
  }
  // The unordered endpoint's jobs go at once, each by its own owner.
  const plainScheduled = c.scheduled.flat().filter((id) => id.endsWith("." + plain.id));
  assertEquals(plainScheduled.length, 4);
  // Not before the settle wait.
  assertEquals(scheduledOf(c, ordered.id).flat(), []);
  settleOrder(c);
  // A view change has every core look at every job again: still the head alone.
  const bystander = [0, 1, 2, 3, 4].find((i) => i !== owner)!;
  for (let i = 0; i < 5; i++) if (i !== bystander) c.view(i, { [bystander]: "dead" });
  settleAll(c);
  assertEquals(ownerIndex(c, ordered.id), owner);
  for (let k = 0; k < jobs.length; k++) {
    const byCore = scheduledOf(c, ordered.id);
    byCore.forEach((s, i) => assertEquals(s, i === owner ? jobs.slice(0, k + 1) : [], `core ${i}`));
    c.delivered(owner, jobs[k]!);
    settleAll(c);
  }
  assertEquals(scheduledOf(c, ordered.id)[owner], jobs);
});

Deno.test("a failing head holds those behind it; once dead, the next goes", () => {
  const { c, ordered } = setup();
  const ids = sendEvents(c, 3, [2, 0]);
  const jobs = ids.map((id) => eventJobId(id, ordered.id));
  const owner = ownerIndex(c, ordered.id);
  settleOrder(c);
  const core = c.cores[owner]!;
  for (let a = 1; a <= 3; a++) {
    core.reportRetry(c.nowMs, c.wallOf(owner), {
      kind: "retry",
      jobId: jobs[0]!,
      attempt: { ...attempt(c.wallOf(owner)), attempt: a },
      attemptsMade: a,
      nextAttemptAtMs: c.wallOf(owner) + 1000,
    });
    settleAll(c);
    settleOrder(c);
    assertEquals(scheduledOf(c, ordered.id)[owner], [jobs[0]], "the head alone, still");
  }
  core.reportDead(c.nowMs, c.wallOf(owner), {
    kind: "dead",
    jobId: jobs[0]!,
    attempt: { ...attempt(c.wallOf(owner)), attempt: 4 },
    attemptsMade: 4,
    reason: "attempts exhausted",
  });
  settleAll(c);
  assertEquals(scheduledOf(c, ordered.id)[owner], [jobs[0], jobs[1]], "the dead head released it");
});

Deno.test("commit order is the events' keys, not the order their records reached the owner", () => {
  const { c, ordered } = setup();
  const owner = ownerIndex(c, ordered.id);
  const [a, b] = [(owner + 1) % 5, (owner + 2) % 5];
  // Event A reaches every node but the owner, and is acknowledged.
  const first = c.submitEvent(a, PAID(0));
  c.drop((m) => m.to === owner);
  c.settle((m) => m.to !== owner);
  c.drop((m) => m.to === owner);
  const idA = eventId(c, first);
  c.tick(10);
  // Event B, sent after A's answer, reaches everyone.
  const second = c.submitEvent(b, PAID(1));
  const notAtoOwner = (m: { to: number; from: number }) => !(m.to === owner && m.from === a);
  for (let i = 0; i < 3; i++) {
    c.settle(notAtoOwner);
    c.drop((m) => !notAtoOwner(m));
    c.tick(25);
  }
  const idB = eventId(c, second);
  const jobA = eventJobId(idA, ordered.id);
  const jobB = eventJobId(idB, ordered.id);
  assertEquals(c.cores[owner]!.table.get(jobA), undefined, "the owner has not heard of A");
  assertEquals(c.cores[owner]!.table.get(jobB)?.committed, true);
  // The order barrier brings A, which goes first.
  c.tick(SETTLE_MS);
  c.settle((m) => !(m.to === owner && m.kind === "repl" && m.from === a));
  c.tick(25);
  c.settle((m) => !(m.to === owner && m.kind === "repl" && m.from === a));
  assertEquals(scheduledOf(c, ordered.id)[owner], [jobA]);
  c.delivered(owner, jobA);
  c.settle();
  assertEquals(scheduledOf(c, ordered.id)[owner], [jobA, jobB]);
});

Deno.test("an acknowledged event whose COMMIT was lost holds its place until confirmed", () => {
  const { c, ordered } = setup();
  const owner = ownerIndex(c, ordered.id);
  const coordinator = (owner + 1) % 5;
  const first = c.submitEvent(coordinator, PAID(0));
  // Everyone stores A and votes; the EVENT-COMMIT never leaves its coordinator, which dies.
  c.pass((m) => m.kind !== "repl" || !m.records.includes("event-commit"));
  c.persistAll();
  c.pass((m) => m.kind === "ack");
  const jobA = eventJobId(eventId(c, first), ordered.id);
  c.crash(coordinator);
  for (let i = 0; i < 5; i++) if (i !== coordinator) c.view(i, { [coordinator]: "dead" });
  const newOwner = ownerIndex(c, ordered.id);
  const other = [0, 1, 2, 3, 4].find((i) => i !== coordinator && i !== newOwner)!;
  // Keys are in ms: the next event a millisecond later or more (same ms: by node address).
  c.tick(10);
  const ids = sendEvents(c, 2, [other]);
  const later = ids.map((id) => eventJobId(id, ordered.id));
  assertEquals(c.cores[newOwner]!.table.get(jobA)?.committed, false);
  settleOrder(c);
  assertEquals(scheduledOf(c, ordered.id)[newOwner], [], "B waits behind uncommitted A");
  // The owner's confirm round commits A (after `confirmDelayMs`); then A goes, alone.
  for (let round = 0; round < 3; round++) {
    c.tick(1_100);
    settleAll(c);
  }
  assertEquals(c.cores[newOwner]!.table.get(jobA)?.committed, true);
  assertEquals(scheduledOf(c, ordered.id)[newOwner], [jobA]);
  c.delivered(newOwner, jobA);
  settleAll(c);
  assertEquals(scheduledOf(c, ordered.id)[newOwner], [jobA, later[0]]);
});

Deno.test("the owner fails over: its replacement takes every job of the endpoint, in order", () => {
  const { c, ordered } = setup();
  const ids = sendEvents(c, 3, [0, 1, 2, 3, 4]);
  const jobs = ids.map((id) => eventJobId(id, ordered.id));
  const owner = ownerIndex(c, ordered.id);
  settleOrder(c);
  assertEquals(scheduledOf(c, ordered.id)[owner], [jobs[0]]);
  c.crash(owner);
  for (let i = 0; i < 5; i++) if (i !== owner) c.view(i, { [owner]: "dead" });
  settleAll(c);
  const next = ownerIndex(c, ordered.id);
  assert(next !== owner);
  for (const [i, core] of c.cores.entries()) {
    if (i === owner) continue;
    for (const job of jobs) assertEquals(core.ownerOfJob(job), c.cores[next]!.self, `core ${i}`);
  }
  settleOrder(c);
  // The head again (a duplicate is allowed), never a later one first.
  assertEquals(scheduledOf(c, ordered.id)[next], [jobs[0]]);
  c.delivered(next, jobs[0]!);
  settleAll(c);
  c.delivered(next, jobs[1]!);
  settleAll(c);
  assertEquals(scheduledOf(c, ordered.id)[next], jobs);
});

Deno.test("the owner restarts: replayed and caught up, it resumes at the head", () => {
  const { c, ordered } = setup();
  const ids = sendEvents(c, 3, [4, 3]);
  const jobs = ids.map((id) => eventJobId(id, ordered.id));
  const owner = ownerIndex(c, ordered.id);
  settleOrder(c);
  c.delivered(owner, jobs[0]!);
  settleAll(c);
  assertEquals(scheduledOf(c, ordered.id)[owner], [jobs[0], jobs[1]]);
  c.crash(owner);
  c.scheduled[owner] = [];
  c.restart(owner);
  for (let i = 0; i < 4; i++) {
    c.tick(100);
    settleAll(c);
  }
  assertEquals(c.cores[owner]!.phase, "ready");
  settleOrder(c);
  assertEquals(scheduledOf(c, ordered.id)[owner], [jobs[1]]);
});

Deno.test("order keys: time, then origin, then seq", () => {
  const k = (atMs: number, origin: string, seq: number) => ({ atMs, origin, seq });
  assert(compareOrderKeys(k(1, "b", 9), k(2, "a", 1)) < 0);
  assert(compareOrderKeys(k(2, "a", 9), k(2, "b", 1)) < 0);
  assert(compareOrderKeys(k(2, "a", 1), k(2, "a", 2)) < 0);
  assertEquals(compareOrderKeys(k(2, "a", 1), k(2, "a", 1)), 0);
});
