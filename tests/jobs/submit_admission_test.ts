/**
 * Load shedding in the replication core: while the oldest submit waiting for its majority is
 * older than `submitQueueAgeMaxMs`, new submits are refused at once (`overloaded`) instead of
 * queueing behind it until they time out; once the queue moves, submits are taken again.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { ReplicationCore, type ReplicationOutput } from "../../src/jobs/replication_core.ts";
import type { SubmitOutcome } from "../../src/jobs/service.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";

const SELF = "10.0.0.1:7000";
const WALL = 1_800_000_000_000;

Deno.test("submits are refused as overloaded while the oldest waiting submit is older than submitQueueAgeMaxMs", () => {
  const core = new ReplicationCore({
    self: SELF,
    voters: [SELF],
    rng: new Sfc32(1),
    metrics: new MetricsRegistry(),
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
