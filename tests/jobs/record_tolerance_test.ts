/**
 * Issue 17 §1: one record a peer could not decode made it drop the whole replication message
 * (the other clients' submits in it got no vote; COMMIT/DONE records riding with it were
 * lost), and a catch-up page holding it never decoded. Now that record alone is left out,
 * counted and logged once, and the rest of the message applies.
 */

import { assert, assertEquals } from "../assert.ts";
import { encodeRecord } from "../../src/jobs/job_codec.ts";
import { decodeMessage, encodeMessage } from "../../src/jobs/job_messages.ts";
import type { JobSpec, ReplicatedRecord } from "../../src/jobs/job_model.ts";
import { ReviewCluster, VOTERS, WALL } from "./review_harness.ts";

/** Far above any seq a restart's SKIP voids, so the record is new to every core. */
const SEQ = 1_000_000_000;

function spec(id: string): JobSpec {
  return {
    id,
    url: "https://h.test/",
    payload: "{}",
    headers: {},
    secrets: [],
    timeoutMs: 0,
    maxAttempts: 3,
    submittedAtMs: WALL,
    bodyHash: "",
  };
}

const submit = (seq: number, id: string): ReplicatedRecord => ({
  type: "submit",
  stamp: { origin: VOTERS[0]!, seq },
  spec: spec(id),
});

/** Bytes no decoder takes: an unknown record type, and a record cut short. */
function badRecords(): Uint8Array[] {
  const good = encodeRecord(submit(SEQ + 50, "job_cut"));
  return [new Uint8Array([99, 0, 0]), good.subarray(0, good.length - 3)];
}

function undecodableCount(cluster: ReviewCluster, core: number): number {
  const text = cluster.registries.get(VOTERS[core]!)!.renderPrometheus();
  const line = text.split("\n").find((l) => l.startsWith("hookd_jobs_records_undecodable_total"));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

Deno.test("a replication message with undecodable records still stores and acknowledges the others", () => {
  const cluster = new ReviewCluster();
  cluster.startAll();
  const [bad1, bad2] = badRecords();
  const message = encodeMessage({
    kind: "repl",
    from: VOTERS[0]!,
    records: [
      encodeRecord(submit(SEQ, "job_a")),
      bad1!,
      encodeRecord(submit(SEQ + 1, "job_b")),
      bad2!,
    ],
  });
  for (let round = 0; round < 2; round++) {
    cluster.cores[1]!.receive(cluster.nowMs, cluster.wallMs, VOTERS[0]!, message);
    cluster.collect();
  }
  cluster.persist(1);
  assert(cluster.cores[1]!.table.get("job_a")?.spec !== undefined, "job_a stored");
  assert(cluster.cores[1]!.table.get("job_b")?.spec !== undefined, "job_b stored");
  const acked = new Set<number>();
  for (const m of cluster.inflight.filter((m) => m.from === 1 && m.to === 0 && m.kind === "ack")) {
    const d = decodeMessage(m.bytes);
    if (d.ok && d.value.kind === "ack") { for (const e of d.value.entries) acked.add(e.stamp.seq); }
  }
  assert(acked.has(SEQ) && acked.has(SEQ + 1), `both submits acknowledged: ${[...acked]}`);
  assertEquals(undecodableCount(cluster, 1), 4, "each undecodable record counted");
  const logged = cluster.logs.filter((l) => l.core === 1 && l.event === "records-undecodable");
  assertEquals(logged.length, 1, "logged once");
  assertEquals(logged[0]!.fields.from, VOTERS[0]);
});

Deno.test("catch-up pages and handoffs with an undecodable record decode the rest", () => {
  const [bad] = badRecords();
  const good = encodeRecord(submit(SEQ, "job_a"));
  const reply = decodeMessage(encodeMessage({
    kind: "sync-reply",
    from: VOTERS[0]!,
    requestId: 1,
    page: 0,
    ask: 1,
    part: 0,
    parts: 1,
    snapshot: false,
    more: false,
    cursor: { kind: "start" },
    yourSeqMax: 0,
    held: [],
    records: [bad!, good],
  }));
  assert(reply.ok && reply.value.kind === "sync-reply", reply.ok ? "" : reply.reason);
  assertEquals(reply.value.records.length, 1);
  assertEquals(reply.value.undecodable?.count, 1);

  const handoff = decodeMessage(encodeMessage({
    kind: "handoff",
    from: VOTERS[0]!,
    records: [bad!],
  }));
  assert(handoff.ok && handoff.value.kind === "handoff", handoff.ok ? "" : handoff.reason);
  assertEquals(handoff.value.records.length, 0);
  assertEquals(handoff.value.undecodable?.count, 1);
});

Deno.test("a replication message whose records all decode says nothing of undecodable ones", () => {
  const message = encodeMessage({
    kind: "repl",
    from: VOTERS[0]!,
    records: [encodeRecord(submit(SEQ, "job_a"))],
  });
  const decoded = decodeMessage(message);
  assert(decoded.ok && decoded.value.kind === "repl", "decodes");
  assert(!("undecodable" in decoded.value), JSON.stringify(Object.keys(decoded.value)));
  // And its receiver counts and logs nothing.
  const cluster = new ReviewCluster();
  cluster.startAll();
  cluster.cores[1]!.receive(cluster.nowMs, cluster.wallMs, VOTERS[0]!, message);
  cluster.collect();
  assertEquals(undecodableCount(cluster, 1), 0);
  assertEquals(cluster.logs.filter((l) => l.event === "records-undecodable").length, 0);
});
