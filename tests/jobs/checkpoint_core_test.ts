/**
 * The core's side of a checkpoint drawn a slice at a time (the WAL walks the snapshot's
 * iterable over many event-loop turns while the table keeps changing; recovery replays every
 * record from the cut on over it):
 *  - retention does not run while a checkpoint is pending (a key or tombstone expired before
 *    the walk reached it would be missing from the snapshot while a late record it had blocked,
 *    appended after the cut, is replayed over it), and resumes an interval after it is done;
 *  - the bytes appended after a checkpoint was asked for count toward the next one, those
 *    before its cut are given back if it fails;
 *  - the meta record (held seqs, next own seq) is taken at the cut, when `snapshotRecords()` is
 *    called; the table's records are drawn lazily, live.
 * Hand-driven cores (review_harness.ts) and `Recovery` on its own.
 */

import { assert, assertEquals } from "../assert.ts";
import { ReviewCluster } from "./review_harness.ts";
import { plainSpec, tableTestOptions } from "./arbitraries.ts";
import type { ReplicationCore } from "../../src/jobs/replication_core.ts";
import type { SubmitOutcome, SubmitRequest } from "../../src/jobs/service.ts";
import { Recovery } from "../../src/jobs/recovery.ts";
import { JobTable } from "../../src/jobs/job_table.ts";
import { SeqTracker } from "../../src/jobs/seq_tracker.ts";
import { CatchupLog } from "../../src/jobs/catchup_log.ts";
import { AppendBatcher } from "../../src/jobs/append_batcher.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { decodeWalBatch } from "../../src/jobs/job_codec.ts";
import type { JobRecord, JobSpec } from "../../src/jobs/job_model.ts";

// ---------------------------------------------------------------------------------------------
// The shell's side of checkpoints, for a ReviewCluster (which drops `checkpoint` outputs)
// ---------------------------------------------------------------------------------------------

/**
 * Stands in for the job store's WAL: a `checkpoint` output either finishes at once (`auto`) or
 * stays pending until `finish` (the snapshot still being drawn).
 */
class CheckpointShell {
  auto = true;
  /** Per core: checkpoints asked for, and whether one is pending (asked for, not done). */
  readonly requested: number[];
  readonly pending: boolean[];

  constructor(readonly c: ReviewCluster) {
    this.requested = c.cores.map(() => 0);
    this.pending = c.cores.map(() => false);
    for (const [i, core] of c.cores.entries()) this.#wrap(i, core);
  }

  #wrap(i: number, core: ReplicationCore): void {
    const take = core.takeOutputs.bind(core);
    core.takeOutputs = () => {
      const outputs = take();
      for (const out of outputs) {
        if (out.type !== "checkpoint") continue;
        assert(!this.pending[i], `core ${i} asks for a checkpoint while one is pending`);
        this.requested[i]!++;
        if (this.auto) core.checkpointDone(0);
        else this.pending[i] = true;
      }
      return outputs;
    };
  }

  /** Every pending checkpoint finishes (a snapshot of `bytes`); later ones finish at once. */
  finishAll(bytes = 0): void {
    this.auto = true;
    for (const [i, core] of this.c.cores.entries()) {
      if (!this.pending[i]) continue;
      this.pending[i] = false;
      core.checkpointDone(bytes);
    }
  }
}

function ok(outcome: SubmitOutcome | undefined): string {
  assert(outcome?.ok === true, `acknowledged, not ${JSON.stringify(outcome)}`);
  return outcome.id;
}

function ownerOf(c: ReviewCluster, jobId: string): number {
  const i = c.cores.findIndex((core) => core.ownerOf(jobId) === core.self);
  assert(i >= 0, "the job has an owner");
  return i;
}

/** Submits on core 0, lets it replicate, and has its owner deliver it. */
function submitAndDeliver(c: ReviewCluster, request: SubmitRequest): string {
  const requestId = c.submit(0, request);
  c.settle();
  const id = ok(c.answers.get(requestId));
  c.delivered(ownerOf(c, id), id);
  // The DONE is sent lazily (`lazySendMs`).
  c.tick(50);
  c.settle();
  for (const core of c.cores) assertEquals(core.table.get(id)?.phase, "delivered");
  return id;
}

