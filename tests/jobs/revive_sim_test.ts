/**
 * The whole-cluster simulation with retries by hand (`hookd sim --revives`): dead letters kept
 * seconds only, on skewed clocks, retried through random live nodes under crashes, loss and
 * partitions; every acknowledged retry is delivered or dies again. And the retry checker
 * itself fails what it must (a retry never delivered, one acknowledged on a minority).
 */

import { assert, assertEquals } from "../assert.ts";
import { type ClusterSimOptions, replayCommand, runClusterSim } from "../../src/sim/cluster_sim.ts";
import { checkRevives, checkRun, Findings } from "../../src/sim/cluster_sim_checker.ts";
import type { DeadReport, ReviveLog, SimHistory, SimJobPhase } from "../../src/sim/sim_history.ts";
import { profileFor } from "../../src/sim/sim_profile.ts";
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

Deno.test("retries by hand together with events keep every invariant", async () => {
  // An endpoint disabled for its 410s kills its jobs without an attempt; the checker takes
  // their `dead-letter` lines for their deaths once they are compacted (review of 4c6b5c5:
  // that path logged none, and `--revives --events` seed 6 failed).
  const failures: string[] = [];
  for (const seed of [6, 7, 8]) {
    const options: ClusterSimOptions = { seed, chaosMs: CHAOS_MS, revives: true, events: true };
    const report = await runClusterSim(options);
    if (!report.ok) {
      failures.push(`seed ${seed}: ${report.violations.join("; ")}\n  ${replayCommand(options)}`);
    }
  }
  assertEquals(failures, [], failures.join("\n"));
});

Deno.test("`--revives` seed 4929, once a replica that missed a DONE no log holds, passes", async () => {
  // `--revives` seed 4929: n3 was down when a retry's DONE went out and came back partitioned,
  // then lossy; the DONE's node crashed, and its restart voided the seq after the 16-KiB
  // catch-up logs had let the record go. Only a pending check repairs that, 60 s on; the run
  // used to end after the anti-entropy settle and fail the seed with n3's copy still pending
  // (session 43).
  //
  // Since the WAL's batch end markers carry their batch's length (session 45, 1f094f4), every
  // batch is 4 bytes longer, the simulator's crashes keep other prefixes of unsynced bytes, and
  // this seed no longer reaches that scenario: it passes without a pending check. No other
  // `--revives` seed of 4901..6200 and 6201..about 6700 reached it on that code (one in 350 did
  // before: this one). So the run's wait is no longer exercised here; the test keeps the seed's
  // verdict, and says so when the scenario comes back.
  const lines: string[] = [];
  const options: ClusterSimOptions = { seed: 4929, revives: true, onTrace: (l) => lines.push(l) };
  const report = await runClusterSim(options);
  assertEquals(report.violations, [], replayCommand(options));
  if (lines.some((l) => l.includes("pending-check-settled"))) {
    console.log("seed 4929 again reaches a copy only a pending check repairs");
  }
});

/**
 * One acknowledged retry of job `j` from generation 0 at 100 ms, the receiver's requests and
 * when an owner reported the job dead: what the retry checker finds.
 */
function findings(
  patch: Partial<ReviveLog>,
  requests: Partial<ReceivedRequest>[],
  deadReports: DeadReport[],
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
    requests.map((r) =>
      ({ jobId: "j", status: 204, sentAtMs: 200, nodeSaw: "none", ...r }) as ReceivedRequest
    ),
  ]]);
  const sim = {
    revives: [log],
    submitTimeoutMs: 1_000,
    lives: [{ node: "n1", life: 1, startMs: 0, endMs: undefined }],
    stallLog: [],
    walFailures: [],
    deadReportsOf: () => deadReports,
    phases: () => [{ node: "n1", phase: "pending" }],
  } as unknown as SimHistory;
  const f = new Findings();
  checkRevives(sim, byJob, 3, f);
  return f.list().map((line) => line.slice(0, line.indexOf(":")));
}

