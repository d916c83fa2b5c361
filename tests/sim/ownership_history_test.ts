/**
 * The simulator's ownership history on hand-made member logs: a ready life's owner changing
 * in the window, and two ready lives disagreeing, are ownership changes; a suspicion, a change
 * about a voter ranked below the owner, and a life not yet caught up are not.
 */

import { assertEquals } from "../assert.ts";
import { preferenceList } from "../../src/jobs/preference.ts";
import type { LifeLog, MemberLog } from "../../src/sim/sim_history.ts";
import { OwnershipHistory } from "../../src/sim/ownership_history.ts";

const VOTERS = ["10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.3:7946"];
const NODES = ["a", "b", "c"];
const JOB = "job_0123456789abcdef0123456789abcdef";
const [first, , third] = preferenceList(JOB, VOTERS) as [string, string, string];
// The job ranks a, c, b: the lives watched are b's and c's, so neither is the owner itself (a
// store never holds itself down).
const lives: LifeLog[] = [
  { node: "b", life: 1, startMs: 0, endMs: undefined },
  { node: "c", life: 1, startMs: 0, endMs: undefined },
];
const ready = [{ node: "b", life: 1, atMs: 10 }, { node: "c", life: 1, atMs: 10 }];
const event = (node: string, atMs: number, type: MemberLog["type"], subject: string) => ({
  node,
  life: 1,
  atMs,
  type,
  subject,
});

/** The stores' grace for voters not heard of (`unheardVoterGraceMs`). */
const GRACE_MS = 1_000;

/** What each life heard at its start: every other voter alive (a voter it has not heard of is
 * held dead once the grace is over). */
const HELLO = ["b", "c"].flatMap((node) =>
  VOTERS.filter((_, j) => NODES[j] !== node).map((v) => event(node, 0, "member-alive", v))
);
const history = (events: MemberLog[], readyLog = ready) =>
  new OwnershipHistory(VOTERS, NODES, lives, readyLog, [...HELLO, ...events], GRACE_MS);

Deno.test("OwnershipHistory: changes and disagreements about the job's owner", () => {
  const quiet = history([]);
  assertEquals(quiet.changed(JOB, 100, 200), false);
  // Both hold the first-ranked voter dead in the window: the owner moved.
  const both = [event("b", 150, "member-dead", first), event("c", 150, "member-dead", first)];
  assertEquals(
    history(both).changed(JOB, 100, 200),
    true,
  );
  // Both held it dead before the window, and still do: no change inside it.
  const before = [event("b", 50, "member-dead", first), event("c", 50, "member-dead", first)];
  assertEquals(
    history(before).changed(JOB, 100, 200),
    false,
  );
  // One of them holds it dead, the other does not: they disagree on the owner.
  const one = [event("b", 50, "member-dead", first)];
  assertEquals(history(one).changed(JOB, 100, 200), true);
  // A suspicion, and a death of a voter ranked below the owner, move nothing.
  const minor = [event("b", 150, "member-suspect", first), event("c", 150, "member-dead", third)];
  assertEquals(
    history(minor).changed(JOB, 100, 200),
    false,
  );
  // A life that is not caught up yet delivers nothing: its view does not count.
  const late = [{ node: "b", life: 1, atMs: 10 }, { node: "c", life: 1, atMs: 500 }];
  assertEquals(history(one, late).changed(JOB, 100, 200), false);
});

Deno.test("OwnershipHistory: a death and its refutation in one instant still moved the job", () => {
  const flap = [event("b", 150, "member-dead", first), event("b", 150, "member-alive", first)];
  assertEquals(
    history(flap).changed(JOB, 100, 150),
    true,
  );
  // Before the window, it does not count.
  assertEquals(
    history(flap).changed(JOB, 200, 300),
    false,
  );
});

Deno.test("OwnershipHistory: a voter a life never heard of keeps its jobs for the grace, then is dead, as in its store", () => {
  assertEquals(first, VOTERS[0], "the job's first choice is a's address");
  const aHeard = VOTERS.slice(1).map((v) => event("a", 0, "member-alive", v));
  // Life "b" heard only of the third voter; "a", the job's owner, is unheard.
  const bHeard = [event("b", 0, "member-alive", VOTERS[2]!)];
  const ab: LifeLog[] = [
    { node: "a", life: 1, startMs: 0, endMs: undefined },
    { node: "b", life: 1, startMs: 0, endMs: undefined },
  ];
  const abReady = [{ node: "a", life: 1, atMs: 10 }, { node: "b", life: 1, atMs: 10 }];
  const unheard = (bEvents: MemberLog[], fromMs: number, toMs: number) =>
    new OwnershipHistory(VOTERS, NODES, ab, abReady, [...aHeard, ...bEvents], GRACE_MS)
      .changed(JOB, fromMs, toMs);
  // Within the grace "b" leaves the job to "a": both agree.
  assertEquals(unheard(bHeard, 100, 200), false);
  // Past it "b" holds "a" dead and owns the job too: they disagree.
  assertEquals(unheard(bHeard, GRACE_MS + 100, GRACE_MS + 200), true);
  // The grace ends inside the window: b's owner moved.
  assertEquals(unheard(bHeard, GRACE_MS - 100, GRACE_MS - 50), false);
  assertEquals(unheard(bHeard, GRACE_MS - 100, GRACE_MS), true);
  // Heard of in time, "a" is alive in both views for good.
  const bHeardAll = [...bHeard, event("b", 500, "member-alive", VOTERS[0]!)];
  assertEquals(unheard(bHeardAll, GRACE_MS - 100, GRACE_MS + 200), false);
});
