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

const KEY = "smoke-test-cluster-key-0123456789";

Deno.test("five job stores on the simulator commit and deliver every submit once", async () => {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(1), { lossProbability: 0.05 });
  const voters = [1, 2, 3, 4, 5].map((i) => `10.0.0.${i}:7000`);
  const delivered = new Map<string, number>();
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
    const attempts: AttemptTransport = {
      send(request) {
        delivered.set(request.job.id, (delivered.get(request.job.id) ?? 0) + 1);
        return new Promise((resolve) =>
          runtime.setTimer(
            1,
            () => resolve({ kind: "response", status: 204, body: "", latencyMs: 1 }),
          )
        );
      },
      close() {},
    };
    // The store and its engine share one generator and one registry, as a node's do.
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
          transport: attempts,
        }),
        delivery,
      }),
    );
  }
  await scheduler.runUntilAsync(2_000, () => stores.every((s) => s.readiness().ready));
  assert(stores.every((s) => s.readiness().ready), "every node catches up");
  const outcomes: Promise<unknown>[] = [];
  const ids: string[] = [];
  for (let i = 0; i < 100; i++) {
    scheduler.at(scheduler.nowMs + i, () => {
      outcomes.push(
        stores[i % 5]!.submit({ url: "http://10.1.1.1/hook", payload: `{"n":${i}}` }).then((o) => {
          if (o.ok) ids.push(o.id);
          else throw new Error(`submit ${i} refused: ${o.code} ${o.message}`);
        }),
      );
    });
  }
  await scheduler.runUntilAsync(
    scheduler.nowMs + 10_000,
    () => ids.length === 100 && delivered.size === 100,
  );
  await Promise.all(outcomes);
  assertEquals(ids.length, 100);
  assertEquals(delivered.size, 100);
  for (const id of ids) assertEquals(delivered.get(id), 1, `job ${id} delivered once`);
  // Every node ends up knowing every job as delivered.
  await scheduler.runUntilAsync(scheduler.nowMs + 5_000);
  for (const s of stores) assertEquals(s.core.table.counts.delivered, 100, `${s.nodeId} table`);
  for (const s of stores) await s.close();
});
