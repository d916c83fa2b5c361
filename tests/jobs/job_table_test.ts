import { assert, assertEquals } from "../assert.ts";
import { JobTable } from "../../src/jobs/job_table.ts";
import { ALL_GENERATIONS, type JobRecord, type JobSpec } from "../../src/jobs/job_model.ts";
import { decodeRecord, encodeRecord } from "../../src/jobs/job_codec.ts";
import { plainSpec, tableTestOptions } from "./arbitraries.ts";
import { keyedJobId, keyEpoch } from "../../src/jobs/keyed_id.ts";

const HOUR = 3_600_000;
const T0 = 1_800_000_000_000;

function table(): JobTable {
  return new JobTable(tableTestOptions());
}

function spec(id: string, key?: string): JobSpec {
  return plainSpec(id, T0, key);
}

let seq = 1;
const stamp = () => ({ origin: "10.0.0.1:7000", seq: seq++ });

/** Job `jobId`'s generation `gen` dead-lettered after three attempts. */
function deadRecord(jobId: string, gen: number, finishedAtMs: number): JobRecord {
  return { type: "dead", stamp: stamp(), jobId, gen, attemptsMade: 3, finishedAtMs, reason: "x" };
}

Deno.test("JobTable keeps delivered jobs for their retention, then drops them, keys outliving them", () => {
  const t = table();
  t.apply({ type: "submit", stamp: stamp(), spec: spec("a") }, T0);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("k", "order-1") }, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: "k", bodyHash: "h" }, T0);
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

Deno.test("a keyed copy that was never acknowledged leaves no key when a checkpoint's tombstone ends it", () => {
  // A kept key answers every retry of the key with its job (`liveIncarnation` takes it as
  // settled): one made from a pending, uncommitted copy, maybe a submit the replicas refused,
  // named a job no node held (sim seed 319). An acknowledged copy keeps its key as before.
  const t = table();
  t.apply({ type: "submit", stamp: stamp(), spec: spec("job_kA", "order-7") }, T0);
  t.apply({ type: "gone", gone: { jobId: "job_kA", gen: 0, expiresAtMs: T0 + HOUR } }, T0);
  assertEquals(t.get("job_kA"), undefined);
  assertEquals(t.keyTombstone("job_kA"), undefined, "no key for a copy never acknowledged");
  assertEquals(t.liveIncarnation("order-7", T0), undefined);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("job_kB", "order-8") }, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: "job_kB", bodyHash: "h" }, T0);
  t.apply({ type: "gone", gone: { jobId: "job_kB", gen: 0, expiresAtMs: T0 + HOUR } }, T0);
  assertEquals(t.keyTombstone("job_kB")?.key, "order-8", "an acknowledged one keeps its key");
});

