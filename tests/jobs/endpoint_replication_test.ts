/**
 * The endpoint table across the replication cores (docs/endpoints.md): a write is answered
 * only once a majority holds it durably, every node converges on it (live replication,
 * catch-up, snapshots, WAL replay, checkpoints), and racing writes converge on one value.
 */

import { assert, assertEquals } from "../assert.ts";
import type { EndpointState, EndpointWrite } from "../../src/jobs/endpoint_model.ts";
import { type EndpointDone, ReviewCluster } from "./review_harness.ts";
import { SAMPLE_ENDPOINT } from "./arbitraries.ts";
import { encodeRecord, encodeWalBatch } from "../../src/jobs/job_codec.ts";
import { endpointBytes } from "../../src/jobs/endpoint_codec.ts";
import { ENDPOINT_LIMITS } from "../../src/config/endpoints.ts";

const FIELDS = SAMPLE_ENDPOINT;

function answered(c: ReviewCluster, requestId: number): EndpointState {
  const answer: EndpointDone | undefined = c.endpointAnswers.get(requestId);
  assert(answer !== undefined, "the write is answered");
  assert(answer.ok, answer.ok ? "" : `${answer.code}: ${answer.message}`);
  return answer.endpoint;
}

/** A write taken by core i, replicated and persisted everywhere: its answer. */
function written(c: ReviewCluster, i: number, write: EndpointWrite): EndpointState {
  const requestId = c.writeEndpoint(i, write);
  c.settle();
  return answered(c, requestId);
}

/** A ready cluster with one endpoint created on core 0 and settled everywhere. */
function withEndpoint(config = {}): { c: ReviewCluster; created: EndpointState } {
  const c = new ReviewCluster(config);
  c.startAll();
  const requestId = c.writeEndpoint(0, { kind: "create", fields: FIELDS });
  c.settle();
  return { c, created: answered(c, requestId) };
}

Deno.test("an endpoint write is answered only once a majority of the voters holds it durably", () => {
  const c = new ReviewCluster();
  c.startAll();
  const requestId = c.writeEndpoint(0, { kind: "create", fields: FIELDS });
  // Every replica stores it, but only two disks (the proposer's and one replica's) are durable.
  c.pass();
  c.persist(0, 1);
  c.pass();
  assertEquals(c.endpointAnswers.get(requestId), undefined, "2 of 5 is not a majority");
  c.persist(2);
  c.pass();
  const endpoint = answered(c, requestId);
  assertEquals(endpoint.url, FIELDS.url);
  assert(endpoint.id.startsWith("ep_") && endpoint.id.length === 3 + 24, endpoint.id);
});

Deno.test("an endpoint write that reaches no majority in time is answered no_quorum", () => {
  const c = new ReviewCluster();
  c.startAll();
  const requestId = c.writeEndpoint(0, { kind: "create", fields: FIELDS });
  c.drop();
  c.persist(0);
  c.tick(2_000);
  const answer = c.endpointAnswers.get(requestId);
  assert(answer !== undefined && !answer.ok && answer.code === "no_quorum", "no_quorum");
});

Deno.test("an endpoint created on one node is read back from every other node", () => {
  const { c, created } = withEndpoint();
  for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), created);
  // An update and a delete travel the same way.
  const updated = written(c, 3, {
    kind: "update",
    id: created.id,
    patch: { url: "https://b.test/" },
  });
  c.settle();
  for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), updated);
  written(c, 4, { kind: "delete", id: created.id });
  c.settle();
  for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), undefined);
  const update = c.writeEndpoint(1, { kind: "update", id: created.id, patch: {} });
  c.settle(); // it reads a majority first
  const missing = c.endpointAnswers.get(update);
  assert(missing !== undefined && !missing.ok && missing.code === "not_found");
});

