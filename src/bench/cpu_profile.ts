/**
 * Reads a V8 `.cpuprofile` (what `deno run --cpu-prof` writes) and splits its samples over
 * hookd's components: HTTP API, validation, job store core, codecs, transport framing and
 * sessions, AEAD, UDP syscalls, WAL, delivery, membership, timers, GC, and the rest.
 *
 * A sample is charged to the first frame, from the leaf up, that a rule names: a native
 * `update` called by node:crypto's cipher is AEAD, a `send` in ext:deno_net is a UDP
 * syscall, and a helper in src/lib/ is charged to whoever called it. Owns only the parsing
 * and the rules; must not start processes.
 *
 * V8's profiler samples wall time: a thread asleep in a synchronous syscall is sampled in the
 * op that made it. The WAL's inline `fdatasync` sleeps for the disk most of the time it takes,
 * so its samples are left out with the idle ones (`BLOCKING_OPS`); charged to the WAL, they
 * made it half of the nodes' CPU at 200 jobs/s (session 26), which perf does not see. What
 * the kernel spends inside it stays in the measured CPU that the shares are applied to.
 */

/**
 * Ops that put the thread to sleep until a device answers: their samples are waiting, not
 * CPU, and are left out of the split. `FsFile.syncDataSync()` (the WAL's inline fdatasync,
 * wal_fs.ts) is the one hookd calls, under this name in its profiles.
 */
export const BLOCKING_OPS: ReadonlySet<string> = new Set(["op_fs_file_sync_data_sync"]);

export const COMPONENTS = [
  "http_api",
  "validation",
  "job_store",
  "codecs",
  "transport",
  "aead",
  "udp_syscalls",
  "wal",
  "delivery",
  "membership",
  "metrics",
  "timers",
  "gc",
  "runtime_other",
] as const;

export type Component = typeof COMPONENTS[number];

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

/** Sampled time per component, µs; idle excluded. */
export type ComponentTimes = Record<Component, number>;

/** The component one frame names, or undefined to look at its caller. */
export function componentOfFrame(frame: CallFrame): Component | undefined {
  const { url, functionName } = frame;
  if (functionName === "(garbage collector)") return "gc";
  if (url.includes("/src/transport/datagram_crypto") || url.includes("internal/crypto/cipher")) {
    return "aead";
  }
  if (url.includes("ext:deno_net/")) return "udp_syscalls";
  if (
    url.includes("/src/jobs/job_codec") || url.includes("/src/jobs/job_messages") ||
    url.includes("/src/membership/codec")
  ) {
    return "codecs";
  }
  if (url.includes("/src/transport/")) return "transport";
  if (url.includes("/src/membership/")) return "membership";
  if (url.includes("/src/wal/")) return "wal";
  if (url.includes("/src/api/validate")) return "validation";
  if (url.includes("/src/api/") || url.includes("ext:deno_http/")) return "http_api";
  if (url.includes("/src/jobs/")) return "job_store";
  if (url.includes("/src/delivery/") || url.includes("ext:deno_fetch/")) return "delivery";
  if (url.includes("/src/metrics/")) return "metrics";
  if (
    url.includes("/02_timers.js") || url.includes("/src/lib/deadline_timer") ||
    url.includes("/src/lib/runtime.ts")
  ) {
    return "timers";
  }
  return undefined;
}

function emptyTimes(): ComponentTimes {
  return Object.fromEntries(COMPONENTS.map((c) => [c, 0])) as ComponentTimes;
}

/** Parses a profile's JSON text; throws on a file that is not one. */
export function parseCpuProfile(text: string): CpuProfile {
  const value = JSON.parse(text) as Partial<CpuProfile>;
  if (
    !Array.isArray(value.nodes) || !Array.isArray(value.samples) ||
    !Array.isArray(value.timeDeltas) || value.samples.length !== value.timeDeltas.length
  ) {
    throw new Error("not a V8 CPU profile (nodes, samples and timeDeltas expected)");
  }
  return value as CpuProfile;
}

/**
 * Sampled time per component, µs. Left out: idle, the profiler's own start and stop, and a
 * thread asleep in a blocking op (`BLOCKING_OPS`).
 */
export function componentTimes(profile: CpuProfile): ComponentTimes {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const memo = new Map<number, Component | "idle">();
  const componentOf = (id: number): Component | "idle" => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    // Walk up to the first frame a rule names (iteratively: stacks can be deep).
    const path: number[] = [];
    let found: Component | "idle" = "runtime_other";
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const cached = memo.get(at);
      if (cached !== undefined) {
        found = cached;
        break;
      }
      path.push(at);
      const frame = byId.get(at)?.callFrame;
      if (frame === undefined) break;
      // The profiler's own start and stop (node:inspector's post) are not the node's work.
      if (
        frame.functionName === "(idle)" || frame.url.includes("ext:deno_node/inspector") ||
        BLOCKING_OPS.has(frame.functionName)
      ) {
        found = "idle";
        break;
      }
      const c = componentOfFrame(frame);
      if (c !== undefined) {
        found = c;
        break;
      }
    }
    for (const p of path) memo.set(p, found);
    return found;
  };
  const out = emptyTimes();
  for (let i = 0; i < profile.samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample: charge it to this one's stack.
    const c = componentOf(profile.samples[i]!);
    const deltaUs = Math.max(0, profile.timeDeltas[i]!);
    if (c !== "idle") out[c] += deltaUs;
  }
  return out;
}

/** Adds component times (several processes' profiles). */
export function addTimes(a: ComponentTimes, b: ComponentTimes): ComponentTimes {
  const out = emptyTimes();
  for (const c of COMPONENTS) out[c] = a[c] + b[c];
  return out;
}

/** Every `.cpuprofile` in `dir`, summed per component; the files read are returned too. */
export async function profileDirTimes(
  dir: string,
): Promise<{ times: ComponentTimes; files: string[] }> {
  let times = emptyTimes();
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".cpuprofile")) continue;
    files.push(entry.name);
    times = addTimes(
      times,
      componentTimes(parseCpuProfile(await Deno.readTextFile(`${dir}/${entry.name}`))),
    );
  }
  return { times, files };
}
