/**
 * An endpoint's health as a node knows it (src/jobs/endpoint_attempt_stats.ts, the dashboard's
 * endpoints): the tally's window, bounds and last success and failure; then across five
 * replication cores, every core counting every attempt the owner reported, each once (a record
 * received twice counts once; a RETRY that arrives after the job's DONE still brings its
 * attempt; one that arrives before the job's body counts by the job's id), and an ordered
 * endpoint's backlog on every core.
 */

import { assert, assertEquals } from "../assert.ts";
import { EndpointAttemptStats, type HealthAttempt } from "../../src/jobs/endpoint_attempt_stats.ts";
import { eventJobId } from "../../src/jobs/event_model.ts";
import { endpoint, type EventDone, ReviewCluster, VOTERS } from "./review_harness.ts";
import { encodeRecord } from "../../src/jobs/job_codec.ts";
import { encodeMessage } from "../../src/jobs/job_messages.ts";

const T = 1_800_000_000_000;
const CONFIG = { windowMs: 600_000, bucketMs: 60_000, endpointsMax: 3, detailCharsMax: 8 };

function failed(atMs: number, detail = "boom"): HealthAttempt {
  return { startedAtMs: atMs, outcome: "http_error", status: 500, detail };
}

function ok(atMs: number): HealthAttempt {
  return { startedAtMs: atMs, outcome: "success", status: 204, detail: "" };
}

Deno.test("EndpointAttemptStats counts attempts within the window, keeps the latest success and failure", () => {
  const h = new EndpointAttemptStats(CONFIG);
  h.attempt("ep_a", ok(T), true, T);
  h.attempt("ep_a", failed(T + 1_000, "a long receiver answer"), false, T + 1_000);
  h.attempt("ep_a", failed(T + 500, "earlier"), false, T + 1_000);
  h.attempt("ep_b", ok(T + 2_000), true, T + 2_000);
  const a = h.read("ep_a", T + 2_000);
  assertEquals([a.attempts, a.failures, a.lastSuccessAtMs], [3, 2, T]);
  // The latest failure by start time, its detail cut to the bound.
  assertEquals(a.lastFailure, {
    atMs: T + 1_000,
    outcome: "http_error",
    status: 500,
    detail: "a long r",
  });
  assertEquals(h.read("ep_none", T), { attempts: 0, failures: 0 });
  // Eleven minutes on, the first minute's bucket has left the window; the last ones stay.
  const later = h.read("ep_a", T + 11 * 60_000);
  assertEquals([later.attempts, later.failures, later.lastSuccessAtMs], [0, 0, T]);
  // An attempt that started before the window (a record replayed late) is not recent.
  h.attempt("ep_a", failed(T - 700_000), false, T);
  assertEquals(h.read("ep_a", T).attempts, 3);
});

Deno.test("EndpointAttemptStats is bounded: endpoints past the bound are not tallied until others expire", () => {
  const h = new EndpointAttemptStats(CONFIG);
  for (const id of ["ep_1", "ep_2", "ep_3"]) h.attempt(id, ok(T), true, T);
  h.attempt("ep_4", ok(T), true, T);
  assertEquals([h.size, h.untallied, h.read("ep_4", T).attempts], [3, 1, 0]);
  // Past the window the old tallies make room.
  const later = T + 700_000;
  h.attempt("ep_4", ok(later), true, later);
  assertEquals([h.size, h.read("ep_4", later).attempts], [1, 1]);
});

// ---------------------------------------------------------------------------------------------
// Across the cores
// ---------------------------------------------------------------------------------------------

function send(c: ReviewCluster, n: number): string {
  const requestId = c.submitEvent(0, { type: "invoice.paid", payload: `{"n":${n}}` });
  c.settle();
  const answer: EventDone | undefined = c.eventAnswers.get(requestId);
  assert(answer !== undefined && answer.ok, "the event is acknowledged");
  return answer.id;
}

function ownerOf(c: ReviewCluster, jobId: string): number {
  const i = c.cores.findIndex((core) => core.ownerOfJob(jobId) === core.self);
  assert(i >= 0, "the job has an owner");
  return i;
}