Deno.test("a keyed copy finished before its COMMIT came keeps no key for its own body: it waits for the committed one", () => {
  // Sim seed 233: a node cut off by a partition took a keyed submit (body L) for a key the
  // majority had acknowledged with body W; its L was never acknowledged. After the heal it got
  // the job's DONE (same id, no body) before W's COMMIT, and the finished retention compacted
  // its copy at once, keeping a key that named L. A retry with L was then answered `existing`
  // from that key, with no round (L on 2 disks), and a retry with W refused as a conflict.
  // Mutations: compact uncommitted keyed copies (drop the `isUnsettledKeyed` skip in `expire`),
  // or keep a key for a finished uncommitted copy in `#remove` (the dead-letter bound below
  // still evicts one), and this fails.
  const t = table();
  const id = keyedJobId("order-5", keyEpoch(T0, tableTestOptions().idempotencyWindowMs));
  const loser: JobSpec = { ...spec(id, "order-5"), bodyHash: "L", payload: "l" };
  const winner: JobSpec = { ...spec(id, "order-5"), bodyHash: "W", payload: "w" };
  t.apply({ type: "submit", stamp: stamp(), spec: loser }, T0 + 10);
  t.apply({ type: "done", stamp: stamp(), jobId: id, gen: 0, finishedAtMs: T0 }, T0 + 20);
  assertEquals(t.expire(T0 + HOUR + 1), [], "the uncommitted copy waits for its COMMIT");
  assertEquals(t.keyTombstone(id), undefined, "no key names the unacknowledged body");
  assertEquals(t.get(id)?.bodyHash, "L");
  // The COMMIT carries the committed spec: it replaces the loser, and the job then leaves
  // with its retention, its key naming the committed body.
  t.apply(
    { type: "commit", stamp: stamp(), jobId: id, bodyHash: "W", spec: winner },
    T0 + HOUR + 2,
  );
  assertEquals(t.expire(T0 + HOUR + 3), [id]);
  assertEquals(t.keyTombstone(id)?.bodyHash, "W");
  assertEquals(t.liveIncarnation("order-5", T0 + HOUR + 3)?.bodyHash, "W");
  // A bound that evicts such a copy anyway (deadLettersMax: 3) leaves no key for its body.
  const d = table();
  d.apply({ type: "submit", stamp: stamp(), spec: loser }, T0);
  const dead = { gen: 0, attemptsMade: 3, finishedAtMs: T0, reason: "x" };
  d.apply({ type: "dead", stamp: stamp(), jobId: id, ...dead }, T0);
  for (const other of ["d1", "d2", "d3"]) {
    d.apply({ type: "submit", stamp: stamp(), spec: spec(other) }, T0);
    d.apply({ type: "dead", stamp: stamp(), jobId: other, ...dead }, T0);
  }
  assertEquals(d.expire(T0 + 1), [id], "the oldest dead letter goes past deadLettersMax");
  assertEquals(d.keyTombstone(id), undefined, "and names no body it never saw committed");
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

Deno.test("a finished, compacted job leaves a tombstone that drops every late record of it, on every path", () => {
  // The general zombie guard (issue 17, sim seed 383): whatever brings a record late (live
  // replication, anti-entropy, catch-up, a confirm round's SUBMIT, a handoff or snapshot
  // `state`, WAL replay), it reaches the table through `apply`, which drops it.
  const t = table();
  const s = spec("job_0a");
  t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
  t.apply({ type: "done", stamp: stamp(), jobId: s.id, gen: 0, finishedAtMs: T0 }, T0);
  assertEquals(t.expire(T0 + HOUR + 1), [s.id]);
  // Delivered: over in every generation.
  assertEquals(t.goneTombstone(s.id)?.gen, ALL_GENERATIONS);
  const pendingState = {
    jobId: s.id,
    spec: s,
    submitStamp: stamp(),
    bodyHash: "",
    committed: true,
    gen: 0,
    phase: "pending" as const,
    attemptsMade: 1,
    nextAttemptAtMs: T0,
    finishedAtMs: 0,
    deadReason: "",
    history: [],
  };
  const late: JobRecord[] = [
    { type: "submit", stamp: stamp(), spec: s },
    { type: "commit", stamp: stamp(), jobId: s.id, bodyHash: "" },
    {
      type: "retry",
      stamp: stamp(),
      jobId: s.id,
      gen: 0,
      attemptsMade: 1,
      nextAttemptAtMs: T0,
      attempt: {
        attempt: 1,
        startedAtMs: T0,
        latencyMs: 1,
        outcome: "timeout",
        status: 0,
        detail: "",
        node: "n1",
      },
    },
    { type: "state", state: pendingState },
  ];
  for (const record of late) {
    assertEquals(t.apply(record, T0 + 2 * HOUR).effect, "unchanged", record.type);
    assertEquals(t.get(s.id), undefined, `a late ${record.type} does not make the job anew`);
  }
  assertEquals(t.lateRecords, late.length);
  // Kept for finishedTombstoneMs after the compaction, then forgotten.
  const u = spec("job_0b");
  t.apply({ type: "submit", stamp: stamp(), spec: u }, T0);
  t.apply({ type: "done", stamp: stamp(), jobId: u.id, gen: 0, finishedAtMs: T0 }, T0);
  t.expire(T0 + 3 * HOUR);
  t.expire(T0 + 3 * HOUR + 24 * HOUR - 1);
  assert(t.goneTombstone(u.id) !== undefined, "kept for the whole window");
  t.expire(T0 + 3 * HOUR + 24 * HOUR);
  assertEquals(t.goneTombstone(u.id), undefined);
});

Deno.test("finished-job tombstones are bounded, go to checkpoints and snapshots, and a keyed job keeps its key instead", () => {
  const t = table(); // finishedTombstonesMax: 1,000
  const ids: string[] = [];
  for (let i = 0; i < 1_500; i++) {
    const s = spec(`job_${i.toString(16).padStart(32, "0")}`);
    ids.push(s.id);
    t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
    t.apply({ type: "done", stamp: stamp(), jobId: s.id, gen: 0, finishedAtMs: T0 }, T0);
  }
  t.apply({ type: "submit", stamp: stamp(), spec: spec("job_k1", "order-1") }, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: "job_k1", bodyHash: "h" }, T0);
  t.apply({ type: "done", stamp: stamp(), jobId: "job_k1", gen: 0, finishedAtMs: T0 }, T0);
  t.expire(T0 + HOUR + 1);
  assertEquals(t.size, 0);
  assertEquals(t.goneTombstones, 1_000, "the oldest go past finishedTombstonesMax");
  assertEquals(t.goneTombstone(ids[0]!), undefined);
  assert(t.goneTombstone(ids[1_499]!) !== undefined);
  assertEquals(t.goneTombstone("job_k1"), undefined, "a keyed job's guard is its key");
  assert(t.keyTombstone("job_k1") !== undefined);
  // A checkpoint (or a snapshot) carries them; a copy still pending where it arrives is over.
  const other = table();
  const held = spec(ids[1_499]!);
  other.apply({ type: "submit", stamp: stamp(), spec: held }, T0);
  const removed: string[] = [];
  for (const record of t.snapshotRecords()) {
    const r = other.apply(decode(encodeRecord(record)), T0 + HOUR);
    if (r.removed !== undefined) removed.push(r.removed.jobId);
  }
  assertEquals(removed, [held.id], "the pending copy that missed the DONE is over");
  assertEquals(other.goneTombstones, 1_000);
  assertEquals(other.apply({ type: "submit", stamp: stamp(), spec: held }, T0).effect, "unchanged");
});

function decode(bytes: Uint8Array): JobRecord {
  const d = decodeRecord(bytes);
  assert(d.ok, "a tombstone decodes");
  return d.value;
}

Deno.test("JobTable keeps at most finishedJobsMax delivered jobs: the oldest leave first, each with its tombstone", () => {
  const t = new JobTable({ ...tableTestOptions(), finishedJobsMax: 3 });
  const ids = ["f1", "f2", "f3", "f4", "f5"];
  ids.forEach((id, i) => {
    t.apply({ type: "submit", stamp: stamp(), spec: spec(id) }, T0);
    t.apply({ type: "done", stamp: stamp(), jobId: id, gen: 0, finishedAtMs: T0 + i }, T0 + i);
  });
  // A pending job and a dead letter are not counted against it, nor dropped by it.
  t.apply({ type: "submit", stamp: stamp(), spec: spec("p") }, T0);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("d") }, T0);
  t.apply({
    type: "dead",
    stamp: stamp(),
    jobId: "d",
    gen: 0,
    attemptsMade: 3,
    finishedAtMs: T0,
    reason: "x",
  }, T0);
  assertEquals(t.counts.delivered, 5, "the bound is kept by expire, not by apply");
  assertEquals(t.expire(T0 + 10), ["f1", "f2"], "well within their retention, but past the bound");
  assertEquals(t.counts, { pending: 1, dead: 1, delivered: 3 });
  assertEquals(["f3", "f4", "f5"].map((id) => t.get(id)?.phase), Array(3).fill("delivered"));
  assert(t.goneTombstone("f1") !== undefined, "a job dropped by the bound leaves its tombstone");
  const late = t.apply({ type: "submit", stamp: stamp(), spec: spec("f1") }, T0 + 20);
  assertEquals([late.effect, t.get("f1")], ["unchanged", undefined], "and never comes back");
  assertEquals(
    t.expire(T0 + HOUR + 10).sort(),
    ["f3", "f4", "f5"],
    "the rest leave with their retention",
  );
});

