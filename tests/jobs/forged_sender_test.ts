/**
 * A vote counts only from the voter whose address the transport authenticated the datagram
 * from (issue 17, section 3). Every holder of the cluster key can seal datagrams, the UDP
 * submit client among them; before the fix the core believed the `from` a message named, so
 * such a holder could send ACKs in the name of four voters and get a submit acknowledged
 * while it was on one disk.
 */

import { assert, assertEquals } from "../assert.ts";
import { ReviewCluster, VOTERS } from "./review_harness.ts";
import { decodeMessage, encodeMessage } from "../../src/jobs/job_messages.ts";
import type { Stamp } from "../../src/jobs/job_model.ts";
import type { SubmitRequest } from "../../src/jobs/service.ts";

const CLIENT = "10.0.0.9:7000";

/** The stamp of the SUBMIT core 0 is replicating (read from its message in flight). */
function submitStamp(c: ReviewCluster): Stamp {
  for (const m of c.inflight) {
    const d = decodeMessage(m.bytes);
    if (!d.ok || d.value.kind !== "repl") continue;
    for (const { record } of d.value.records) if (record.type === "submit") return record.stamp;
  }
  throw new Error("no SUBMIT in flight");
}

function forgedAcks(stamp: Stamp, claimed: readonly string[]): Uint8Array[] {
  return claimed.map((from) =>
    encodeMessage({ kind: "ack", from, entries: [{ stamp, status: "ok", bodyHash: "" }] })
  );
}

Deno.test("ACKs naming voters but sent from another address are not votes", () => {
  const c = new ReviewCluster();
  c.startAll();
  const request: SubmitRequest = { url: "http://a.test/", payload: "{}" };
  const asked = c.submit(0, request);
  c.collect();
  const stamp = submitStamp(c);
  // The replicas never get the SUBMIT; only core 0's own copy becomes durable.
  c.drop();
  c.persist(0);
  // A cluster-key holder that is not a voter claims the four peers' votes.
  for (const bytes of forgedAcks(stamp, VOTERS.slice(1))) {
    c.cores[0]!.receive(c.nowMs, c.wallMs, CLIENT, bytes);
  }
  // So does a voter, in the other voters' names, from its own authenticated address.
  for (const bytes of forgedAcks(stamp, VOTERS.slice(2))) {
    c.cores[0]!.receive(c.nowMs, c.wallMs, VOTERS[1]!, bytes);
  }
  c.collect();
  assertEquals(c.answers.get(asked), undefined, "not acknowledged on forged votes");
  const forged = c.cores[0]!.takeOutputs().length; // nothing else was produced by them
  assertEquals(forged, 0);
  c.tick(1_001);
  assertEquals(c.answers.get(asked)?.ok, false, "refused once its quorum wait ran out");
  // The same ACKs from the addresses they name are votes: a second job, let through, is
  // acknowledged once the real replicas have it on disk.
  const second = c.submit(0, { ...request, payload: '{"n":2}' });
  c.settle();
  const answer = c.answers.get(second);
  assert(answer?.ok === true, `acknowledged by real voters: ${JSON.stringify(answer)}`);
  assert(c.durableHolders(answer.id).length >= 3);
});
