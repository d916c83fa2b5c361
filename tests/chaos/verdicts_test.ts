/**
 * The chaos run's verdicts on hand-made observations: detection counts only a live observer
 * that held the subject alive, deaths nothing explains are false, a resumed node's attempts of
 * jobs it lost are stale only before it caught up and only in the same process, and
 * duplicates are explained only by faults that touch the nodes that could have attempted them.
 */

import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  type Attempt,
  deliveryVerdict,
  detectionFigures,
  explainsDuplicate,
  type FaultLog,
  judgeDuplicate,
  type MemberNotice,
  stopFigures,
  stopsNoticed,
  undetectedStops,
} from "../../src/chaos/verdicts.ts";
import type { Fault } from "../../src/chaos/schedule.ts";

const IDS = ["n1", "n2", "n3", "n4", "n5"];

function log(fault: Fault, startedAtMs: number, endedAtMs: number): FaultLog {
  return { fault, startedAtMs, endedAtMs };
}

const dead = (observer: string, subject: string, atMs: number): MemberNotice => ({
  observer,
  subject,
  event: "member-dead",
  atMs,
});

Deno.test("detectionFigures times live observers that held the subject alive, and finds false deaths", () => {
  const kill = log({ kind: "kill", atMs: 0, endMs: 5_000, node: "n1" }, 1_000, 6_000);
  const notices: MemberNotice[] = [
    dead("n2", "n1", 2_200),
    dead("n3", "n1", 2_500),
    // n4 held n1 dead already (an earlier partition): nothing to detect.
    dead("n4", "n1", 500),
    dead("n4", "n1", 9_000),
    // Nothing explains n5 declaring n2 dead.
    dead("n5", "n2", 3_000),
  ];
  const figures = detectionFigures([kill], notices, IDS, 15_000);
  assertEquals([figures.maxMs, figures.count, figures.falseDead], [1_500, 2, 2]);
  // n4's late notice is explained within 15 s of the kill's end, not within 1 s.
  assertEquals(detectionFigures([kill], notices, IDS, 1_000).falseDead, 3);
});

Deno.test("stopFigures: stale only before the resumed process caught up, and only that process", () => {
  const stop = log({ kind: "stop", atMs: 0, endMs: 10_000, node: "n1" }, 0, 10_000);
  const killAfter = log({ kind: "kill", atMs: 20_000, endMs: 25_000, node: "n1" }, 20_000, 25_000);
  const attempts = new Map<string, Attempt[]>([
    ["j1", [
      { node: "n2", kind: "delivered", startedAtMs: 5_000, latencyMs: 10, outcome: "success" },
      { node: "n1", kind: "delivered", startedAtMs: 10_050, latencyMs: 10, outcome: "success" },
    ]],
    ["j2", [
      { node: "n3", kind: "delivered", startedAtMs: 6_000, latencyMs: 10, outcome: "success" },
      { node: "n1", kind: "delivered", startedAtMs: 12_000, latencyMs: 10, outcome: "success" },
    ]],
    ["j3", [
      { node: "n4", kind: "delivered", startedAtMs: 7_000, latencyMs: 10, outcome: "success" },
      // A later process of n1 (after the kill) is not the stopped one.
      { node: "n1", kind: "delivered", startedAtMs: 26_000, latencyMs: 10, outcome: "success" },
    ]],
  ]);
  const received = new Map([["j1", { at: 5_010 }], ["j2", { at: 6_010 }], ["j3", { at: 7_010 }]]);
  const resyncs = [{ node: "n1", event: "resynced", atMs: 11_000 }];
  const figures = stopFigures([stop, killAfter], attempts, received, resyncs);
  assertEquals([figures.stale, figures.afterResync, figures.resumedOfLost], [1, 1, 2]);
});

Deno.test("explainsDuplicate: faults on the nodes that could have attempted the job, and late receivers", () => {
  const prefs = ["n1", "n2", "n3", "n4", "n5"];
  const kill = (node: string): Fault => ({ kind: "kill", atMs: 0, endMs: 1, node });
  // n2 attempted it; n1 (ranked above) could have had an unreported attempt at its kill.
  assertEquals(explainsDuplicate(kill("n1"), ["n2"], prefs), true);
  assertEquals(explainsDuplicate(kill("n2"), ["n2"], prefs), true);
  assertEquals(explainsDuplicate(kill("n5"), ["n2"], prefs), false);
  const outage = (mode: "500" | "503" | "slow" | "reset"): Fault => ({
    kind: "receiver_outage",
    atMs: 0,
    endMs: 1,
    mode,
  });
  assertEquals(explainsDuplicate(outage("reset"), ["n1"], prefs), true);
  assertEquals(explainsDuplicate(outage("503"), ["n1"], prefs), false);
});

