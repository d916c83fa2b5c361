/**
 * A PATCH or DELETE builds on the newest value a majority of the voters holds, not on the
 * value of the node that took it (docs/endpoints.md, "Writes build on a majority read"). A
 * write is acknowledged once a majority holds it, so the next write may well reach a node
 * that has not received it yet; built from that node's stale value and stamped past it, the
 * later write used to win whole and undo the acknowledged one (review 20, issue 20 slice 1).
 * No concurrency is needed: sequential writes through different nodes were enough.
 */

import { assert, assertEquals } from "../assert.ts";
import type { EndpointState } from "../../src/jobs/endpoint_model.ts";
import { between, type EndpointDone, ReviewCluster } from "./review_harness.ts";
import { SAMPLE_ENDPOINT } from "./arbitraries.ts";

function ok(c: ReviewCluster, requestId: number): EndpointState {
  const a: EndpointDone | undefined = c.endpointAnswers.get(requestId);
  assert(a !== undefined, "the write is answered");
  assert(a.ok, a.ok ? "" : `${a.code}: ${a.message}`);
  return a.endpoint;
}

/** Everything flows but core 0's messages to core 4: core 4 lags behind core 0's writes. */
const NOT_0_TO_4 = (m: { from: number; to: number }) => !(m.from === 0 && m.to === 4);

/**
 * A ready cluster with one endpoint created through core 0 and settled everywhere, then
 * `write` taken by core 0 and acknowledged while none of core 0's messages reach core 4.
 */
function laggingNode4(
  write: (id: string) => Parameters<ReviewCluster["writeEndpoint"]>[1],
): { c: ReviewCluster; id: string; acknowledged: EndpointState } {
  const c = new ReviewCluster();
  c.startAll();
  const create = c.writeEndpoint(0, { kind: "create", fields: SAMPLE_ENDPOINT });
  c.settle();
  const id = ok(c, create).id;
  c.tick(10);
  const first = c.writeEndpoint(0, write(id));
  c.settle(NOT_0_TO_4);
  const acknowledged = ok(c, first);
  c.drop(between(0, 4));
  assertEquals(c.cores[4]!.table.endpoints.value(id)?.version, ok(c, create).version, "lags");
  c.tick(10);
  return { c, id, acknowledged };
}

Deno.test("an acknowledged DELETE is not undone by a later PATCH through a node that missed it", () => {
  const { c, id } = laggingNode4((id) => ({ kind: "delete", id }));
  const patch = c.writeEndpoint(4, { kind: "update", id, patch: { description: "renamed" } });
  c.settle();
  const answer = c.endpointAnswers.get(patch);
  assert(answer !== undefined && !answer.ok && answer.code === "not_found", "404: it is gone");
  for (const core of c.cores) assertEquals(core.table.endpoints.get(id), undefined);
  // The lagging node adopted the tombstone it read, so it reads the endpoint as gone too.
  assertEquals(c.cores[4]!.table.endpoints.value(id)?.deleted, true);
});

Deno.test("an acknowledged DELETE is not undone by a later DELETE through a node that missed it", () => {
  const { c, id, acknowledged } = laggingNode4((id) => ({ kind: "delete", id }));
  const again = c.writeEndpoint(4, { kind: "delete", id });
  c.settle();
  const answer = c.endpointAnswers.get(again);
  assert(answer !== undefined && !answer.ok && answer.code === "not_found", "404: it is gone");
  for (const core of c.cores) assertEquals(core.table.endpoints.value(id), acknowledged);
});

Deno.test("an acknowledged PATCH of url is not reverted by a later PATCH elsewhere", () => {
  const url = "https://new.example/hook";
  const { c, id } = laggingNode4((id) => ({ kind: "update", id, patch: { url } }));
  const later = c.writeEndpoint(4, { kind: "update", id, patch: { description: "renamed" } });
  c.settle();
  const written = ok(c, later);
  assertEquals([written.url, written.description], [url, "renamed"]);
  for (const core of c.cores) assertEquals(core.table.endpoints.get(id), written);
});

Deno.test("an acknowledged disable is not undone by a later PATCH elsewhere", () => {
  const { c, id } = laggingNode4((id) => ({ kind: "update", id, patch: { disabled: true } }));
  const later = c.writeEndpoint(4, { kind: "update", id, patch: { description: "renamed" } });
  c.settle();
  const written = ok(c, later);
  assertEquals([written.disabled, written.disabledReason], [true, "manual"]);
  for (const core of c.cores) assertEquals(core.table.endpoints.get(id)?.disabled, true);
});

