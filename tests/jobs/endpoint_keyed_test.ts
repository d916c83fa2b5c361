/**
 * Creates with an Idempotency-Key (docs/endpoints.md, "Idempotent creates"), on five job
 * stores on the simulator: a retry through another node, also after the first try was
 * answered 503, gets the same endpoint and not a second one; another body with the same key
 * is a conflict, and so is a retry after the endpoint was deleted.
 */

import { assert, assertEquals } from "../assert.ts";
import { keyedCreateAnswer, keyedEndpointId } from "../../src/jobs/endpoint_keyed.ts";
import type { EndpointFields } from "../../src/jobs/service.ts";
import type { JobStore } from "../../src/jobs/job_store.ts";
import { cluster, settle } from "./store_cluster.ts";

function fields(overrides: Partial<EndpointFields> = {}): EndpointFields {
  return {
    url: "http://10.1.1.1/hook",
    eventTypes: ["invoice.paid"],
    secret: "whsec_" + btoa("0123456789abcdef01234567"),
    description: "billing",
    headers: { "x-a": "1", "x-b": "2" },
    rateLimitPerS: 0,
    ordered: false,
    disabled: false,
    disabledReason: "",
    ...overrides,
  };
}

const generated = (n: number) => "whsec_" + btoa(`generated-secret-${n}`.padEnd(24, "x"));

function liveIds(store: JobStore): string[] {
  return store.listEndpoints(100).items.map((e) => e.id);
}

Deno.test("keyedEndpointId: one id per key, shaped as a minted one", () => {
  const a = keyedEndpointId("create-customer-42");
  assertEquals(a, keyedEndpointId("create-customer-42"));
  assert(a !== keyedEndpointId("create-customer-43"));
  assert(/^ep_[0-9a-f]{24}$/.test(a), a);
});

Deno.test("keyedCreateAnswer: a generated secret is not compared; the rest is", () => {
  const state = {
    ...fields({ secret: generated(1) }),
    id: "ep_x",
    createdAtMs: 5,
    previousSecret: "",
    previousSecretUntilMs: 0,
    lastSuccessAtMs: 0,
    deleted: false,
    version: { atMs: 5, origin: "a", seq: 1 },
  };
  assertEquals(keyedCreateAnswer(state, fields({ secret: generated(2) }), false), "same");
  assertEquals(keyedCreateAnswer(state, fields({ secret: generated(2) }), true), "different");
  // Headers in another order are the same headers.
  assertEquals(
    keyedCreateAnswer(
      state,
      fields({ secret: generated(3), headers: { "x-b": "2", "x-a": "1" } }),
      false,
    ),
    "same",
  );
  assertEquals(
    keyedCreateAnswer(state, fields({ url: "http://10.1.1.2/hook" }), false),
    "different",
  );
  assertEquals(keyedCreateAnswer({ ...state, deleted: true }, fields(), false), "deleted");
  // What the nodes keep beside the client's fields (a success recorded since, a rotation's
  // previous secret) is not the body: a retry is still the same create.
  const lived = {
    ...state,
    lastSuccessAtMs: 9_000,
    previousSecret: generated(7),
    previousSecretUntilMs: 99_000,
  };
  assertEquals(keyedCreateAnswer(lived, fields({ secret: generated(4) }), false), "same");
});

Deno.test("keyed create: a retry through another node gets the same endpoint and secret", async () => {
  const { scheduler, stores } = await cluster();
  const key = { idempotencyKey: "k-1", secretGiven: false };
  const first = await settle(
    scheduler,
    stores[0]!.createEndpoint(fields({ secret: generated(1) }), key),
  );
  assert(first.ok, JSON.stringify(first));
  assertEquals(first.endpoint.id, keyedEndpointId("k-1"));
  // The retry's API generated another secret; the client gets the first one back.
  const retry = await settle(
    scheduler,
    stores[3]!.createEndpoint(fields({ secret: generated(2) }), key),
  );
  assert(retry.ok, JSON.stringify(retry));
  assertEquals(retry.endpoint.id, first.endpoint.id);
  assertEquals(retry.endpoint.secret, generated(1));
  await scheduler.runUntilAsync(scheduler.nowMs + 1_000);
  for (const s of stores) assertEquals(liveIds(s), [first.endpoint.id]);
  // Another body under the same key: a conflict, and nothing written.
  const other = await settle(
    scheduler,
    stores[1]!.createEndpoint(fields({ url: "http://10.9.9.9/other" }), key),
  );
  assert(!other.ok && other.code === "idempotency_conflict", JSON.stringify(other));
  assertEquals(stores[1]!.getEndpoint(first.endpoint.id)?.url, "http://10.1.1.1/hook");
  // Deleted since: a retry does not bring it back.
  const deleted = await settle(scheduler, stores[2]!.deleteEndpoint(first.endpoint.id));
  assert(deleted.ok);
  const late = await settle(scheduler, stores[4]!.createEndpoint(fields(), key));
  assert(!late.ok && late.code === "idempotency_conflict", JSON.stringify(late));
  await scheduler.runUntilAsync(scheduler.nowMs + 1_000);
  for (const s of stores) assertEquals(liveIds(s), []);
  await scheduler.runUntilAsync(scheduler.nowMs + 1_000);
  for (const s of stores) await s.close();
});