Deno.test("a delivered job keeps its metadata, not its payload, headers, secrets or spare history room", () => {
  const t = table();
  const s: JobSpec = { ...spec("m"), headers: { "x-a": "1" }, secrets: ["whsec_AAAA"] };
  t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
  const attempt = {
    attempt: 1,
    startedAtMs: T0 + 1,
    latencyMs: 2,
    outcome: "success" as const,
    status: 200,
    detail: "",
    node: "10.0.0.1:7000",
  };
  t.apply({ type: "done", stamp: stamp(), jobId: "m", gen: 0, finishedAtMs: T0 + 3, attempt }, T0);
  const kept = t.get("m")!;
  assertEquals([kept.spec?.payload, kept.spec?.headers, kept.spec?.secrets], ["", {}, []]);
  assertEquals([kept.spec?.url, kept.spec?.submittedAtMs, kept.payloadDropped], [s.url, T0, true]);
  assertEquals(kept.history, [attempt]);
  const other = t.apply({ type: "submit", stamp: stamp(), spec: spec("n") }, T0).entry!;
  t.apply({ type: "done", stamp: stamp(), jobId: "n", gen: 0, finishedAtMs: T0 + 3 }, T0);
  assert(
    other.spec!.headers === kept.spec!.headers && other.spec!.secrets === kept.spec!.secrets,
    "every delivered job shares one empty headers object and one empty secrets array",
  );
  assert(Object.isFrozen(kept.spec!.headers) && Object.isFrozen(kept.spec!.secrets));
});

