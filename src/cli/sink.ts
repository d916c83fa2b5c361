/**
 * `hookd sink`: run the webhook sink (src/process/sink.ts) until SIGINT/SIGTERM.
 *
 * Owns flag parsing and process lifetime only. Prints one JSON line
 * `{"listening":"host:port"}` on stdout once it accepts connections (benchmarks read it to
 * learn a port picked with `:0`), and its final stats as one JSON line when it stops.
 *
 * `--faults` (TEST-ONLY, chaos runs) puts receiver outages in front of it
 * (src/chaos/receiver_faults.ts): the listening line then also names the control URL
 * (`"faults":"http://127.0.0.1:P"`, `GET/POST /faults`).
 */

import {
  booleanFlag,
  type CommandSpec,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_OK, type LeafCommand } from "../process/command.ts";
import { listenForStopSignal, printJsonLine } from "../process/process_io.ts";
import { formatAddress, parseAddress } from "../transport/address.ts";
import { startSink } from "../process/sink.ts";
import { ReceiverFaults, startTcpFront } from "../chaos/receiver_faults.ts";

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
    faults: {
      type: "boolean",
      help: "TEST-ONLY: serve a control route that makes this receiver answer 500/503, answer " +
        "slowly or reset connections for a while (chaos runs)",
    },
    "slow-ms": {
      type: "string",
      valueName: "MS",
      help: "With --faults: how long a slow outage holds each request",
      default: "3000",
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
    const signing = secret !== undefined ? { secret } : {};
    if (booleanFlag(args.values, "faults")) {
      const slowMs = numberFlag(args.values, "slow-ms", 3000, { min: 0, max: 600_000 });
      const faults = new ReceiverFaults({ slowMs });
      // The sink itself listens on loopback; the public port is the TCP front that can reset.
      const sink = await startSink({
        hostname: "127.0.0.1",
        port: 0,
        ...signing,
        wrapHandler: (handler) => faults.wrap(handler),
      });
      const front = startTcpFront({ hostname, port, backendPort: sink.port, faults });
      printJsonLine({
        listening: formatAddress(front.hostname, front.port),
        faults: `http://127.0.0.1:${sink.port}`,
      });
      const stop = listenForStopSignal();
      await stop.received;
      stop.dispose();
      await front.close();
      await sink.close();
      printJsonLine({ ...sink.stats(), receiver_faults: faults.state() });
      return EXIT_OK;
    }
    const sink = await startSink({ hostname, port, ...signing });
    printJsonLine({ listening: formatAddress(sink.hostname, sink.port) });
    const stop = listenForStopSignal();
    await stop.received;
    stop.dispose();
    await sink.close();
    printJsonLine({ ...sink.stats() });
    return EXIT_OK;
  },
};
