/**
 * The hookd executable's command line as a user meets it: help exits 0, and an unknown command,
 * an unknown flag or a bad value exits 2 with a one-line error on stderr.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";

async function hookd(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await hookdCommand(args).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

Deno.test("hookd --help and <command> --help print usage and exit 0", async () => {
  const top = await hookd("--help");
  assertEquals(top.code, 0);
  for (const command of ["node", "cluster", "submit", "status", "sink", "bench"]) {
    assert(top.stdout.includes(`  ${command} `), `--help lists ${command}`);
  }
  const bench = await hookd("bench", "--help");
  assertEquals(bench.code, 0);
  for (const name of ["wal", "transport", "membership", "delivery"]) {
    assert(bench.stdout.includes(`  ${name} `), `bench --help lists ${name}`);
  }
  const wal = await hookd("bench", "wal", "--help");
  assertEquals(wal.code, 0);
  assert(wal.stdout.includes("--seconds S"));
});

Deno.test("hookd refuses unknown commands, unknown flags and bad values with exit 2 and one line", async () => {
  for (
    const args of [
      ["nope"],
      ["bench", "nope"],
      ["node", "--bogus"],
      ["bench", "wal", "--seconds", "soon"],
      ["cluster", "--nodes", "0"],
      ["submit", "--url", "http://x.test/"],
      ["status", "--node", "http://x.test", "a", "b"],
    ]
  ) {
    const result = await hookd(...args);
    assertEquals(result.code, 2, `hookd ${args.join(" ")}`);
    const lines = result.stderr.trim().split("\n");
    assertEquals(lines.length, 1, `one line for hookd ${args.join(" ")}: ${result.stderr}`);
    assert(lines[0]!.startsWith("hookd"), `names the command: ${lines[0]}`);
  }
});
