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
