/**
 * Submit admission (src/jobs/submit_admission.ts): the rules in the order they are checked
 * (phase, quorum, queue age, proposals in flight, own records not yet on disk, the backlog of
 * pending jobs for requests that make jobs), the exact
 * boundary of each limit, and the refusals' exact codes and messages; then, through the core,
 * load shedding: while the oldest submit waiting for its majority is older than
 * `submitQueueAgeMaxMs`, new submits are refused at once (`overloaded`, counted in
 * hookd_jobs_queue_age_refusals_total) instead of queueing behind it until they time out; once
 * the queue moves, submits are taken again.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { ReplicationCore, type ReplicationOutput } from "../../src/jobs/replication_core.ts";
import type { SubmitOutcome } from "../../src/jobs/service.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import {
  admissionRefusal,
  type AdmissionRule,
  type AdmissionState,
  BACKLOG_RETRY_AFTER_S,
} from "../../src/jobs/submit_admission.ts";

const SELF = "10.0.0.1:7000";
const WALL = 1_800_000_000_000;
const QUEUE_AGE_REFUSALS = "hookd_jobs_queue_age_refusals_total";

/** Small limits, so each boundary reads plainly. */
const CONFIG = {
  submitQueueAgeMaxMs: 500,
  proposalsMax: 100,
  originPendingMax: 1000,
  backlogJobsMax: 50,
  backlogBytesMax: 4096,
};
const NOW = 10_000;

/** A ready node of 5 voters, all reachable, nothing in flight. */
const READY: AdmissionState = {
  phase: "ready",
  reachableVoters: 5,
  voterCount: 5,
  quorum: 3,
  oldestSubmitStartedAtMs: undefined,
  proposals: 0,
  ownPending: 0,
  makesJobs: true,
  pendingJobs: 0,
  backlogBytes: 0,
  config: CONFIG,
};

/** Every rule broken at once: only the phase would pass were it ready. */
const ALL_BROKEN: AdmissionState = {
  phase: "recovering",
  reachableVoters: 2,
  voterCount: 5,
  quorum: 3,
  oldestSubmitStartedAtMs: NOW - CONFIG.submitQueueAgeMaxMs,
  proposals: CONFIG.proposalsMax,
  ownPending: CONFIG.originPendingMax,
  makesJobs: true,
  pendingJobs: CONFIG.backlogJobsMax,
  backlogBytes: CONFIG.backlogBytesMax,
  config: CONFIG,
};

function overloaded(message: string) {
  return { ok: false, code: "overloaded", message, retryAfterS: 1 };
}

Deno.test("admission: a ready node under every limit is admitted", () => {
  assertEquals(admissionRefusal(READY, NOW), undefined);
  // Each limit one short of refusing, all at once.
  const atTheEdge: AdmissionState = {
    ...READY,
    reachableVoters: READY.quorum,
    oldestSubmitStartedAtMs: NOW - (CONFIG.submitQueueAgeMaxMs - 1),
    proposals: CONFIG.proposalsMax - 1,
    ownPending: CONFIG.originPendingMax - 1,
    pendingJobs: CONFIG.backlogJobsMax - 1,
    backlogBytes: CONFIG.backlogBytesMax - 1,
  };
  assertEquals(admissionRefusal(atTheEdge, NOW), undefined);
});

Deno.test("admission: the rules are checked in order: phase, quorum, queue age, proposals, own pending, backlog", () => {
  const rules: (AdmissionRule | undefined)[] = [];
  let state: AdmissionState = ALL_BROKEN;
  const fixes: Partial<AdmissionState>[] = [
    { phase: "ready" },
    { reachableVoters: 3 },
    { oldestSubmitStartedAtMs: undefined },
    { proposals: 0 },
    { ownPending: 0 },
    { pendingJobs: 0 },
    { backlogBytes: 0 },
  ];
  rules.push(admissionRefusal(state, NOW)?.rule);
  for (const fix of fixes) {
    state = { ...state, ...fix };
    rules.push(admissionRefusal(state, NOW)?.rule);
  }
  assertEquals(rules, [
    "phase",
    "quorum",
    "queue_age",
    "proposals",
    "own_pending",
    "backlog",
    "backlog",
    undefined,
  ]);
});

