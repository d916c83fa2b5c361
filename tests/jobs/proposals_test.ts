/**
 * The proposal table's verdicts (src/jobs/proposals.ts): a REVIVE answered `finished` by a
 * replica past the generation it starts.
 */

import { assertEquals } from "../assert.ts";
import { Proposals } from "../../src/jobs/proposals.ts";

const VOTERS = ["a", "b", "c", "d", "e"];

Deno.test("a retry is stale only once no majority can vote for it", () => {
  // Session 39's review: one replica may answer `finished` because this very retry already
  // ran and ended there (its DEAD outran the REVIVE to that replica); refused at once, the
  // client was told to retry a retry that took effect. A retry is stale once the `finished`
  // answers leave fewer voters than a majority. Mutation: stale at the first `finished`
  // (`revive-stale-at-first-finished`).
  const proposals = new Proposals(VOTERS, 3, 1_000);
  const stamp = { origin: "a", seq: 7 };
  const p = proposals.propose(0, "revive", stamp, "job_1", "", true, undefined);
  proposals.ack("b", { stamp, status: "finished", bodyHash: "" });
  assertEquals(proposals.evaluate(p).kind, "pending");
  proposals.ack("c", { stamp, status: "finished", bodyHash: "" });
  assertEquals(proposals.evaluate(p).kind, "pending", "a, d and e may still vote");
  proposals.ack("d", { stamp, status: "finished", bodyHash: "" });
  assertEquals(proposals.evaluate(p).kind, "stale");
  // A majority of votes decides it whatever one replica says.
  const q = proposals.propose(0, "revive", { origin: "a", seq: 8 }, "job_2", "", true, undefined);
  proposals.ack("b", { stamp: q.stamp, status: "finished", bodyHash: "" });
  for (const voter of ["a", "c", "d"]) {
    proposals.ack(voter, { stamp: q.stamp, status: "ok", bodyHash: "" });
  }
  assertEquals(proposals.evaluate(q).kind, "committed");
});