Deno.test("keyed create: a retry after a 503 gets the endpoint the first try left", async () => {
  const { scheduler, network, voters, stores } = await cluster();
  const key = { idempotencyKey: "k-503", secretGiven: false };
  // The first try reads a majority, writes its value here, and is then cut off with node 1
  // (a minority) before the others' votes come back: it is answered no_quorum, and its value
  // stays on the disks it reached.
  const id = keyedEndpointId("k-503");
  let answered = false;
  const firstTry = stores[0]!.createEndpoint(fields({ secret: generated(1) }), key)
    .finally(() => answered = true);
  await scheduler.runUntilAsync(
    scheduler.nowMs + 2_000,
    () => stores[0]!.core.table.endpoints.value(id) !== undefined,
  );
  assert(stores[0]!.core.table.endpoints.value(id) !== undefined, "the first try wrote");
  network.partition([voters[0]!, voters[1]!]);
  await scheduler.runUntilAsync(scheduler.nowMs + 5_000, () => answered);
  const first = await firstTry;
  assert(!first.ok && first.code === "no_quorum", JSON.stringify(first));
  network.heal();
  await scheduler.runUntilAsync(scheduler.nowMs + 500);
  // The client retries through node 1, which holds the first try: it answers that endpoint,
  // now on a majority, with the first try's secret.
  const retry = await settle(
    scheduler,
    stores[1]!.createEndpoint(fields({ secret: generated(2) }), key),
  );
  assert(retry.ok, JSON.stringify(retry));
  assertEquals(retry.endpoint.id, keyedEndpointId("k-503"));
  assertEquals(retry.endpoint.secret, generated(1));
  // Another retry through a node of the majority side: the same endpoint again.
  const again = await settle(
    scheduler,
    stores[4]!.createEndpoint(fields({ secret: generated(3) }), key),
  );
  assert(again.ok, JSON.stringify(again));
  assertEquals(again.endpoint.id, retry.endpoint.id);
  assertEquals(again.endpoint.secret, retry.endpoint.secret);
  await scheduler.runUntilAsync(scheduler.nowMs + 3_000);
  for (const s of stores) {
    assertEquals(liveIds(s), [retry.endpoint.id], `${s.nodeId}: one endpoint`);
    assertEquals(s.getEndpoint(retry.endpoint.id)?.secret, retry.endpoint.secret);
  }
  for (const s of stores) await s.close();
});

Deno.test("keyed create: a retry through a node that missed the create reads it from a majority", async () => {
  const { scheduler, network, voters, stores } = await cluster();
  const key = { idempotencyKey: "k-missed", secretGiven: false };
  // Node 4 is cut off while the create is acknowledged by the other four.
  network.partition([voters[4]!]);
  const first = await settle(
    scheduler,
    stores[0]!.createEndpoint(fields({ secret: generated(1) }), key),
  );
  assert(first.ok, JSON.stringify(first));
  assertEquals(stores[4]!.getEndpoint(first.endpoint.id), undefined, "node 4 missed it");
  network.heal();
  // At once, before anything reaches node 4: its answer must still be the endpoint made.
  const retry = await settle(
    scheduler,
    stores[4]!.createEndpoint(fields({ secret: generated(2) }), key),
  );
  assert(retry.ok, JSON.stringify(retry));
  assertEquals(retry.endpoint.id, first.endpoint.id);
  assertEquals(retry.endpoint.secret, generated(1));
  await scheduler.runUntilAsync(scheduler.nowMs + 3_000);
  for (const s of stores) assertEquals(s.getEndpoint(first.endpoint.id)?.secret, generated(1));
  for (const s of stores) await s.close();
});

Deno.test("a GET (readEndpoint) through a node that missed the create reads it from a majority", async () => {
  const { scheduler, network, voters, stores } = await cluster();
  network.partition([voters[4]!]);
  const made = await settle(scheduler, stores[0]!.createEndpoint(fields()));
  assert(made.ok, JSON.stringify(made));
  assertEquals(stores[4]!.getEndpoint(made.endpoint.id), undefined, "node 4 missed it");
  // Cut off, node 4 cannot read a majority: refused, not a 404.
  const cutOff = await settle(scheduler, stores[4]!.readEndpoint(made.endpoint.id));
  assert(cutOff !== undefined && "ok" in cutOff && cutOff.code === "no_quorum", "no_quorum");
  network.heal();
  // At once, before anti-entropy reaches node 4: the GET finds the endpoint.
  const read = await settle(scheduler, stores[4]!.readEndpoint(made.endpoint.id));
  assert(read !== undefined && !("ok" in read), JSON.stringify(read));
  assertEquals([read.id, read.url, read.secret], [
    made.endpoint.id,
    made.endpoint.url,
    made.endpoint.secret,
  ]);
  const missing = await settle(scheduler, stores[4]!.readEndpoint("ep_0123456789abcdef01234567"));
  assertEquals(missing, undefined, "a majority holds no such endpoint: a 404");
  for (const s of stores) await s.close();
});
