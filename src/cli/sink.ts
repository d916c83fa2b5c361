/**
 * `hookd sink`: run the webhook sink (src/bench/sink.ts) until SIGINT/SIGTERM.
 *
 * Owns flag parsing and process lifetime only. Prints one JSON line
 * `{"listening":"host:port"}` on stdout once it accepts connections (benchmarks read it to
 * learn a port picked with `:0`), and its final stats as one JSON line when it stops.
 */

import { type CommandSpec, stringFlag, UsageError } from "./args.ts";
import { EXIT_OK, type LeafCommand } from "./command.ts";
import { listenForStopSignal, printJsonLine } from "./process_io.ts";
import { formatAddress, parseAddress } from "../transport/address.ts";
import { startSink } from "../bench/sink.ts";

const spec: CommandSpec = {
  name: "sink",
  summary: "Run a webhook receiver that counts deliveries, duplicates and latency",
  flags: {
    listen: {
      type: "string",
      valueName: "HOST:PORT",
      help: "Address to listen on (port 0 picks a free one)",
      default: "127.0.0.1:8090",
    },
    secret: {
      type: "string",
      valueName: "WHSEC",
      help: "Verify every webhook-signature with this whsec_ secret (401 on failure)",
    },
  },
};

export const sinkCommand: LeafCommand = {
  spec,
  async run(args) {
    const listen = parseAddress(stringFlag(args.values, "listen")!, { allowPortZero: true });
    if (!listen.ok) throw new UsageError(`hookd sink: --listen: ${listen.reason}`);
    const { hostname, port } = listen.value;
    const secret = stringFlag(args.values, "secret");
    const sink = await startSink({ hostname, port, ...(secret !== undefined ? { secret } : {}) });
    printJsonLine({ listening: formatAddress(sink.hostname, sink.port) });
    const stop = listenForStopSignal();
    await stop.received;
    stop.dispose();
    await sink.close();
    printJsonLine({ ...sink.stats() });
    return EXIT_OK;
  },
};
