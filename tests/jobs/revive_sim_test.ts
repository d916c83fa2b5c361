/**
 * The whole-cluster simulation with retries by hand (`hookd sim --revives`): dead letters kept
 * seconds only, on skewed clocks, retried through random live nodes under crashes, loss and
 * partitions; every acknowledged retry is delivered or dies again. And the retry checker
 * itself fails what it must (a retry never delivered, one acknowledged on a minority).
 */

import { assert, assertEquals } from "../assert.ts";
import { type ClusterSimOptions, replayCommand, runClusterSim } from "../../src/sim/cluster_sim.ts";
import { checkRevives, Findings } from "../../src/sim/cluster_sim_checker.ts";
import type { ReviveLog, SimHistory } from "../../src/sim/sim_history.ts";
import type { ReceivedRequest } from "../../src/sim/sim_receiver.ts";

/** Long enough for jobs to die (a whole retry schedule) and be retried during the faults. */
const CHAOS_MS = 15_000;
const SEEDS = 10;

Deno.test(`the whole-cluster simulation with retries by hand keeps every invariant over ${SEEDS} seeds`, async () => {
  const failures: string[] = [];
  let revivesAcked = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const options: ClusterSimOptions = { seed, chaosMs: CHAOS_MS, revives: true };
    const report = await runClusterSim(options);
    if (!report.ok) {
      failures.push(`seed ${seed}: ${report.violations.join("; ")}\n  ${replayCommand(options)}`);
    }
    revivesAcked += report.stats.revivesAcked;
  }
  assertEquals(failures, [], failures.join("\n"));
  // The runs did something: retries were acknowledged.
  assert(revivesAcked > 50, `${revivesAcked} retries acknowledged`);
});

/** One acknowledged retry of job `j` from generation 0 at 100 ms, and what the run left. */
function findings(
  patch: Partial<ReviveLog>,
  requests: Partial<ReceivedRequest>[],
  finishedGen: number | undefined,
): string[] {
  const log: ReviveLog = {
    serial: 0,
    jobId: "j",
    fromGen: 0,
    node: "n1",
    life: 1,
    atMs: 100,
    answeredAtMs: 110,
    outcome: { ok: true },
    durableOn: ["n1", "n2", "n3"],
    ...patch,
  };
  const byJob = new Map<string, ReceivedRequest[]>([[
    "j",
    requests.map((r) => ({ jobId: "j", status: 204, sentAtMs: 200, ...r }) as ReceivedRequest),
  ]]);
  const sim = {
    revives: [log],
    submitTimeoutMs: 1_000,
    lives: [{ node: "n1", life: 1, startMs: 0, endMs: undefined }],
    stallLog: [],
    walFailures: [],
    finishedGen: () => finishedGen,
    phases: () => [{ node: "n1", phase: "pending" }],
  } as unknown as SimHistory;
  const f = new Findings();
  checkRevives(sim, byJob, 3, f);
  return f.list().map((line) => line.slice(0, line.indexOf(":")));
}

Deno.test("the retry checker passes a retry delivered after it, or dead again", () => {
  assertEquals(findings({}, [{}], undefined), []);
  assertEquals(findings({}, [], 1), []);
  // Refused retries promise nothing.
  assertEquals(findings({ outcome: { ok: false, code: "no_quorum" } }, [], undefined), []);
});

Deno.test("the retry checker fails a retry never delivered, late, on a minority, or unanswered", () => {
  const lost = "acknowledged retry neither delivered nor dead again";
  assertEquals(findings({}, [], undefined), [lost]);
  // A 2xx sent before the retry started was the old generation's; a dead copy of it too.
  assertEquals(findings({}, [{ sentAtMs: 50 }], 0), [lost]);
  assertEquals(findings({ durableOn: ["n1", "n2"] }, [{}], undefined), [
    "retry not durable on a majority when acknowledged",
  ]);
  assertEquals(findings({ answeredAtMs: 1_300 }, [{}], undefined), ["retry answered too late"]);
  assertEquals(
    findings({ answeredAtMs: undefined, outcome: undefined }, [], undefined),
    ["retry never answered"],
  );
});