Deno.test("admission: a node not ready refuses by phase, whatever else holds", () => {
  const cases: [AdmissionState["phase"], string, string][] = [
    ["recovering", "not_ready", "this node is recovering its log and catching up with its peers"],
    ["catching_up", "not_ready", "this node is recovering its log and catching up with its peers"],
    ["stopping", "shutting_down", "this node is shutting down"],
    [
      "failed",
      "storage_failed",
      "this node's write-ahead log failed; it acknowledges nothing (fail-stop)",
    ],
  ];
  for (const [phase, code, message] of cases) {
    const expected = { rule: "phase", refusal: { ok: false, code, message, retryAfterS: 1 } };
    assertEquals(admissionRefusal({ ...READY, phase }, NOW), expected, phase);
    assertEquals(admissionRefusal({ ...ALL_BROKEN, phase }, NOW), expected, `${phase}, all broken`);
  }
});

Deno.test("admission: fewer reachable voters than the quorum refuses no_quorum; exactly the quorum admits", () => {
  assertEquals(admissionRefusal({ ...READY, reachableVoters: 2 }, NOW), {
    rule: "quorum",
    refusal: {
      ok: false,
      code: "no_quorum",
      message: "only 2 of 5 voters are reachable; a submit needs 3",
      retryAfterS: 1,
    },
  });
  assertEquals(admissionRefusal({ ...READY, reachableVoters: 3 }, NOW), undefined);
  // Checked before the limits.
  assertEquals(admissionRefusal({ ...ALL_BROKEN, phase: "ready" }, NOW)?.rule, "quorum");
});

Deno.test("admission: an oldest waiting submit aged submitQueueAgeMaxMs refuses overloaded; one ms younger admits", () => {
  const aged = (ageMs: number) => ({ ...READY, oldestSubmitStartedAtMs: NOW - ageMs });
  assertEquals(admissionRefusal(aged(500), NOW), {
    rule: "queue_age",
    refusal: overloaded(
      "this node's oldest submit has waited 500 ms for its majority (submitQueueAgeMaxMs 500)",
    ),
  });
  assertEquals(admissionRefusal(aged(499), NOW), undefined);
  assertEquals(admissionRefusal(aged(0), NOW), undefined);
  // The wait in the message is rounded to the ms.
  assertEquals(
    admissionRefusal(aged(1234.6), NOW)?.refusal.message,
    "this node's oldest submit has waited 1235 ms for its majority (submitQueueAgeMaxMs 500)",
  );
  // Checked before proposals and own pending.
  assertEquals(
    admissionRefusal({ ...ALL_BROKEN, phase: "ready", reachableVoters: 5 }, NOW)?.rule,
    "queue_age",
  );
});

Deno.test("admission: proposalsMax proposals in flight refuses overloaded; one fewer admits", () => {
  assertEquals(admissionRefusal({ ...READY, proposals: 100 }, NOW), {
    rule: "proposals",
    refusal: overloaded("100 submits are already being replicated (proposalsMax)"),
  });
  assertEquals(admissionRefusal({ ...READY, proposals: 99 }, NOW), undefined);
  // Checked before own pending.
  assertEquals(
    admissionRefusal({ ...READY, proposals: 100, ownPending: 1000 }, NOW)?.rule,
    "proposals",
  );
});

Deno.test("admission: originPendingMax own records not yet on disk refuses overloaded; one fewer admits", () => {
  assertEquals(admissionRefusal({ ...READY, ownPending: 1000 }, NOW), {
    rule: "own_pending",
    refusal: overloaded("this node's log is behind (originPendingMax records not yet on disk)"),
  });
  assertEquals(admissionRefusal({ ...READY, ownPending: 999 }, NOW), undefined);
});

