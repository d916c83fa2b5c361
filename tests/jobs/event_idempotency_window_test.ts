/**
 * A keyed event (`POST /v1/events` with an Idempotency-Key) retried across an epoch boundary of
 * the ids, as tests/jobs/idempotency_window_test.ts does for keyed jobs: the replicas answer
 * with the key's other live incarnation (`other_settled`, `other_live`) instead of a vote, so
 * a retry sent to a node that missed the first try gets the first event's id (`existing`), or
 * a 409 for another body, and an unacknowledged first try is taken over: never a second event,
 * whose jobs receivers would see under a second `webhook-id`. The window is shortened by config
 * (10 s); hand-driven cores (review_harness.ts).
 */

import { assert, assertEquals } from "../assert.ts";
import {
  among,
  avoiding,
  endpoint,
  type EventDone,
  ReviewCluster,
  WALL,
} from "./review_harness.ts";
import { keyedEventId } from "../../src/jobs/event_model.ts";
import { eventJobIds } from "../../src/jobs/event_table.ts";
import { keyEpoch } from "../../src/jobs/keyed_id.ts";

const WINDOW_MS = 10_000;
const PAID = { type: "invoice.paid", payload: '{"invoice":42}', idempotencyKey: "order-7" };

function accepted(answer: EventDone | undefined): { id: string; existing: boolean } {
  assert(answer?.ok === true, `acknowledged, not ${JSON.stringify(answer)}`);
  return { id: answer.id, existing: answer.existing };
}

/** A ready cluster with two endpoints taking `invoice.paid`, 0.5 s before an epoch boundary. */
function nearBoundary(): ReviewCluster {
  const c = new ReviewCluster({ idempotencyWindowMs: WINDOW_MS });
  c.startAll();
  endpoint(c, { url: "https://a.test/hook", eventTypes: ["invoice.paid"] });
  endpoint(c, { url: "https://b.test/hook", eventTypes: ["invoice.paid"] });
  // WALL is a multiple of the window: an epoch starts there, and the next one a window later.
  assertEquals(WALL % WINDOW_MS, 0);
  assert(c.nowMs < WINDOW_MS - 500, "the endpoints are made before the boundary");
  c.tick(WINDOW_MS - 500 - c.nowMs);
  return c;
}

/** Core 1 takes PAID and only core 2 stores it: refused, no majority. Returns its id. */
function firstTryOnTwo(c: ReviewCluster): string {
  const first = c.submitEvent(0, PAID);
  c.settle(among(0, 1));
  c.tick(1_001);
  c.settle(among(0, 1));
  assertEquals(c.eventAnswers.get(first)?.ok, false, "no majority: refused");
  return keyedEventId(PAID.idempotencyKey, keyEpoch(WALL, WINDOW_MS));
}

/** No core holds event `id`, nor any job of it. */
function assertNowhere(c: ReviewCluster, id: string): void {
  for (const [i, core] of c.cores.entries()) {
    assertEquals(core.table.events.get(id), undefined, `core ${i + 1} holds no event ${id}`);
    for (const job of core.table.entries()) {
      assert(job.spec?.webhookId !== id, `core ${i + 1} holds a job ${job.jobId} of ${id}`);
    }
  }
}

Deno.test("a keyed event retried across an epoch boundary on a node that missed it names the first event; another body is a conflict", () => {
  // The first try falls 0.5 s before a boundary and misses core 5; the retry, 0.5 s after it
  // on core 5, proposes the new epoch's id. Before: the replicas voted for it (they hold no
  // event under that id) and a second event went out, with a second webhook-id.
  const c = nearBoundary();
  const first = c.submitEvent(0, PAID);
  c.settle(avoiding(4));
  const { id } = accepted(c.eventAnswers.get(first));
  assertEquals(id, keyedEventId(PAID.idempotencyKey, keyEpoch(WALL, WINDOW_MS)));
  assertEquals(c.cores[4]!.table.events.get(id), undefined, "core 5 missed it");
  c.tick(1_000);
  const retry = c.submitEvent(4, PAID);
  c.pass(avoiding());
  c.settle();
  assertEquals(accepted(c.eventAnswers.get(retry)), { id, existing: true });
  const newId = keyedEventId(PAID.idempotencyKey, keyEpoch(WALL, WINDOW_MS) + 1);
  assertNowhere(c, newId);
  const other = c.submitEvent(4, { ...PAID, payload: '{"invoice":43}' });
  c.settle();
  const conflict = c.eventAnswers.get(other);
  assertEquals(conflict?.ok === false && conflict.code, "idempotency_conflict");
  assertNowhere(c, newId);
});

Deno.test("a keyed event whose first try saw no majority, in the previous epoch, is taken over by its retry: one event", () => {
  // The first try (core 1) reached only core 2 and was refused (no majority); the retry, on
  // core 4 after the epoch boundary, proposes the new epoch's id; cores 1 and 2 answer with
  // the earlier event they hold, and the retry moves over to it.
  const c = nearBoundary();
  const firstId = firstTryOnTwo(c);
  assert(c.cores[1]!.table.event(firstId) !== undefined, "core 2 holds the first try");
  const retry = c.submitEvent(3, PAID);
  c.settle();
  assertEquals(accepted(c.eventAnswers.get(retry)).id, firstId, "the retry names the first try");
  for (let i = 0; i < 2; i++) {
    c.tick(25);
    c.settle();
  }
  for (const [i, core] of c.cores.entries()) {
    const event = core.table.event(firstId);
    assertEquals(event?.committed, true, `core ${i + 1} holds it committed`);
    for (const jobId of eventJobIds(event!.body!)) {
      assertEquals(core.table.get(jobId)?.committed, true, `core ${i + 1}: its job ${jobId}`);
    }
  }
  assertNowhere(c, keyedEventId(PAID.idempotencyKey, keyEpoch(WALL, WINDOW_MS) + 1));
});

Deno.test("a keyed event moved over to its first try late in its round is still answered within submitTimeoutMs of its arrival", () => {
  // As tests/jobs/idempotency_window_test.ts's late move (sim seed 30702), for events: the
  // moved request keeps its first round's deadline. Mutation: resubmit moved event requests
  // without `answerByMs`, and this fails.
  const c = nearBoundary();
  const firstId = firstTryOnTwo(c);
  const retry = c.submitEvent(3, PAID);
  const retryAtMs = c.nowMs;
  c.tick(900);
  c.exchange(among(1, 3), 1);
  assertEquals(c.cores[3]!.table.event(firstId)?.committed, false, "moved over to the first try");
  assertEquals(c.eventAnswers.get(retry), undefined, "its new round is open");
  c.drop();
  c.tick(retryAtMs + 1_000 - c.nowMs);
  const answer = c.eventAnswers.get(retry);
  assert(answer !== undefined && !answer.ok, "refused by its first round's deadline");
  assertEquals(answer.code, "no_quorum");
});
