/**
 * `ReplicationCore.ownerOf` remembers owners (it is asked on every record applied): what it
 * answers must still follow the membership view exactly — a death or a return moves jobs, a
 * suspicion does not.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { ReplicationCore, type VoterState } from "../../src/jobs/replication_core.ts";
import { ownerOf, preferenceList } from "../../src/jobs/preference.ts";
import { ReviewCluster } from "./review_harness.ts";

const VOTERS = [1, 2, 3, 4, 5].map((i) => `10.0.0.${i}:7000`);

function core(): ReplicationCore {
  return new ReplicationCore({
    self: VOTERS[0]!,
    voters: VOTERS,
    rng: new Sfc32(3),
    metrics: new MetricsRegistry(),
    walRecordBytesMax: 1 << 20,
    payloadBytesMax: 1 << 20,
  });
}

function view(states: Record<string, VoterState>): Map<string, VoterState> {
  return new Map(VOTERS.map((v) => [v, states[v] ?? "alive"]));
}

Deno.test("ownerOf follows deaths and returns, not suspicions, after it was asked once", () => {
  const c = core();
  const ids = Array.from({ length: 400 }, (_, i) => `job_${i.toString(16).padStart(8, "0")}`);
  const victim = VOTERS[2]!;
  const victimJobs = ids.filter((id) => preferenceList(id, VOTERS)[0] === victim);
  assert(victimJobs.length > 20, "some jobs are the victim's");
  for (const id of ids) assertEquals(c.ownerOf(id), preferenceList(id, VOTERS)[0]);

  c.viewChanged(1, view({ [victim]: "suspect" }));
  for (const id of victimJobs) assertEquals(c.ownerOf(id), victim, "a suspect keeps its jobs");

  c.viewChanged(2, view({ [victim]: "dead" }));
  for (const id of ids) {
    const expected = ownerOf(id, VOTERS, (v) => v === victim);
    assertEquals(c.ownerOf(id), expected, `${id} after the death`);
  }
  for (const id of victimJobs) assert(c.ownerOf(id) !== victim, "no job stays with the dead");

  c.viewChanged(3, view({}));
  for (const id of ids) assertEquals(c.ownerOf(id), preferenceList(id, VOTERS)[0], "back");
});

Deno.test("an unheard voter keeps its jobs but gets no records; taken as dead later, its jobs move", () => {
  // A voter membership has not reported yet (a cluster starting, a slow join under loss) is
  // `unheard`: taken as dead, this node delivered its jobs beside it (job_store.ts).
  const c = core();
  const ids = Array.from({ length: 400 }, (_, i) => `job_${i.toString(16).padStart(8, "0")}`);
  const late = VOTERS[2]!;
  const lateJobs = ids.filter((id) => preferenceList(id, VOTERS)[0] === late);
  assert(lateJobs.length > 20, "some jobs are the late voter's");
  for (const id of ids) c.ownerOf(id);

  c.viewChanged(1, view({ [late]: "unheard" }));
  for (const id of lateJobs) assertEquals(c.ownerOf(id), late, "an unheard voter keeps its jobs");
  assert(c.isDown(late), "nothing is sent to it");
  assertEquals(c.reachableVoters(), 4, "it is not counted reachable");

  c.viewChanged(2, view({ [late]: "dead" }));
  for (const id of lateJobs) {
    assertEquals(c.ownerOf(id), ownerOf(id, VOTERS, (v) => v === late), `${id} after the grace`);
  }

  c.viewChanged(3, view({ [late]: "unheard" }));
  c.viewChanged(4, view({}));
  for (const id of ids) assertEquals(c.ownerOf(id), preferenceList(id, VOTERS)[0], "heard of");
});

Deno.test("while a voter is unheard, the ids a node mints for its submits are still its own", () => {
  const c = new ReviewCluster();
  c.startAll();
  c.view(0, { 4: "unheard" });
  const requests = Array.from(
    { length: 40 },
    () => c.submit(0, { url: "http://a.test/", payload: "{}", maxAttempts: 1 }),
  );
  c.settle();
  // Heard of at last: the owner cache is dropped and every owner asked again. An id that ranked
  // the late voter above this node would move to it now, and both would deliver it.
  c.view(0, {});
  for (const rid of requests) {
    const answer = c.answers.get(rid);
    assert(answer?.ok === true, JSON.stringify(answer));
    assertEquals(c.cores[0]!.ownerOf(answer.id), c.cores[0]!.self, answer.id);
  }
});
