/**
 * Starts the skeleton cluster for `hookd bench --rates … --skeleton`: N `hookd bench
 * skeleton-node` processes on loopback (skeleton_node.ts), each with its own data directory,
 * through `hookdCommand` so it works compiled and under `deno run`.
 *
 * Owns the skeleton's processes only: starting them, their pids, stopping them. The sweep
 * drives and measures them exactly as it does hookd's nodes.
 */

import { hookdCommand } from "../process/self_command.ts";
import { readLines } from "../lib/lines.ts";
import { freeUdpPortRange } from "../cluster/local_cluster.ts";
import type { NodeProcesses, SweepNodes } from "./bench_cluster.ts";

export interface SkeletonClusterOptions {
  readonly nodes: number;
  readonly clusterKey: string;
  /** Each node's data directory goes under it (the caller removes it). */
  readonly dataRoot: string;
  readonly datagramBytes?: number;
  readonly log: (line: string) => void;
  /** Longest a node may take to listen. @default 60_000 */
  readonly readyLimitMs?: number;
}

interface Running {
  readonly child: Deno.ChildProcess;
  readonly finished: Promise<Deno.CommandStatus>;
  stopping: boolean;
}

class SkeletonProcesses implements NodeProcesses {
  readonly running = new Map<string, Running>();

  pid(id: string): number | undefined {
    return this.running.get(id)?.child.pid;
  }

  /** SIGTERM to every node, SIGKILL to any still running after `graceMs`. */
  async stopAll(graceMs = 5_000): Promise<void> {
    const all = [...this.running.values()];
    const send = (signal: Deno.Signal) => {
      for (const r of all) {
        r.stopping = true;
        try {
          r.child.kill(signal);
        } catch {
          // Already gone.
        }
      }
    };
    send("SIGTERM");
    const timer = setTimeout(() => send("SIGKILL"), graceMs);
    try {
      await Promise.all(all.map((r) => r.finished));
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Starts every node and waits until each has printed its listening line. */
export async function startSkeletonNodes(options: SkeletonClusterOptions): Promise<SweepNodes> {
  const basePort = freeUdpPortRange(options.nodes);
  const ids = Array.from({ length: options.nodes }, (_, i) => `n${i + 1}`);
  const addresses = ids.map((_, i) => `127.0.0.1:${basePort + i}`);
  const processes = new SkeletonProcesses();
  const unexpectedExits: string[] = [];
  const limitMs = options.readyLimitMs ?? 60_000;
  try {
    const httpUrls = await Promise.all(ids.map(async (id, index) => {
      const child = hookdCommand([
        "bench",
        "skeleton-node",
        "--index",
        String(index),
        "--addresses",
        addresses.join(","),
        "--data-dir",
        `${options.dataRoot}/${id}`,
        ...(options.datagramBytes !== undefined
          ? ["--datagram-bytes", String(options.datagramBytes)]
          : []),
      ], { env: { HOOKD_CLUSTER_KEY: options.clusterKey } }).spawn();
      const running: Running = { child, finished: child.status, stopping: false };
      processes.running.set(id, running);
      void running.finished.then((status) => {
        if (running.stopping) return;
        unexpectedExits.push(`${id} exited with code ${status.code} signal ${status.signal}`);
        options.log(`skeleton node ${id} exited unexpectedly (code ${status.code})`);
      });
      void (async () => {
        for await (const line of readLines(child.stderr)) options.log(`[${id}] ${line}`);
      })();
      const lines = readLines(child.stdout);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${id} did not listen within ${limitMs} ms`)),
          limitMs,
        );
      });
      const first = await Promise.race([lines.next(), timeout]).finally(() => clearTimeout(timer));
      if (first.done) throw new Error(`skeleton node ${id} exited before it listened`);
      const listening = (JSON.parse(first.value) as { listening: string }).listening;
      void (async () => {
        for await (const _ of lines) { /* nothing more is printed */ }
      })();
      return `http://${listening}`;
    }));
    return {
      cluster: processes,
      addresses,
      httpUrls,
      ids,
      dataRoot: options.dataRoot,
      unexpectedExits,
    };
  } catch (error) {
    await processes.stopAll(2_000);
    throw error;
  }
}
