/**
 * Reads a V8 sampling heap profile (`.heapprofile`: what `hookd node --alloc-profile-dir`
 * writes) and sums its allocations per hookd component — by the same rules as the CPU split
 * (cpu_profile.ts: a helper in src/lib/ is charged to whoever called it) — and per site: the
 * function of ours that allocated, or that called the runtime's function that did.
 *
 * The profile's sizes are V8's estimate of every byte allocated while it sampled, the objects
 * collected meanwhile included (the node samples with them kept in). Owns only the parsing and
 * the sums; must not start processes.
 */

import { type Component, componentOfFrame, COMPONENTS } from "./cpu_profile.ts";

interface HeapCallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface HeapNode {
  readonly callFrame: HeapCallFrame;
  readonly selfSize: number;
  readonly children?: readonly HeapNode[];
}

export interface HeapProfile {
  readonly head: HeapNode;
}

/** Bytes allocated per component. */
export type ComponentBytes = Record<Component, number>;

export interface AllocationSums {
  bytes: number;
  components: ComponentBytes;
  /** Bytes per site (named as `addAllocations` says). */
  sites: Map<string, number>;
}

/** Parses a heap profile's JSON text; throws on a file that is not one. */
export function parseHeapProfile(text: string): HeapProfile {
  const value = JSON.parse(text) as Partial<HeapProfile>;
  const head = value.head as Partial<HeapNode> | undefined;
  if (head === undefined || typeof head.selfSize !== "number" || head.callFrame === undefined) {
    throw new Error("not a V8 sampling heap profile (head with callFrame and selfSize expected)");
  }
  return value as HeapProfile;
}

function frameName(frame: HeapCallFrame): string {
  const file = frame.url.includes("/src/") ? frame.url.split("/src/")[1]! : frame.url;
  return `${frame.functionName || "(anonymous)"} (${file}:${frame.lineNumber + 1})`;
}

/** Our code: what a site is named after. */
function isOurs(frame: HeapCallFrame): boolean {
  return frame.url.includes("/src/") && !frame.url.includes("/src/lib/");
}

export function emptySums(): AllocationSums {
  return {
    bytes: 0,
    components: Object.fromEntries(COMPONENTS.map((c) => [c, 0])) as ComponentBytes,
    sites: new Map(),
  };
}

/**
 * Adds a profile's allocations to `into` (several nodes' profiles sum). A site is the nearest
 * frame of ours above the allocation, with the runtime's function that allocated when that is
 * not ours: "subarray in decodeDatagram (transport/frame_codec.ts:250)".
 */
export function addAllocations(profile: HeapProfile, into: AllocationSums): AllocationSums {
  // Iterative: stacks can be deep. Each entry carries what its ancestors decided.
  const stack: Array<{ node: HeapNode; component: Component | undefined; ours?: string }> = [
    { node: profile.head, component: undefined },
  ];
  while (stack.length > 0) {
    const { node, component: above, ours: oursAbove } = stack.pop()!;
    const frame = node.callFrame;
    const component = componentOfFrame({ functionName: frame.functionName, url: frame.url }) ??
      above;
    const ours = isOurs(frame) ? frameName(frame) : oursAbove;
    if (node.selfSize > 0) {
      into.bytes += node.selfSize;
      into.components[component ?? "runtime_other"] += node.selfSize;
      const site = isOurs(frame) || ours === undefined
        ? frameName(frame)
        : `${frame.functionName || "(anonymous)"} in ${ours}`;
      into.sites.set(site, (into.sites.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children ?? []) {
      stack.push({ node: child, component, ...(ours !== undefined ? { ours } : {}) });
    }
  }
  return into;
}

/** The `n` sites that allocated most, most first. */
export function topSites(sums: AllocationSums, n: number): Array<[string, number]> {
  return [...sums.sites].sort((a, b) => b[1] - a[1]).slice(0, n);
}

/** Every `.heapprofile` in `dir`, summed; the count of files read is returned too. */
export async function allocationDirSums(
  dir: string,
): Promise<{ sums: AllocationSums; files: number }> {
  const sums = emptySums();
  let files = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".heapprofile")) continue;
    addAllocations(parseHeapProfile(await Deno.readTextFile(`${dir}/${entry.name}`)), sums);
    files++;
  }
  return { sums, files };
}