const EXPIRE_INTERVAL_MS = 1_000;

Deno.test("retention waits while a checkpoint is pending (no key, tombstone or delivered job leaves), and runs an interval after it is done", () => {
  const c = new ReviewCluster({
    checkpointBytes: 1,
    expireIntervalMs: EXPIRE_INTERVAL_MS,
    finishedRetentionMs: 1_000,
    finishedTombstoneMs: 5_000,
    idempotencyWindowMs: 10_000,
    idempotencyClockSkewMs: 0,
  });
  const shell = new CheckpointShell(c);
  c.startAll();
  // A keyed job and an unkeyed one, delivered and compacted: a kept key and a tombstone.
  const keyed = submitAndDeliver(c, { url: "http://a.test/", payload: "k", idempotencyKey: "k1" });
  const unkeyed = submitAndDeliver(c, { url: "http://a.test/", payload: "u" });
  c.tick(2_000);
  c.settle();
  for (const core of c.cores) {
    assertEquals([core.table.get(keyed), core.table.get(unkeyed)], [undefined, undefined]);
    assert(core.table.keyTombstone(keyed) !== undefined, "the keyed job left its key");
    assert(core.table.goneTombstone(unkeyed) !== undefined, "the unkeyed one its tombstone");
  }
  assert(shell.requested.every((n) => n > 0), "small checkpointBytes: checkpoints were asked for");

  // From now on a checkpoint asked for stays pending: its snapshot is still being drawn.
  shell.auto = false;
  const held = submitAndDeliver(c, { url: "http://a.test/", payload: "h" });
  assert(shell.pending.every((p) => p), "every core appended, so asked for a checkpoint");
  // Well past the delivered job's retention, the key's window and the tombstone's time.
  for (let i = 0; i < 20; i++) {
    c.tick(EXPIRE_INTERVAL_MS);
    c.settle();
    for (const [j, core] of c.cores.entries()) {
      // Retention due but held must not leave the core asking to be woken now, over and over.
      assert(
        core.nextWakeMs() > c.nowMs,
        `core ${j} wakes at ${core.nextWakeMs()}, not after now (${c.nowMs})`,
      );
    }
  }
  for (const [j, core] of c.cores.entries()) {
    assertEquals(core.table.get(held)?.phase, "delivered", `core ${j} keeps the delivered job`);
    assert(core.table.keyTombstone(keyed) !== undefined, `core ${j} keeps the key`);
    assert(core.table.goneTombstone(unkeyed) !== undefined, `core ${j} keeps the tombstone`);
  }
  assert(shell.pending.every((p) => p), "still pending: nobody finished them");

  // Done: the next round (an interval later at most) drops what is due.
  shell.finishAll();
  c.tick(EXPIRE_INTERVAL_MS);
  c.settle();
  for (const [j, core] of c.cores.entries()) {
    assertEquals(core.table.get(held), undefined, `core ${j} dropped the delivered job`);
    assertEquals(core.table.keyTombstone(keyed), undefined, `core ${j} dropped the key`);
    assertEquals(core.table.goneTombstone(unkeyed), undefined, `core ${j} dropped the tombstone`);
    assert(core.nextWakeMs() > c.nowMs, `core ${j} wakes after now`);
  }
});

Deno.test("a failed checkpoint lets retention run again too", () => {
  const c = new ReviewCluster({
    checkpointBytes: 1,
    expireIntervalMs: EXPIRE_INTERVAL_MS,
    finishedRetentionMs: 1_000,
  });
  const shell = new CheckpointShell(c);
  c.startAll();
  shell.auto = false;
  const held = submitAndDeliver(c, { url: "http://a.test/", payload: "h" });
  assert(shell.pending.every((p) => p));
  c.tick(3 * EXPIRE_INTERVAL_MS);
  c.settle();
  for (const core of c.cores) assertEquals(core.table.get(held)?.phase, "delivered");
  for (const [i, core] of c.cores.entries()) {
    shell.pending[i] = false;
    core.checkpointDone(undefined);
  }
  shell.auto = true;
  c.tick(EXPIRE_INTERVAL_MS);
  c.settle();
  for (const core of c.cores) assertEquals(core.table.get(held), undefined);
});

