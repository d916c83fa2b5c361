/**
 * `hookd sink`: run the webhook sink (src/bench/sink.ts) until SIGINT/SIGTERM.
 *
 * Owns flag parsing and process lifetime only. Prints one JSON line
 * `{"listening":"host:port"}` on stdout once it accepts connections (benchmarks read it to
 * learn a port picked with `:0`), and its final stats as one JSON line when it stops.
 */

import { type CommandSpec, stringFlag, UsageError } from "./args.ts";
import { EXIT_OK, type LeafCommand } from "./command.ts";
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

export function parseHostPort(text: string, flag: string): { hostname: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) {
    throw new UsageError(`--${flag} ${JSON.stringify(text)} is not HOST:PORT`);
  }
  return { hostname: match[1]!.replace(/^\[|\]$/g, ""), port };
}

export const sinkCommand: LeafCommand = {
  spec,
  async run(args) {
    const { hostname, port } = parseHostPort(stringFlag(args.values, "listen")!, "listen");
    const secret = stringFlag(args.values, "secret");
    const sink = await startSink({ hostname, port, ...(secret !== undefined ? { secret } : {}) });
    const host = sink.hostname.includes(":") ? `[${sink.hostname}]` : sink.hostname;
    console.log(JSON.stringify({ listening: `${host}:${sink.port}` }));
    const { promise: stop, resolve } = Promise.withResolvers<void>();
    const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
    for (const signal of signals) Deno.addSignalListener(signal, resolve);
    await stop;
    for (const signal of signals) Deno.removeSignalListener(signal, resolve);
    await sink.close();
    console.log(JSON.stringify(sink.stats()));
    return EXIT_OK;
  },
};
