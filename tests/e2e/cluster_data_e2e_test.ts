/**
 * `hookd cluster --data DIR`: the data is kept after stop, and DIR/cluster.json makes the next
 * run with the same DIR start the same cluster (same node addresses, on the same data);
 * asking that DIR for another node count is a usage error.
 */

import { assert, assertEquals } from "../assert.ts";
import { runHookd } from "./hookd_process.ts";

interface EventLine {
  event: string;
  nodes?: unknown;
  data?: string;
  data_kept?: boolean;
}

function events(stdout: string): EventLine[] {
  return stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

Deno.test("hookd cluster --data DIR keeps the data and restarts the same cluster on it", async () => {
  const root = await Deno.makeTempDir({ prefix: "hookd-cluster-data-test-" });
  const dir = `${root}/keep`;
  try {
    const args = ["cluster", "--nodes", "2", "--data", dir, "--seconds", "3", "--quiet"];
    const first = await runHookd(args);
    assertEquals(first.code, 0, first.stderr);
    const started = events(first.stdout).find((e) => e.event === "cluster-starting")!;
    const ready = events(first.stdout).find((e) => e.event === "cluster-ready");
    assertEquals(ready?.data, dir);
    assertEquals(ready?.data_kept, true);
    assert(first.stderr.includes(`data kept in ${dir}`), first.stderr);
    assert((await Deno.stat(`${dir}/cluster.json`)).isFile);
    for (const id of ["n1", "n2"]) assert((await Deno.stat(`${dir}/${id}`)).isDirectory);

    const second = await runHookd(args);
    assertEquals(second.code, 0, second.stderr);
    const again = events(second.stdout).find((e) => e.event === "cluster-starting")!;
    assertEquals(again.nodes, started.nodes, "the same node addresses");

    const other = await runHookd(["cluster", "--nodes", "3", "--data", dir, "--seconds", "1"]);
    assertEquals(other.code, 2);
    assert(other.stderr.includes("holds a 2-node cluster"), other.stderr);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
