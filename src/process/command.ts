/**
 * The shape every subcommand module exports, and the dispatcher main.ts and `hookd bench` use.
 *
 * Owns argument dispatch and exit codes: 0 success, 1 runtime failure, 2 usage error (one
 * line on stderr). Subcommands do their own work; they never call `Deno.exit` themselves.
 */

import {
  type CommandSpec,
  parseCommandArgs,
  type ParsedArgs,
  renderHelp,
  UsageError,
} from "./args.ts";

export interface LeafCommand {
  spec: CommandSpec;
  /** Returns the process exit code. */
  run(args: ParsedArgs): Promise<number>;
}

/** A command with subcommands of its own (`hookd bench wal`). */
export interface GroupCommand {
  spec: Pick<CommandSpec, "name" | "summary">;
  subcommands: readonly Command[];
  /**
   * Run when the group is given a flag instead of a subcommand name (`hookd bench --rates …`
   * runs the sweep). `--help` still lists the subcommands.
   */
  flagsCommand?: LeafCommand;
}

export type Command = LeafCommand | GroupCommand;

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Runs `commands[argv[0]]` with the rest of argv; `prefix` names the level (`hookd`, `hookd bench`). */
export async function dispatch(
  prefix: string,
  summary: string,
  commands: readonly Command[],
  argv: readonly string[],
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(renderIndex(prefix, summary, commands));
    return name === undefined ? EXIT_USAGE : EXIT_OK;
  }
  const command = commands.find((c) => c.spec.name.split(" ").pop() === name);
  if (command === undefined) {
    console.error(`${prefix}: unknown command ${JSON.stringify(name)} (see '${prefix} --help')`);
    return EXIT_USAGE;
  }
  let leaf: LeafCommand;
  if ("subcommands" in command) {
    const first = rest[0];
    const flag = first !== undefined && first.startsWith("-") && first !== "-h" &&
      first !== "--help";
    if (!flag || command.flagsCommand === undefined) {
      return await dispatch(`${prefix} ${name}`, command.spec.summary, command.subcommands, rest);
    }
    leaf = command.flagsCommand;
  } else {
    leaf = command;
  }
  try {
    const parsed = parseCommandArgs(leaf.spec, rest);
    if (parsed.help) {
      console.log(renderHelp(leaf.spec));
      return EXIT_OK;
    }
    return await leaf.run(parsed);
  } catch (error) {
    if (error instanceof UsageError) {
      // Every usage error names its command, whichever layer raised it.
      const where = `${prefix} ${name}`;
      const line = error.message.split("\n")[0]!;
      console.error(line.startsWith("hookd") ? line : `${where}: ${line}`);
      return EXIT_USAGE;
    }
    throw error;
  }
}

function renderIndex(prefix: string, summary: string, commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.spec.name.split(" ").pop()!.length));
  return [
    `${prefix} — ${summary}`,
    "",
    `Usage: ${prefix} <command> [flags]   (${prefix} <command> --help for its flags)`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.spec.name.split(" ").pop()!.padEnd(width)}  ${c.spec.summary}`),
  ].join("\n");
}
