/**
 * A supervisor for hookd node processes on one machine: `hookd cluster`, the end-to-end
 * tests, and (later) the benchmarks and chaos runs start their nodes through it.
 *
 * Owns the child processes it starts: spawning them (through `hookdCommand`, so it works both
 * compiled and under `deno run`), reading their JSON-lines stdout, signalling, restarting, and
 * stopping every one of them — SIGTERM, then SIGKILL after a grace period. It does not
 * interpret events beyond parsing them; callers watch `onEvent` or `views`.
 */

import { hookdCommand } from "../process/self_command.ts";
import { readLines } from "../lib/lines.ts";

/** One JSON line a node printed, with the id of the node that printed it. */
export interface NodeEventLine {
  observer: string;
  event: string;
  [field: string]: unknown;
}

export interface LocalNodeSpec {
  id: string;
  /** UDP `host:port` the node binds. */
  address: string;
  /** HTTP API `host:port`. @default "127.0.0.1:0" (a free port, read from its first line) */
  http?: string;
}

export interface LocalClusterOptions {
  nodes: readonly LocalNodeSpec[];
  clusterKey: string;
  /**
   * Where the nodes' data directories go (`<dataRoot>/<id>`). @default a fresh temporary
   * directory, removed by `stopAll` (pass one to keep the data)
   */
  dataRoot?: string;
  /** Extra `hookd node` flags per node (e.g. `--loss`). */
  extraArgs?: (node: LocalNodeSpec) => string[];
  onEvent?: (line: NodeEventLine) => void;
  /** A node's stderr line; defaults to this process's stderr, prefixed with the node id. */
  onStderr?: (nodeId: string, line: string) => void;
  /** Called when a node exits without having been asked to. */
  onUnexpectedExit?: (nodeId: string, status: Deno.CommandStatus) => void;
}

interface RunningNode {
  spec: LocalNodeSpec;
  child: Deno.ChildProcess;
  /** Set before we signal it, so its exit is not reported as unexpected. */
  stopping: boolean;
  /** Resolves once the process exited and its output was read to the end. */
  finished: Promise<Deno.CommandStatus>;
}

/** Node ids `n1`…`nN` on consecutive ports from `basePort`. */
export function localNodeSpecs(count: number, host: string, basePort: number): LocalNodeSpec[] {
  return Array.from(
    { length: count },
    (_, i) => ({ id: `n${i + 1}`, address: `${host}:${basePort + i}` }),
  );
}

/** Free UDP ports on `host`: bound, read and released (a small race, fine for local runs). */
export function freeUdpPorts(count: number, host = "127.0.0.1"): number[] {
  const sockets = Array.from(
    { length: count },
    () => Deno.listenDatagram({ transport: "udp", hostname: host, port: 0 }),
  );
  const ports = sockets.map((s) => (s.addr as Deno.NetAddr).port);
  for (const s of sockets) s.close();
  return ports;
}

/**
 * Where `freeUdpPortRange` looks: below Linux's default ephemeral range (32768–60999). The
 * ports are probed, released, then bound by the nodes, and bound again by a node restarted on
 * the same address; inside the ephemeral range any socket bound to port 0 meanwhile (another
 * process's, a client's) could take one and the node would exit with "address in use".
 */
const UDP_RANGE_FIRST_PORT = 20_000;
const UDP_RANGE_END_PORT = 32_768;

/** A base port with `count` consecutive free UDP ports on `host`, found by trying to bind them. */
export function freeUdpPortRange(count: number, host = "127.0.0.1", attempts = 50): number {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const base = UDP_RANGE_FIRST_PORT +
      Math.floor(Math.random() * (UDP_RANGE_END_PORT - UDP_RANGE_FIRST_PORT - count));
    const sockets: Deno.DatagramConn[] = [];
    try {
      for (let i = 0; i < count; i++) {
        sockets.push(Deno.listenDatagram({ transport: "udp", hostname: host, port: base + i }));
      }
      return base;
    } catch {
      // Taken; try another range.
    } finally {
      for (const s of sockets) s.close();
    }
  }
  throw new Error(`no ${count} consecutive free UDP ports found on ${host}`);
}

export class LocalCluster {
  readonly #options: LocalClusterOptions;
  readonly #running = new Map<string, RunningNode>();
  /** The last membership event each observer printed about each node: observer → node → event. */
  readonly views = new Map<string, Map<string, string>>();
  /** Each node's HTTP API base URL, from the `listening` line of its current process. */
  readonly httpUrls = new Map<string, string>();
  readonly dataRoot: string;
  readonly #ownsDataRoot: boolean;

  constructor(options: LocalClusterOptions) {
    this.#options = options;
    this.#ownsDataRoot = options.dataRoot === undefined;
    this.dataRoot = options.dataRoot ?? Deno.makeTempDirSync({ prefix: "hookd-cluster-" });
  }

  /** The data directory of node `id`. */
  dataDir(id: string): string {
    return `${this.dataRoot}/${id}`;
  }

  get nodes(): readonly LocalNodeSpec[] {
    return this.#options.nodes;
  }

