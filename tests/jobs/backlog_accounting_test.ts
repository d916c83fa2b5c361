/**
 * What the job table counts of the memory payloads hold (job_table.ts `payloadBytesOf`,
 * event_table.ts `eventPayloadBytes`): pending plain jobs' payloads and held events' (each
 * once, however many jobs it fans out to) make the backlog submit admission bounds; dead
 * letters' payloads have their own bound, past which the oldest go. A property test holds the
 * running counts equal to a recount from the table after every record and every expire, on
 * any order of records.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { JobTable, payloadBytesOf } from "../../src/jobs/job_table.ts";
import { eventPayloadBytes } from "../../src/jobs/event_table.ts";
import type { JobRecord, JobSpec } from "../../src/jobs/job_model.ts";
import type { EventBody } from "../../src/jobs/event_model.ts";
import {
  eventRecordArb,
  jobRecordArb,
  specArb,
  stampArb,
  tableTestOptions,
} from "./arbitraries.ts";

const HOUR = 3_600_000;
const T0 = 1_800_000_000_000;
let seq = 1;
const stamp = () => ({ origin: "10.0.0.1:7000", seq: seq++ });

function spec(id: string, payload: string): JobSpec {
  return {
    id,
    url: "http://a.test/",
    payload,
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: T0,
    bodyHash: "",
  };
}

function dead(jobId: string, finishedAtMs = T0): JobRecord {
  return {
    type: "dead",
    stamp: stamp(),
    jobId,
    gen: 0,
    attemptsMade: 3,
    finishedAtMs,
    reason: "x",
  };
}

/** What the running counts must equal: a recount of everything the table holds. */
function recount(t: JobTable): { backlog: number; dead: number } {
  let backlog = 0;
  let deadBytes = 0;
  for (const entry of t.entries()) {
    if (entry.phase === "pending") backlog += payloadBytesOf(entry);
    if (entry.phase === "dead") deadBytes += payloadBytesOf(entry);
  }
  for (const event of t.events.values()) backlog += eventPayloadBytes(event.body);
  return { backlog, dead: deadBytes };
}

Deno.test("a plain job's payload counts in the backlog while pending, in the dead letters' while dead, and nowhere once delivered", () => {
  const t = new JobTable(tableTestOptions());
  t.apply({ type: "submit", stamp: stamp(), spec: spec("a", "abc") }, T0);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("b", "hello") }, T0);
  assertEquals([t.backlogPayloadBytes, t.deadPayloadBytes], [16, 0], "2 bytes a UTF-16 unit");
  t.apply({ type: "done", stamp: stamp(), jobId: "a", gen: 0, finishedAtMs: T0 + 1 }, T0);
  assertEquals([t.backlogPayloadBytes, t.deadPayloadBytes], [10, 0]);
  t.apply(dead("b"), T0);
  assertEquals([t.backlogPayloadBytes, t.deadPayloadBytes], [0, 10]);
  // A retry by hand makes the dead letter pending again.
  t.apply({ type: "revive", stamp: stamp(), jobId: "b", gen: 1 }, T0);
  assertEquals([t.backlogPayloadBytes, t.deadPayloadBytes], [10, 0]);
  // A stub (a DONE before its SUBMIT) holds no payload; the SUBMIT merging into it then none.
  t.apply({ type: "done", stamp: stamp(), jobId: "s", gen: 0, finishedAtMs: T0 }, T0);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("s", "xyz") }, T0);
  assertEquals(t.backlogPayloadBytes, 10);
  // An uncommitted copy dropped takes its payload with it.
  t.apply({ type: "submit", stamp: stamp(), spec: spec("u", "12345") }, T0);
  assertEquals(t.backlogPayloadBytes, 20);
  assert(t.dropUncommitted("u"));
  assertEquals(t.backlogPayloadBytes, 10);
});

