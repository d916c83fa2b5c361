/**
 * `hookd cluster`: runs a local cluster of hookd nodes on loopback, the README's way to try
 * hookd on one machine. Every node takes jobs through its HTTP API; with `--sink` a local
 * receiver (`hookd sink`, verifying signatures with a generated secret) runs beside them and
 * the nodes may deliver to loopback.
 *
 * Output: stdout carries JSON lines only — every node's events (tagged with the `observer`
 * that printed them, unless --quiet), `cluster-starting`, `cluster-ready` (with each node's
 * API URL, the data directory, the sink and the printed commands), `sink-stats` when the sink
 * receives, `cluster-stopped`. People read stderr: once ready it prints each node's API
 * address and a `hookd submit` command that works as printed (copy-paste), in the form this
 * process was started with (src/process/self_command.ts).
 *
 * Data: `<DIR>/<node id>` per node; DIR is a fresh temporary directory removed on stop unless
 * `--data DIR` is given, in which case it is kept, and `DIR/cluster.json` records the node
 * addresses so the next run with the same DIR restarts the same cluster (a node's WAL names
 * its peers by address).
 *
 * Owns flags and the run's lifecycle; process supervision is src/cluster/local_cluster.ts.
 */

import { isAbsolute, resolve } from "node:path";
import { encodeHex } from "../lib/hex.ts";
import { realRuntime } from "../lib/runtime.ts";
import { readLines } from "../lib/lines.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  type LocalNodeSpec,
  localNodeSpecs,
  type NodeEventLine,
} from "../cluster/local_cluster.ts";
import { CLUSTER_KEY_ENV } from "../transport/mod.ts";
import {
  booleanFlag,
  type FlagValues,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { listenForStopSignal, printJsonLine } from "../process/process_io.ts";
import { hookdCommand, hookdShellWords } from "../process/self_command.ts";
import { cliConfig, shellQuote } from "./api_client.ts";

/** What `DIR/cluster.json` holds: enough to start the same cluster again on the same data. */
interface SavedLayout {
  version: 1;
  nodes: LocalNodeSpec[];
}

const LAYOUT_FILE = "cluster.json";
/** The sink's path in the printed URL (the sink answers every path). */
const SINK_PATH = "/hook";
/** The payload of the printed submit command. */
const EXAMPLE_PAYLOAD = '{"hello":"hookd"}';
/** The target printed when there is no local sink: nodes refuse loopback targets then. */
const EXAMPLE_PUBLIC_TARGET = "https://example.com/webhook";
/** The event type of the printed `endpoint add` and `send` (with --sink). */
const EXAMPLE_EVENT_TYPE = "example.created";

export const clusterCommand: LeafCommand = {
  spec: {
    name: "cluster",
    summary: "Run a local cluster of nodes on loopback (the embedded default: five nodes)",
    flags: {
      nodes: { type: "string", valueName: "N", help: "Number of nodes (default: 5)" },
      host: {
        type: "string",
        valueName: "HOST",
        default: "127.0.0.1",
        help: "Loopback address to bind",
      },
      "base-port": {
        type: "string",
        valueName: "PORT",
        help: "UDP port of n1; nK gets PORT+K-1 (default: a free range, or the one in " +
          `DIR/${LAYOUT_FILE})`,
      },
      data: {
        type: "string",
        valueName: "DIR",
        help: "Keep the nodes' data in DIR/<id> (default: a temporary directory removed on stop)",
      },
      sink: {
        type: "boolean",
        help: "Also run a local receiver that verifies signatures, and let the nodes deliver " +
          "to loopback (--allow-private-targets)",
      },
      "sink-listen": {
        type: "string",
        valueName: "HOST:PORT",
        default: "127.0.0.1:0",
        help: "Where the --sink receiver listens",
      },
      "cluster-key": {
        type: "string",
        valueName: "KEY",
        help: `Cluster key (or env ${CLUSTER_KEY_ENV}; default: a random key for this run)`,
      },
      loss: {
        type: "string",
        valueName: "P",
        default: "0",
        help: "Ingress loss probability on every node",
      },
      seconds: {
        type: "string",
        valueName: "S",
        help: "Stop after S seconds (default: run until SIGINT/SIGTERM)",
      },
      quiet: { type: "boolean", help: "Print only cluster-level lines, not every node's events" },
    },
  },
  async run(args) {
    const host = stringFlag(args.values, "host") ?? "127.0.0.1";
    const loss = numberFlag(args.values, "loss", 0, { min: 0, max: 1 });
    const seconds = stringFlag(args.values, "seconds") === undefined
      ? undefined
      : numberFlag(args.values, "seconds", 0, { min: 0.1, max: 86_400 });
    const quiet = booleanFlag(args.values, "quiet");
    const withSink = booleanFlag(args.values, "sink");
    const clusterKey = stringFlag(args.values, "cluster-key") ?? Deno.env.get(CLUSTER_KEY_ENV) ??
      encodeHex(crypto.getRandomValues(new Uint8Array(32)));
    const dataFlag = stringFlag(args.values, "data");
    const dataRoot = dataFlag === undefined ? undefined : userPath(dataFlag);
    const specs = await nodeLayout(args.values, host, dataRoot);
    const count = specs.length;
    const ids = specs.map((s) => s.id);

    const failed = Promise.withResolvers<{ reason: string; exitedCleanly: boolean }>();
    // Before anything is spawned: a Ctrl-C during start-up must still stop what was started.
    const stop = listenForStopSignal();
    const startedMs = realRuntime.nowMs();
    let sink: SinkProcess | undefined;
    if (withSink) {
      try {
        sink = await startSink(stringFlag(args.values, "sink-listen") ?? "127.0.0.1:0", failed);
      } catch (error) {
        stop.dispose();
        if (error instanceof UsageError) throw error;
        console.error(`hookd cluster: the sink did not start: ${errorText(error)}`);
        return EXIT_FAILURE;
      }
      printJsonLine({ event: "sink-listening", url: sink.url });
    }
    const cluster = new LocalCluster({
      nodes: specs,
      clusterKey,
      ...(dataRoot !== undefined ? { dataRoot } : {}),
      extraArgs: () => [
        ...(loss > 0 ? ["--loss", String(loss)] : []),
        ...(withSink ? ["--allow-private-targets"] : []),
      ],
      onEvent: (line: NodeEventLine) => {
        if (!quiet) printJsonLine(line);
      },
      onUnexpectedExit: (id, status) =>
        failed.resolve({
          reason: `node ${id} exited unexpectedly (code ${status.code}, signal ${status.signal})`,
          exitedCleanly: status.success,
        }),
    });
    const timedOut = Promise.withResolvers<string>();
    const timer = seconds === undefined
      ? undefined
      : realRuntime.setTimer(seconds * 1000, () => timedOut.resolve("timeout"));
    printJsonLine({ event: "cluster-starting", nodes: specs, data: cluster.dataRoot });
    cluster.startAll();

    let finished = false;
    let ready = false;
    const readiness = waitForReady(cluster, ids, () => finished).then((notReady) => {
      if (finished) return;
      if (notReady.length > 0) {
        console.error(
          `hookd cluster: after ${cliConfig.clusterReadyTimeoutMs / 1000} s not every node is ` +
            `ready (${notReady.join("; ")}); still running — see their lines above`,
        );
        return;
      }
      ready = true;
      const api = Object.fromEntries(ids.map((id) => [id, cluster.httpUrls.get(id)!]));
      const commands = exampleCommands(Object.values(api), sink);
      printJsonLine({
        event: "cluster-ready",
        nodes: count,
        converged_ms: Math.round(realRuntime.nowMs() - startedMs),
        api,
        data: cluster.dataRoot,
        data_kept: dataRoot !== undefined,
        ...(sink !== undefined ? { sink: sink.url + SINK_PATH } : {}),
        // Every node serves the dashboard at its API URL; the first one is as good as any.
        dashboard: `${api[ids[0]!]}/`,
        submit_command: commands.submit,
        status_command: commands.status,
        ...(commands.endpointAdd !== undefined
          ? { endpoint_add_command: commands.endpointAdd, send_command: commands.send }
          : {}),
      });
      console.error(
        readyBlock(specs, api, cluster.dataRoot, dataRoot !== undefined, sink, commands),
      );
      sink?.startReporting(() => finished);
    });

    let code = EXIT_OK;
    try {
      const outcome = await Promise.race([
        Promise.race([stop.received, timedOut.promise]).then((reason) => ({
          failed: false,
          reason: String(reason),
        })),
        failed.promise.then(async ({ reason, exitedCleanly }) => {
          // A Ctrl-C reaches every process of the terminal's group at once: a child that
          // stopped cleanly may just have heard it before this process did.
          if (exitedCleanly) {
            const signalled = await Promise.race([
              stop.received.then(() => true),
              new Promise<boolean>((r) => realRuntime.setTimer(1000, () => r(false))),
            ]);
            if (signalled) return { failed: false, reason: "signal" };
          }
          return { failed: true, reason };
        }),
      ]);
      if (outcome.failed) {
        console.error(`hookd cluster: ${outcome.reason}; stopping the others`);
        code = EXIT_FAILURE;
      } else if (!ready) {
        console.error("hookd cluster: stopping before every node was ready");
        code = seconds !== undefined ? EXIT_FAILURE : EXIT_OK;
      }
    } finally {
      finished = true;
      timer?.();
      await cluster.stopAll();
      if (sink !== undefined) {
        const stats = await sink.stop();
        if (stats !== undefined) printJsonLine({ event: "sink-stopped", ...stats });
      }
      await readiness;
      // Only now: `deno task` forwards the Ctrl-C the terminal already sent this whole
      // process group, and a second SIGINT with no listener would kill this process in the
      // middle of stopping its children (leaving them and the temporary data behind).
      stop.dispose();
    }
    if (dataRoot !== undefined) console.error(`hookd cluster: data kept in ${dataRoot}`);
    printJsonLine({
      event: "cluster-stopped",
      nodes: count,
      ran_ms: Math.round(realRuntime.nowMs() - startedMs),
    });
    return code;
  },
};

/** A path the user typed, from where they typed it (`deno task` runs in the project root). */
function userPath(path: string): string {
  return isAbsolute(path) ? path : resolve(Deno.env.get("INIT_CWD") ?? Deno.cwd(), path);
}

/** The nodes' ids and UDP addresses: from DIR/cluster.json when it exists, else the flags. */
async function nodeLayout(
  values: FlagValues,
  host: string,
  dataRoot: string | undefined,
): Promise<LocalNodeSpec[]> {
  const countGiven = stringFlag(values, "nodes") !== undefined;
  const count = numberFlag(values, "nodes", 5, { min: 1, max: 64, integer: true });
  const basePortGiven = stringFlag(values, "base-port") !== undefined;
  const basePort = numberFlag(values, "base-port", 0, {
    min: 1,
    max: 65535 - count,
    integer: true,
  });
  if (dataRoot !== undefined) {
    const saved = await readLayout(dataRoot);
    if (saved !== undefined) {
      const savedBase = Number(saved.nodes[0]!.address.split(":").pop());
      if (countGiven && count !== saved.nodes.length) {
        throw new UsageError(
          `hookd cluster: ${dataRoot} holds a ${saved.nodes.length}-node cluster, not ${count}`,
        );
      }
      if (basePortGiven && basePort !== savedBase) {
        throw new UsageError(
          `hookd cluster: ${dataRoot} holds a cluster on base port ${savedBase}, not ${basePort}`,
        );
      }
      return saved.nodes;
    }
  }
  const specs = localNodeSpecs(
    count,
    host,
    basePortGiven ? basePort : freeUdpPortRange(count, host),
  );
  if (dataRoot !== undefined) {
    await Deno.mkdir(dataRoot, { recursive: true });
    const layout: SavedLayout = { version: 1, nodes: specs };
    await Deno.writeTextFile(`${dataRoot}/${LAYOUT_FILE}`, JSON.stringify(layout, null, 2) + "\n");
  }
  return specs;
}

async function readLayout(dataRoot: string): Promise<SavedLayout | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(`${dataRoot}/${LAYOUT_FILE}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new UsageError(
      `hookd cluster: cannot read ${dataRoot}/${LAYOUT_FILE}: ${errorText(error)}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const nodes = (parsed as { nodes?: unknown } | undefined)?.nodes;
  const valid = (parsed as { version?: unknown } | undefined)?.version === 1 &&
    Array.isArray(nodes) && nodes.length > 0 && nodes.length <= 64 &&
    nodes.every((n) =>
      typeof n === "object" && n !== null && typeof n.id === "string" &&
      typeof n.address === "string" && /:\d+$/.test(n.address)
    );
  if (!valid) {
    throw new UsageError(
      `hookd cluster: ${dataRoot}/${LAYOUT_FILE} is not a cluster layout; remove it or pick another --data`,
    );
  }
  return {
    version: 1,
    nodes: (nodes as LocalNodeSpec[]).map((n) => ({ id: n.id, address: n.address })),
  };
}

/**
 * Polls until every node holds every other alive, every API URL is known and every node's
 * /readyz answers 200 (recovered, caught up, a majority reachable): only then does a printed
 * submit command work at once.
 */
async function waitForReady(
  cluster: LocalCluster,
  ids: readonly string[],
  abandoned: () => boolean,
): Promise<string[]> {
  const deadlineMs = realRuntime.nowMs() + cliConfig.clusterReadyTimeoutMs;
  const readyIds = new Set<string>();
  const converged = () => cluster.everyViewHolds(ids, ids, "member-alive");
  while (realRuntime.nowMs() < deadlineMs && !abandoned()) {
    if (converged() && ids.every((id) => cluster.httpUrls.has(id))) {
      await Promise.all(
        ids.filter((id) => !readyIds.has(id)).map(async (id) => {
          try {
            const response = await fetch(`${cluster.httpUrls.get(id)}/readyz`, {
              signal: AbortSignal.timeout(1000),
            });
            await response.body?.cancel();
            if (response.status === 200) readyIds.add(id);
          } catch {
            // Not answering yet; asked again on the next round.
          }
        }),
      );
      if (readyIds.size === ids.length) return [];
    }
    await new Promise<void>((resolve) => realRuntime.setTimer(100, resolve));
  }
  return ids.filter((id) => !readyIds.has(id)).map((id) =>
    !cluster.httpUrls.has(id)
      ? `${id}: no API yet`
      : !cluster.everyViewHolds([id], ids, "member-alive")
      ? `${id}: does not see every other node alive`
      : `${id}: /readyz is not 200`
  );
}

interface ExampleCommands {
  submit: string;
  status: string;
  /** With --sink: an endpoint for the sink, and an event it takes (both work as printed). */
  endpointAdd?: string;
  send?: string;
}

function exampleCommands(
  apiUrls: readonly string[],
  sink: SinkProcess | undefined,
): ExampleCommands {
  const hookd = hookdShellWords();
  const nodes = apiUrls.join(",");
  const target = sink !== undefined
    ? ["--url", sink.url + SINK_PATH, "--secret", sink.secret]
    : ["--url", EXAMPLE_PUBLIC_TARGET];
  // --wait only where delivery can finish here: a public target may be out of reach.
  const wait = sink !== undefined ? ["--wait"] : [];
  const submit = [
    ...hookd,
    "submit",
    "--node",
    nodes,
    ...target,
    "--data",
    EXAMPLE_PAYLOAD,
    ...wait,
  ];
  const status = [...hookd, "status", "--node", nodes];
  const line = (words: readonly string[]) => words.map(shellQuote).join(" ");
  if (sink === undefined) return { submit: line(submit), status: line(status) };
  // The endpoint and the event go to the same first node, which so holds the endpoint when
  // the event fans out (the API's read-your-writes through one node, docs/endpoints.md).
  const endpointAdd = [
    ...hookd,
    "endpoint",
    "add",
    "--node",
    nodes,
    ...target,
    "--event-type",
    EXAMPLE_EVENT_TYPE,
  ];
  const send = [
    ...hookd,
    "send",
    "--node",
    nodes,
    "--type",
    EXAMPLE_EVENT_TYPE,
    "--data",
    EXAMPLE_PAYLOAD,
    "--wait",
  ];
  return {
    submit: line(submit),
    status: line(status),
    endpointAdd: line(endpointAdd),
    send: line(send),
  };
}

function readyBlock(
  specs: readonly LocalNodeSpec[],
  api: Record<string, string>,
  dataDir: string,
  dataKept: boolean,
  sink: SinkProcess | undefined,
  commands: ExampleCommands,
): string {
  const width = Math.max(...specs.map((s) => s.id.length));
  const lines = [
    "",
    `hookd cluster: ${specs.length} node${specs.length === 1 ? "" : "s"} ready, each taking jobs`,
    ...specs.map((s) => `  ${s.id.padEnd(width)}  API ${api[s.id]}   (cluster UDP ${s.address})`),
  ];
  if (sink !== undefined) {
    lines.push(
      `  sink  ${sink.url}${SINK_PATH}   (a receiver that verifies every signature with the secret below)`,
    );
  }
  const first = specs[0];
  if (first !== undefined) {
    const url = `${api[first.id]}/`;
    lines.push(`  dashboard  ${url}   (open it in a browser; every node serves its own)`);
  }
  lines.push(
    `  data  ${dataDir}   (${dataKept ? "kept after stop" : "temporary: removed on stop"})`,
    "",
    sink !== undefined
      ? "Submit a job to the local sink and follow it until it is delivered:"
      : "Submit a job (run `hookd cluster --sink` for a local receiver to deliver to):",
    `  ${commands.submit}`,
    ...(commands.endpointAdd !== undefined && commands.send !== undefined
      ? [
        `Add an endpoint for the sink that takes ${EXAMPLE_EVENT_TYPE} events, then send one:`,
        `  ${commands.endpointAdd}`,
        `  ${commands.send}`,
      ]
      : []),
    "See the cluster: members, jobs by state, submit rate, delivery p99:",
    `  ${commands.status}`,
    "Ctrl-C stops every node" + (sink !== undefined ? " and the sink." : "."),
    "",
  );
  return lines.join("\n");
}

/** The `hookd sink` child of `cluster --sink`. */
interface SinkProcess {
  /** `http://host:port`. */
  url: string;
  /** The whsec_ secret it verifies with. */
  secret: string;
  /** Prints a `sink-stats` line (and a line on stderr) whenever the sink received more. */
  startReporting(finished: () => boolean): void;
  /** Stops it; resolves with its final stats when it printed them. */
  stop(): Promise<Record<string, unknown> | undefined>;
}

async function startSink(
  listen: string,
  failed: PromiseWithResolvers<{ reason: string; exitedCleanly: boolean }>,
): Promise<SinkProcess> {
  const secret = `whsec_${
    btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))
  }`;
  const child = hookdCommand(["sink", "--listen", listen, "--secret", secret], {
    stderr: "inherit",
  }).spawn();
  let stopping = false;
  const listening = Promise.withResolvers<string>();
  let lastLine: Record<string, unknown> | undefined;
  const reading = (async () => {
    for await (const line of readLines(child.stdout, { unterminatedLine: "drop" })) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof parsed !== "object" || parsed === null) continue;
      const record = parsed as Record<string, unknown>;
      if (typeof record.listening === "string") listening.resolve(record.listening);
      else lastLine = record;
    }
  })();
  const exited = (async () => {
    const [status] = await Promise.all([child.status, reading]);
    listening.reject(new Error(`it exited (code ${status.code}) before listening`));
    if (!stopping) {
      failed.resolve({
        reason: `the sink exited unexpectedly (code ${status.code}, signal ${status.signal})`,
        exitedCleanly: status.success,
      });
    }
    return status;
  })();
  const cancelTimeout = realRuntime.setTimer(
    10_000,
    () => listening.reject(new Error("it did not say where it listens within 10 s")),
  );
  let address: string;
  try {
    address = await listening.promise;
  } catch (error) {
    stopping = true;
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await exited;
    throw error;
  } finally {
    cancelTimeout();
  }
  const url = `http://${address}`;
  let reporting = false;
  return {
    url,
    secret,
    startReporting(finished) {
      if (reporting) return;
      reporting = true;
      void (async () => {
        let seen = { received: 0, signature_failures: 0 };
        while (!finished() && !stopping) {
          await new Promise<void>((r) => realRuntime.setTimer(cliConfig.clusterSinkPollMs, r));
          if (finished() || stopping) break;
          let stats: Record<string, unknown>;
          try {
            const response = await fetch(`${url}/stats`, { signal: AbortSignal.timeout(2000) });
            stats = await response.json();
          } catch {
            continue;
          }
          const received = Number(stats.received ?? 0);
          const failures = Number(stats.signature_failures ?? 0);
          if (received === seen.received && failures === seen.signature_failures) continue;
          seen = { received, signature_failures: failures };
          if (finished() || stopping) break;
          printJsonLine({ event: "sink-stats", ...stats });
          console.error(
            (received === 0
              ? "sink: no delivery accepted yet"
              : received === 1
              ? "sink: 1 delivery received, signature verified"
              : `sink: ${received} deliveries received, every signature verified`) +
              (failures > 0 ? `; ${failures} refused 401 (a bad or missing signature)` : "") +
              (Number(stats.duplicates ?? 0) > 0 ? `; ${stats.duplicates} duplicates` : ""),
          );
        }
      })();
    },
    async stop() {
      stopping = true;
      try {
        child.kill("SIGTERM");
      } catch {
        // Already gone (a Ctrl-C reached it too).
      }
      const cancelKill = realRuntime.setTimer(5000, () => {
        try {
          child.kill("SIGKILL");
        } catch {
          // Gone.
        }
      });
      await exited;
      cancelKill();
      return lastLine;
    },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