Deno.test("an endpoint write waits for a majority of answers before it is built", () => {
  const c = new ReviewCluster();
  c.startAll();
  const create = c.writeEndpoint(0, { kind: "create", fields: SAMPLE_ENDPOINT });
  c.settle();
  const id = ok(c, create).id;
  const patch = c.writeEndpoint(0, { kind: "update", id, patch: { description: "later" } });
  const originated = () => c.pending[0]!.length > 0 || c.inflight.some((m) => m.kind === "repl");
  assert(!originated(), "nothing is written before the read");
  // Core 0's own answer and core 1's: two of five.
  c.pass((m) => (m.from === 0 && m.to === 1) || (m.from === 1 && m.to === 0));
  assert(!originated(), "two answers of five are not a majority");
  c.pass((m) => (m.from === 0 && m.to === 2) || (m.from === 2 && m.to === 0));
  assert(originated(), "three answers are: the write is proposed");
  c.settle();
  assertEquals(ok(c, patch).description, "later");
});

Deno.test("an endpoint write whose read no majority answers in time is no_quorum, and not made", () => {
  const c = new ReviewCluster();
  c.startAll();
  const create = c.writeEndpoint(0, { kind: "create", fields: SAMPLE_ENDPOINT });
  c.settle();
  const created = ok(c, create);
  const patch = c.writeEndpoint(0, { kind: "delete", id: created.id });
  // Only core 1 hears of it and answers in time: two of five.
  c.pass((m) => (m.from === 0 && m.to === 1) || (m.from === 1 && m.to === 0));
  c.tick(499);
  assertEquals(c.endpointAnswers.get(patch), undefined, "it waits queryTimeoutMs (500 ms)");
  c.tick(2);
  const answer = c.endpointAnswers.get(patch);
  assert(answer !== undefined && !answer.ok && answer.code === "no_quorum", "no_quorum");
  assertEquals(answer.retryAfterS, 1);
  // The other reads arrive late and are answered: the closed round makes nothing of them.
  c.settle();
  for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), created);
});

Deno.test("a GET through a node that missed acknowledged writes reads them from a majority", () => {
  // The create is acknowledged while none of core 0's messages reach core 4.
  const c = new ReviewCluster();
  c.startAll();
  const create = c.writeEndpoint(0, { kind: "create", fields: SAMPLE_ENDPOINT });
  c.settle(NOT_0_TO_4);
  const created = ok(c, create);
  c.drop(between(0, 4));
  assertEquals(c.cores[4]!.table.endpoints.get(created.id), undefined, "core 4 missed it");
  const read = c.lookupEndpoint(4, created.id);
  c.settle(NOT_0_TO_4);
  assertEquals(c.lookupAnswers.get(read), { ok: true });
  assertEquals(c.cores[4]!.table.endpoints.get(created.id), created, "read, and adopted");
  // A PATCH acknowledged the same way is seen too, and so is a DELETE (a 404 after it).
  const patch = c.writeEndpoint(0, { kind: "update", id: created.id, patch: { description: "x" } });
  c.settle(NOT_0_TO_4);
  const patched = ok(c, patch);
  c.drop(between(0, 4));
  const again = c.lookupEndpoint(4, created.id);
  c.settle(NOT_0_TO_4);
  assertEquals(c.lookupAnswers.get(again), { ok: true });
  assertEquals(c.cores[4]!.table.endpoints.get(created.id), patched);
  const del = c.writeEndpoint(0, { kind: "delete", id: created.id });
  c.settle(NOT_0_TO_4);
  ok(c, del);
  c.drop(between(0, 4));
  const gone = c.lookupEndpoint(4, created.id);
  c.settle(NOT_0_TO_4);
  assertEquals(c.lookupAnswers.get(gone), { ok: true });
  assertEquals(c.cores[4]!.table.endpoints.get(created.id), undefined, "deleted: a 404");
});

Deno.test("a GET that no majority answers in time is refused, not answered 404", () => {
  const c = new ReviewCluster();
  c.startAll();
  // Core 4 hears from nobody: its reads of an endpoint it never held get no answers.
  const read = c.lookupEndpoint(4, "ep_0123456789abcdef01234567");
  c.settle((m) => m.to !== 4);
  c.drop((m) => m.to === 4);
  c.tick(499);
  assertEquals(c.lookupAnswers.get(read), undefined, "it waits queryTimeoutMs (500 ms)");
  c.tick(2);
  assertEquals(c.lookupAnswers.get(read), { ok: false, code: "no_quorum" });
});
