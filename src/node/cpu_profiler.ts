/**
 * `hookd node --cpu-profile-dir DIR` and `--alloc-profile-dir DIR`: a V8 CPU profile, and a
 * sample of every allocation, over a window the operator (or `hookd bench cost`) chooses. The
 * first SIGUSR2 starts each profiler configured, the next stops it and writes
 * `DIR/<node id>-<n>.cpuprofile` or `.heapprofile` (Chrome DevTools opens both), and so on.
 * Unlike `deno run --cpu-prof`, this leaves out start-up, JIT warm-up and recovery, and it
 * works in the compiled `hookd` too.
 *
 * The allocation sampler is V8's sampling heap profiler with the objects the GC collected kept
 * in: so it counts the garbage a job makes, not only what it leaves alive (the GC's work at a
 * given rate is the allocation rate; session 26 measured 88 KB a job on each node).
 *
 * Owns the inspector sessions and the signal listener. Must not touch any other part of the
 * node: profiling changes nothing but the CPU it costs while on (V8 samples every 1 ms, and
 * stacks one allocation in `ALLOCATION_SAMPLE_BYTES`).
 */

import { Session } from "node:inspector";

interface InspectorSession {
  post(
    method: string,
    params: Record<string, unknown>,
    callback: (error: Error | null, result?: unknown) => void,
  ): void;
}

/**
 * Mean bytes between two sampled allocations. V8's default is 32 KiB; a job makes tens of KB on
 * each node, so this takes a few samples of each job, at a few µs each.
 */
export const ALLOCATION_SAMPLE_BYTES = 4096;

function post(session: Session, method: string, params: Record<string, unknown> = {}) {
  return new Promise<unknown>((resolve, reject) => {
    (session as unknown as InspectorSession).post(
      method,
      params,
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

/** One kind of profile over a window: started, then stopped into its JSON text. */
export interface WindowProfiler {
  readonly running: boolean;
  /** The file name's extension Chrome DevTools expects. */
  readonly extension: ".cpuprofile" | ".heapprofile";
  start(): Promise<void>;
  /** Stops and returns the profile as JSON text. */
  stop(): Promise<string>;
  close(): void;
}

abstract class InspectorProfiler implements WindowProfiler {
  abstract readonly extension: ".cpuprofile" | ".heapprofile";
  protected readonly session: Session;
  #running = false;

  constructor() {
    this.session = new Session();
    this.session.connect();
  }

  get running(): boolean {
    return this.#running;
  }

  protected abstract begin(): Promise<void>;
  /** The profile object the stop command answered with. */
  protected abstract end(): Promise<unknown>;

  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await this.begin();
  }

  async stop(): Promise<string> {
    if (!this.#running) throw new Error(`the ${this.extension} profiler is not running`);
    this.#running = false;
    const profile = await this.end();
    if (profile === undefined) throw new Error(`the ${this.extension} profiler returned nothing`);
    return JSON.stringify(profile);
  }

  close(): void {
    this.session.disconnect();
  }
}

/** V8's CPU profiler (samples the stack every 1 ms of wall time). */
export class CpuProfiler extends InspectorProfiler {
  readonly extension = ".cpuprofile";

  protected async begin(): Promise<void> {
    await post(this.session, "Profiler.enable");
    await post(this.session, "Profiler.start");
  }

  protected async end(): Promise<unknown> {
    return (await post(this.session, "Profiler.stop") as { profile?: unknown })?.profile;
  }
}

/** V8's sampling heap profiler, the objects collected meanwhile included (garbage counts). */
export class AllocationSampler extends InspectorProfiler {
  readonly extension = ".heapprofile";

  protected async begin(): Promise<void> {
    await post(this.session, "HeapProfiler.startSampling", {
      samplingInterval: ALLOCATION_SAMPLE_BYTES,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }

  protected async end(): Promise<unknown> {
    return (await post(this.session, "HeapProfiler.stopSampling") as { profile?: unknown })
      ?.profile;
  }
}

/** Where each kind of profile goes; a kind left out is not taken. */
export interface ProfileDirs {
  readonly cpu?: string;
  readonly allocations?: string;
}

/**
 * Toggles every configured profile on each SIGUSR2; `log` reports each start, each file written
 * and any failure (a failed write loses that profile, never the node).
 */
export function listenForProfileSignal(
  dirs: ProfileDirs,
  nodeId: string,
  log: (event: string, fields: Record<string, unknown>) => void,
): { dispose(): void } {
  const kinds: Array<{ dir: string; make: () => WindowProfiler; profiler?: WindowProfiler }> = [];
  if (dirs.cpu !== undefined) kinds.push({ dir: dirs.cpu, make: () => new CpuProfiler() });
  if (dirs.allocations !== undefined) {
    kinds.push({ dir: dirs.allocations, make: () => new AllocationSampler() });
  }
  let count = 0;
  let busy = Promise.resolve();
  const toggle = () => {
    busy = busy.then(async () => {
      const starting = kinds[0]?.profiler?.running !== true;
      if (!starting) count++;
      for (const kind of kinds) {
        try {
          const profiler = kind.profiler ??= kind.make();
          if (starting) {
            await profiler.start();
            log("profile-started", { kind: profiler.extension });
            continue;
          }
          const text = await profiler.stop();
          const path = `${kind.dir}/${nodeId}-${count}${profiler.extension}`;
          await Deno.writeTextFile(path, text);
          log("profile-written", { path, bytes: text.length });
        } catch (error) {
          log("profile-failed", { error: error instanceof Error ? error.message : String(error) });
        }
      }
    });
  };
  Deno.addSignalListener("SIGUSR2", toggle);
  return {
    dispose() {
      Deno.removeSignalListener("SIGUSR2", toggle);
      for (const kind of kinds) kind.profiler?.close();
    },
  };
}
