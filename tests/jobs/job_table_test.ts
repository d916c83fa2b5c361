import { assert, assertEquals } from "../assert.ts";
import { JobTable } from "../../src/jobs/job_table.ts";
import type { JobSpec } from "../../src/jobs/job_model.ts";

const HOUR = 3_600_000;
const T0 = 1_800_000_000_000;

function table(): JobTable {
  return new JobTable({
    historyMax: 5,
    finishedRetentionMs: HOUR,
    deadRetentionMs: 24 * HOUR,
    deadLettersMax: 3,
    idempotencyWindowMs: 24 * HOUR,
    stubRetentionMs: HOUR,
    uncommittedRetentionMs: 24 * 3_600_000,
    finishedTombstoneMs: 24 * 3_600_000,
    finishedTombstonesMax: 1_000,
  });
}

function spec(id: string, key?: string): JobSpec {
  return {
    id,
    url: "http://a.test/",
    payload: "p",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: T0,
    bodyHash: key === undefined ? "" : "h",
    ...(key !== undefined ? { idempotencyKey: key } : {}),
  };
}

let seq = 1;
const stamp = () => ({ origin: "10.0.0.1:7000", seq: seq++ });

Deno.test("JobTable keeps delivered jobs for their retention, then drops them, keys outliving them", () => {
  const t = table();
  t.apply({ type: "submit", stamp: stamp(), spec: spec("a") }, T0);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("k", "order-1") }, T0);
  for (const id of ["a", "k"]) {
    t.apply({ type: "done", stamp: stamp(), jobId: id, gen: 0, finishedAtMs: T0 + 10 }, T0);
  }
  assertEquals(t.counts, { pending: 0, dead: 0, delivered: 2 });
  assertEquals(t.expire(T0 + HOUR - 1), []);
  assertEquals(t.expire(T0 + HOUR + 11).sort(), ["a", "k"]);
  assertEquals(t.size, 0);
  assertEquals(t.keyTombstone("k")?.key, "order-1", "the key outlives its job");
  // A retry of the key within the window is not stored again.
  const again = t.apply({ type: "submit", stamp: stamp(), spec: spec("k", "order-1") }, T0);
  assertEquals([again.effect, t.size], ["unchanged", 0]);
  t.expire(T0 + 24 * HOUR + 1);
  assertEquals(t.keyTombstone("k"), undefined, "the key is forgotten after its window");
});

Deno.test("JobTable pages dead letters oldest first and keeps at most deadLettersMax", () => {
  const t = table();
  for (const id of ["d1", "d2", "d3", "d4"]) {
    t.apply({ type: "submit", stamp: stamp(), spec: spec(id) }, T0);
    t.apply({
      type: "dead",
      stamp: stamp(),
      jobId: id,
      gen: 0,
      attemptsMade: 3,
      finishedAtMs: T0,
      reason: "x",
    }, T0);
  }
  const first = t.deadLetters(2);
  assertEquals(first.items.map((e) => e.jobId), ["d1", "d2"]);
  assert(first.more);
  assertEquals(t.deadLetters(2, first.next).items.map((e) => e.jobId), ["d3", "d4"]);
  t.expire(T0 + 1);
  assertEquals(t.counts.dead, 3, "the oldest dead letter went past deadLettersMax");
  assertEquals(t.deadLetters(10).items.map((e) => e.jobId), ["d2", "d3", "d4"]);
});

Deno.test("a dead-letter cursor stays valid when its own job is retried meanwhile", () => {
  const t = table();
  for (const id of ["e1", "e2", "e3"]) {
    t.apply({ type: "submit", stamp: stamp(), spec: spec(id) }, T0);
    t.apply({
      type: "dead",
      stamp: stamp(),
      jobId: id,
      gen: 0,
      attemptsMade: 3,
      finishedAtMs: T0,
      reason: "x",
    }, T0);
  }
  const first = t.deadLetters(2);
  assertEquals(first.items.map((e) => e.jobId), ["e1", "e2"]);
  t.apply({ type: "revive", stamp: stamp(), jobId: "e2", gen: 1 }, T0);
  assertEquals(t.deadLetters(2, first.next).items.map((e) => e.jobId), ["e3"]);
});

Deno.test("JobTable drops stubs whose SUBMIT never came", () => {
  const t = table();
  t.apply({ type: "commit", stamp: stamp(), jobId: "s", bodyHash: "" }, T0);
  assertEquals([t.size, t.stubs], [1, 1]);
  t.expire(T0 + HOUR + 1);
  assertEquals([t.size, t.stubs], [0, 0]);
});

Deno.test("an uncommitted job comes up after its retention and is dropped without keeping its key", () => {
  const t = table();
  t.apply({ type: "submit", stamp: stamp(), spec: spec("u", "order-9") }, T0);
  assertEquals(t.dueUncommitted(T0 + HOUR).length, 0);
  const due = t.dueUncommitted(T0 + 24 * HOUR + 1);
  assertEquals(due.map((e) => e.jobId), ["u"]);
  assert(t.dropUncommitted("u"));
  assertEquals(t.size, 0);
  assertEquals(t.keyTombstone("u"), undefined, "a never-acknowledged job leaves no key");
});

Deno.test("JobTable keeps a finished stub until its SUBMIT comes, so a late SUBMIT cannot revive the job", () => {
  // Sim seed 101: a node cut off by a partition got a job's DONE (one origin) by anti-entropy
  // before its SUBMIT (another origin). The DONE made a delivered stub, which the finished
  // retention dropped (its finishedAtMs was long past); the SUBMIT then made the job anew,
  // pending for ever on that node. Mutation: drop finished stubs by finished retention (remove
  // the `isStub` skip in `expire`) and the job comes back pending.
  const t = table();
  t.apply({ type: "done", stamp: stamp(), jobId: "late", gen: 0, finishedAtMs: T0 }, T0 + HOUR);
  assertEquals(t.get("late")?.phase, "delivered");
  assertEquals(t.expire(T0 + HOUR + 10), [], "the stub waits for its SUBMIT");
  t.apply({ type: "submit", stamp: stamp(), spec: spec("late") }, T0 + HOUR + 20);
  assertEquals(t.get("late")?.phase, "delivered", "the late SUBMIT joins the finished job");
  assertEquals(t.expire(T0 + HOUR + 30), ["late"], "and the job then leaves with its retention");
  // A finished stub whose SUBMIT never comes leaves with the stub retention.
  t.apply({ type: "done", stamp: stamp(), jobId: "orphan", gen: 0, finishedAtMs: T0 }, T0 + HOUR);
  assertEquals(t.expire(T0 + 2 * HOUR - 1), []);
  assertEquals(t.expire(T0 + 2 * HOUR + 1), ["orphan"]);
});
