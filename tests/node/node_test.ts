import { assert, assertEquals, assertRejects } from "../assert.ts";
import { Node, type NodeOptions } from "../../src/node/node.ts";
import { freeUdpPortRange } from "../../src/cluster/local_cluster.ts";

const CLUSTER_KEY = "node-test-cluster-key-0123456789";

/** Starts a node on a fresh data directory, removed when the node stops. */
async function startNode(options: Omit<NodeOptions, "dataDir">): Promise<Node> {
  const dataDir = await Deno.makeTempDir({ prefix: "hookd-node-test-" });
  try {
    const node = await Node.start({ ...options, dataDir });
    const stop = node.stop.bind(node);
    node.stop = async () => {
      await stop();
      await Deno.remove(dataDir, { recursive: true });
    };
    return node;
  } catch (error) {
    await Deno.remove(dataDir, { recursive: true });
    throw error;
  }
}

Deno.test("Node caps membership packets to what the transport's datagram leaves room for", async () => {
  const node = await startNode({
    nodeId: "n1",
    listen: "127.0.0.1:0",
    peers: [],
    clusterKey: CLUSTER_KEY,
    transport: { datagramBytes: 900 },
  });
  try {
    const room = node.transport.endpoint.unreliableBytesMax;
    assert(room < 1100, `a 900-byte datagram leaves ${room} bytes`);
    assert(node.membership.core.config.packetBytesMax <= room);
  } finally {
    await node.stop();
  }
});

Deno.test("Node refuses a datagram size too small for membership packets", async () => {
  await assertRejects(
    () =>
      startNode({
        nodeId: "n1",
        listen: "127.0.0.1:0",
        peers: [],
        clusterKey: CLUSTER_KEY,
        transport: { datagramBytes: 512 },
      }),
    RangeError,
  );
});

Deno.test("Node releases the transport's queue to a peer once membership holds it dead", async () => {
  // Both name both as voters: a node takes SWIM packets only from its voters' addresses.
  const base = freeUdpPortRange(2);
  const peers = [`127.0.0.1:${base}`, `127.0.0.1:${base + 1}`];
  const start = (nodeId: string, listen: string) =>
    startNode({ nodeId, listen, peers, clusterKey: CLUSTER_KEY });
  const n1 = await start("n1", peers[0]!);
  const n2 = await start("n2", peers[1]!);
  const until = async (done: () => boolean, limitMs: number) => {
    for (const deadline = performance.now() + limitMs; !done() && performance.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 20));
    }
    return done();
  };
  try {
    assert(await until(() => n1.membership.view.isAlive("n2"), 10_000), "n2 never joined");
    // n2 crashes: its socket goes away without a leave. n1 still has reliable messages for it.
    await n2.transport.close();
    for (let i = 0; i < 20; i++) n1.transport.send(n2.address, 7, new Uint8Array(100));
    await new Promise((r) => setTimeout(r, 50));
    assert((n1.transport.peerStats(n2.address)?.messagesUnacked ?? 0) > 0, "messages are pending");
    assert(
      await until(() => n1.membership.view.isDead("n2"), 20_000),
      "n2 was never declared dead",
    );
    assertEquals(n1.transport.peerStats(n2.address)?.messagesUnacked ?? 0, 0);
  } finally {
    await n2.stop();
    await n1.stop();
  }
});
