/**
 * `hookd node`: runs one cluster member until SIGTERM/SIGINT, printing membership events as
 * JSON lines on stdout (`{"event":"member-dead","node":"n3",...}`).
 *
 * Owns flag parsing and the signal wiring only; the node itself is src/node/node.ts.
 */

import { CLUSTER_KEY_ENV, clusterKeyFrom } from "../transport/mod.ts";
import { listFlag, numberFlag, stringFlag, UsageError } from "./args.ts";
import { EXIT_OK, type LeafCommand } from "./command.ts";
import { Node } from "../node/node.ts";

function printLine(value: Record<string, unknown>): void {
  console.log(JSON.stringify(value));
}

export const nodeCommand: LeafCommand = {
  spec: {
    name: "node",
    summary: "Run a cluster node (prints membership events as JSON lines)",
    flags: {
      id: { type: "string", help: "Node id (1-64 bytes, unique in the cluster)", valueName: "ID" },
      listen: {
        type: "string",
        help: "UDP host:port to bind and to be reached at",
        valueName: "HOST:PORT",
      },
      peers: {
        type: "string",
        help: "Seed addresses to join through, comma-separated (any subset)",
        valueName: "A:P,B:P",
        multiple: true,
      },
      "cluster-key": {
        type: "string",
        help: `Shared key authenticating every datagram (or env ${CLUSTER_KEY_ENV})`,
        valueName: "KEY",
      },
      loss: {
        type: "string",
        help: "Ingress loss probability (testing)",
        valueName: "P",
        default: "0",
      },
      "loss-seed": { type: "string", help: "Seed for the loss decisions", valueName: "SEED" },
    },
  },
  async run(args) {
    const nodeId = stringFlag(args.values, "id");
    if (nodeId === undefined || nodeId === "") throw new UsageError("hookd node: --id is required");
    const listen = stringFlag(args.values, "listen");
    if (listen === undefined) throw new UsageError("hookd node: --listen is required");
    const clusterKey = clusterKeyFrom(stringFlag(args.values, "cluster-key"));
    if (clusterKey === undefined) {
      throw new UsageError(`hookd node: --cluster-key or ${CLUSTER_KEY_ENV} is required`);
    }
    const loss = numberFlag(args.values, "loss", 0, { min: 0, max: 1 });
    const lossSeed = stringFlag(args.values, "loss-seed") === undefined
      ? undefined
      : numberFlag(args.values, "loss-seed", 0, { min: 0, max: 0xffffffff, integer: true });
    let node: Node;
    try {
      node = Node.start({
        nodeId,
        listen,
        peers: listFlag(args.values, "peers"),
        clusterKey,
        lossProbability: loss,
        ...(lossSeed !== undefined ? { lossSeed } : {}),
        onMemberEvent: (e) =>
          printLine({
            event: e.type,
            node: e.nodeId,
            address: e.address,
            incarnation: e.incarnation,
            observer: nodeId,
            time: new Date().toISOString(),
          }),
      });
    } catch (error) {
      if (error instanceof RangeError) throw new UsageError(`hookd node: ${error.message}`);
      throw error;
    }
    printLine({ event: "listening", node: nodeId, address: node.address });
    const stopped = Promise.withResolvers<string>();
    const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
    const handlers = signals.map((signal) => {
      const handler = () => stopped.resolve(signal);
      Deno.addSignalListener(signal, handler);
      return [signal, handler] as const;
    });
    const signal = await stopped.promise;
    for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
    await node.stop();
    printLine({ event: "stopped", node: nodeId, signal });
    return EXIT_OK;
  },
};
