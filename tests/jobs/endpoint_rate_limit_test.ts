/**
 * An endpoint's `rate_limit_per_s` across the cluster (docs/endpoints.md, "Rate limits across
 * the cluster"): five job stores on the simulator, each with its engine; every owner of the
 * endpoint's jobs takes its share (the rate over the voters it holds up), so the cluster never
 * exceeds the rate by more than each node's one-attempt burst, and a PATCH applies to the jobs
 * already held.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import { SimNetwork } from "../../src/sim/network.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { SimSocket } from "../../src/sim/sim_socket.ts";
import { UdpTransport } from "../../src/transport/udp_transport.ts";
import { JobStore } from "../../src/jobs/job_store.ts";
import type { AttemptTransport } from "../../src/delivery/http_transport.ts";
import { deliveryEngineFor } from "../../src/delivery/engine.ts";
import { deliveryDefaults } from "../../src/config/delivery.ts";
import type { EndpointFields } from "../../src/jobs/service.ts";

const KEY = "rate-limit-test-cluster-key-0123456";

interface Attempt {
  readonly node: number;
  readonly atMs: number;
  readonly jobId: string;
}

async function cluster(): Promise<{
  scheduler: SimScheduler;
  stores: JobStore[];
  attempts: Attempt[];
}> {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(7), { lossProbability: 0 });
  const voters = [1, 2, 3, 4, 5].map((i) => `10.0.0.${i}:7000`);
  const attempts: Attempt[] = [];
  const stores: JobStore[] = [];
  for (let i = 0; i < 5; i++) {
    const runtime = new SimRuntime(scheduler);
    const transport = UdpTransport.start({
      nodeId: `n${i + 1}`,
      clusterKey: KEY,
      socket: new SimSocket(network, voters[i]!),
      runtime,
      rng: new Sfc32(100 + i),
    });
    const receiver: AttemptTransport = {
      send(request) {
        attempts.push({ node: i, atMs: scheduler.nowMs, jobId: request.job.id });
        return new Promise((resolve) =>
          runtime.setTimer(
            1,
            () => resolve({ kind: "response", status: 204, body: "", latencyMs: 1 }),
          )
        );
      },
      close() {},
    };
    const rng = new Sfc32(200 + i);
    const metrics = new MetricsRegistry();
    const delivery = { ...deliveryDefaults, allowPrivateTargets: true };
    stores.push(
      await JobStore.open({
        self: voters[i]!,
        nodeId: `n${i + 1}`,
        voters,
        dataDir: "/data",
        fs: new SimDisk(),
        transport,
        members: () =>
          voters.map((a, j) => ({
            nodeId: `n${j + 1}`,
            address: a,
            state: "alive" as const,
            incarnation: 1,
          })),
        runtime,
        rng,
        metrics,
        scheduler: deliveryEngineFor({
          config: delivery,
          runtime,
          rng,
          metrics,
          transport: receiver,
        }),
        delivery,
      }),
    );
  }
  await scheduler.runUntilAsync(2_000, () => stores.every((s) => s.readiness().ready));
  assert(stores.every((s) => s.readiness().ready), "every node catches up");
  return { scheduler, stores, attempts };
}

/** Runs the simulator until `promise` settles (at most 5 s of virtual time). */
async function settle<T>(scheduler: SimScheduler, promise: Promise<T>): Promise<T> {
  let done = false;
  const settled = promise.finally(() => done = true);
  await scheduler.runUntilAsync(scheduler.nowMs + 5_000, () => done);
  assert(done, "the request was answered within 5 s");
  return await settled;
}

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
