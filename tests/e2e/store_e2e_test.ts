/**
 * The replicated job store on real processes: five `hookd node` processes on loopback and a
 * receiver in this test process. Nodes are SIGKILLed mid-stream and restarted; every
 * acknowledged job must reach the receiver, and a restarted node must catch up.
 */

import { assert, assertEquals } from "../assert.ts";
import { LocalCluster, waitUntil } from "../../src/cluster/local_cluster.ts";
import {
  allReady,
  ready,
  startCluster,
  startReceiver,
  submit,
  type SubmitResult,
} from "./store_cluster.ts";

async function jobsOf(
  cluster: LocalCluster,
  id: string,
): Promise<{ delivered: number; pending: number; dead: number }> {
  const response = await fetch(`${cluster.httpUrls.get(id)}/v1/cluster`);
  return (await response.json()).jobs;
}

Deno.test({
  name: "an owner SIGKILLed mid-stream loses no acknowledged job, and catches up when it returns",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = startReceiver();
    const { cluster, ids } = await startCluster();
    try {
      // The receiver is down while n1 is killed, so n1 dies holding jobs it owns, pending.
      receiver.failing = true;
      const acked: string[] = [];
      const ackedByN1: string[] = [];
      let refused = 0;
      for (let n = 0; n < 300; n++) {
        if (n === 120) await cluster.kill("n1");
        const node = ids[n % 5]!;
        if (!cluster.isRunning(node)) continue;
        const result = await submit(cluster, node, receiver.url, n);
        if (result.status === 202 && result.id !== undefined) {
          acked.push(result.id);
          if (node === "n1") ackedByN1.push(result.id);
        } else refused++;
        await new Promise((r) => setTimeout(r, 5));
      }
      assert(acked.length >= 200, `only ${acked.length} acknowledged (${refused} refused)`);
      assert(ackedByN1.length >= 20, `n1 acknowledged (and owns) ${ackedByN1.length} jobs`);
      receiver.failing = false;
      // Every acknowledged job, n1's included, is delivered while n1 is still down.
      const all = await waitUntil(() => acked.every((id) => receiver.received.has(id)), 60_000);
      const missing = acked.filter((id) => !receiver.received.has(id));
      assert(all, `${missing.length} acknowledged jobs never delivered: ${missing.slice(0, 5)}`);
      cluster.start("n1");
      assert(await waitUntil(() => ready(cluster, "n1"), 30_000), "n1 never caught up");
      // The restarted node learned what was delivered while it was away.
      assert(
        await waitUntil(
          async () => (await jobsOf(cluster, "n1")).delivered >= acked.length,
          20_000,
        ),
        `n1 knows ${(await jobsOf(cluster, "n1")).delivered} delivered jobs of ${acked.length}`,
      );
    } finally {
      await cluster.stopAll();
      await receiver.close();
    }
  },
});

Deno.test({
  name:
    "two nodes down: submits succeed; three down: they fail fast unacknowledged; after recovery every acknowledged job is delivered",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = startReceiver();
    const { cluster } = await startCluster();
    try {
      const acked: string[] = [];
      await cluster.kill("n4");
      await cluster.kill("n5");
      for (let n = 0; n < 30; n++) {
        const result = await submit(cluster, ["n1", "n2", "n3"][n % 3]!, receiver.url, n);
        assertEquals(
          result.status,
          202,
          `submit ${n} with two nodes down: ${JSON.stringify(result)}`,
        );
        acked.push(result.id!);
      }
      await cluster.kill("n3");
      // Once membership holds three voters down, a submit is refused at once (no_quorum);
      // before that it waits at most the submit timeout. Either way: 503, never 202.
      const answers: SubmitResult[] = [];
      for (let n = 0; n < 20; n++) {
        const started = performance.now();
        const result = await submit(cluster, ["n1", "n2"][n % 2]!, receiver.url, 1000 + n);
        answers.push(result);
        // A bound on "never hangs", far above the 1 s submit timeout: not a speed target.
        assert(performance.now() - started < 4_000, "a submit without a majority hung");
      }
      for (const a of answers) {
        assertEquals([a.status, a.code], [503, "no_quorum"], JSON.stringify(a));
      }
      for (const id of ["n3", "n4", "n5"]) cluster.start(id);
      assert(
        await waitUntil(() => allReady(cluster, ["n1", "n2", "n3", "n4", "n5"]), 30_000),
        "the cluster never recovered",
      );
      const all = await waitUntil(() => acked.every((id) => receiver.received.has(id)), 60_000);
      assert(
        all,
        `${acked.filter((id) => !receiver.received.has(id)).length} acknowledged jobs lost`,
      );
    } finally {
      await cluster.stopAll();
      await receiver.close();
    }
  },
});
