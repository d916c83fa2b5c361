/**
 * The pending checks' state machine alone (src/jobs/pending_checks.ts): a real job table, a
 * fake core around it (the phase, the owner view, what is sent). The cluster behaviour is in
 * pending_check_test.ts.
 */

import { assert, assertEquals } from "../assert.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { registerMetrics } from "../../src/jobs/core_metrics.ts";
import type { OutgoingMessage } from "../../src/jobs/job_messages.ts";
import type { JobRecord } from "../../src/jobs/job_model.ts";
import { JobTable } from "../../src/jobs/job_table.ts";
import { PendingChecks } from "../../src/jobs/pending_checks.ts";
import type { CorePhase } from "../../src/jobs/submit_admission.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { plainSpec, tableTestOptions } from "./arbitraries.ts";

const WALL = 1_800_000_000_000;
const SELF = "10.0.0.1:7000";
const OWNER = "10.0.0.2:7000";

function rig(config: Partial<typeof jobsDefaults> = {}) {
  const table = new JobTable(tableTestOptions());
  const sent: Array<{ to: string; message: OutgoingMessage }> = [];
  let phase: CorePhase = "ready";
  const checks = new PendingChecks({
    self: SELF,
    config: { ...jobsDefaults, ...config },
    metrics: registerMetrics(new MetricsRegistry()),
    table,
    ownership: { ownerOf: () => OWNER, isDown: () => false },
    host: {
      phase: () => phase,
      send: (to, message) => sent.push({ to, message }),
      sendChunked: () => {},
      applyAndReact: (_nowMs: number, record: JobRecord, wallMs: number) =>
        table.apply(record, wallMs).effect,
      addToBatch: () => {},
      orderedHead: () => undefined,
      handOff: () => {},
      log: () => {},
    },
  });
  const submit = (id: string, atWallMs: number) =>
    table.apply(
      {
        type: "submit",
        stamp: { origin: OWNER, seq: table.size + 1 },
        spec: plainSpec(id, atWallMs),
      },
      atWallMs,
    );
  return {
    table,
    checks,
    sent,
    submit,
    setPhase: (p: CorePhase) => {
      phase = p;
    },
  };
}

/** The job ids the checks sent, in order. */
function askedIds(sent: Array<{ message: OutgoingMessage }>): string[] {
  return sent.flatMap(({ message }) => message.kind === "pending-check" ? message.jobIds : []);
}

Deno.test("a job due is watched at the first walk and asked about once unmoved for pendingCheckAfterMs", () => {
  const r = rig();
  r.submit("job_a", WALL);
  r.checks.tick(0, WALL + 1);
  assertEquals([r.checks.watching, askedIds(r.sent)], [1, []]);
  r.checks.tick(jobsDefaults.pendingCheckAfterMs - 1, WALL + jobsDefaults.pendingCheckAfterMs - 1);
  assertEquals(askedIds(r.sent), []);
  const atMs = 2 * jobsDefaults.pendingCheckAfterMs;
  r.checks.tick(atMs, WALL + atMs);
  assertEquals(askedIds(r.sent), ["job_a"]);
  assertEquals(r.sent[0]!.to, OWNER);
});

Deno.test("a job whose next attempt is ahead is not watched; a RETRY moving it starts the watch again", () => {
  const r = rig();
  r.submit("job_a", WALL);
  r.checks.tick(0, WALL + 1);
  assertEquals(r.checks.watching, 1);
  const retry: JobRecord = {
    type: "retry",
    stamp: { origin: OWNER, seq: 10 },
    jobId: "job_a",
    gen: 0,
    attemptsMade: 1,
    nextAttemptAtMs: WALL + 3_600_000,
    attempt: {
      attempt: 1,
      startedAtMs: WALL,
      latencyMs: 1,
      outcome: "http_error",
      status: 500,
      detail: "",
      node: OWNER,
    },
  };
  r.table.apply(retry, WALL + 2);
  r.checks.tick(jobsDefaults.pendingCheckIntervalMs, WALL + 120_000);
  assertEquals(r.checks.watching, 0, "not due: forgotten");
  r.checks.tick(2 * jobsDefaults.pendingCheckIntervalMs, WALL + 3_600_001);
  assertEquals(r.checks.watching, 1);
  assertEquals(askedIds(r.sent), []);
});

Deno.test("a walk that finds the node not ready lets go of its place in the index", () => {
  // A live iterator pins every outgrown copy of the Set's storage it has not moved past.
  const r = rig({ pendingCheckScanMax: 1 });
  for (const id of ["job_a", "job_b", "job_c"]) r.submit(id, WALL);
  r.checks.tick(0, WALL + 1);
  assert(r.checks.walking, "one job looked at of three: the round goes on at the next walk");
  r.setPhase("catching_up");
  r.checks.tick(jobsDefaults.pendingCheckIntervalMs, WALL + 2);
  assert(!r.checks.walking, "let go while not ready");
});
