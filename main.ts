/**
 * hookd: a distributed webhook-delivery service. This file only dispatches subcommands to
 * src/cli/; see README.md.
 */

import { type Command, dispatch, EXIT_FAILURE } from "./src/process/command.ts";
import { benchCommand } from "./src/cli/bench.ts";
import { chaosCommand } from "./src/cli/chaos.ts";
import { clusterCommand } from "./src/cli/cluster.ts";
import { nodeCommand } from "./src/cli/node.ts";
import { simCommand } from "./src/cli/sim.ts";
import { sinkCommand } from "./src/cli/sink.ts";
import { statusCommand } from "./src/cli/status.ts";
import { submitCommand } from "./src/cli/submit.ts";
import { endpointCommand } from "./src/cli/endpoint.ts";
import { sendCommand } from "./src/cli/send.ts";

const commands: readonly Command[] = [
  nodeCommand,
  clusterCommand,
  submitCommand,
  endpointCommand,
  sendCommand,
  statusCommand,
  sinkCommand,
  benchCommand,
  simCommand,
  chaosCommand,
];

if (import.meta.main) {
  let code: number;
  try {
    code = await dispatch("hookd", "distributed webhook delivery", commands, Deno.args);
  } catch (error) {
    console.error(`hookd: ${error instanceof Error ? error.message : String(error)}`);
    code = EXIT_FAILURE;
  }
  Deno.exit(code);
}