Deno.test("an event's payload counts once however many endpoints it fans out to, until the event leaves", () => {
  const t = new JobTable(tableTestOptions());
  const payload = "x".repeat(40);
  const body: EventBody = {
    event: { id: "evt_0001", type: "invoice.paid", payload, submittedAtMs: T0, bodyHash: "" },
    jobs: ["ep_1", "ep_2", "ep_3"].map((endpointId) => ({
      endpointId,
      url: "http://a.test/hook",
      headers: {},
      secrets: [],
      timeoutMs: 0,
      maxAttempts: 3,
    })),
  };
  const made = t.apply({ type: "event", stamp: stamp(), body }, T0);
  assertEquals([made.fanout?.length, t.counts.pending], [3, 3]);
  assertEquals(t.backlogPayloadBytes, 80, "one payload of 40 units, not three");
  // The jobs delivered, the event is still held (its retention), and so is its payload.
  for (const job of made.fanout!) {
    t.apply({ type: "done", stamp: stamp(), jobId: job.jobId, gen: 0, finishedAtMs: T0 }, T0);
  }
  assertEquals([t.counts.pending, t.backlogPayloadBytes], [0, 80]);
  t.expire(T0 + HOUR + 1);
  t.expire(T0 + 2 * HOUR + 2);
  assertEquals([t.events.size, t.backlogPayloadBytes], [0, 0], "the event left, its payload too");
});

Deno.test("past deadLetterPayloadBytesMax the oldest dead letters go at the next expire", () => {
  const t = new JobTable({
    ...tableTestOptions(),
    deadLettersMax: 100,
    deadLetterPayloadBytesMax: 10,
  });
  for (const id of ["d1", "d2", "d3"]) {
    t.apply({ type: "submit", stamp: stamp(), spec: spec(id, "abcd") }, T0);
    t.apply(dead(id), T0);
  }
  // Another plain job, pending, is not a dead letter's and is not dropped.
  t.apply({ type: "submit", stamp: stamp(), spec: spec("p", "abcdefghijklmnop") }, T0);
  assertEquals([t.deadPayloadBytes, t.counts.dead], [24, 3], "the bound is kept by expire");
  assertEquals(t.expire(T0 + 1), ["d1", "d2"], "as many as it takes, oldest first");
  assertEquals([t.deadPayloadBytes, t.counts.dead, t.get("p")?.phase], [8, 1, "pending"]);
  assertEquals(t.deadLetters(10).items.map((e) => e.jobId), ["d3"]);
  assert(
    t.goneTombstone("d1") !== undefined,
    "a dead letter dropped by the bound leaves its tombstone",
  );
});

Deno.test("the payload counts equal a recount of the table after any records and expires, in any order", () => {
  const ids = fc.constantFrom("job_1", "job_2");
  const op = fc.oneof(
    jobRecordArb(specArb(ids)).map((record) => ({ record })),
    jobRecordArb(specArb(ids)).map((record) => ({
      record: "jobId" in record ? { ...record, jobId: "job_2" } : record,
    })),
    eventRecordArb.map((record) => ({ record })),
    fc.tuple(fc.constantFrom("job_1", "job_2"), fc.integer({ min: 0, max: 2 })).map((
      [jobId, gen],
    ) => ({
      record: {
        type: "gone" as const,
        gone: { jobId, gen, expiresAtMs: T0 + HOUR },
      } as JobRecord,
    })),
    fc.tuple(fc.constantFrom("job_1", "job_2"), stampArb).map(([jobId, s]) => ({
      record: {
        type: "key" as const,
        key: { key: "k-" + s.origin, jobId, bodyHash: "h1", expiresAtMs: T0 + HOUR },
      } as JobRecord,
    })),
    fc.double({ min: 0, max: 400 * 24 * HOUR, noNaN: true }).map((afterMs) => ({ afterMs })),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), fc.integer({ min: 1, max: 600 }), (ops, max) => {
      const t = new JobTable({
        ...tableTestOptions(),
        deadLettersMax: 3,
        deadLetterPayloadBytesMax: max,
      });
      let wall = 1.6e12;
      for (const o of ops) {
        if ("afterMs" in o) {
          wall += o.afterMs;
          t.expire(wall);
          assert(t.deadPayloadBytes <= max, "expire keeps the dead letters' payload bound");
        } else {
          t.apply(o.record, wall);
        }
        const want = recount(t);
        assertEquals(
          { backlog: t.backlogPayloadBytes, dead: t.deadPayloadBytes },
          want,
          JSON.stringify(o).slice(0, 200),
        );
      }
    }),
    { numRuns: 400 },
  );
});
