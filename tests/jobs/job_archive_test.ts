/**
 * The job table's archive (job_table.ts, `#archive`): delivered jobs kept as the bytes of their
 * `state` record, decoded on reads and thawed by records, behaving as the objects they were.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { JobTable, type JobTableOptions } from "../../src/jobs/job_table.ts";
import type { AttemptEntry, JobEntry, JobRecord, JobSpec } from "../../src/jobs/job_model.ts";
import { attemptArb, jobRecordArb, plainSpec, tableTestOptions } from "./arbitraries.ts";
import { encodeRecord } from "../../src/jobs/job_codec.ts";
import { keyedJobId, keyEpoch } from "../../src/jobs/keyed_id.ts";
import { ReviewCluster, VOTERS } from "./review_harness.ts";

const HOUR = 3_600_000;
const T0 = 1_800_000_000_000;
const AFTER = 10_000;

function table(options: Partial<JobTableOptions> = {}): JobTable {
  return new JobTable({ ...tableTestOptions(), archiveAfterMs: AFTER, ...options });
}

let seq = 1;
const stamp = () => ({ origin: "10.0.0.1:7000", seq: seq++ });

function attempt(n: number, atMs: number, status: number): AttemptEntry {
  return {
    attempt: n,
    startedAtMs: atMs,
    latencyMs: 12.5,
    outcome: status === 200 ? "success" : "http_error",
    status,
    detail: status === 200 ? "" : "HTTP 503",
    node: "10.0.0.2:7000",
  };
}

/** Submits, commits and delivers `id` after one failed attempt; returns its spec. */
function deliver(t: JobTable, id: string, key?: string, atMs = T0): JobSpec {
  const spec = plainSpec(id, atMs, key);
  t.apply({ type: "submit", stamp: stamp(), spec }, atMs);
  t.apply({ type: "commit", stamp: stamp(), jobId: id, bodyHash: spec.bodyHash }, atMs);
  t.apply({
    type: "retry",
    stamp: stamp(),
    jobId: id,
    gen: 0,
    attemptsMade: 1,
    nextAttemptAtMs: atMs + 1000,
    attempt: attempt(1, atMs + 5, 503),
  }, atMs);
  t.apply({
    type: "done",
    stamp: stamp(),
    jobId: id,
    gen: 0,
    finishedAtMs: atMs + 1010,
    attempt: attempt(2, atMs + 1000, 200),
  }, atMs + 1010);
  return spec;
}

/** An entry as a reader sees it: `reviveOf` of a finished job decides nothing (job_model.ts). */
function seen(entry: JobEntry | undefined): unknown {
  if (entry === undefined) return undefined;
  return { ...entry, reviveOf: entry.phase === "pending" ? entry.reviveOf : undefined };
}

Deno.test("a delivered job is archived after archiveAfterMs and reads back as it was", () => {
  const t = table();
  const keyed = keyedJobId("order-7", keyEpoch(T0, tableTestOptions().idempotencyWindowMs));
  deliver(t, "plain");
  deliver(t, keyed, "order-7");
  const before = ["plain", keyed].map((id) => seen(t.get(id)));
  const snapshotBefore = [...t.snapshotRecords()];
  t.expire(T0 + 1010 + AFTER - 1);
  assertEquals(t.archivedJobs, 0, "not before its time");
  t.expire(T0 + 1010 + AFTER);
  assertEquals(t.archivedJobs, 2);
  assert(t.archiveBytes > 0, "the archive holds a slab");
  assertEquals(["plain", keyed].map((id) => seen(t.get(id))), before);
  assertEquals([...t.entries()].map(seen), before);
  assertEquals([...t.activeEntries()], [], "archived jobs are not active");
  assertEquals([...t.snapshotRecords()], snapshotBefore, "a checkpoint writes the same records");
  // As bytes, an archived job's record is the one its object would encode to.
  const asBytes = Array.from(
    t.snapshotRecordsOrBytes(),
    (r) => r instanceof Uint8Array ? r.slice() : encodeRecord(r),
  );
  assertEquals(asBytes, snapshotBefore.map((r) => encodeRecord(r)));
  assertEquals(
    Array.from(t.snapshotRecordsOrBytes()).filter((r) => r instanceof Uint8Array).length,
    2,
    "both jobs came as their archived bytes",
  );
  assertEquals([t.size, t.counts.delivered], [2, 2]);
  // The idempotency key still answers for the archived job.
  const live = t.liveIncarnation("order-7", T0 + 5000);
  assertEquals([live?.jobId, live?.settled], [keyed, true]);
});