Deno.test("the delivered-job bound spares a finished stub until its SUBMIT arrives, then counts it", () => {
  const t = new JobTable({ ...tableTestOptions(), finishedJobsMax: 1 });
  // The DONE came first (anti-entropy from another origin): a delivered stub, no spec yet.
  t.apply({ type: "done", stamp: stamp(), jobId: "s", gen: 0, finishedAtMs: T0 }, T0);
  for (const id of ["a", "b"]) {
    t.apply({ type: "submit", stamp: stamp(), spec: spec(id) }, T0);
    t.apply({ type: "done", stamp: stamp(), jobId: id, gen: 0, finishedAtMs: T0 + 1 }, T0 + 1);
  }
  assertEquals(t.expire(T0 + 2), ["a"], "the oldest job with a spec goes; the stub stays");
  assertEquals([t.get("s")?.phase, t.get("s")?.spec, t.get("b")?.phase], [
    "delivered",
    undefined,
    "delivered",
  ]);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("s") }, T0 + 3);
  assertEquals(t.expire(T0 + 4), ["b"], "the stub, whole now, counts, and is the newest");
  assertEquals(t.counts.delivered, 1);
});

Deno.test("finished-job tombstones past twice their bound are trimmed at once, and to the bound at the next expire", () => {
  const t = new JobTable({ ...tableTestOptions(), finishedTombstonesMax: 100 });
  for (let i = 0; i < 25; i++) {
    const s = spec(`job_${i.toString(16).padStart(32, "0")}`);
    t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
    t.apply({ type: "done", stamp: stamp(), jobId: s.id, gen: 0, finishedAtMs: T0 }, T0);
  }
  t.expire(T0 + HOUR + 1);
  const gone = [...t.snapshotRecords()].filter((r) => r.type === "gone");
  assertEquals(gone.length, 25);
  // A checkpoint's tombstones arrive together, with no expire between them.
  const other = new JobTable({ ...tableTestOptions(), finishedTombstonesMax: 10 });
  for (const r of gone) other.apply(r, T0 + HOUR + 2);
  assertEquals(other.goneTombstones, 14, "trimmed to 10 when the 21st came, then 4 more");
  other.expire(T0 + HOUR + 3);
  assertEquals(other.goneTombstones, 10, "the expire pass trims to the bound");
  const newest = gone[24]!;
  assert(newest.type === "gone" && other.goneTombstone(newest.gone.jobId) !== undefined);
});

Deno.test("a keyed copy finished before its COMMIT came, in either order of SUBMIT and DONE, comes up after the uncommitted retention", () => {
  // Session 38: such a copy waits for its COMMIT (above); `dueUncommitted` hands it to the
  // core past `uncommittedRetentionMs`, which drops it without a key. Sim seed 233's order
  // (the DONE before the SUBMIT) made a stub first, and a stub that got its SUBMIT later was
  // never queued for that retention. Mutations: keep only pending copies in `dueUncommitted`,
  // or queue no stub that gets its SUBMIT uncommitted, and this fails.
  for (const doneFirst of [false, true]) {
    const t = table();
    const id = keyedJobId("order-6", keyEpoch(T0, tableTestOptions().idempotencyWindowMs));
    const submit: JobRecord = { type: "submit", stamp: stamp(), spec: spec(id, "order-6") };
    const done: JobRecord = { type: "done", stamp: stamp(), jobId: id, gen: 0, finishedAtMs: T0 };
    for (const record of doneFirst ? [done, submit] : [submit, done]) t.apply(record, T0 + 10);
    assertEquals(t.get(id)?.phase, "delivered");
    assertEquals(t.expire(T0 + HOUR + 1), [], "it waits for its COMMIT");
    assertEquals(t.dueUncommitted(T0 + 23 * HOUR).length, 0);
    assertEquals(t.dueUncommitted(T0 + 24 * HOUR + 1).map((e) => e.jobId), [id]);
    assert(t.dropUncommitted(id));
    assertEquals([t.size, t.uncommitted, t.keyTombstone(id)], [0, 0, undefined]);
  }
});