Deno.test("admission: backlogJobsMax pending jobs, or backlogBytesMax of their payloads, refuses a request that makes jobs; one fewer admits", () => {
  const backlog = (message: string) => ({
    rule: "backlog",
    refusal: { ok: false, code: "overloaded", message, retryAfterS: BACKLOG_RETRY_AFTER_S },
  });
  assertEquals(
    admissionRefusal({ ...READY, pendingJobs: 50 }, NOW),
    backlog(
      "50 jobs are pending delivery on this node (backlogJobsMax 50); it takes more once " +
        "deliveries drain them",
    ),
  );
  assertEquals(admissionRefusal({ ...READY, pendingJobs: 49 }, NOW), undefined);
  assertEquals(
    admissionRefusal({ ...READY, backlogBytes: 4096 }, NOW),
    backlog(
      "the jobs pending delivery on this node hold 4096 bytes (backlogBytesMax " +
        "4096); it takes more once deliveries drain them",
    ),
  );
  assertEquals(admissionRefusal({ ...READY, backlogBytes: 4095 }, NOW), undefined);
  assert(BACKLOG_RETRY_AFTER_S > 1, "a backlog drains at the receivers' pace: come back later");
});

Deno.test("admission: a request that makes no jobs (an endpoint write) is never refused for the backlog, and is for the rest", () => {
  const full = { ...READY, makesJobs: false, pendingJobs: 10_000, backlogBytes: 1e9 };
  assertEquals(admissionRefusal(full, NOW), undefined);
  assertEquals(admissionRefusal({ ...full, ownPending: 1000 }, NOW)?.rule, "own_pending");
  assertEquals(admissionRefusal({ ...full, phase: "stopping" }, NOW)?.rule, "phase");
});

Deno.test("admission through the core: a revive refused by phase answers the refusal as it is, and counts no queue-age refusal", () => {
  const metrics = new MetricsRegistry();
  const core = new ReplicationCore({
    self: SELF,
    voters: [SELF],
    rng: new Sfc32(1),
    metrics,
    walRecordBytesMax: 1 << 20,
    payloadBytesMax: 1 << 20,
  });
  core.revive(0, WALL, 7, "no-such-job");
  const outs = core.takeOutputs().filter((o) => o.type === "revive-done");
  assertEquals(outs, [{
    type: "revive-done",
    requestId: 7,
    outcome: {
      ok: false,
      code: "not_ready",
      message: "this node is recovering its log and catching up with its peers",
      retryAfterS: 1,
    },
  }]);
  assertEquals(metrics.sumCounters(QUEUE_AGE_REFUSALS), 0);
});

Deno.test("submits are refused as overloaded while the oldest waiting submit is older than submitQueueAgeMaxMs", () => {
  const metrics = new MetricsRegistry();
  const core = new ReplicationCore({
    self: SELF,
    voters: [SELF],
    rng: new Sfc32(1),
    metrics,
    walRecordBytesMax: 1 << 20,
    payloadBytesMax: 1 << 20,
  });
  const answers = new Map<number, SubmitOutcome>();
  const appends: number[] = [];
  const collect = (nowMs: number) => {
    core.flush(nowMs);
    for (const out of core.takeOutputs() as ReplicationOutput[]) {
      if (out.type === "append") appends.push(out.token);
      if (out.type === "submit-done") answers.set(out.requestId, out.outcome);
    }
  };
  core.recovered(0, WALL);
  collect(0);
  assertEquals(core.phase, "ready");
  const limit = jobsDefaults.submitQueueAgeMaxMs;
  const submit = (nowMs: number, requestId: number) => {
    core.submit(nowMs, WALL + nowMs, requestId, { url: "http://h/x", payload: "{}" });
    collect(nowMs);
  };
  // The log is slow: nothing is persisted yet.
  submit(0, 1);
  submit(limit - 1, 2);
  assertEquals(answers.size, 0, "both wait for their majority");
  submit(limit, 3);
  const refused = answers.get(3);
  assert(
    refused !== undefined && !refused.ok && refused.code === "overloaded",
    JSON.stringify(refused),
  );
  assertEquals(metrics.sumCounters(QUEUE_AGE_REFUSALS), 1, "the core counts a queue-age refusal");
  // The log catches up: the waiting submits are answered and new ones taken again.
  for (const token of appends.splice(0)) core.persisted(limit + 1, token);
  collect(limit + 1);
  assertEquals(answers.get(1)?.ok, true);
  assertEquals(answers.get(2)?.ok, true);
  submit(limit + 2, 4);
  for (const token of appends.splice(0)) core.persisted(limit + 3, token);
  collect(limit + 3);
  assertEquals(answers.get(4)?.ok, true, "taken again once the queue moved");
});
