/**
 * The skeleton node (`hookd bench skeleton-node`): three in one process on loopback and a
 * receiver. A submit is answered 202 only once a majority holds it, the job arrives signed,
 * each node's log holds it, and bad input gets a 400.
 */

import { Webhook } from "standardwebhooks";
import { assert, assertEquals } from "../assert.ts";
import { SkeletonNode } from "../../src/bench/skeleton_node.ts";
import { freeUdpPorts } from "../../src/cluster/local_cluster.ts";
import { generateSecret } from "../../src/delivery/signing.ts";
import { encodeEntry, SkeletonOpener, SkeletonSealer } from "../../src/bench/skeleton_wire.ts";
import { ClusterKeyring } from "../../src/transport/datagram_crypto.ts";

const KEY = "skeleton-test-cluster-key-0123456789";
const SECRET = generateSecret();

async function withNodes(
  count: number,
  started: number,
  body: (nodes: SkeletonNode[], dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "hookd-skeleton-" });
  const addresses = freeUdpPorts(count).map((port) => ({ hostname: "127.0.0.1", port }));
  const nodes: SkeletonNode[] = [];
  try {
    for (let index = 0; index < started; index++) {
      nodes.push(
        await SkeletonNode.start({
          index,
          addresses,
          http: { hostname: "127.0.0.1", port: 0 },
          dataDir: `${dir}/n${index}`,
          clusterKey: KEY,
          datagramBytes: 1400,
          signingSecret: SECRET,
        }),
      );
    }
    await body(nodes, dir);
  } finally {
    for (const node of nodes) await node.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a skeleton submit is answered 202 at a majority and delivered signed", async () => {
  const received: Array<{ headers: Record<string, string>; body: string }> = [];
  const arrived = Promise.withResolvers<void>();
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (r) => {
    received.push({ headers: Object.fromEntries(r.headers), body: await r.text() });
    arrived.resolve();
    return new Response(null, { status: 204 });
  });
  try {
    await withNodes(3, 3, async (nodes, dir) => {
      const url = `http://127.0.0.1:${receiver.addr.port}/hook`;
      const response = await fetch(`${nodes[1]!.url}/v1/jobs`, {
        method: "POST",
        body: JSON.stringify({ url, payload: { n: 1 } }),
        signal: AbortSignal.timeout(10_000),
      });
      assertEquals(response.status, 202);
      const { id } = await response.json() as { id: string };
      await withTimeout(arrived.promise, 10_000, "the delivery");
      assertEquals(received.length, 1);
      assertEquals(received[0]!.headers["webhook-id"], id);
      assertEquals(received[0]!.body, '{"n":1}');
      new Webhook(SECRET).verify(received[0]!.body, received[0]!.headers);
      // The coordinator's own fsync and at least one replica's count toward the 202.
      const fsyncs = nodes.map((n) => n.counters.fsyncs);
      assert(fsyncs[1]! >= 1 && fsyncs.reduce((a, b) => a + b, 0) >= 2, `fsyncs ${fsyncs}`);
      // Every node logs the job (replicas may still be writing: bounded wait).
      for (let i = 0; i < 3; i++) {
        const path = `${dir}/n${i}/skeleton.log`;
        const deadline = performance.now() + 5_000;
        while (!(await Deno.readTextFile(path)).includes(id) && performance.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        assert((await Deno.readTextFile(path)).includes(id), `n${i}'s log holds ${id}`);
      }
      const metrics = await (await fetch(`${nodes[0]!.url}/metrics`)).text();
      assert(/^hookd_wal_fsyncs_total [1-9]/m.test(metrics), metrics);
    });
  } finally {
    await receiver.shutdown();
  }
});

Deno.test("a skeleton submit is not answered 202 without a majority", async () => {
  // Node 0 of 3 alone: its own fsync is one vote of the two needed.
  await withNodes(3, 1, async (nodes) => {
    const answer = await fetch(`${nodes[0]!.url}/v1/jobs`, {
      method: "POST",
      body: JSON.stringify({ url: "http://127.0.0.1:9/hook", payload: {} }),
      signal: AbortSignal.timeout(600),
    }).then((r) => r.status, (e: Error) => e.name);
    assertEquals(answer, "TimeoutError");
    assertEquals(nodes[0]!.counters.fsyncs, 1);
  });
});

Deno.test("a replica's vote heard twice counts once toward the skeleton's majority", async () => {
  // Five nodes, the coordinator (n0) alone running; this test plays n1 on n1's own address. A
  // majority is three: n0's fsync and n1's vote, even twice over, are two.
  const dir = await Deno.makeTempDir({ prefix: "hookd-skeleton-" });
  const addresses = freeUdpPorts(5).map((port) => ({ hostname: "127.0.0.1", port }));
  const peer = Deno.listenDatagram({ transport: "udp", ...addresses[1]! });
  const node = await SkeletonNode.start({
    index: 0,
    addresses,
    http: { hostname: "127.0.0.1", port: 0 },
    dataDir: `${dir}/n0`,
    clusterKey: KEY,
    datagramBytes: 1400,
  });
  try {
    const answer = fetch(`${node.url}/v1/jobs`, {
      method: "POST",
      body: JSON.stringify({ url: "http://127.0.0.1:9/hook", payload: {} }),
      signal: AbortSignal.timeout(1_500),
    }).then((r) => r.status, (e: Error) => e.name);
    const [submit] = await peer.receive();
    const opened = new SkeletonOpener(new ClusterKeyring(KEY)).open(submit);
    assert(opened !== undefined && opened.entries[0]?.kind === "submit", "n1 got the SUBMIT");
    const vote = new SkeletonSealer(new ClusterKeyring(KEY), 1)
      .seal([encodeEntry({ kind: "vote", id: opened.entries[0].id })]);
    await peer.send(vote, { transport: "udp", ...addresses[0]! });
    await peer.send(vote, { transport: "udp", ...addresses[0]! });
    assertEquals(await answer, "TimeoutError");
    assertEquals(node.counters.datagramsIn, 2);
  } finally {
    peer.close();
    await node.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a skeleton node answers bad submits 400 and keeps serving", async () => {
  await withNodes(1, 1, async (nodes) => {
    for (const body of ["{not json", '{"payload":{}}', '{"url":"not a url","payload":{}}']) {
      const response = await fetch(`${nodes[0]!.url}/v1/jobs`, { method: "POST", body });
      assertEquals(response.status, 400, body);
      const answer = await response.json() as { error: { code: string } };
      assertEquals(answer.error.code, "invalid");
    }
    const ready = await fetch(`${nodes[0]!.url}/readyz`);
    assertEquals(ready.status, 200);
    await ready.body?.cancel();
  });
});

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