// Session 38's review: a keyed job that left no key left no guard at all (a keyed id got no
// tombstone, its key being taken for its guard), so a late record of it made the job anew,
// pending and committed, for ever, and delivered again if that node became its owner. An
// unkeyed job in the same place leaves a tombstone for `finishedTombstoneMs`. Now every
// finished job leaves its key or a tombstone. Mutation: give keyed ids no tombstone again
// (`jobs-keyed-finished-no-tombstone`), and each of these fails.

/** A keyed COMMIT (it carries the committed spec) of `s`, from another origin. */
function keyedCommit(s: JobSpec): JobRecord {
  return {
    type: "commit",
    stamp: { origin: "10.0.0.2:7000", seq: seq++ },
    jobId: s.id,
    bodyHash: s.bodyHash,
    spec: s,
  };
}

function keyedSpec(key: string): JobSpec {
  return spec(keyedJobId(key, keyEpoch(T0, tableTestOptions().idempotencyWindowMs)), key);
}

Deno.test("a keyed finished stub dropped by the stub retention leaves a tombstone: its late SUBMIT and COMMIT make nothing", () => {
  for (const keyed of [false, true]) {
    const t = table();
    const s = keyed ? keyedSpec("stub-1") : spec("u1");
    t.apply({ type: "done", stamp: stamp(), jobId: s.id, gen: 0, finishedAtMs: T0 + 5 }, T0 + 10);
    assertEquals(t.expire(T0 + HOUR + 20), [s.id], "the stub retention takes the stub");
    t.apply({ type: "submit", stamp: stamp(), spec: s }, T0 + 2 * HOUR);
    t.apply(keyedCommit(s), T0 + 2 * HOUR);
    assertEquals([t.get(s.id), t.counts.pending], [undefined, 0], `keyed ${keyed}`);
  }
});

Deno.test("a keyed job finished after its key's window leaves a tombstone: a stale pending state of it makes nothing", () => {
  // Retried for more than the window (the default schedule's 7 attempts take 17.6 h; up to
  // 100 are allowed), it finishes when its key would no longer be kept.
  for (const keyed of [false, true]) {
    const t = table();
    const s = keyed ? keyedSpec("slow-1") : spec("u2");
    t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
    t.apply(keyedCommit(s), T0);
    const finishedAtMs = T0 + 25 * HOUR;
    t.apply({ type: "done", stamp: stamp(), jobId: s.id, gen: 0, finishedAtMs }, finishedAtMs);
    assertEquals(t.expire(T0 + 26 * HOUR + 1), [s.id]);
    assertEquals(t.keyTombstone(s.id), undefined, "no key: its window is over");
    // A replica that missed the DONE hands over its pending copy, an hour later.
    t.apply({
      type: "state",
      state: {
        jobId: s.id,
        spec: s,
        bodyHash: s.bodyHash,
        committed: true,
        gen: 0,
        phase: "pending",
        attemptsMade: 6,
        nextAttemptAtMs: T0 + 27 * HOUR,
        finishedAtMs: 0,
        deadReason: "",
        history: [],
      },
    }, T0 + 27 * HOUR);
    assertEquals([t.get(s.id), t.counts.pending], [undefined, 0], `keyed ${keyed}`);
  }
});

Deno.test("a keyed dead copy never committed here, evicted by deadLettersMax, leaves a tombstone: its late COMMIT makes nothing", () => {
  const t = table(); // deadLettersMax: 3
  const s = keyedSpec("dl-1");
  const dead = { gen: 0, attemptsMade: 3, finishedAtMs: T0 + 1_000, reason: "x" };
  t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
  t.apply({ type: "dead", stamp: stamp(), jobId: s.id, ...dead }, T0 + 1_000);
  for (const id of ["d1", "d2", "d3"]) {
    t.apply({ type: "submit", stamp: stamp(), spec: spec(id) }, T0 + 1_000);
    t.apply({ type: "dead", stamp: stamp(), jobId: id, ...dead }, T0 + 1_000);
  }
  assertEquals(t.expire(T0 + 2_000), [s.id], "the oldest dead letter goes past deadLettersMax");
  assertEquals(t.keyTombstone(s.id), undefined, "and names no body it never saw committed");
  t.apply(keyedCommit(s), T0 + 3_000);
  assertEquals([t.get(s.id), t.counts.pending], [undefined, 0]);
});