Deno.test("a record that changes an archived job thaws it, archived again later; others do not", () => {
  const t = table();
  deliver(t, "a");
  t.expire(T0 + 1010 + AFTER);
  assertEquals(t.archivedJobs, 1);
  // A late attempt record from another node (its history grows).
  const late = attempt(3, T0 + 900, 200);
  const r = t.apply({
    type: "done",
    stamp: stamp(),
    jobId: "a",
    gen: 0,
    finishedAtMs: T0 + 1010,
    attempt: late,
  }, T0 + 20_000);
  assertEquals(r.previousPhase, "delivered");
  assertEquals(t.archivedJobs, 0, "thawed");
  assert(t.get("a")!.history.some((h) => h.attempt === 3), "the change is kept");
  t.expire(T0 + 20_000 + AFTER - 1);
  assertEquals(t.archivedJobs, 0);
  t.expire(T0 + 20_000 + AFTER);
  assertEquals(t.archivedJobs, 1);
  assert(t.get("a")!.history.some((h) => h.attempt === 3), "archived with the change");
  // A late SUBMIT of the delivered job changes nothing and does not make it pending again; nor
  // does it thaw the job.
  const submit = t.apply({ type: "submit", stamp: stamp(), spec: plainSpec("a", T0) }, T0 + 40_000);
  assertEquals(submit.effect, "unchanged");
  assertEquals([t.get("a")!.phase, t.counts.pending, t.counts.delivered], ["delivered", 0, 1]);
  assertEquals(t.archivedJobs, 1, "a record that changes nothing leaves the job archived");
  // A peer's `state` of it with one more attempt merges history without calling it a change:
  // kept all the same, and archived again later.
  const state = [...t.snapshotRecords()].find((r) => r.type === "state")!;
  assert(state.type === "state");
  const more = {
    ...state,
    state: { ...state.state, history: [...state.state.history, attempt(4, T0 + 950, 200)] },
  };
  assertEquals(t.apply(more, T0 + 50_000).effect, "unchanged");
  assertEquals(t.archivedJobs, 0, "thawed: its bytes changed");
  assert(t.get("a")!.history.some((h) => h.attempt === 4));
  t.expire(T0 + 50_000 + AFTER);
  assertEquals(t.archivedJobs, 1, "archived again");
  assert(t.get("a")!.history.some((h) => h.attempt === 4), "with the merged attempt");
});

Deno.test("archived jobs leave at their retention, keys and tombstones kept, slabs freed", () => {
  const t = table({ finishedJobsMax: 1_000_000 });
  for (let i = 0; i < 3000; i++) deliver(t, `j${i}`, i % 3 === 0 ? `key-${i}` : undefined);
  t.expire(T0 + 1010 + AFTER);
  assertEquals(t.archivedJobs, 500, "a retention pass archives one slice");
  assert(t.archiveBacklogged, "and says more may be due");
  let slices = 1;
  while (t.archiveDue(T0 + 1010 + AFTER)) slices++;
  assertEquals([t.archivedJobs, slices], [3000, 6], "the rest in slices of archiveBatchMax");
  const slabBytes = t.archiveBytes;
  assert(slabBytes > 0 && slabBytes <= 2 * (1 << 20), `${slabBytes} bytes of slabs`);
  const dropped = t.expire(T0 + 1010 + HOUR);
  assertEquals(dropped.length, 3000);
  assertEquals([t.size, t.archivedJobs, t.counts.delivered], [0, 0, 0]);
  assertEquals(t.keyTombstone("j0")?.key, "key-0", "a keyed job leaves its key");
  assert(t.goneTombstone("j2999") !== undefined, "an unkeyed one its tombstone");
  assert(t.archiveBytes <= 1 << 20, "emptied slabs are dropped");
  // Late records of them change nothing.
  t.apply({ type: "submit", stamp: stamp(), spec: plainSpec("j2999", T0) }, T0 + 2 * HOUR);
  assertEquals(t.size, 0);
});