function retry(c: ReviewCluster, i: number, jobId: string, attempt: number): void {
  c.cores[i]!.reportRetry(c.nowMs, c.wallOf(i), {
    kind: "retry",
    jobId,
    attempt: {
      attempt,
      startedAtMs: c.wallOf(i),
      latencyMs: 3,
      outcome: "http_error",
      status: 503,
      detail: "busy",
    },
    attemptsMade: attempt,
    nextAttemptAtMs: c.wallOf(i) + 1_000,
  });
  // Delivery records leave lazily (`lazySendMs`, `lazyAppendMs`: 20 ms).
  c.tick(25);
  c.persist(i);
  c.tick(25);
}

/** Core `i` reports `jobId` delivered; its DONE leaves after the lazy wait. */
function delivered(c: ReviewCluster, i: number, jobId: string): void {
  c.delivered(i, jobId);
  c.tick(25);
  c.persist(i);
  c.tick(25);
}

Deno.test("every core counts the owner's attempts to an endpoint, each once, whatever order and repeats the records come in", () => {
  const c = new ReviewCluster();
  c.startAll();
  const ep = endpoint(c, { url: "https://h.test/hook", ordered: false });
  const jobId = eventJobId(send(c, 1), ep.id);
  const owner = ownerOf(c, jobId);
  const late = (owner + 1) % 5;
  const twice = (owner + 2) % 5;
  const toLate = (m: { from: number; to: number; records: readonly string[] }) =>
    m.from === owner && m.to === late && m.records.includes("retry");
  c.tick(10);
  retry(c, owner, jobId, 1);
  // The RETRY reaches `twice` two times over (a resend, a catch-up page after the live copy).
  const copies = c.inflight.filter((m) =>
    m.from === owner && m.to === twice && m.records.includes("retry")
  );
  assert(copies.length > 0, "the RETRY is on its way to every core");
  c.inflight.push(...copies.map((m) => ({ ...m })));
  // ... and reaches `late` only after the job's DONE.
  c.settle((m) => !toLate(m));
  c.tick(1_000);
  delivered(c, owner, jobId);
  c.settle((m) => !toLate(m));
  c.settle();
  for (const [i, core] of c.cores.entries()) {
    const h = core.endpointAttempts.read(ep.id, c.wallOf(i));
    assertEquals([h.attempts, h.failures], [2, 1], `core ${i} counts one failure, one success`);
    assertEquals(h.lastFailure?.status, 503);
    assert(h.lastSuccessAtMs !== undefined, `core ${i} knows the success`);
  }
});

Deno.test("a RETRY applied before its job's body counts for the endpoint its job id names", () => {
  const c = new ReviewCluster();
  c.startAll();
  const endpointId = "ep_" + "ab".repeat(12);
  const jobId = eventJobId("evt_" + "0f".repeat(16), endpointId);
  const record = encodeRecord({
    type: "retry",
    // A seq of the sender's current life (its first is 65,538); lower ones count as held.
    stamp: { origin: VOTERS[1]!, seq: 65_600 },
    jobId,
    gen: 0,
    attemptsMade: 1,
    nextAttemptAtMs: c.wallOf(1) + 1_000,
    attempt: {
      attempt: 1,
      startedAtMs: c.wallOf(1),
      latencyMs: 4,
      outcome: "http_error",
      status: 502,
      detail: "bad gateway",
      node: VOTERS[1]!,
    },
  });
  c.cores[2]!.receive(
    c.nowMs,
    c.wallOf(2),
    VOTERS[1]!,
    encodeMessage({ kind: "repl", from: VOTERS[1]!, records: [record] }),
  );
  const h = c.cores[2]!.endpointAttempts.read(endpointId, c.wallOf(2));
  assertEquals([h.attempts, h.failures, h.lastFailure?.status], [1, 1, 502]);
});

Deno.test("an ordered endpoint's backlog is its pending jobs each core holds in its queue", () => {
  const c = new ReviewCluster();
  c.startAll();
  const ordered = endpoint(c, { url: "https://o.test/hook", ordered: true });
  const plain = endpoint(c, { url: "https://p.test/hook", ordered: false });
  const events = [send(c, 1), send(c, 2), send(c, 3)];
  for (const core of c.cores) {
    assertEquals(core.orderedBacklog(ordered.id), 3);
    assertEquals(core.orderedBacklog(plain.id), 0, "an unordered endpoint has no queue");
  }
  const head = eventJobId(events[0]!, ordered.id);
  delivered(c, ownerOf(c, head), head);
  c.settle();
  for (const core of c.cores) assertEquals(core.orderedBacklog(ordered.id), 2);
});
