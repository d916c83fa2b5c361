/**
 * Builds the command line that starts another hookd process.
 *
 * Owns the one place that knows how hookd was started: compiled (`./hookd`, where
 * `Deno.execPath()` is hookd itself) or uncompiled (`deno run … main.ts`, where it is the deno
 * binary and the permissions and config must be passed again). Benchmarks, the local cluster
 * and end-to-end tests all spawn through here so both forms keep working.
 */

import { fileURLToPath as fromFileUrl } from "node:url";

/** The permissions hookd needs; deno.json's `hookd` and `compile` tasks grant the same. */
export const HOOKD_PERMISSIONS = [
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-run",
  "--allow-sys",
] as const;

/**
 * V8 flags every hookd process runs with; deno.json's `hookd` and `compile` tasks pass the same
 * (`--v8-flags`, which `deno compile` builds into the executable).
 *
 * `--min-semi-space-size=16` (MiB): a node allocates about 16 MB a second at 200 jobs/s, and
 * V8's young generation, which starts at 1 MB and grows as it sees fit, was scavenged every
 * ~0.4 s; objects of a job still in flight outlived two scavenges and were promoted, and the
 * old generation filled with them until a major GC, on all five nodes at nearly the same job
 * count. At 16 MiB: half the scavenges, half the old-generation growth and major GCs
 * (bench/results/session27/semi_space/), and a lower worst latency in 8 of 9 paired 200/s runs
 * (session27/ and session28/semi_space/), for about 30 MB more resident memory a node.
 *
 * `--no-memory-reducer`: V8's memory reducer shrinks the heap of a process it thinks has gone
 * quiet, and its watchdog starts such a GC whenever the last mark-compact is more than 100 s
 * old, whatever the allocation rate, then a second one about half a second later. A node that
 * holds 120,000 or more delivered jobs and takes 200 jobs/s goes that long between
 * mark-compacts, so the watchdog fired there again and again: "(reduce)" GCs with pauses up to
 * 231 ms, each followed by one that freed a few MB. Without it, on such nodes (two alternated
 * pairs, bench/results/session35/aged/), the 200/s step's mark-compacts over five nodes fell
 * from 29 to 10 and their atomic pauses from 1.3-1.5 s to 0.5-0.7 s, its p99 from 43-44 to
 * 34-38 ms. The cost: a node's heap is not shrunk after its load falls, about 90 MB more
 * resident memory a node there, and a rarer mark-compact of a larger heap can be long (279 ms
 * once). A fresh cluster's nodes never met the watchdog (session 32's traces, session 35's).
 */
export const HOOKD_V8_FLAGS = ["--min-semi-space-size=16", "--no-memory-reducer"] as const;

const projectRoot = new URL("../../", import.meta.url);

function isUncompiled(): boolean {
  const exe = Deno.execPath().split(/[\\/]/).pop() ?? "";
  return /^deno(\.exe)?$/.test(exe);
}

/** The program and arguments that run `hookd <args>`. */
export function hookdArgv(args: readonly string[]): { program: string; args: string[] } {
  if (!isUncompiled()) return { program: Deno.execPath(), args: [...args] };
  return {
    program: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      `--config=${fromFileUrl(new URL("deno.json", projectRoot))}`,
      ...HOOKD_PERMISSIONS,
      `--v8-flags=${HOOKD_V8_FLAGS.join(",")}`,
      fromFileUrl(new URL("main.ts", projectRoot)),
      ...args,
    ],
  };
}

/**
 * How a person at a shell runs hookd the way this process was run, as words to join with
 * spaces: the compiled executable's path, else `deno task hookd` — with `--config` naming
 * this project when the user's directory (`INIT_CWD`, which `deno task` sets) is outside it,
 * where a bare `deno task hookd` would not find the task.
 */
export function hookdShellWords(): string[] {
  if (!isUncompiled()) return [Deno.execPath()];
  const root = fromFileUrl(projectRoot).replace(/[\\/]+$/, "");
  const userCwd = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  const inside = userCwd === root || userCwd.startsWith(`${root}/`) ||
    userCwd.startsWith(`${root}\\`);
  if (inside) return ["deno", "task", "hookd"];
  return ["deno", "task", `--config=${fromFileUrl(new URL("deno.json", projectRoot))}`, "hookd"];
}

/** A `Deno.Command` for `hookd <args>` with piped stdout/stderr unless overridden. */
export function hookdCommand(
  args: readonly string[],
  options: Omit<Deno.CommandOptions, "args"> = {},
): Deno.Command {
  const argv = hookdArgv(args);
  return new Deno.Command(argv.program, {
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    ...options,
    args: argv.args,
  });
}
