/**
 * The layers of src/ (issue 18, part 5): no import cycle between files or between folders, and
 * no folder imports a folder of a higher layer. Reads every .ts under src/, takes the relative
 * specifiers of its static `import … from` / `export … from` / `import "…"` statements, and
 * builds the file graph; the folder graph is the file graph with each file replaced by its
 * top-level folder under src/ (`src/config.ts`, the barrel of
 * src/config/, counts as folder `config`).
 *
 * Layers, highest first. A folder may import its own layer's folders (as long as no folder cycle
 * forms) and any lower layer, never a higher one:
 *
 *   5  bench, chaos, cli, node   the commands and the node process
 *   4  cluster                   starts local clusters of hookd processes (for cli, bench, chaos)
 *   3  process                   process plumbing: argument parsing, command types, starting
 *                                hookd itself, child-process I/O and signals, the sink
 *   2  api, sim, jobs, membership, dashboard
 *   1  delivery, wal, transport
 *   0  metrics, lib, config       (lib imports nothing outside lib)
 *
 * No module under src/ imports the barrel src/config.ts: each imports the config areas it uses
 * from their own modules (src/config/<area>.ts), so its imports name the areas it depends on.
 * The barrel is for code outside src/ (tests, tools) that wants them all.
 */

import { relative } from "node:path";
import { fromFileUrl } from "./paths.ts";

const LAYERS: Readonly<Record<string, number>> = {
  bench: 5,
  chaos: 5,
  cli: 5,
  node: 5,
  cluster: 4,
  process: 3,
  api: 2,
  sim: 2,
  jobs: 2,
  membership: 2,
  dashboard: 2,
  delivery: 1,
  wal: 1,
  transport: 1,
  metrics: 0,
  lib: 0,
  config: 0,
};

/** Folders at the very bottom: they import nothing outside themselves (lib is used by all). */
const LEAVES: ReadonlySet<string> = new Set(["lib"]);

/** The barrel src/config.ts, which no module under src/ imports (issue 18). */
const BARREL = "config.ts";

/**
 * Known exceptions, each a file cycle (its files sorted, joined by " ") or a file edge
 * ("from.ts -> to.ts", left out of the folder graph), relative to src/. Empty since issue 18
 * removed the last ones; keep it so. An entry that no longer matches anything fails the test,
 * so it cannot rot.
 */
const ALLOWED: ReadonlySet<string> = new Set<string>([]);

const SRC = fromFileUrl(new URL("../src/", import.meta.url));

const IMPORT_RE =
  /^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']/gm;

async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) files.push(...await sourceFiles(`${path}/`));
    else if (entry.isFile && entry.name.endsWith(".ts")) files.push(path);
  }
  return files.sort();
}

/** The graph of src/: each file (relative to src/) to the files it imports (relative to src/). */
async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const path of await sourceFiles(SRC)) {
    const text = await Deno.readTextFile(path);
    const from = relative(SRC, path);
    const targets: string[] = [];
    for (const match of text.matchAll(IMPORT_RE)) {
      const target = relative(SRC, fromFileUrl(new URL(match[1]!, `file://${path}`)));
      if (!target.startsWith("..")) targets.push(target);
    }
    graph.set(from, [...new Set(targets)]);
  }
  return graph;
}

/** Strongly connected components with more than one node, or a node importing itself. */
function cycles(graph: Map<string, readonly string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
      }
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) visit(v);
  return found;
}

function folderOf(file: string): string {
  const slash = file.indexOf("/");
  return slash < 0 ? file.replace(/\.ts$/, "") : file.slice(0, slash);
}

/** Each import of the barrel by a module of src/, as "from.ts -> config.ts". */
function barrelImports(graph: Map<string, readonly string[]>): string[] {
  return [...graph]
    .filter(([from, targets]) => from !== BARREL && targets.includes(BARREL))
    .map(([from]) => `${from} -> ${BARREL}`);
}

interface Findings {
  problems: string[];
  matched: Set<string>;
}