Deno.test("a keyed copy finished but never committed, dropped past the uncommitted retention, leaves a tombstone: its late COMMIT makes nothing", () => {
  // The drop's time runs from the job's first submit, which may be nearly a day old when the
  // copy arrives (a confirm round that succeeds late, a retry that takes over an earlier try):
  // a COMMIT a few seconds behind the DONE then comes after the drop.
  for (const doneFirst of [false, true]) {
    const t = table();
    const s = keyedSpec("late-1");
    const arriveMs = T0 + 24 * HOUR - 60_000;
    const submit: JobRecord = { type: "submit", stamp: stamp(), spec: s };
    const done: JobRecord = {
      type: "done",
      stamp: stamp(),
      jobId: s.id,
      gen: 0,
      finishedAtMs: arriveMs,
    };
    for (const r of doneFirst ? [done, submit] : [submit, done]) t.apply(r, arriveMs);
    const nowMs = T0 + 24 * HOUR + 1_000;
    t.expire(nowMs);
    assertEquals(t.dueUncommitted(nowMs).map((e) => e.jobId), [s.id]);
    assert(t.dropUncommitted(s.id));
    t.apply(keyedCommit(s), nowMs + 4_000);
    assertEquals([t.get(s.id), t.counts.pending], [undefined, 0], `DONE first ${doneFirst}`);
  }
});

Deno.test("a keyed dead letter's kept key blocks its own generation's records, not a retry by hand's", () => {
  // A node that compacted a keyed dead letter keeps its key. The dead letter retried by hand
  // through a node that still held it is generation 1: its REVIVE must make the job here (an
  // owner that dropped it never delivered the acknowledged retry), while a late record of the
  // generation that died stays blocked. Mutation: the key blocks every generation
  // (`key-blocks-later-generation`).
  const t = table();
  // Submitted an hour after T0, so its key outlives the dead letter's 24-h retention.
  const s = plainSpec("kd", T0 + HOUR, "order-9");
  t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: "kd", bodyHash: "h" }, T0);
  const dead = (gen: number) => deadRecord("kd", gen, T0 + 10);
  t.apply(dead(0), T0);
  t.expire(T0 + 24 * HOUR + 11);
  assertEquals([t.get("kd"), t.keyTombstone("kd")?.key], [undefined, "order-9"]);
  assertEquals(t.apply(dead(0), T0 + 24 * HOUR + 12).effect, "unchanged", "its own generation");
  const revive: JobRecord = {
    type: "revive",
    stamp: stamp(),
    jobId: "kd",
    gen: 1,
    spec: s,
  };
  const made = t.apply(revive, T0 + 24 * HOUR + 12);
  assertEquals([made.effect, t.get("kd")?.phase, t.get("kd")?.gen], ["changed", "pending", 1]);
  assertEquals(t.keyTombstone("kd"), undefined, "the entry guards its id now");
});

Deno.test("a retried keyed job's key remembers its generation, and a peer's older key leaves the retry alone", () => {
  // Generation 1 of a keyed job dead again and compacted leaves a key of generation 1, so a
  // late REVIVE of that generation does not make the job anew while one of generation 2 does
  // (mutation `key-forgets-generation`). And a key a peer sends of generation 0 (it compacted
  // the dead letter before the retry reached it) does not drop a copy held in generation 1
  // (mutation `key-record-drops-later-generation`).
  // Submitted an hour after T0, so its key outlives the dead letter's 24-h retention.
  const s = plainSpec("kr", T0 + HOUR, "order-10");
  const revive = (gen: number): JobRecord => ({
    type: "revive",
    stamp: stamp(),
    jobId: "kr",
    gen,
    spec: s,
  });
  const t = table();
  t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: "kr", bodyHash: "h" }, T0);
  t.apply(revive(1), T0);
  const olderKey: JobRecord = {
    type: "key",
    key: { key: "order-10", jobId: "kr", bodyHash: "h", expiresAtMs: T0 + 25 * HOUR },
  };
  assertEquals(t.apply(olderKey, T0).effect, "unchanged");
  assertEquals([t.get("kr")?.phase, t.get("kr")?.gen], ["pending", 1]);
  t.apply(deadRecord("kr", 1, T0 + 10), T0);
  t.expire(T0 + 24 * HOUR + 11);
  assertEquals([t.get("kr"), t.keyTombstone("kr")?.gen], [undefined, 1]);
  assertEquals(t.apply(revive(1), T0 + 24 * HOUR + 12).effect, "unchanged", "a late revive");
  assertEquals(t.get("kr"), undefined);
  // The key survives a checkpoint with its generation.
  const back = decodeRecord(encodeRecord({ type: "key", key: t.keyTombstone("kr")! }));
  assert(back.ok && back.value.type === "key");
  assertEquals(back.value.key.gen, 1);
  assertEquals(t.apply(revive(2), T0 + 24 * HOUR + 12).effect, "changed", "a new retry");
  assertEquals([t.get("kr")?.phase, t.get("kr")?.gen], ["pending", 2]);
});

