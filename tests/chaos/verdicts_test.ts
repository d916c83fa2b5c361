/**
 * The chaos run's verdicts on hand-made observations: detection counts only a live observer
 * that held the subject alive, deaths nothing explains are false, a resumed node's attempts of
 * jobs it lost are stale only before it caught up and only in the same process, and
 * duplicates are explained only by faults that touch the nodes that could have attempted them.
 */

import { assertEquals } from "../assert.ts";
import {
  type Attempt,
  detectionFigures,
  explainsDuplicate,
  type FaultLog,
  type MemberNotice,
  stopFigures,
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