Deno.test("an endpoint survives a restart: replayed from the node's WAL", () => {
  const { c, created } = withEndpoint();
  c.crash(2);
  const restarted = c.restart(2);
  assertEquals(restarted.table.endpoints.get(created.id), created);
});

Deno.test("a node down during the write catches up on it, by records and by snapshot", () => {
  for (const catchupLogBytesMax of [64 * 1024 * 1024, 1]) {
    const c = new ReviewCluster({ catchupLogBytesMax });
    c.startAll();
    c.crash(4);
    const created = written(c, 0, { kind: "create", fields: FIELDS });
    c.settle();
    c.disk[4] = [];
    const back = c.restart(4);
    for (let i = 0; i < 5; i++) {
      c.settle();
      c.tick(10);
    }
    assertEquals(back.phase, "ready");
    assertEquals(back.table.endpoints.get(created.id), created);
    if (catchupLogBytesMax === 1) assert(c.syncPages.snapshot > 0, "caught up by snapshot");
  }
});

Deno.test("a checkpoint carries the endpoints, tombstones included", () => {
  const { c, created } = withEndpoint();
  const second = written(c, 1, { kind: "create", fields: FIELDS });
  written(c, 1, { kind: "delete", id: second.id });
  // What core 3 would write as its checkpoint, replayed alone into a fresh core.
  const checkpoint = Array.from(c.cores[3]!.snapshotRecords(), (b) => b.slice());
  const fresh = new ReviewCluster().cores[3]!;
  for (const bytes of checkpoint) {
    assertEquals(fresh.replay("snapshot", bytes, c.wallMs), undefined);
  }
  assertEquals(fresh.table.endpoints.get(created.id), created);
  assertEquals(fresh.table.endpoints.get(second.id), undefined);
  assertEquals(fresh.table.endpoints.value(second.id)?.deleted, true);
});

Deno.test("two updates racing on different nodes converge on the newer one everywhere", () => {
  for (const skewMs of [0, 5_000, -5_000]) {
    const { c, created } = withEndpoint();
    c.skewMs[3] = skewMs;
    // Past the create's version: the node behind then stamps one past it, which is earlier.
    c.tick(10);
    // Both take their write before either hears of the other.
    const a = c.writeEndpoint(0, { kind: "update", id: created.id, patch: { url: "https://a2/" } });
    const b = c.writeEndpoint(3, { kind: "update", id: created.id, patch: { url: "https://b2/" } });
    c.settle();
    const va = answered(c, a);
    const vb = answered(c, b);
    const winner = va.version.atMs > vb.version.atMs ||
        (va.version.atMs === vb.version.atMs && va.version.origin > vb.version.origin)
      ? va
      : vb;
    for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), winner);
    if (skewMs > 0) assertEquals(winner.url, "https://b2/", "the clock ahead wins");
    if (skewMs < 0) assertEquals(winner.url, "https://a2/", "the clock behind loses");
  }
});

Deno.test("the version of a write is past the value its node held, whatever the clock says", () => {
  const { c, created } = withEndpoint();
  c.skewMs[2] = -60_000;
  const updated = written(c, 2, {
    kind: "update",
    id: created.id,
    patch: { description: "later" },
  });
  c.settle();
  assert(updated.version.atMs > created.version.atMs);
  for (const core of c.cores) {
    assertEquals(core.table.endpoints.get(created.id)?.description, "later");
  }
});

Deno.test("an endpoint record on the WAL replays on its own into a fresh core", () => {
  const { created } = withEndpoint();
  const fresh = new ReviewCluster().cores[1]!;
  const record = {
    type: "endpoint" as const,
    stamp: { origin: created.version.origin, seq: created.version.seq },
    state: created,
  };
  assertEquals(fresh.replay("data", encodeWalBatch([encodeRecord(record)]), 0), undefined);
  assertEquals(fresh.table.endpoints.get(created.id), created);
  assert(fresh.tracker.has(created.version.origin, created.version.seq));
});

