/**
 * Whether an ownership change preceded a duplicate, on hand-made observations: a death, a
 * departure or a return of a node that could own the job, in any node's view, inside the
 * duplicate's window; not a suspicion, not a node ranked below every node that attempted it,
 * not a change outside the window.
 */

import { assertEquals } from "../assert.ts";
import {
  type Attempt,
  DUPLICATE_LOOKBACK_MS,
  type FaultLog,
  type MemberNotice,
  ownershipChanged,
  stopFigures,
  undetectedStops,
} from "../../src/chaos/verdicts.ts";

const PREFS = ["n1", "n2", "n3", "n4", "n5"];
const receipt = { at: 100_000, duplicates: 1 };
const tries: Attempt[] = [
  { node: "n2", kind: "first", startedAtMs: 100_000, latencyMs: 5, outcome: "success" },
  { node: "n2", kind: "retry", startedAtMs: 101_000, latencyMs: 5, outcome: "success" },
];
const notice = (event: string, subject: string, atMs: number): MemberNotice => ({
  observer: "n4",
  subject,
  event,
  atMs,
});

Deno.test("ownershipChanged: deaths, departures and returns of a possible owner in the window", () => {
  assertEquals(ownershipChanged(receipt, tries, PREFS, []), false);
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n1", 99_000)]),
    true,
  );
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-left", "n2", 100_500)]),
    true,
  );
  // A suspicion moves no job.
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-suspect", "n1", 99_000)]),
    false,
  );
  // A node ranked below the only node that attempted it owns nothing here.
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n5", 99_000)]),
    false,
  );
  // Outside the window.
  const early = 100_000 - DUPLICATE_LOOKBACK_MS - 1;
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n1", early)]),
    false,
  );
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n1", 103_000)]),
    false,
  );
  // A return counts only after the same observer held it dead (a death before the window).
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [
      notice("member-dead", "n1", early),
      notice("member-alive", "n1", 99_500),
    ]),
    true,
  );
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-alive", "n1", 99_500)]),
    false,
  );
});

Deno.test("undetectedStops: a node killed later in the stop detects it while it is up", () => {
  const ids = ["n1", "n2", "n3", "n4", "n5"];
  const f = (fault: FaultLog["fault"], from: number, to: number): FaultLog => ({
    fault,
    startedAtMs: from,
    endedAtMs: to,
  });
  const stop = f({ kind: "stop", atMs: 0, endMs: 12_000, node: "n3" }, 0, 12_000);
  // n2 and n4 are up for the stop's first 6 s; n1 is down the whole stop; only n5 stays up.
  const faults = [
    stop,
    f({ kind: "kill", atMs: 6_000, endMs: 9_000, node: "n4" }, 6_000, 9_000),
    f({ kind: "kill", atMs: 9_000, endMs: 12_500, node: "n2" }, 9_000, 12_500),
    f({ kind: "kill", atMs: -3_000, endMs: 13_000, node: "n1" }, -3_000, 13_000),
  ];
  const deadBy = (observer: string, atMs: number): MemberNotice => ({
    observer,
    subject: "n3",
    event: "member-dead",
    atMs,
  });
  assertEquals(undetectedStops(faults, [deadBy("n4", 2_000)], ids), []);
  // A notice stamped while its node was down (killed) does not count.
  assertEquals(undetectedStops(faults, [deadBy("n4", 7_000)], ids).length, 1);
  assertEquals(undetectedStops(faults, [], ids).length, 1);
});

Deno.test("stopFigures: a node frozen while catching up after a restart is caught up at caught-up", () => {
  const stop: FaultLog = {
    fault: { kind: "stop", atMs: 0, endMs: 10_000, node: "n1" },
    startedAtMs: 0,
    endedAtMs: 10_000,
  };
  const attempts = new Map<string, Attempt[]>([["j", [
    { node: "n2", kind: "first", startedAtMs: 5_000, latencyMs: 5, outcome: "success" },
    { node: "n1", kind: "first", startedAtMs: 12_000, latencyMs: 5, outcome: "success" },
  ]]]);
  const receivedAt = new Map([["j", { at: 5_005 }]]);
  const caughtUp = [{ node: "n1", event: "caught-up", atMs: 11_500 }];
  const judged = stopFigures([stop], attempts, receivedAt, caughtUp);
  assertEquals([judged.stale, judged.afterResync], [0, 1]);
  // Before it caught up, the same attempt is stale.
  const early = stopFigures([stop], attempts, receivedAt, [{ ...caughtUp[0]!, atMs: 12_500 }]);
  assertEquals([early.stale, early.afterResync], [1, 0]);
});
