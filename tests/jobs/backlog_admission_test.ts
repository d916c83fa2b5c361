/**
 * The backlog bound through the replication cores (submit_admission.ts, rule `backlog`): every
 * node holds every pending job, payload and all, so once `backlogJobsMax` jobs are pending, or
 * their payloads claim `backlogBytesMax`, every node refuses new submits and events with
 * a 503 (`overloaded`, Retry-After 5 s, counted in hookd_jobs_backlog_refusals_total), while an
 * endpoint write is still taken (disabling the failing endpoint is how an operator drains the
 * backlog); once deliveries drain it, submits are taken again.
 */

import { assert, assertEquals } from "../assert.ts";
import { ReviewCluster } from "./review_harness.ts";
import { SAMPLE_ENDPOINT } from "./arbitraries.ts";
import type { SubmitOutcome } from "../../src/jobs/service.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { BACKLOG_RETRY_AFTER_S } from "../../src/jobs/submit_admission.ts";

const REFUSALS = "hookd_jobs_backlog_refusals_total";
const LAZY_MS = Math.max(jobsDefaults.lazySendMs, jobsDefaults.lazyAppendMs) + 1;

function accepted(c: ReviewCluster, requestId: number): string {
  const outcome: SubmitOutcome | undefined = c.answers.get(requestId);
  assert(outcome?.ok === true, JSON.stringify(outcome));
  return outcome.id;
}

function refusedForBacklog(c: ReviewCluster, requestId: number): string {
  const outcome = c.answers.get(requestId);
  assert(
    outcome !== undefined && !outcome.ok && outcome.code === "overloaded" &&
      outcome.retryAfterS === BACKLOG_RETRY_AFTER_S,
    JSON.stringify(outcome),
  );
  return outcome.message;
}

/** The index of the core that scheduled `jobId`: its owner. */
function ownerOf(c: ReviewCluster, jobId: string): number {
  const owner = c.scheduled.findIndex((ids) => ids.includes(jobId));
  assert(owner >= 0, `some core schedules ${jobId}`);
  return owner;
}

Deno.test("past backlogJobsMax pending jobs every node refuses submits and events, takes endpoint writes, and takes submits again once deliveries drain it", () => {
  const c = new ReviewCluster({ backlogJobsMax: 2 });
  c.startAll();
  // An endpoint for invoice.paid, so an event of that type makes a job.
  const created = c.writeEndpoint(0, { kind: "create", fields: SAMPLE_ENDPOINT });
  c.settle();
  assert(c.endpointAnswers.get(created)?.ok === true, "the endpoint is created");
  const ids = [0, 1].map((i) => c.submit(i, { url: "http://h.test/x", payload: "{}" }));
  c.settle();
  const jobIds = ids.map((r) => accepted(c, r));
  for (const core of c.cores) assertEquals(core.table.counts.pending, 2, core.self);

  // Every node holds the backlog, so every node refuses: here one that took none of it.
  const refused = c.submit(3, { url: "http://h.test/x", payload: "{}" });
  assertEquals(
    refusedForBacklog(c, refused),
    "2 jobs are pending delivery on this node (backlogJobsMax 2); it takes more once " +
      "deliveries drain them",
  );
  assertEquals(c.registries.get(c.cores[3]!.self)!.sumCounters(REFUSALS), 1);
  const event = c.submitEvent(3, { type: "invoice.paid", payload: "{}" });
  const eventOutcome = c.eventAnswers.get(event);
  assert(
    eventOutcome !== undefined && !eventOutcome.ok && eventOutcome.code === "overloaded",
    JSON.stringify(eventOutcome),
  );
  assertEquals(c.registries.get(c.cores[3]!.self)!.sumCounters(REFUSALS), 2);

  // An endpoint write makes no job: taken.
  const write = c.writeEndpoint(3, { kind: "create", fields: SAMPLE_ENDPOINT });
  c.settle();
  const written = c.endpointAnswers.get(write);
  assert(written?.ok === true, JSON.stringify(written));

  // One delivery drains the backlog below the bound: submits are taken again, everywhere.
  c.delivered(ownerOf(c, jobIds[0]!), jobIds[0]!);
  c.tick(LAZY_MS); // A DONE goes to the replicas lazily.
  c.settle();
  for (const core of c.cores) assertEquals(core.table.counts.pending, 1, core.self);
  const again = c.submit(3, { url: "http://h.test/x", payload: "{}" });
  c.settle();
  accepted(c, again);
});

Deno.test("past backlogBytesMax of pending payloads a submit is refused; a delivered job's payload no longer counts", () => {
  // 100 characters of payload and 15 of URL: 230 bytes held.
  const c = new ReviewCluster({ backlogBytesMax: 230 });
  c.startAll();
  const big = c.submit(0, { url: "http://h.test/x", payload: JSON.stringify("x".repeat(98)) });
  c.settle();
  const bigId = accepted(c, big);
  for (const core of c.cores) assertEquals(core.table.backlogBytes, 230, core.self);
  const refused = c.submit(1, { url: "http://h.test/x", payload: "{}" });
  assertEquals(
    refusedForBacklog(c, refused),
    "the jobs pending delivery on this node hold 230 bytes (backlogBytesMax 230); it " +
      "takes more once deliveries drain them",
  );
  c.delivered(ownerOf(c, bigId), bigId);
  c.tick(LAZY_MS);
  c.settle();
  for (const core of c.cores) assertEquals(core.table.backlogBytes, 0, core.self);
  const again = c.submit(1, { url: "http://h.test/x", payload: "{}" });
  c.settle();
  accepted(c, again);
});

Deno.test("under a full backlog a keyed retry of a job held is answered with it, and an event no endpoint takes is recorded: neither makes a job", () => {
  const c = new ReviewCluster({ backlogJobsMax: 1 });
  c.startAll();
  const first = c.submit(0, { url: "http://h.test/x", payload: "{}", idempotencyKey: "order-1" });
  c.settle();
  const id = accepted(c, first);
  // The answer was lost; the client retries, here through another node.
  const retry = c.submit(2, { url: "http://h.test/x", payload: "{}", idempotencyKey: "order-1" });
  c.settle();
  assertEquals(accepted(c, retry), id);
  const answer = c.answers.get(retry);
  assert(answer?.ok === true && answer.existing, "answered as the job it made before");
  // A new key makes a job: refused.
  const other = c.submit(2, { url: "http://h.test/x", payload: "{}", idempotencyKey: "order-2" });
  refusedForBacklog(c, other);
  // No endpoint subscribes to this type: the event makes no job, and is taken.
  const event = c.submitEvent(1, { type: "nobody.listens", payload: "{}" });
  c.settle();
  const outcome = c.eventAnswers.get(event);
  assert(outcome?.ok === true && outcome.jobs === 0, JSON.stringify(outcome));
});

Deno.test("the job store's config reaches its table's dead-letter bound", () => {
  const c = new ReviewCluster({ deadLetterBytesMax: 12_345 });
  for (const core of c.cores) assertEquals(core.table.deadLetterBytesMax, 12_345);
});
