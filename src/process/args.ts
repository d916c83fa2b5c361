/**
 * Flag parsing for every subcommand, behind one small module over `node:util` `parseArgs`
 * (the stand-in for `@std/cli`, which JSR would provide).
 *
 * Owns the flag spec format, `--help` text and `UsageError`. An unknown flag, a missing value
 * or a value out of range becomes a `UsageError` whose message is one line; main.ts prints it
 * and exits 2.
 */

import { parseArgs } from "node:util";

export class UsageError extends Error {
  override name = "UsageError";
}

export interface FlagSpec {
  type: "string" | "boolean";
  /** What the flag does, for `--help`. */
  help: string;
  /** Shown after the flag in `--help`, e.g. `MS`. */
  valueName?: string;
  default?: string | boolean;
  short?: string;
  /** The flag may be given more than once; its values arrive as an array. */
  multiple?: boolean;
}

export interface CommandSpec {
  /** `hookd <name>`, or `hookd bench <name>` for a bench. */
  name: string;
  summary: string;
  /** Positional arguments, e.g. `<url>`; empty when none are taken. */
  positionals?: string;
  flags: Record<string, FlagSpec>;
}

export type FlagValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface ParsedArgs {
  help: boolean;
  values: FlagValues;
  positionals: string[];
}

export function parseCommandArgs(spec: CommandSpec, args: string[]): ParsedArgs {
  const options: Record<
    string,
    { type: "string" | "boolean"; short?: string; multiple?: boolean; default?: string | boolean }
  > = { help: { type: "boolean", short: "h" } };
  for (const [name, flag] of Object.entries(spec.flags)) {
    options[name] = {
      type: flag.type,
      ...(flag.short ? { short: flag.short } : {}),
      ...(flag.multiple ? { multiple: true } : {}),
      ...(flag.default !== undefined ? { default: flag.default } : {}),
    };
  }
  try {
    const { values, positionals } = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: spec.positionals !== undefined && spec.positionals !== "",
    });
    return { help: values.help === true, values: values as FlagValues, positionals };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(`hookd ${spec.name}: ${message.split("\n")[0]}`);
  }
}

export function renderHelp(spec: CommandSpec): string {
  const lines = [
    `hookd ${spec.name} — ${spec.summary}`,
    "",
    `Usage: hookd ${spec.name} [flags]${spec.positionals ? ` ${spec.positionals}` : ""}`,
    "",
    "Flags:",
  ];
  const rows: Array<[string, string]> = [["-h, --help", "Show this help"]];
  for (const [name, flag] of Object.entries(spec.flags)) {
    const value = flag.type === "string" ? ` ${flag.valueName ?? "VALUE"}` : "";
    const short = flag.short ? `-${flag.short}, ` : "";
    const dflt = flag.default !== undefined && flag.default !== false
      ? ` (default: ${flag.default})`
      : "";
    rows.push([`${short}--${name}${value}`, `${flag.help}${dflt}`]);
  }
  const width = Math.max(...rows.map(([left]) => left.length));
  for (const [left, right] of rows) lines.push(`  ${left.padEnd(width)}  ${right}`);
  return lines.join("\n");
}

/** A string flag's value, or undefined when absent. */
export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

export function booleanFlag(values: FlagValues, name: string): boolean {
  return values[name] === true;
}

/** Every value of a repeatable string flag; comma-separated values are split too. */
export function listFlag(values: FlagValues, name: string): string[] {
  const value = values[name];
  const raw = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
  return raw.flatMap((v) => String(v).split(",")).map((v) => v.trim()).filter((v) => v !== "");
}

export interface NumberRule {
  min?: number;
  max?: number;
  integer?: boolean;
}

/** A numeric flag checked against `rule`; a bad value is a one-line `UsageError`. */
export function numberFlag(
  values: FlagValues,
  name: string,
  fallback: number,
  rule: NumberRule = {},
): number {
  const raw = stringFlag(values, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  const problem = raw.trim() === "" || !Number.isFinite(value)
    ? "is not a number"
    : rule.integer && !Number.isInteger(value)
    ? "must be an integer"
    : rule.min !== undefined && value < rule.min
    ? `must be at least ${rule.min}`
    : rule.max !== undefined && value > rule.max
    ? `must be at most ${rule.max}`
    : undefined;
  if (problem !== undefined) throw new UsageError(`--${name} ${JSON.stringify(raw)} ${problem}`);
  return value;
}
