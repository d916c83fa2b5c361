import { assert, assertThrows } from "../assert.ts";
import { Node } from "../../src/node/node.ts";

const CLUSTER_KEY = "node-test-cluster-key-0123456789";

Deno.test("Node caps membership packets to what the transport's datagram leaves room for", async () => {
  const node = Node.start({
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

Deno.test("Node refuses a datagram size too small for membership packets", () => {
  assertThrows(
    () =>
      Node.start({
        nodeId: "n1",
        listen: "127.0.0.1:0",
        peers: [],
        clusterKey: CLUSTER_KEY,
        transport: { datagramBytes: 512 },
      }),
    RangeError,
  );
});