// ---------------------------------------------------------------------------------------------
// Recovery on its own: byte counting, and what the snapshot's iterable yields
// ---------------------------------------------------------------------------------------------

const SELF = "10.0.0.1:7000";
const OTHER = "10.0.0.2:7000";
const T0 = 1_800_000_000_000;

interface Parts {
  recovery: Recovery;
  table: JobTable;
  tracker: SeqTracker;
  /** The host's next own seq (the core's, in a real node). */
  own: { next: number };
}

function parts(checkpointBytes: number): Parts {
  const table = new JobTable(tableTestOptions());
  const tracker = new SeqTracker();
  const own = { next: 1 };
  const recovery = new Recovery({
    self: SELF,
    config: { originPendingMax: 16, checkpointBytes },
    metrics: {
      decodeErrors: new MetricsRegistry().counter("test_decode_errors_total", "test"),
    },
    table,
    tracker,
    catchupLog: new CatchupLog(1 << 20),
    appends: new AppendBatcher(1 << 20, 0),
    host: {
      nextOwnSeq: () => own.next,
      raiseNextOwnSeq: (seq) => {
        own.next = Math.max(own.next, seq);
      },
    },
  });
  return { recovery, table, tracker, own };
}

Deno.test("appends reaching checkpointBytes ask for one checkpoint, and none more while it is pending", () => {
  const { recovery: r } = parts(100);
  assertEquals(r.checkpointPending, false);
  assertEquals(r.appended(60), false);
  assertEquals(r.appended(39), false);
  assertEquals(r.appended(1), true, "100 bytes: due");
  assertEquals(r.checkpointPending, true);
  assertEquals(r.appended(500), false, "one at a time");
  assertEquals(r.checkpointPending, true);
  r.checkpointDone(10);
  assertEquals(r.checkpointPending, false);
});

Deno.test("bytes appended while a checkpoint is pending count toward the next one, due at the first append after it is done", () => {
  const { recovery: r } = parts(100);
  assertEquals(r.appended(100), true);
  // After the cut: replayed after this checkpoint's snapshot, so the next one must cover them.
  assertEquals(r.appended(70), false);
  assertEquals(r.appended(50), false);
  r.checkpointDone(10);
  // Before: the 120 bytes were forgotten here, and the next checkpoint came 100 bytes later.
  assertEquals(r.appended(1), true, "120 bytes after the cut: the next one is due at once");
});

Deno.test("bytes before a checkpoint's cut do not count toward the next one once it is done", () => {
  const { recovery: r } = parts(100);
  assertEquals(r.appended(100), true);
  assertEquals(r.appended(50), false);
  r.checkpointDone(10);
  assertEquals(r.appended(49), false, "99 bytes after the cut");
  assertEquals(r.appended(1), true, "100 bytes after the cut");
});

Deno.test("a failed checkpoint gives back the bytes before its cut", () => {
  const { recovery: r } = parts(100);
  assertEquals(r.appended(100), true);
  assertEquals(r.appended(30), false);
  r.checkpointDone(undefined);
  assertEquals(r.checkpointPending, false);
  // It covered nothing: the 100 bytes before its cut and the 30 after still want a checkpoint.
  assertEquals(r.appended(1), true, "131 bytes since the last checkpoint that was written");
  // That one succeeds: all 131 were before its cut, none counts again.
  r.checkpointDone(10);
  assertEquals(r.appended(99), false);
  assertEquals(r.appended(1), true);
});

Deno.test("the next checkpoint waits for twice the last snapshot's size, and a failed one does not change it", () => {
  const { recovery: r } = parts(100);
  assertEquals(r.appended(100), true);
  r.checkpointDone(80);
  assertEquals(r.appended(159), false);
  assertEquals(r.appended(1), true, "2 × 80");
  r.checkpointDone(undefined);
  // The 160 bytes given back, still against 2 × 80.
  assertEquals(r.appended(0), true);
  r.checkpointDone(90);
  assertEquals(r.appended(179), false);
  assertEquals(r.appended(1), true, "2 × 90");
});

function spec(id: string): JobSpec {
  return plainSpec(id, T0);
}