Deno.test("finishedJobsMax evicts archived jobs oldest first", () => {
  const t = table({ finishedJobsMax: 100, archiveBatchMax: 50 });
  for (let i = 0; i < 150; i++) deliver(t, `j${i}`, undefined, T0 + i);
  t.expire(T0 + 2000 + AFTER);
  assertEquals(t.size, 100, "the bound held");
  assertEquals(t.archivedJobs, 50, "one pass archives archiveBatchMax");
  t.expire(T0 + 3000 + AFTER);
  assertEquals(t.archivedJobs, 100);
  for (let i = 150; i < 200; i++) deliver(t, `j${i}`, undefined, T0 + i);
  t.expire(T0 + 4000 + AFTER);
  assertEquals(t.size, 100);
  assert(t.get("j99") === undefined && t.get("j100") !== undefined, "the oldest went first");
});

Deno.test("a snapshot drawn while jobs are archived and thawed meets each job once", () => {
  const t = table();
  for (let i = 0; i < 40; i++) deliver(t, `j${i}`);
  // Half archived before the walk.
  t.expire(T0 + 1010 + AFTER);
  // A DONE from another node with an attempt not held yet: a change, which thaws the job.
  const lateDone = (i: number, attemptNo: number, atMs: number) =>
    t.apply({
      type: "done",
      stamp: stamp(),
      jobId: `j${i}`,
      gen: 0,
      finishedAtMs: T0 + 1010,
      attempt: attempt(attemptNo, T0 + attemptNo, 200),
    }, atMs);
  for (let i = 0; i < 40; i += 2) lateDone(i, 9, T0 + 30_000);
  assertEquals(t.archivedJobs, 20);
  const seenIds: string[] = [];
  let step = 0;
  for (const record of t.snapshotRecords()) {
    if (record.type !== "state") continue;
    seenIds.push(record.state.jobId);
    // Meanwhile: the odd ones thawed, the even ones archived.
    if (step++ === 10) {
      for (let i = 1; i < 40; i += 2) lateDone(i, 8, T0 + 31_000);
      t.expire(T0 + 30_000 + AFTER);
    }
  }
  assertEquals(seenIds.sort(), Array.from({ length: 40 }, (_, i) => `j${i}`).sort());
});

Deno.test("property: a table that archives at every step answers as one that never does", () => {
  const noRetention = {
    finishedRetentionMs: 3e12,
    deadRetentionMs: 3e12,
    stubRetentionMs: 3e12,
    uncommittedRetentionMs: 3e12,
  };
  // A step is a record, or a peer's `state` of the job as the never-archiving table holds it,
  // maybe with one more attempt (a snapshot or handoff: merged history is no "change").
  type Step = JobRecord | { peerState: AttemptEntry | undefined };
  const steps = fc.array(
    fc.oneof(
      { weight: 4, arbitrary: jobRecordArb() as fc.Arbitrary<Step> },
      { weight: 1, arbitrary: fc.record({ peerState: fc.option(attemptArb, { nil: undefined }) }) },
    ),
    { maxLength: 14 },
  );
  let archivedRuns = 0;
  let statesOnArchived = 0;
  fc.assert(
    fc.property(steps, (script: Step[]) => {
      let archived = false;
      const archiving = table({ ...noRetention, archiveAfterMs: 0 });
      const plain = table({ ...noRetention, archiveAfterMs: 3e12 });
      const now = 2.5e12;
      for (const step of script) {
        let record: JobRecord;
        if ("peerState" in step) {
          const held = [...plain.snapshotRecords()].find((r) => r.type === "state");
          if (held === undefined || held.type !== "state") continue;
          const extra = step.peerState;
          record = extra === undefined
            ? held
            : { ...held, state: { ...held.state, history: [...held.state.history, extra] } };
          if (archiving.archivedJobs > 0) statesOnArchived++;
        } else record = step;
        const a = archiving.apply(record, now);
        const b = plain.apply(record, now);
        assertEquals(a.effect, b.effect, `effect of ${record.type}`);
        assertEquals(seen(a.entry), seen(b.entry));
        archiving.expire(now);
        plain.expire(now);
        assertEquals(seen(archiving.get("job_1")), seen(plain.get("job_1")));
        assertEquals(archiving.counts, plain.counts);
        // Only what no duty waits on is archived: every pending job is still an object.
        assertEquals([...archiving.pendingEntries()].length, archiving.counts.pending);
        assertEquals(plain.archivedJobs, 0);
        if (archiving.archivedJobs > 0) archived = true;
      }
      if (archived) archivedRuns++;
      assertEquals([...archiving.snapshotRecords()], [...plain.snapshotRecords()]);
    }),
    { numRuns: 500 },
  );
  assert(archivedRuns >= 50, `only ${archivedRuns} of 500 runs archived the job`);
  assert(statesOnArchived >= 20, `only ${statesOnArchived} peer states met an archived job`);
});

