/**
 * Endpoint health across the replication cores (docs/endpoints.md, "Disabling, recovering"):
 * a 410 makes the job's owner disable the endpoint ("gone") once, through a majority-durable
 * write; its pending jobs on every owner go dead with that reason; new events skip it; a
 * failure past the failing window disables it ("failing"), a recorded success restarts the
 * window; recover takes dead jobs in event order.
 */

import { assert, assertEquals } from "../assert.ts";
import { eventJobId } from "../../src/jobs/event_model.ts";
import { recoverableJobs } from "../../src/jobs/endpoint_health.ts";
import type { JobEntry } from "../../src/jobs/job_model.ts";
import type { AttemptOutcome } from "../../src/delivery/types.ts";
import { endpoint, ReviewCluster } from "./review_harness.ts";

function settleAll(c: ReviewCluster): void {
  c.settle();
  for (let i = 0; i < 3; i++) {
    c.tick(25);
    c.settle();
  }
}

/** Sends `n` events of `invoice.paid` through core 0; returns their ids in order. */
function events(c: ReviewCluster, n: number): string[] {
  const ids: string[] = [];
  for (let k = 0; k < n; k++) {
    const requestId = c.submitEvent(0, { type: "invoice.paid", payload: `{"n":${k}}` });
    settleAll(c);
    const answer = c.eventAnswers.get(requestId);
    assert(answer?.ok === true, "the event is accepted");
    ids.push(answer.id);
  }
  return ids;
}

/** The core that scheduled `jobId` (its owner). */
function ownerOf(c: ReviewCluster, jobId: string): number {
  const i = c.scheduled.findIndex((jobs) => jobs.includes(jobId));
  assert(i >= 0, `${jobId} is scheduled somewhere`);
  return i;
}

/** Core `i` reports an attempt of `jobId` ending `outcome` (dead for a 410, else a retry). */
function failed(c: ReviewCluster, i: number, jobId: string, outcome: AttemptOutcome): void {
  const attempt = {
    attempt: 1,
    startedAtMs: c.wallOf(i),
    latencyMs: 2,
    outcome,
    status: outcome === "gone" ? 410 : 500,
    detail: "",
  };
  if (outcome === "gone") {
    c.cores[i]!.reportDead(c.nowMs, c.wallOf(i), {
      kind: "dead",
      jobId,
      attempt,
      attemptsMade: 1,
      reason: "receiver answered 410 Gone",
    });
  } else {
    c.cores[i]!.reportRetry(c.nowMs, c.wallOf(i), {
      kind: "retry",
      jobId,
      attempt,
      attemptsMade: 1,
      nextAttemptAtMs: c.wallOf(i) + 60_000,
    });
  }
  c.collect();
}

function disableWrites(c: ReviewCluster): number {
  return c.logs.filter((l) => l.event === "endpoint-disable").length;
}

Deno.test("a 410 disables the endpoint once ('gone'), kills its pending jobs on every owner, and new events skip it", () => {
  const c = new ReviewCluster();
  c.startAll();
  const gone = endpoint(c, { url: "https://gone.test/hook", eventTypes: ["invoice.paid"] });
  const fine = endpoint(c, { url: "https://fine.test/hook", eventTypes: ["invoice.paid"] });
  const ids = events(c, 6);
  const goneJobs = ids.map((id) => eventJobId(id, gone.id));
  const owners = goneJobs.map((j) => ownerOf(c, j));
  // The first job's owner hears 410 (twice: two attempts in flight at once).
  failed(c, owners[0]!, goneJobs[0]!, "gone");
  failed(c, owners[0]!, goneJobs[0]!, "gone");
  settleAll(c);
  assertEquals(disableWrites(c), 1, "one disable, however many 410s");
  for (const [i, core] of c.cores.entries()) {
    const e = core.table.endpoints.get(gone.id)!;
    assertEquals([e.disabled, e.disabledReason], [true, "gone"], `core ${i}`);
    assertEquals(core.table.endpoints.get(fine.id)!.disabled, false);
  }
  // Every other job of the endpoint went dead through its own owner's dead report, with the
  // endpoint's reason, on every core; the other endpoint's jobs are untouched.
  for (const [k, jobId] of goneJobs.entries()) {
    for (const [i, core] of c.cores.entries()) {
      const job = core.table.get(jobId)!;
      assertEquals(job.phase, "dead", `${jobId} on core ${i}`);
      if (k > 0) {
        assertEquals(job.deadReason, `endpoint ${gone.id} disabled: gone`);
        assertEquals(job.history.length, 0, "never attempted");
      }
    }
    if (k > 0) assert(c.cancelled[owners[k]!]!.includes(jobId), `${jobId} taken from its engine`);
  }
  for (const id of ids) {
    assertEquals(c.cores[2]!.table.get(eventJobId(id, fine.id))!.phase, "pending");
  }
  // New events fan out to the enabled endpoint only; a later 410 writes nothing more.
  const [later] = events(c, 1);
  assertEquals(c.cores[0]!.table.event(later!)!.body!.jobs.map((j) => j.endpointId), [fine.id]);
  failed(c, owners[1]!, goneJobs[1]!, "gone");
  settleAll(c);
  assertEquals(disableWrites(c), 1);
});