function decoded(bytes: Uint8Array): JobRecord {
  const d = decodeWalBatch(bytes);
  assert(d.ok, `a snapshot record decodes: ${d.ok ? "" : d.reason}`);
  assertEquals(d.value.length, 1, "one record per snapshot record");
  return d.value[0]!.record;
}

/**
 * The records an iterable of snapshot records yields, each decoded as it is drawn (a record may
 * be a view of a buffer the next one reuses).
 */
function draw(records: Iterable<Uint8Array>): JobRecord[] {
  return Array.from(records, decoded);
}

function metaOf(records: JobRecord[]): Extract<JobRecord, { type: "meta" }> {
  const last = records[records.length - 1];
  assert(last?.type === "meta", `the meta record comes last, not ${last?.type}`);
  assertEquals(records.filter((r) => r.type === "meta").length, 1, "one meta record");
  return last;
}

function jobIds(records: JobRecord[]): string[] {
  return records.flatMap((r) => r.type === "state" ? [r.state.jobId] : []).sort();
}

Deno.test("a checkpoint's meta is taken when its records are asked for (the cut), its table records when drawn", () => {
  const { recovery: r, table, tracker, own } = parts(100);
  for (let s = 1; s <= 3; s++) tracker.add(SELF, s);
  for (let s = 1; s <= 2; s++) tracker.add(OTHER, s);
  own.next = 4;
  table.apply({ type: "submit", stamp: { origin: SELF, seq: 1 }, spec: spec("a") }, T0);

  const atCut = draw(r.snapshotRecords());
  const lazy = r.snapshotRecords();
  // After the cut: more held, more of our seqs given, a new job, one that changed.
  for (let s = 4; s <= 6; s++) tracker.add(SELF, s);
  tracker.add(OTHER, 3);
  tracker.add(OTHER, 9);
  own.next = 7;
  table.apply({ type: "submit", stamp: { origin: SELF, seq: 4 }, spec: spec("b") }, T0);
  table.apply(
    { type: "done", stamp: { origin: SELF, seq: 5 }, jobId: "a", gen: 0, finishedAtMs: T0 + 1 },
    T0,
  );
  const drawn = draw(lazy);
  const after = draw(r.snapshotRecords());

  assertEquals(metaOf(atCut).nextOwnSeq, 4);
  assertEquals(
    metaOf(atCut).held,
    [{ origin: SELF, contiguous: 3, above: [] }, { origin: OTHER, contiguous: 2, above: [] }],
  );
  assertEquals(metaOf(drawn), metaOf(atCut), "the meta as it stood at the cut");
  assertEquals(metaOf(after).nextOwnSeq, 7, "(the state did move on)");
  // The table is walked live: the job added after the cut is there, the other as it is now.
  assertEquals(jobIds(atCut), ["a"]);
  assertEquals(jobIds(drawn), ["a", "b"]);
  const a = drawn.find((rec) => rec.type === "state" && rec.state.jobId === "a");
  assert(a?.type === "state" && a.state.phase === "delivered", "job a as it is when drawn");
});

Deno.test("a core's checkpoint records: the meta at the call, jobs submitted after it still drawn", () => {
  const c = new ReviewCluster({});
  c.startAll();
  const firstId = c.submit(0, { url: "http://a.test/", payload: "1" });
  c.settle();
  const first = ok(c.answers.get(firstId));
  const core = c.cores[0]!;
  const atCut = draw(core.snapshotRecords());
  const lazy = core.snapshotRecords();
  const secondId = c.submit(0, { url: "http://a.test/", payload: "2" });
  c.settle();
  const second = ok(c.answers.get(secondId));
  c.tick(50);
  c.settle();
  const drawn = draw(lazy);
  const after = draw(core.snapshotRecords());

  assertEquals(metaOf(drawn), metaOf(atCut));
  assert(metaOf(after).nextOwnSeq > metaOf(atCut).nextOwnSeq, "core 0 gave seqs meanwhile");
  const own = (records: JobRecord[]) =>
    metaOf(records).held.find((h) => h.origin === core.self)?.contiguous ?? 0;
  assert(own(after) > own(atCut), "and holds more of them");
  assertEquals(jobIds(atCut), [first]);
  assertEquals(jobIds(drawn), [first, second].sort());
});
