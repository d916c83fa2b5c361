/**
 * `hookd node`: runs one cluster member until SIGTERM/SIGINT, printing membership events as
 * JSON lines on stdout (`{"event":"member-dead","node":"n3",...}`).
 *
 * Owns flag parsing and the signal wiring only; the node itself is src/node/node.ts.
 */

import { transportFlags, transportOptionsFromFlags } from "./transport_flags.ts";
import { listFlag, stringFlag, UsageError } from "./args.ts";
import { EXIT_OK, type LeafCommand } from "./command.ts";
import { listenForStopSignal, printJsonLine } from "./process_io.ts";
import { Node } from "../node/node.ts";

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
      ...transportFlags,
    },
  },
  async run(args) {
    const nodeId = stringFlag(args.values, "id");
    if (nodeId === undefined || nodeId === "") throw new UsageError("hookd node: --id is required");
    const listen = stringFlag(args.values, "listen");
    if (listen === undefined) throw new UsageError("hookd node: --listen is required");
    const transport = transportOptionsFromFlags(args.values);
    let node: Node;
    try {
      node = Node.start({
        nodeId,
        listen,
        peers: listFlag(args.values, "peers"),
        clusterKey: transport.clusterKey,
        lossProbability: transport.lossProbability ?? 0,
        ...(transport.lossSeed !== undefined ? { lossSeed: transport.lossSeed } : {}),
        ...(transport.config !== undefined ? { transport: transport.config } : {}),
        onMemberEvent: (e) =>
          printJsonLine({
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
    printJsonLine({ event: "listening", node: nodeId, address: node.address });
    const stop = listenForStopSignal();
    const signal = await stop.received;
    stop.dispose();
    await node.stop();
    printJsonLine({ event: "stopped", node: nodeId, signal });
    return EXIT_OK;
  },
};