async function findProblems(): Promise<Findings> {
  const graph = await importGraph();
  const problems: string[] = [];
  const matched = new Set<string>();

  for (const component of cycles(graph)) {
    const key = component.join(" ");
    if (ALLOWED.has(key)) matched.add(key);
    else problems.push(`file cycle: ${component.join(" <-> ")}`);
  }

  // The folder graph, without the allowed file edges; each folder edge keeps its file edges.
  const folders = new Map<string, Set<string>>();
  const edgeFiles = new Map<string, string[]>();
  for (const [from, targets] of graph) {
    const a = folderOf(from);
    for (const to of targets) {
      const b = folderOf(to);
      if (a === b) continue;
      const fileEdge = `${from} -> ${to}`;
      if (ALLOWED.has(fileEdge)) {
        matched.add(fileEdge);
        continue;
      }
      if (!folders.has(a)) folders.set(a, new Set());
      folders.get(a)!.add(b);
      const key = `${a} -> ${b}`;
      edgeFiles.set(key, [...(edgeFiles.get(key) ?? []), fileEdge]);
    }
  }
  for (const [a, targets] of folders) {
    for (const b of targets) {
      const la = LAYERS[a], lb = LAYERS[b];
      const key = `${a} -> ${b}`;
      if (la === undefined || lb === undefined) {
        problems.push(`folder without a layer in LAYERS: src/${la === undefined ? a : b}`);
      } else if (lb > la) {
        problems.push(
          `upward import ${key} (layer ${la} -> ${lb}): ${edgeFiles.get(key)!.join(", ")}`,
        );
      } else if (LEAVES.has(a)) {
        problems.push(`${a} imports only itself, but: ${edgeFiles.get(key)!.join(", ")}`);
      }
    }
  }
  const folderGraph = new Map([...folders].map(([k, v]) => [k, [...v]]));
  for (const component of cycles(folderGraph)) {
    const edges = component.flatMap((a) =>
      component.filter((b) => b !== a && folders.get(a)?.has(b)).map((b) => `${a} -> ${b}`)
    );
    problems.push(
      `folder cycle ${component.join(" <-> ")}: ${
        edges.map((key) => `${key} (${edgeFiles.get(key)!.join(", ")})`).join("; ")
      }`,
    );
  }
  return { problems, matched };
}

Deno.test("src/ has no import cycle and no import from a folder to a higher layer", async () => {
  const { problems, matched } = await findProblems();
  const stale = [...ALLOWED].filter((key) => !matched.has(key));
  const lines = [
    ...problems,
    ...stale.map((key) => `allow-list entry matches nothing (remove it): ${key}`),
  ];
  if (lines.length > 0) {
    throw new Error(`${lines.length} layering problem(s):\n  ${lines.join("\n  ")}`);
  }
});

Deno.test("src/ imports config from src/config/<area>.ts, never through the barrel", async () => {
  const found = barrelImports(await importGraph());
  if (found.length > 0) {
    throw new Error(
      `${found.length} barrel import(s); import from the area's module under src/config/ ` +
        `instead:\n  ${found.join("\n  ")}`,
    );
  }
});

Deno.test("barrelImports finds every import of the barrel but the barrel's own, and nothing else", () => {
  const graph = new Map<string, string[]>([
    ["jobs/a.ts", ["config.ts", "lib/x.ts"]],
    ["jobs/b.ts", ["config/jobs.ts"]],
    ["sim/c.ts", ["config.ts"]],
    ["delivery/d.ts", ["config.ts"]],
    ["config.ts", ["config/jobs.ts"]],
  ]);
  const found = barrelImports(graph);
  if (
    JSON.stringify(found) !==
      JSON.stringify([
        "jobs/a.ts -> config.ts",
        "sim/c.ts -> config.ts",
        "delivery/d.ts -> config.ts",
      ])
  ) {
    throw new Error(`found ${JSON.stringify(found)}`);
  }
});

Deno.test("cycles finds every strongly connected component, self-imports included, and nothing else", () => {
  const graph = new Map<string, string[]>([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts", "d.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["e.ts"]],
    ["e.ts", []],
    ["f.ts", ["f.ts"]],
  ]);
  const found = cycles(graph).map((component) => component.join(" ")).sort();
  if (JSON.stringify(found) !== JSON.stringify(["a.ts b.ts c.ts", "f.ts"])) {
    throw new Error(`found ${JSON.stringify(found)}`);
  }
});

Deno.test("the import pattern takes static imports and re-exports across lines, not strings", () => {
  const text = [
    `import { a } from "./a.ts";`,
    `import type { B } from "../b/b.ts";`,
    `import {\n  c,\n  type D,\n} from "./c.ts";`,
    `export * from "./e.ts";`,
    `export { f } from "../f.ts";`,
    `import "./g.ts";`,
    `import { h } from "node:h";`,
    `const s = "import x from './no.ts'";`,
  ].join("\n");
  const found = [...text.matchAll(IMPORT_RE)].map((match) => match[1]);
  const expected = ["./a.ts", "../b/b.ts", "./c.ts", "./e.ts", "../f.ts", "./g.ts"];
  if (JSON.stringify(found) !== JSON.stringify(expected)) {
    throw new Error(`found ${JSON.stringify(found)}`);
  }
});