Deno.test("deliveryVerdict judges every acknowledged job: delivered, dead-lettered or lost", () => {
  const ids = Array.from({ length: 1_000 }, (_, i) => `j${i}`);
  // Received, except j500 (dead-lettered) and j999 (nothing): the last one acknowledged.
  const receipts = ids.map((id, i) =>
    id === "j500" || id === "j999" ? null : { at: i, duplicates: i % 100 === 0 ? 1 : 0 }
  );
  const verdict = deliveryVerdict(ids, receipts, new Set(["j500", "elsewhere"]));
  assertEquals(verdict.lostIds, ["j999"]);
  assertEquals(verdict.deadLetteredIds, ["j500"]);
  assertEquals([verdict.delivered, verdict.duplicates, verdict.duplicateJobs.length], [
    998,
    9,
    9,
  ]);
  // Receipts that do not line up with the acknowledged ids are a harness bug, not a verdict.
  assertThrows(() => deliveryVerdict(ids, receipts.slice(1), new Set()));
});

const attempt = (node: string, startedAtMs: number, outcome: string): Attempt => ({
  node,
  kind: outcome === "success" ? "delivered" : "retry",
  startedAtMs,
  latencyMs: 10,
  outcome,
});

Deno.test("judgeDuplicate: a lost answer explains extra receipts only when the attempts account for them", () => {
  const prefs = ["n1", "n2", "n3", "n4", "n5"];
  const twice = { at: 1_005, duplicates: 1 };
  // The receiver had the first attempt, whose answer never came; the retry delivered again.
  const lost = judgeDuplicate(
    twice,
    [attempt("n1", 1_000, "timeout"), attempt("n1", 2_100, "success")],
    prefs,
    [],
  );
  assertEquals([lost.lostAnswer, lost.explained], [true, true]);
  // A refused connection before the first receipt delivered nothing; two successful attempts by
  // two nodes are two deliveries, which no lost answer explains: with no fault, unexplained.
  const two = judgeDuplicate(
    twice,
    [
      attempt("n1", 990, "network_error"),
      attempt("n1", 1_000, "success"),
      attempt("n3", 4_000, "success"),
    ],
    prefs,
    [],
  );
  assertEquals([two.lostAnswer, two.explained], [false, false]);
  // The same, with n1 killed around it: explained by the kill.
  const kill = log({ kind: "kill", atMs: 0, endMs: 1, node: "n1" }, 1_500, 3_000);
  const killed = judgeDuplicate(
    twice,
    [attempt("n1", 1_000, "success"), attempt("n3", 4_000, "success")],
    prefs,
    [kill],
  );
  assertEquals([killed.lostAnswer, killed.explained, killed.around.length], [false, true, 1]);
  // Long after the kill (past the lookback), it explains nothing.
  const later = judgeDuplicate(
    { at: 100_000, duplicates: 1 },
    [attempt("n1", 100_000, "success"), attempt("n3", 101_000, "success")],
    prefs,
    [kill],
  );
  assertEquals(later.explained, false);
});

Deno.test("undetectedStops: a stop no live node declared dead did not do its job", () => {
  const stop = log({ kind: "stop", atMs: 0, endMs: 10_000, node: "n1" }, 0, 10_000);
  assertEquals(undetectedStops([stop], [dead("n2", "n1", 4_000)], IDS), []);
  // Already held dead (a partition just before) counts as detected.
  assertEquals(undetectedStops([stop], [dead("n3", "n1", -500)], IDS), []);
  const missed = undetectedStops([stop], [dead("n2", "n1", 12_000)], IDS);
  assertEquals(missed.length, 1);
  assert(missed[0]!.why.includes("no live node declared n1 dead"), missed[0]!.why);
  // An observer that was itself stopped meanwhile does not count.
  const other = log({ kind: "stop", atMs: 0, endMs: 10_000, node: "n2" }, 0, 10_000);
  assertEquals(
    undetectedStops([stop, other], [dead("n2", "n1", 4_000), dead("n1", "n2", 4_000)], IDS).length,
    2,
  );
});

Deno.test("stopsNoticed: each stop needs its own freeze line; extra ones are false freezes", () => {
  const a = log({ kind: "stop", atMs: 0, endMs: 10_000, node: "n1" }, 0, 10_000);
  const b = log({ kind: "stop", atMs: 20_000, endMs: 30_000, node: "n1" }, 20_000, 30_000);
  // One line for two stops of n1 (and one for n4, which no stop explains).
  const seen = stopsNoticed([a, b], [{ node: "n1", atMs: 10_050 }, { node: "n4", atMs: 15_000 }]);
  assertEquals(seen.unnoticed.map((m) => m.fault), [b]);
  assertEquals(seen.falseStalls, 1);
  assertEquals(
    stopsNoticed([a, b], [{ node: "n1", atMs: 10_050 }, { node: "n1", atMs: 30_020 }]).unnoticed,
    [],
  );
  // Killed right after SIGCONT: it had no time to log, and is not judged.
  const kill = log({ kind: "kill", atMs: 30_500, endMs: 35_000, node: "n1" }, 30_500, 35_000);
  assertEquals(stopsNoticed([a, b, kill], [{ node: "n1", atMs: 10_050 }]).unnoticed, []);
});
