/**
 * An endpoint's `rate_limit_per_s` across the cluster (docs/endpoints.md, "Rate limits across
 * the cluster"): five job stores on the simulator, each with its engine; every owner of the
 * endpoint's jobs takes its share (the rate over the voters it holds up), so the cluster never
 * exceeds the rate by more than each node's one-attempt burst, and a PATCH applies to the jobs
 * already held.
 */

import { assert, assertEquals } from "../assert.ts";
import type { EndpointFields } from "../../src/jobs/service.ts";
import { cluster, settle } from "./store_cluster.ts";

function fields(rateLimitPerS: number): EndpointFields {
  return {
    url: "http://10.1.1.1/hook",
    eventTypes: [],
    secret: "whsec_" + btoa("0123456789abcdef01234567"),
    description: "",
    headers: {},
    rateLimitPerS,
    ordered: false,
    disabled: false,
    disabledReason: "",
  };
}

/** The most attempts in any window [t, t + 1000 ms). */
function maxPerSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - 1_000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

Deno.test("rate_limit_per_s: five owners share the rate; a PATCH raises it for held jobs", async () => {
  const { scheduler, stores, attempts } = await cluster();
  const created = await settle(scheduler, stores[0]!.createEndpoint(fields(10)));
  assert(created.ok, JSON.stringify(created));
  const endpointId = created.endpoint.id;
  // Every node holds the endpoint before the events come (replication is live).
  await scheduler.runUntilAsync(scheduler.nowMs + 500);
  const events = 120;
  const answers: Promise<unknown>[] = [];
  for (let i = 0; i < events; i++) {
    answers.push(stores[i % 5]!.submitEvent({ type: "t", payload: `{"n":${i}}` }));
  }
  const startMs = scheduler.nowMs;
  await scheduler.runUntilAsync(startMs + 6_000);
  const first = attempts.filter((a) => a.atMs < startMs + 6_000);
  // Each node: at most its share, 10 / 5 = 2 per second, plus its one-attempt bucket.
  for (let n = 0; n < 5; n++) {
    const mine = first.filter((a) => a.node === n).map((a) => a.atMs);
    assert(mine.length > 0, `node ${n} owns some of the jobs`);
    assert(maxPerSecond(mine) <= 2 + 1, `node ${n}: ${maxPerSecond(mine)} in one second`);
  }
  // The cluster: the rate, plus at most one burst attempt per node.
  const clusterMax = maxPerSecond(first.map((a) => a.atMs));
  assert(clusterMax <= 10 + 5, `the cluster made ${clusterMax} attempts in one second`);
  assert(first.length >= 40 && first.length <= 6 * 10 + 5, `${first.length} attempts in 6 s`);
  // A PATCH to 100/s: the jobs already held go at the new pace.
  const patched = await settle(
    scheduler,
    stores[2]!.updateEndpoint(endpointId, { rateLimitPerS: 100 }),
  );
  assert(patched.ok);
  const patchedAtMs = scheduler.nowMs;
  await scheduler.runUntilAsync(patchedAtMs + 10_000, () => attempts.length >= events);
  await Promise.all(answers);
  assertEquals(new Set(attempts.map((a) => a.jobId)).size, events, "every job delivered");
  assert(
    scheduler.nowMs - patchedAtMs < 3_000,
    `the rest took ${scheduler.nowMs - patchedAtMs} ms after the PATCH`,
  );
  // Let the last answers come back before the engines close.
  await scheduler.runUntilAsync(scheduler.nowMs + 1_000);
  for (const s of stores) await s.close();
});