  /** Starts every node that is not running. */
  startAll(): void {
    for (const spec of this.#options.nodes) if (!this.#running.has(spec.id)) this.start(spec.id);
  }

  /** Starts (or restarts) one node with every node's address as its seeds. */
  start(id: string): void {
    const spec = this.#spec(id);
    if (this.#running.has(id)) throw new Error(`node ${id} is already running`);
    const peers = this.#options.nodes.map((n) => n.address).join(",");
    const args = [
      "node",
      "--id",
      spec.id,
      "--listen",
      spec.address,
      "--peers",
      peers,
      "--data",
      this.dataDir(spec.id),
      "--http",
      spec.http ?? "127.0.0.1:0",
      ...(this.#options.extraArgs?.(spec) ?? []),
    ];
    this.httpUrls.delete(id);
    // A new process starts with an empty view (membership events can precede "listening").
    this.views.set(id, new Map());
    const child = hookdCommand(args, { env: { HOOKD_CLUSTER_KEY: this.#options.clusterKey } })
      .spawn();
    const running: RunningNode = {
      spec,
      child,
      stopping: false,
      finished: Promise.resolve({ success: true, code: 0, signal: null }),
    };
    const stdout = this.#readLines(child.stdout, (line) => this.#onStdout(id, line));
    const stderr = this.#readLines(
      child.stderr,
      (line) => (this.#options.onStderr ?? defaultStderr)(id, line),
    );
    running.finished = (async () => {
      const [status] = await Promise.all([child.status, stdout, stderr]);
      if (this.#running.get(id) === running) this.#running.delete(id);
      if (!running.stopping) this.#options.onUnexpectedExit?.(id, status);
      return status;
    })();
    this.#running.set(id, running);
  }

  isRunning(id: string): boolean {
    return this.#running.has(id);
  }

  /** The process id of node `id`'s current process (benches read its CPU time), if running. */
  pid(id: string): number | undefined {
    return this.#running.get(id)?.child.pid;
  }

  /** Sends `signal` and waits for the process to exit. */
  async signal(id: string, signal: Deno.Signal): Promise<Deno.CommandStatus | undefined> {
    const running = this.#running.get(id);
    if (running === undefined) return undefined;
    running.stopping = true;
    try {
      running.child.kill(signal);
    } catch {
      // It exited on its own meanwhile; its status is still awaited below.
    }
    return await running.finished;
  }

  /** SIGTERM to every node (a graceful leave), SIGKILL to any still running after `graceMs`. */
  async stopAll(graceMs = 5_000): Promise<void> {
    const all = [...this.#running.values()];
    for (const running of all) {
      running.stopping = true;
      try {
        running.child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
    }
    const timer = setTimeout(() => {
      for (const running of all) {
        try {
          running.child.kill("SIGKILL");
        } catch {
          // Already gone.
        }
      }
    }, graceMs);
    try {
      await Promise.all(all.map((r) => r.finished));
    } finally {
      clearTimeout(timer);
    }
    if (this.#ownsDataRoot) await Deno.remove(this.dataRoot, { recursive: true }).catch(() => {});
  }

  /** SIGKILL one node (a crash: no leave, unsynced writes lost as the kernel decides). */
  kill(id: string): Promise<Deno.CommandStatus | undefined> {
    return this.signal(id, "SIGKILL");
  }

  /** Whether every observer in `observers` holds every other node in `subjects` as `event`. */
  everyViewHolds(
    observers: readonly string[],
    subjects: readonly string[],
    event: string,
  ): boolean {
    return observers.every((o) =>
      subjects.every((s) => s === o || this.views.get(o)?.get(s) === event)
    );
  }

  #spec(id: string): LocalNodeSpec {
    const spec = this.#options.nodes.find((n) => n.id === id);
    if (spec === undefined) throw new Error(`no node ${id} in this cluster`);
    return spec;
  }

  #onStdout(id: string, line: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      (this.#options.onStderr ?? defaultStderr)(id, line);
      return;
    }
    if (
      typeof parsed !== "object" || parsed === null ||
      typeof (parsed as { event?: unknown }).event !== "string"
    ) return;
    const event = { ...(parsed as Record<string, unknown>), observer: id } as NodeEventLine;
    if (event.event.startsWith("member-") && typeof event.node === "string") {
      let view = this.views.get(id);
      if (view === undefined) this.views.set(id, view = new Map());
      view.set(event.node, event.event);
    }
    if (event.event === "listening" && typeof event.http === "string") {
      this.httpUrls.set(id, event.http);
    }
    this.#options.onEvent?.(event);
  }

  async #readLines(
    stream: ReadableStream<Uint8Array>,
    onLine: (line: string) => void,
  ): Promise<void> {
    for await (const line of readLines(stream)) {
      if (line !== "") onLine(line);
    }
  }
}

function defaultStderr(nodeId: string, line: string): void {
  console.error(`[${nodeId}] ${line}`);
}

/** Polls `done` every `pollMs` until it holds or `limitMs` passes; returns whether it held. */
export async function waitUntil(
  done: () => boolean | Promise<boolean>,
  limitMs: number,
  pollMs = 25,
): Promise<boolean> {
  const deadline = performance.now() + limitMs;
  while (!(await done())) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return true;
}
