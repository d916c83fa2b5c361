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
const lives: LifeLog[] = [
  { node: "a", life: 1, startMs: 0, endMs: undefined },
  { node: "b", life: 1, startMs: 0, endMs: undefined },
];
const ready = [{ node: "a", life: 1, atMs: 10 }, { node: "b", life: 1, atMs: 10 }];
const event = (node: string, atMs: number, type: MemberLog["type"], subject: string) => ({
  node,
  life: 1,
  atMs,
  type,
  subject,
});

/** What each life heard at its start: every other voter alive (the store holds a voter it never
 * heard of dead). */
const HELLO = ["a", "b"].flatMap((node, i) =>
  VOTERS.filter((_, j) => j !== i).map((v) => event(node, 0, "member-alive", v))
);
const history = (events: MemberLog[], readyLog = ready) =>
  new OwnershipHistory(VOTERS, NODES, lives, readyLog, [...HELLO, ...events]);

Deno.test("OwnershipHistory: changes and disagreements about the job's owner", () => {
  const quiet = history([]);
  assertEquals(quiet.changed(JOB, 100, 200), false);
  // Both hold the first-ranked voter dead in the window: the owner moved.
  const both = [event("a", 150, "member-dead", first), event("b", 150, "member-dead", first)];
  assertEquals(
    history(both).changed(JOB, 100, 200),
    true,
  );
  // Both held it dead before the window, and still do: no change inside it.
  const before = [event("a", 50, "member-dead", first), event("b", 50, "member-dead", first)];
  assertEquals(
    history(before).changed(JOB, 100, 200),
    false,
  );
  // One of them holds it dead, the other does not: they disagree on the owner.
  const one = [event("a", 50, "member-dead", first)];
  assertEquals(history(one).changed(JOB, 100, 200), true);
  // A suspicion, and a death of a voter ranked below the owner, move nothing.
  const minor = [event("a", 150, "member-suspect", first), event("b", 150, "member-dead", third)];
  assertEquals(
    history(minor).changed(JOB, 100, 200),
    false,
  );
  // A life that is not caught up yet delivers nothing: its view does not count.
  const late = [{ node: "a", life: 1, atMs: 10 }, { node: "b", life: 1, atMs: 500 }];
  assertEquals(history(one, late).changed(JOB, 100, 200), false);
});

Deno.test("OwnershipHistory: a death and its refutation in one instant still moved the job", () => {
  const flap = [event("a", 150, "member-dead", first), event("a", 150, "member-alive", first)];
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

Deno.test("OwnershipHistory: a life that never heard of a voter holds it dead, as its store does", () => {
  assertEquals(first, VOTERS[0], "the job's first choice is a's address");
  const aHeard = VOTERS.slice(1).map((v) => event("a", 0, "member-alive", v));
  // Life "b" heard only of the third voter: it holds "a", the job's owner, dead.
  const bHeard = [event("b", 0, "member-alive", VOTERS[2]!)];
  assertEquals(
    new OwnershipHistory(VOTERS, NODES, lives, ready, [...aHeard, ...bHeard]).changed(
      JOB,
      100,
      200,
    ),
    true,
  );
  const bHeardAll = [...bHeard, event("b", 0, "member-alive", VOTERS[0]!)];
  assertEquals(
    new OwnershipHistory(VOTERS, NODES, lives, ready, [...aHeard, ...bHeardAll]).changed(
      JOB,
      100,
      200,
    ),
    false,
  );
});
