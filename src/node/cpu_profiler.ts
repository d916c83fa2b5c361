/**
 * `hookd node --cpu-profile-dir DIR`: a V8 CPU profile of a window the operator (or `hookd bench
 * cost`) chooses. The first SIGUSR2 starts the profiler, the next stops it and writes
 * `DIR/<node id>-<n>.cpuprofile` (Chrome DevTools' format), and so on. Unlike `deno run
 * --cpu-prof`, which covers the whole process from its start, this leaves out start-up, JIT
 * warm-up and recovery, and it works in the compiled `hookd` too.
 *
 * Owns the inspector session and the signal listener. Must not touch any other part of the
 * node: profiling changes nothing but the CPU it costs while on (V8 samples every 1 ms).
 */

import { Session } from "node:inspector";

interface ProfilerSession {
  post(method: string, callback: (error: Error | null, result?: unknown) => void): void;
}

function post(session: ProfilerSession, method: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    session.post(method, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

export class CpuProfiler {
  readonly #session: Session;
  #running = false;

  constructor() {
    this.#session = new Session();
    this.#session.connect();
  }

  get running(): boolean {
    return this.#running;
  }

  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await post(this.#session as unknown as ProfilerSession, "Profiler.enable");
    await post(this.#session as unknown as ProfilerSession, "Profiler.start");
  }

  /** Stops and returns the profile as JSON text. */
  async stop(): Promise<string> {
    if (!this.#running) throw new Error("the CPU profiler is not running");
    this.#running = false;
    const result = await post(this.#session as unknown as ProfilerSession, "Profiler.stop") as {
      profile?: unknown;
    };
    if (result?.profile === undefined) throw new Error("Profiler.stop returned no profile");
    return JSON.stringify(result.profile);
  }

  close(): void {
    this.#session.disconnect();
  }
}

/**
 * Toggles a profile on each SIGUSR2; `log` reports each start, each file written and any
 * failure (a failed write loses that profile, never the node).
 */
export function listenForProfileSignal(
  dir: string,
  nodeId: string,
  log: (event: string, fields: Record<string, unknown>) => void,
): { dispose(): void } {
  let profiler: CpuProfiler | undefined;
  let count = 0;
  let busy = Promise.resolve();
  const toggle = () => {
    busy = busy.then(async () => {
      try {
        profiler ??= new CpuProfiler();
        if (!profiler.running) {
          await profiler.start();
          log("cpu-profile-started", {});
          return;
        }
        const text = await profiler.stop();
        count++;
        const path = `${dir}/${nodeId}-${count}.cpuprofile`;
        await Deno.writeTextFile(path, text);
        log("cpu-profile-written", { path, bytes: text.length });
      } catch (error) {
        log("cpu-profile-failed", {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    });
  };
  Deno.addSignalListener("SIGUSR2", toggle);
  return {
    dispose() {
      Deno.removeSignalListener("SIGUSR2", toggle);
      profiler?.close();
    },
  };
}