Deno.test("a keyed job compacted after its key's keeping time leaves a tombstone", () => {
  // A keyed dead letter outlives its key's window (7 days of dead retention against a day's
  // window): its key, set at compaction, was forgotten in the same pass, and the job left no
  // guard at all, so a late pending record made it anew. Mutation: compare the keeping time
  // with the job's end only (`keyed-compacted-late-no-guard`).
  const t = table();
  t.apply({ type: "submit", stamp: stamp(), spec: spec("kl", "order-11") }, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: "kl", bodyHash: "h" }, T0);
  t.apply(deadRecord("kl", 0, T0 + 10), T0);
  assertEquals(t.expire(T0 + 24 * HOUR + 11), ["kl"]);
  assertEquals(t.keyTombstone("kl"), undefined, "past the window");
  assertEquals(t.goneTombstone("kl")?.gen, 0);
  const late = t.apply({
    type: "retry",
    stamp: stamp(),
    jobId: "kl",
    gen: 0,
    attemptsMade: 1,
    nextAttemptAtMs: T0 + 5,
    attempt: {
      attempt: 1,
      startedAtMs: T0 + 1,
      latencyMs: 1,
      outcome: "http_error",
      status: 500,
      detail: "x",
      node: "10.0.0.1:7000",
    },
  }, T0 + 24 * HOUR + 12);
  assertEquals([late.effect, t.get("kl")], ["unchanged", undefined]);
});

Deno.test("a dead stub is not listed among the dead letters", () => {
  // Its DEAD came before its SUBMIT: no spec to show nor to retry. Listed, the job view of the
  // page threw, and `GET /v1/dead-letters` failed on that node (`hookd sim --revives`, seed
  // 16). Mutation: list stubs too (`dead-letters-list-stubs`).
  const t = table();
  const dead = (id: string) => deadRecord(id, 0, T0);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("full") }, T0);
  t.apply(dead("full"), T0);
  t.apply(dead("stub"), T0);
  assertEquals(t.deadLetters(10).items.map((e) => e.jobId), ["full"]);
  t.apply({ type: "submit", stamp: stamp(), spec: spec("stub") }, T0);
  assertEquals(t.deadLetters(10).items.map((e) => e.jobId), ["full", "stub"]);
});

Deno.test("a delivered job's guard blocks every generation", () => {
  // Delivered absorbs every generation (a retry by hand of a job some node delivered changes
  // nothing there), so a job compacted after its delivery comes back in none: a REVIVE made by
  // a node that had taken the job for dead (a partition hid the DONE) made it pending here for
  // ever (`hookd sim --revives`, seed 154). Mutation: the guard names the delivered generation
  // only (`delivered-guard-one-generation`).
  for (const key of [undefined, "order-12"]) {
    const t = table();
    const s = spec("dv", key);
    t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
    t.apply({ type: "commit", stamp: stamp(), jobId: "dv", bodyHash: s.bodyHash }, T0);
    t.apply({ type: "done", stamp: stamp(), jobId: "dv", gen: 0, finishedAtMs: T0 + 10 }, T0);
    t.expire(T0 + HOUR + 11);
    assertEquals(t.get("dv"), undefined);
    const revive: JobRecord = { type: "revive", stamp: stamp(), jobId: "dv", gen: 1, spec: s };
    assertEquals(t.apply(revive, T0 + HOUR + 12).effect, "unchanged", `key ${key}`);
    assertEquals(t.get("dv"), undefined, `key ${key}`);
  }
});

