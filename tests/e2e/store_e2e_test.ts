/**
 * The replicated job store on real processes: five `hookd node` processes on loopback and a
 * receiver in this test process. Nodes are SIGKILLed mid-stream and restarted; every
 * acknowledged job must reach the receiver, and a restarted node must catch up.
 */

import { assert, assertEquals } from "../assert.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  waitUntil,
} from "../../src/cluster/local_cluster.ts";

const CLUSTER_KEY = "store-e2e-test-cluster-key-0123456789";

interface Receiver {
  url: string;
  /** webhook-id → deliveries (2xx answers). */
  received: Map<string, number>;
  /** While true the receiver answers 503 (an outage), so owners hold their jobs pending. */
  failing: boolean;
  close(): Promise<void>;
}

function startReceiver(): Receiver {
  const receiver: Receiver = {
    url: "",
    received: new Map(),
    failing: false,
    close: () => Promise.resolve(),
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      await request.arrayBuffer();
      if (receiver.failing) return new Response("outage", { status: 503 });
      const id = request.headers.get("webhook-id");
      if (id !== null) receiver.received.set(id, (receiver.received.get(id) ?? 0) + 1);
      return new Response(null, { status: 204 });
    },
  );
  receiver.url = `http://127.0.0.1:${server.addr.port}/hook`;
  receiver.close = () => server.shutdown();
  return receiver;
}

async function startCluster(): Promise<{ cluster: LocalCluster; ids: string[] }> {
  const specs = localNodeSpecs(5, "127.0.0.1", freeUdpPortRange(5));
  const cluster = new LocalCluster({
    nodes: specs,
    clusterKey: CLUSTER_KEY,
    extraArgs: () => ["--allow-private-targets", "--retry-schedule", "200,500,1000,2000"],
    onStderr: () => {},
  });
  cluster.startAll();
  const ids = specs.map((s) => s.id);
  assert(await waitUntil(() => ids.every((id) => cluster.httpUrls.has(id)), 30_000), "APIs up");
  assert(await waitUntil(async () => await allReady(cluster, ids), 30_000), "nodes ready");
  return { cluster, ids };
}

async function ready(cluster: LocalCluster, id: string): Promise<boolean> {
  const url = cluster.httpUrls.get(id);
  if (url === undefined) return false;
  try {
    const response = await fetch(`${url}/readyz`);
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function allReady(cluster: LocalCluster, ids: readonly string[]): Promise<boolean> {
  for (const id of ids) if (!await ready(cluster, id)) return false;
  return true;
}

type SubmitResult = { status: number; id?: string; code?: string };

async function submit(
  cluster: LocalCluster,
  node: string,
  target: string,
  n: number,
): Promise<SubmitResult> {
  const url = cluster.httpUrls.get(node);
  if (url === undefined) return { status: 0 };
  try {
    const response = await fetch(`${url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: target, payload: { n } }),
      signal: AbortSignal.timeout(5_000),
    });
    const body = await response.json();
    return { status: response.status, id: body.id, code: body.error?.code };
  } catch {
    return { status: 0 };
  }
}

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
