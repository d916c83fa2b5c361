/**
 * Helpers the CLI end-to-end tests share: run one hookd command to completion (bounded in
 * time), start a `hookd sink` child, poll an async condition, and wait for a local cluster's
 * nodes to be ready. Every child started here is killed and awaited by whoever started it.
 */

import { assert } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { type LocalCluster, waitUntil } from "../../src/cluster/local_cluster.ts";
import { readLines } from "../../src/lib/lines.ts";

export interface HookdRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout split into lines, the empty last one dropped. */
  lines: string[];
}

/** Runs `hookd <args>` to its end; SIGKILLs it after `limitMs` (the test then fails). */
export async function runHookd(
  args: readonly string[],
  options: { env?: Record<string, string>; limitMs?: number } = {},
): Promise<HookdRun> {
  const child = hookdCommand(args, options.env !== undefined ? { env: options.env } : {}).spawn();
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, options.limitMs ?? 60_000);
  try {
    const output = await child.output();
    assert(!killed, `hookd ${args.join(" ")} ran past its ${options.limitMs ?? 60_000} ms`);
    const decoder = new TextDecoder();
    const stdout = decoder.decode(output.stdout);
    return {
      code: output.code,
      stdout,
      stderr: decoder.decode(output.stderr),
      lines: stdout.split("\n").filter((l, i, all) => !(l === "" && i === all.length - 1)),
    };
  } finally {
    clearTimeout(timer);
  }
}

export interface SinkChild {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  stats(): Promise<Record<string, number>>;
  /** SIGTERM, then awaits its exit. */
  stop(): Promise<void>;
}

/** A `hookd sink` child on a free port, verifying signatures with `secret`. */
export async function startSinkChild(secret: string): Promise<SinkChild> {
  const child = hookdCommand(["sink", "--listen", "127.0.0.1:0", "--secret", secret], {
    stderr: "inherit",
  }).spawn();
  const lines = readLines(child.stdout, { unterminatedLine: "drop" });
  const draining = (async () => {
    const first = await lines.next();
    return first.done ? undefined : (JSON.parse(first.value) as { listening: string }).listening;
  })();
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const listening = await draining;
  clearTimeout(timer);
  const rest = (async () => {
    for await (const _ of lines) { /* the final stats line */ }
  })();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await child.status;
    await rest;
  };
  if (listening === undefined) {
    await stop();
    throw new Error("the sink exited before it said where it listens");
  }
  const url = `http://${listening}`;
  return {
    url,
    stats: async () => await (await fetch(`${url}/stats`)).json(),
    stop,
  };
}

/** Polls `done` every `pollMs` until it holds or `limitMs` passes; returns whether it held. */
export function pollUntil(
  done: () => boolean | Promise<boolean>,
  limitMs: number,
  pollMs = 50,
): Promise<boolean> {
  return waitUntil(done, limitMs, pollMs);
}

/** Whether every node of `ids` has its API up and answers /readyz 200. */
export async function clusterReady(
  cluster: LocalCluster,
  ids: readonly string[],
): Promise<boolean> {
  if (!cluster.everyViewHolds(ids, ids, "member-alive")) return false;
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) return false;
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      if (response.status !== 200) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** A TCP port nothing listens on (bound, then released: a small race, fine on loopback). */
export function closedTcpPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  return port;
}

/** Processes whose command line contains `needle` (Linux /proc; empty where there is none). */
export async function processesMentioning(needle: string): Promise<number[]> {
  const found: number[] = [];
  try {
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
      try {
        const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
        if (cmdline.includes(needle)) found.push(Number(entry.name));
      } catch {
        // Exited meanwhile, or not ours to read.
      }
    }
  } catch {
    // No /proc here.
  }
  return found;
}
