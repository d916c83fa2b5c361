/**
 * `hookd cluster`: runs a local cluster of hookd nodes on loopback, the embedded default for
 * trying hookd on one machine. Prints every node's events as JSON lines (each tagged with the
 * `observer` that printed it), one `cluster-ready` line once every node holds every other
 * alive, and stops every node on SIGINT/SIGTERM or after `--seconds`.
 *
 * Owns flags and the run's lifecycle; process supervision is src/cluster/local_cluster.ts.
 */

import { encodeHex } from "../lib/hex.ts";
import {
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
  waitUntil,
} from "../cluster/local_cluster.ts";
import { CLUSTER_KEY_ENV } from "../transport/mod.ts";
import { booleanFlag, numberFlag, stringFlag } from "./args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "./command.ts";
import { listenForStopSignal, printJsonLine } from "./process_io.ts";

export const clusterCommand: LeafCommand = {
  spec: {
    name: "cluster",
    summary: "Run a local cluster of nodes on loopback (the embedded default: five nodes)",
    flags: {
      nodes: { type: "string", valueName: "N", default: "5", help: "Number of nodes" },
      host: {
        type: "string",
        valueName: "HOST",
        default: "127.0.0.1",
        help: "Loopback address to bind",
      },
      "base-port": {
        type: "string",
        valueName: "PORT",
        default: "7101",
        help: "UDP port of n1; nK gets PORT+K-1",
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
    const count = numberFlag(args.values, "nodes", 5, { min: 1, max: 64, integer: true });
    const host = stringFlag(args.values, "host") ?? "127.0.0.1";
    const basePort = numberFlag(args.values, "base-port", 7101, {
      min: 1,
      max: 65535 - count,
      integer: true,
    });
    const loss = numberFlag(args.values, "loss", 0, { min: 0, max: 1 });
    const seconds = stringFlag(args.values, "seconds") === undefined
      ? undefined
      : numberFlag(args.values, "seconds", 0, { min: 0.1, max: 86_400 });
    const quiet = booleanFlag(args.values, "quiet");
    const clusterKey = stringFlag(args.values, "cluster-key") ?? Deno.env.get(CLUSTER_KEY_ENV) ??
      encodeHex(crypto.getRandomValues(new Uint8Array(32)));

    const specs = localNodeSpecs(count, host, basePort);
    const ids = specs.map((s) => s.id);
    const failed = Promise.withResolvers<string>();
    const cluster = new LocalCluster({
      nodes: specs,
      clusterKey,
      extraArgs: () => (loss > 0 ? ["--loss", String(loss)] : []),
      onEvent: (line: NodeEventLine) => {
        if (!quiet) printJsonLine(line);
      },
      onUnexpectedExit: (id, status) =>
        failed.resolve(
          `node ${id} exited unexpectedly (code ${status.code}, signal ${status.signal})`,
        ),
    });
    const stop = listenForStopSignal();
    const timedOut = Promise.withResolvers<string>();
    const timer = seconds === undefined
      ? undefined
      : setTimeout(() => timedOut.resolve("timeout"), seconds * 1000);
    const startedMs = performance.now();
    printJsonLine({ event: "cluster-starting", nodes: specs });
    cluster.startAll();
    let ready = false;
    const readiness = waitUntil(
      () =>
        ready ||
        (cluster.everyViewHolds(ids, ids, "member-alive") &&
          ids.every((id) => cluster.httpUrls.has(id))),
      60_000,
    ).then((held) => {
      if (held && !ready) {
        ready = true;
        printJsonLine({
          event: "cluster-ready",
          nodes: count,
          converged_ms: Math.round(performance.now() - startedMs),
        });
      }
    });
    let code = EXIT_OK;
    try {
      const outcome = await Promise.race([
        Promise.race([stop.received, timedOut.promise]).then((reason) => ({
          failed: false,
          reason,
        })),
        failed.promise.then((reason) => ({ failed: true, reason })),
      ]);
      if (outcome.failed) {
        console.error(`hookd cluster: ${outcome.reason}; stopping the others`);
        code = EXIT_FAILURE;
      } else if (!ready) {
        console.error("hookd cluster: stopping before every node saw every other alive");
        code = seconds !== undefined ? EXIT_FAILURE : EXIT_OK;
      }
      ready = true;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      stop.dispose();
      await cluster.stopAll();
      await readiness;
    }
    printJsonLine({
      event: "cluster-stopped",
      nodes: count,
      ran_ms: Math.round(performance.now() - startedMs),
    });
    return code;
  },
};
