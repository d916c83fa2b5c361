import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";

Deno.test("hookd node refuses an API token a header cannot carry (spaces, non-ASCII) as a usage error, before touching its data", async () => {
  const root = await Deno.makeTempDir({ prefix: "hookd-node-flags-" });
  try {
    for (const token of ["aaaa bbbb cccc dddd", "éééééééééééééééééé"]) {
      const data = `${root}/data`;
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
        "--api-token",
        token,
      ]).spawn();
      const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
      const output = await child.output();
      clearTimeout(guard);
      const stderr = new TextDecoder().decode(output.stderr);
      assertEquals(output.code, 2, stderr);
      assert(/--api-token .*visible ASCII/.test(stderr), stderr);
      assertEquals(new TextDecoder().decode(output.stdout), "", "it started before refusing");
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

Deno.test("hookd node refuses --max-attempts outside 1..maxAttemptsMax and a --breaker-open-ms that is not FIRST,MAX as usage errors", async () => {
  const root = await Deno.makeTempDir({ prefix: "hookd-node-flags-" });
  try {
    const cases = [
      ...["0", "101", "2.5", "many"].map((v) => ["--max-attempts", v]),
      ...["5000", "0,10", "10,5", "1.5,9", "a,b", "1,2,3"].map((v) => ["--breaker-open-ms", v]),
    ];
    for (const [flag, value] of cases) {
      const child = hookdCommand([
        "node",
        "--id",
        "n1",
        "--listen",
        "127.0.0.1:0",
        "--peers",
        "127.0.0.1:1",
        "--data",
        `${root}/data`,
        "--cluster-key",
        "0123456789abcdef0123456789abcdef",
        flag!,
        value!,
      ]).spawn();
      const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
      const output = await child.output();
      clearTimeout(guard);
      const stderr = new TextDecoder().decode(output.stderr);
      assertEquals(output.code, 2, stderr);
      assert(stderr.includes(flag!), stderr);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