Deno.test("a job of a disabled endpoint that becomes this node's later goes dead instead of being scheduled", () => {
  const c = new ReviewCluster();
  c.startAll();
  const ep = endpoint(c, { url: "https://gone.test/hook", eventTypes: ["invoice.paid"] });
  const [id] = events(c, 1);
  const jobId = eventJobId(id!, ep.id);
  const owner = ownerOf(c, jobId);
  // Disabled by hand while its owner is down: the owner's successor takes the job over.
  c.crash(owner);
  const writer = owner === 0 ? 1 : 0;
  const requestId = c.writeEndpoint(writer, {
    kind: "update",
    id: ep.id,
    patch: { disabled: true },
  });
  settleAll(c);
  assert(c.endpointAnswers.get(requestId)?.ok === true, "the disable is acknowledged");
  const states: Record<number, "dead"> = { [owner]: "dead" };
  for (const i of c.cores.keys()) if (i !== owner) c.view(i, states);
  settleAll(c);
  const successor = c.cores.findIndex((core, i) =>
    i !== owner && core.ownerOf(jobId) === core.self
  );
  assert(successor >= 0, "a successor owns the job");
  assert(!c.scheduled[successor]!.includes(jobId), "never handed to the successor's engine");
  const job = c.cores[successor]!.table.get(jobId)!;
  assertEquals([job.phase, job.deadReason], ["dead", `endpoint ${ep.id} disabled: manual`]);
});

Deno.test("a failure past the failing window disables the endpoint ('failing'); a recorded success restarts the window", () => {
  const windowMs = 10_000;
  const c = new ReviewCluster({ endpointFailingWindowMs: windowMs, endpointHealthWriteMs: 1_000 });
  c.startAll();
  const ep = endpoint(c, { url: "https://flaky.test/hook", eventTypes: ["invoice.paid"] });
  const [a, b, d] = events(c, 3).map((id) => eventJobId(id, ep.id));
  // A success at 6 s: every core's value records it (one endpoint-health record).
  c.tick(6_000);
  c.delivered(ownerOf(c, a!), a!);
  settleAll(c);
  const successAtMs = c.cores[ownerOf(c, a!)]!.table.endpoints.get(ep.id)!.lastSuccessAtMs;
  assert(successAtMs > 0, "the success is recorded");
  for (const core of c.cores) {
    assertEquals(core.table.endpoints.get(ep.id)!.lastSuccessAtMs, successAtMs);
  }
  // 12 s after the create but 6 s after the success: within the window.
  c.tick(6_000);
  failed(c, ownerOf(c, b!), b!, "http_error");
  settleAll(c);
  assertEquals(c.cores[0]!.table.endpoints.get(ep.id)!.disabled, false);
  assertEquals(disableWrites(c), 0);
  // Past the window since the success: the next failure disables it.
  c.tick(windowMs);
  failed(c, ownerOf(c, d!), d!, "timeout");
  settleAll(c);
  for (const core of c.cores) {
    const e = core.table.endpoints.get(ep.id)!;
    assertEquals([e.disabled, e.disabledReason], [true, "failing"]);
  }
  assertEquals(
    c.cores[ownerOf(c, b!)]!.table.get(b!)!.deadReason,
    `endpoint ${ep.id} disabled: failing`,
  );
});

Deno.test("recoverableJobs: the endpoint's dead jobs of events since `since`, in event order", () => {
  const dead = (eventId: string, endpointId: string, atMs: number, phase = "dead"): JobEntry =>
    ({
      jobId: eventJobId(eventId, endpointId),
      phase,
      spec: { submittedAtMs: atMs, webhookId: eventId },
    }) as unknown as JobEntry;
  const entries = [
    dead("evt_c", "ep_1", 300),
    dead("evt_a", "ep_1", 200),
    dead("evt_b", "ep_1", 200),
    dead("evt_z", "ep_1", 100),
    dead("evt_d", "ep_2", 250),
    dead("evt_e", "ep_1", 400, "pending"),
    { jobId: "job_plain", phase: "dead", spec: { submittedAtMs: 500 } } as unknown as JobEntry,
  ];
  assertEquals(recoverableJobs(entries, "ep_1", 150), [
    "evt_a.ep_1",
    "evt_b.ep_1",
    "evt_c.ep_1",
  ]);
  assertEquals(recoverableJobs(entries, "ep_1", 0)[0], "evt_z.ep_1");
  assertEquals(recoverableJobs(entries, "ep_3", 0), []);
});
