import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";

/** `hookd node` with a valid minimal command line plus `extra`, run to its end (bounded). */
async function nodeWith(
  data: string,
  extra: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = hookdCommand([
    "node",
    "--id",
    "n1",
    "--listen",
    "127.0.0.1:0",
    "--peers",
    "127.0.0.1:1",
    "--data",
    data,
    "--cluster-key",
    "0123456789abcdef0123456789abcdef",
    ...extra,
  ]).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const output = await child.output();
  clearTimeout(guard);
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test("hookd node refuses an API token a header cannot carry (spaces, non-ASCII) as a usage error, before touching its data", async () => {
  const root = await Deno.makeTempDir({ prefix: "hookd-node-flags-" });
  try {
    for (const token of ["aaaa bbbb cccc dddd", "éééééééééééééééééé"]) {
      const data = `${root}/data`;
      const run = await nodeWith(data, ["--api-token", token]);
      assertEquals(run.code, 2, run.stderr);
      assert(/--api-token .*visible ASCII/.test(run.stderr), run.stderr);
      assertEquals(run.stdout, "", "it started before refusing");
      let created = true;
      try {
        await Deno.stat(data);
      } catch {
        created = false;
      }
      assert(!created, "the data directory was created");
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("hookd node refuses --max-attempts outside 1..maxAttemptsMax, a --retention-max, --backlog-max or --backlog-bytes-max that is not a positive integer, and a --breaker-open-ms that is not FIRST,MAX as usage errors", async () => {
  const root = await Deno.makeTempDir({ prefix: "hookd-node-flags-" });
  try {
    const cases = [
      ...["0", "101", "2.5", "many"].map((v) => ["--max-attempts", v] as const),
      ...["0", "1.5", "lots"].map((v) => ["--retention-max", v] as const),
      ...["0", "1.5", "lots"].map((v) => ["--backlog-max", v] as const),
      ...["0", "2.5", "1GiB"].map((v) => ["--backlog-bytes-max", v] as const),
      ...["5000", "0,10", "10,5", "1.5,9", "a,b", "1,2,3"].map(
        (v) => ["--breaker-open-ms", v] as const,
      ),
    ];
    for (const [flag, value] of cases) {
      const run = await nodeWith(`${root}/data`, [flag, value]);
      assertEquals(run.code, 2, run.stderr);
      assert(run.stderr.includes(flag), run.stderr);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