/** `n` distinct event types of about 100 characters each. */
function eventTypes(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `type.${i}.` + "x".repeat(94));
}

Deno.test("an endpoint past endpointBytesMax encoded is refused 400 (invalid), naming the limit", () => {
  const c = new ReviewCluster();
  c.startAll();
  // Every field within its own bound, the whole past 16 KiB.
  const big = { ...FIELDS, eventTypes: eventTypes(170) };
  const refused = c.endpointAnswers.get(c.writeEndpoint(0, { kind: "create", fields: big }));
  assert(refused !== undefined && !refused.ok && refused.code === "invalid", "refused");
  assert(refused.message.includes(`at most ${ENDPOINT_LIMITS.endpointBytesMax}`), refused.message);
  assert(refused.message.includes("endpointBytesMax"), refused.message);
  c.settle();
  for (const core of c.cores) assertEquals(core.table.endpoints.held, 0);
  // Under the bound it is taken; a PATCH that would take it past is refused, nothing changes.
  const created = written(c, 0, {
    kind: "create",
    fields: { ...FIELDS, eventTypes: eventTypes(140) },
  });
  assert(endpointBytes(created) <= ENDPOINT_LIMITS.endpointBytesMax);
  const patch = c.writeEndpoint(2, {
    kind: "update",
    id: created.id,
    patch: { eventTypes: eventTypes(170) },
  });
  c.settle();
  const tooBig = c.endpointAnswers.get(patch);
  assert(tooBig !== undefined && !tooBig.ok && tooBig.code === "invalid", "refused");
  for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), created);
});

Deno.test("an endpoint past endpointBytesMax from before the bound can still be deleted", () => {
  const { c, created } = withEndpoint();
  const old: EndpointState = {
    ...created,
    id: "ep_0123456789abcdef01234567",
    eventTypes: eventTypes(200),
  };
  assert(endpointBytes(old) > ENDPOINT_LIMITS.endpointBytesMax);
  for (const core of c.cores) core.table.apply({ type: "endpoint-state", state: old }, c.wallMs);
  written(c, 1, { kind: "delete", id: old.id });
  for (const core of c.cores) assertEquals(core.table.endpoints.value(old.id)?.deleted, true);
});

Deno.test("a node away past the tombstone horizon drops its live copy of an endpoint deleted meanwhile", () => {
  // A short horizon and no catch-up log: the node comes back by a snapshot that no longer
  // carries the endpoint (its tombstone expired everywhere else).
  const c = new ReviewCluster({ endpointTombstoneMs: 1_000, catchupLogBytesMax: 1 });
  c.startAll();
  const created = written(c, 0, { kind: "create", fields: FIELDS });
  c.settle();
  c.crash(4);
  written(c, 0, { kind: "delete", id: created.id });
  for (let i = 0; i < 3; i++) {
    c.tick(1_000);
    c.settle();
  }
  for (const core of c.cores.slice(0, 4)) {
    assertEquals(core.table.endpoints.value(created.id), undefined, "the tombstone expired");
  }
  const catchUp = () => {
    for (let i = 0; i < 5; i++) {
      c.settle();
      c.tick(10);
    }
  };
  const back = c.restart(4);
  assertEquals(back.table.endpoints.get(created.id), created, "its WAL holds the live copy");
  catchUp();
  assertEquals(back.phase, "ready");
  assert(c.syncPages.snapshot > 0, "caught up by snapshot");
  assertEquals(back.table.endpoints.get(created.id), undefined, "dropped by the snapshot");
  // Durably: a replay of its WAL (the live copy's records included) does not bring it back.
  c.crash(4);
  const again = c.restart(4);
  assertEquals(again.table.endpoints.get(created.id), undefined, "not back after a replay");
  catchUp();
  assertEquals(again.table.endpoints.get(created.id), undefined);
  // Nor does it reach any other node.
  for (const core of c.cores) assertEquals(core.table.endpoints.get(created.id), undefined);
});