Deno.test("the retry checker passes a retry of a delivered job, or one dead again after it", () => {
  assertEquals(findings({}, [{}], []), []);
  assertEquals(findings({}, [], [{ atMs: 300, gen: 1 }]), []);
  // Delivered before the retry, and a node heard it: delivered in every generation.
  assertEquals(findings({}, [{ sentAtMs: 50, nodeSaw: "response" }], []), []);
  // Refused retries promise nothing.
  assertEquals(findings({ outcome: { ok: false, code: "no_quorum" } }, [], []), []);
});

Deno.test("the retry checker fails a retry never delivered, late, on a minority, or unanswered", () => {
  const lost = "acknowledged retry neither delivered nor dead again";
  assertEquals(findings({}, [], []), [lost]);
  // A death reported before the retry was taken, or of its old generation, was not its own.
  assertEquals(findings({}, [], [{ atMs: 60, gen: 1 }]), [lost]);
  assertEquals(findings({}, [], [{ atMs: 300, gen: 0 }]), [lost]);
  assertEquals(findings({}, [{ status: 503 }], []), [lost]);
  // A 2xx before the retry that no node heard (taken for a timeout, no DONE): not a delivery.
  assertEquals(findings({}, [{ sentAtMs: 50, nodeSaw: "timeout" }], []), [lost]);
  assertEquals(findings({ durableOn: ["n1", "n2"] }, [{}], []), [
    "retry not durable on a majority when acknowledged",
  ]);
  assertEquals(findings({ answeredAtMs: 1_300 }, [{}], []), ["retry answered too late"]);
  assertEquals(
    findings({ answeredAtMs: undefined, outcome: undefined }, [], []),
    ["retry never answered"],
  );
});

/** A run's record with one acknowledged job, never attempted, held `phase` on three nodes. */
function oneJobRun(phase: SimJobPhase, deadReports: DeadReport[]): SimHistory {
  const nodes = ["n1", "n2", "n3"];
  return {
    voters: nodes,
    profile: profileFor(1),
    ackedJobs: () => new Map([["job_x", 0]]),
    submits: [{
      serial: 0,
      bodyId: 0,
      node: "n1",
      life: 1,
      atMs: 10,
      answeredAtMs: 20,
      outcome: { ok: true, id: "job_x", existing: false },
      durableOn: nodes,
    }],
    bodies: [{
      bodyId: 0,
      request: { url: "http://a.test/", payload: '{"body":0}' },
      bodyHash: "",
    }],
    scheduler: { nowMs: 100_000 },
    receiver: { requests: [] },
    phases: () => nodes.map((node) => ({ node, phase })),
    deadReportsOf: () => deadReports,
    compactedAfterDone: () => false,
    upNodes: () => nodes.map((node) => ({ node, phase: "ready" })),
    expectedUp: () => nodes,
    endpoints: [],
    events: [],
    rotations: [],
    revives: [],
    lives: nodes.map((node) => ({ node, life: 1, startMs: 0, endMs: undefined })),
    nodeIds: () => nodes,
    readyLog: [],
    memberLog: [],
    walFailures: [],
    submitTimeoutMs: 1_000,
    stallLog: [],
    probe: { scan: () => {}, stampConflicts: [], stampConflictsMore: 0 },
    disk: () => undefined,
  } as unknown as SimHistory;
}

Deno.test("a job compacted everywhere counts as dead only when an owner reported it dead", () => {
  // Session 39's review: a tombstone alone is no proof of death (a copy compacted as finished
  // elsewhere, the tombstone spread, leaves the same picture, and that is a loss). Mutation:
  // take any tombstone for a death (`sim-compacted-is-dead`).
  const lost = "acknowledged job neither delivered nor dead-lettered after the drain";
  const kinds = (phase: SimJobPhase, reports: DeadReport[]) =>
    checkRun(oneJobRun(phase, reports), true).violations.map((v) => v.slice(0, v.indexOf(":")));
  assertEquals(kinds("absent", []), [lost]);
  assertEquals(kinds("compacted", []), [lost]);
  assertEquals(kinds("compacted", [{ atMs: 50, gen: 0 }]), []);
  assertEquals(kinds("dead", []), []);
});