Deno.test("a dead letter's tombstone lets a manual retry of it elsewhere through", () => {
  // Generation 1 is a new life, not a late record of the one that died: its REVIVE makes a stub
  // and the SUBMIT (or the spec the REVIVE carries) fills it.
  const t = table();
  const d = spec("job_0d");
  t.apply({ type: "submit", stamp: stamp(), spec: d }, T0);
  t.apply(deadRecord(d.id, 0, T0), T0);
  t.expire(T0 + 24 * HOUR + 1);
  assertEquals(t.goneTombstone(d.id)?.gen, 0);
  t.apply({ type: "revive", stamp: stamp(), jobId: d.id, gen: 1 }, T0 + 25 * HOUR);
  t.apply({ type: "submit", stamp: stamp(), spec: d }, T0 + 25 * HOUR);
  assertEquals([t.get(d.id)?.phase, t.get(d.id)?.gen], ["pending", 1]);
});

Deno.test("a snapshot's tombstone of a later generation drops a stale dead letter", () => {
  // A node held generation 1 dead while it was down; the job was retried by hand again and
  // delivered, and compacted everywhere. The snapshot it caught up from carries the tombstone:
  // its dead letter is stale (kept, it was retried again here, and that life stayed pending
  // for ever: `hookd sim --revives`, seed 240). A dead letter of the tombstone's own generation
  // stays until its retention. Mutation: keep every finished copy
  // (`gone-keeps-stale-dead-letter`).
  const t = table();
  const s = spec("sd");
  t.apply({ type: "submit", stamp: stamp(), spec: s }, T0);
  t.apply(deadRecord("sd", 0, T0), T0);
  t.apply({ type: "revive", stamp: stamp(), jobId: "sd", gen: 1 }, T0);
  t.apply(deadRecord("sd", 1, T0 + 5), T0);
  const gone = (gen: number): JobRecord => ({
    type: "gone",
    gone: { jobId: "sd", gen, expiresAtMs: T0 + 24 * HOUR },
  });
  assertEquals(t.apply(gone(1), T0 + 10).effect, "unchanged", "its own generation");
  assertEquals([t.get("sd")?.phase, t.get("sd")?.gen], ["dead", 1]);
  assertEquals(t.apply(gone(ALL_GENERATIONS), T0 + 10).effect, "changed");
  assertEquals(t.get("sd"), undefined);
  assertEquals(t.deadLetters(10).items, []);
  const late: JobRecord = { type: "revive", stamp: stamp(), jobId: "sd", gen: 2 };
  assertEquals(t.apply(late, T0 + 11).effect, "unchanged");
});

Deno.test("a retry's stub beside a keyed dead letter's key keeps the key and its answer", () => {
  // Session 39's review: a later generation's record that makes only a stub (a bare REVIVE, or
  // its RETRY or DEAD before its REVIVE) deleted the key its dead letter left. The key's
  // incarnation was then unknown here, and if the stub's retention dropped it (pending, no
  // guard), a late SUBMIT made the job anew. Mutations: delete the key for a stub too
  // (`stub-deletes-key`); let a stub hide the key (`stub-hides-key`).
  const t = table();
  // Submitted ten hours after T0, so its key outlives the dead letter's 24-h retention and
  // the stub's.
  const id = keyedJobId("order-13", keyEpoch(T0 + 10 * HOUR, 24 * HOUR));
  const s = plainSpec(id, T0 + 10 * HOUR, "order-13");
  const submit: JobRecord = { type: "submit", stamp: stamp(), spec: s };
  t.apply(submit, T0);
  t.apply({ type: "commit", stamp: stamp(), jobId: id, bodyHash: "h" }, T0);
  t.apply(deadRecord(id, 0, T0 + 10), T0);
  t.expire(T0 + 24 * HOUR + 11);
  const at = T0 + 24 * HOUR + 12;
  t.apply({ type: "revive", stamp: stamp(), jobId: id, gen: 1 }, at);
  assertEquals([t.get(id)?.spec, t.get(id)?.gen], [undefined, 1], "a stub");
  assertEquals(t.keyTombstone(id)?.key, "order-13", "the key stays beside the stub");
  assertEquals(t.liveIncarnation("order-13", at)?.jobId, id, "and answers for the key");
  t.expire(at + 2 * HOUR);
  assertEquals(t.get(id), undefined, "the stub went");
  assertEquals(t.apply(submit, at + 2 * HOUR + 1).effect, "unchanged", "the key still guards");
  assertEquals(t.get(id), undefined);
});
