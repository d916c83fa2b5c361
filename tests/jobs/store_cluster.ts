/**
 * Five job stores on the simulator, each with its delivery engine, answering every attempt
 * with a 204 after 1 ms and recording it: for tests of what the stores do together (endpoint
 * rate limits, keyed creates).
 */

import { assert } from "../assert.ts";
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

const KEY = "store-cluster-test-cluster-key-0123";

export interface Attempt {
  readonly node: number;
  readonly atMs: number;
  readonly jobId: string;
}

export async function cluster(
  options: { readonly networkSeed?: number; readonly lossProbability?: number } = {},
): Promise<{
  scheduler: SimScheduler;
  network: SimNetwork<Uint8Array>;
  voters: string[];
  stores: JobStore[];
  attempts: Attempt[];
}> {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(options.networkSeed ?? 7), {
    lossProbability: options.lossProbability ?? 0,
  });
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
  return { scheduler, network, voters, stores, attempts };
}

/** Runs the simulator until `promise` settles (at most 5 s of virtual time). */
export async function settle<T>(scheduler: SimScheduler, promise: Promise<T>): Promise<T> {
  let done = false;
  const settled = promise.finally(() => done = true);
  await scheduler.runUntilAsync(scheduler.nowMs + 5_000, () => done);
  assert(done, "the request was answered within 5 s");
  return await settled;
}