Deno.test("five cores archive a delivered job after deliveredArchiveAfterMs and say so in their gauges", () => {
  const c = new ReviewCluster({ deliveredArchiveAfterMs: 3_000 });
  c.startAll();
  const requestId = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.settle();
  const answer = c.answers.get(requestId);
  assert(answer?.ok === true, JSON.stringify(answer));
  c.delivered(0, answer.id);
  c.settle();
  const archived = () =>
    c.cores.map((core, i) => [
      core.table.archivedJobs,
      c.registries.get(VOTERS[i]!)!.snapshot()["hookd_jobs_archived"],
    ]);
  for (let t = 0; t < 2_000; t += 500) {
    c.tick(500);
    c.settle();
  }
  assertEquals(archived(), c.cores.map(() => [0, 0]), "not before its time");
  for (let t = 0; t < 3_000; t += 500) {
    c.tick(500);
    c.settle();
  }
  assertEquals(archived(), c.cores.map(() => [1, 1]));
  for (const core of c.cores) {
    assertEquals(core.table.get(answer.id)?.phase, "delivered");
    assert(core.table.archiveBytes > 0);
  }
  // Restarted, a core replays the job as an object, and archives it again in its time.
  c.crash(2);
  const restarted = c.restart(2);
  c.settle();
  assertEquals([restarted.phase, restarted.table.archivedJobs], ["ready", 0]);
  assertEquals(restarted.table.get(answer.id)?.phase, "delivered");
  for (let t = 0; t < 5_000; t += 500) {
    c.tick(500);
    c.settle();
  }
  assertEquals(restarted.table.archivedJobs, 1);
});

Deno.test("a core archives a backlog in slices of archiveBatchMax, archiveSliceGapMs apart, then waits for its retention pass again", () => {
  const gapMs = 20;
  const c = new ReviewCluster({
    deliveredArchiveAfterMs: 3_000,
    archiveBatchMax: 4,
    archiveSliceGapMs: gapMs,
  });
  c.startAll();
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const requestId = c.submit(0, { url: "http://a.test/", payload: `{"n":${i}}` });
    c.settle();
    const answer = c.answers.get(requestId);
    assert(answer?.ok === true, JSON.stringify(answer));
    ids.push(answer.id);
  }
  for (const id of ids) c.delivered(0, id);
  c.settle();
  const core = c.cores[0]!;
  // Up to the first retention pass that finds them due: one slice there, no more.
  let steps = 0;
  while (core.table.archivedJobs === 0 && steps++ < 100) {
    c.tick(100);
    c.settle();
  }
  assertEquals(core.table.archivedJobs, 4, "one slice at the retention pass");
  assertEquals(core.nextWakeMs() - c.nowMs, gapMs, "the next slice follows soon");
  c.tick(gapMs);
  assertEquals(core.table.archivedJobs, 8);
  c.tick(gapMs);
  assertEquals(core.table.archivedJobs, 10, "the last slice, not full");
  assert(
    core.nextWakeMs() - c.nowMs > gapMs,
    "with the backlog gone the core waits for its next retention pass, not a slice",
  );
});
