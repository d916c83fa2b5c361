/**
 * The load generator's protocol and its parent's side (`hookd bench generator`, run by the
 * sweeps, `bench replication` and chaos runs): the JSON lines its parent writes to its stdin
 * (one command per step), the lines it answers on stdout (progress, then one report per
 * step), its ids file, and `GeneratorProcess`, which starts it and speaks that protocol.
 *
 * Process plumbing, below the commands that drive a generator (src/bench/, src/chaos/), so that
 * chaos does not import the bench harness. The generator itself stays in
 * src/bench/load_generator.ts. Owns the wire and the child process; judges nothing.
 */

import { hookdCommand } from "./self_command.ts";
import { readLines } from "../lib/lines.ts";

export type GeneratorCommand =
  | { readonly op: "open"; readonly step: string; readonly rate: number; readonly seconds: number }
  | {
    readonly op: "max";
    readonly step: string;
    readonly seconds: number;
    readonly outstanding: number;
  }
  /** Answer the generator's clock at once (`ClockLine`): a sweep sets it against its own. */
  | { readonly op: "clock" }
  | { readonly op: "exit" };

/** The answer to `clock`: the generator's wall clock, the one its step times are on. */
export interface ClockLine {
  readonly op: "clock";
  readonly now_ms: number;
}

/** What one step did, as its `done` line says. */
export interface StepReport {
  readonly op: "done";
  readonly step: string;
  /** Submits the step was asked for (rate × seconds; 0 for a closed-loop step). */
  readonly asked: number;
  /** Submits really sent. */
  readonly offered: number;
  readonly accepted: number;
  /**
   * Jobs the accepted submits made: `accepted` for jobs, the sum of the 202s' `jobs` for
   * events (`--event-type`).
   */
  readonly jobs_made: number;
  readonly rejected: number;
  readonly errors: number;
  /** Non-accepted outcomes by code. */
  readonly codes: Record<string, number>;
  /** From the step's start to its last send, s. */
  readonly send_seconds: number;
  /** From the step's start until the last answer came, s. */
  readonly seconds: number;
  /** Accepted submits per second of the send window. */
  readonly accepted_per_s: number | null;
  /**
   * Submits acknowledged by the end of the send window: a closed loop's throughput is these
   * over `send_seconds` (the answers to the submits still outstanding at the end come later
   * and belong to no window).
   */
  readonly accepted_by_send_end: number;
  /** From the step's start to its first acknowledgement, s (null: none): the pipeline's fill. */
  readonly first_ack_seconds: number | null;
  /** Submit (scheduled time) → acknowledgement, ms. */
  readonly ack_p50_ms: number | null;
  readonly ack_p90_ms: number | null;
  readonly ack_p99_ms: number | null;
  readonly ack_max_ms: number | null;
  /**
   * Sent (not scheduled: the node's part alone) → a refusal (a 4xx/5xx answer such as 503
   * `overloaded`), ms; null when nothing was refused. How fast a node sheds what it cannot take.
   */
  readonly refusal_p50_ms: number | null;
  readonly refusal_p99_ms: number | null;
  /** Submits sent more than 1 ms after their scheduled time (the in-flight bound held them). */
  readonly sent_late: number;
  readonly ids_file: string;
  /** User + system CPU of this process over the step, ms. */
  readonly cpu_ms: number;
}

export interface ProgressLine {
  readonly op: "progress";
  readonly step: string;
  readonly elapsed_s: number;
  readonly offered: number;
  readonly accepted: number;
  readonly rejected: number;
  readonly errors: number;
}

/** The load generator process and its command channel. */
export class GeneratorProcess {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncGenerator<string, void, undefined>;
  readonly #stderr: Promise<void>;

  private constructor(child: Deno.ChildProcess, log: (line: string) => void) {
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#lines = readLines(child.stdout);
    this.#stderr = (async () => {
      for await (const line of readLines(child.stderr)) if (line !== "") log(`[generator] ${line}`);
    })();
  }

  /** Starts `hookd bench generator <args>`. */
  static start(
    args: readonly string[],
    env: Record<string, string>,
    log: (line: string) => void,
  ): GeneratorProcess {
    const child = hookdCommand(["bench", "generator", ...args], { stdin: "piped", env }).spawn();
    return new GeneratorProcess(child, log);
  }

  get pid(): number {
    return this.#child.pid;
  }

  /** The generator's clock now (its answer to `clock`). Throws if the generator died. */
  async clock(): Promise<number> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify({ op: "clock" }) + "\n"));
    for (;;) {
      const next = await this.#lines.next();
      if (next.done) throw new Error("the generator exited before it told its clock");
      if (next.value === "") continue;
      const line = JSON.parse(next.value) as ClockLine | ProgressLine | StepReport;
      if (line.op === "clock") return line.now_ms;
    }
  }

  /** Runs one step; `onProgress` sees each progress line. Throws if the generator died. */
  async run(
    command: Exclude<GeneratorCommand, { op: "exit" | "clock" }>,
    onProgress: (line: ProgressLine) => void,
  ): Promise<StepReport> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(command) + "\n"));
    for (;;) {
      const next = await this.#lines.next();
      if (next.done) throw new Error("the generator exited in the middle of a step");
      if (next.value === "") continue;
      const line = JSON.parse(next.value) as ProgressLine | StepReport;
      if (line.op === "progress") onProgress(line);
      else return line;
    }
  }

  /** Asks it to exit and waits (SIGKILL after `graceMs`). */
  async close(graceMs = 5_000): Promise<void> {
    try {
      await this.#writer.write(new TextEncoder().encode(JSON.stringify({ op: "exit" }) + "\n"));
      await this.#writer.close();
    } catch {
      // Already gone.
    }
    const timer = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    }, graceMs);
    try {
      for await (const _ of this.#lines) { /* drain */ }
      await this.#stderr;
      await this.#child.status;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * One accepted submit as the generator logged it: its id; the wall-clock ms it was scheduled
 * for, acknowledged at, and actually sent at (later than scheduled when the generator itself
 * was late: on a loaded machine it shares the CPUs with what it measures); and the index, in
 * `--targets` order, of the node it went to.
 */
export type AcceptedSubmit = [
  id: string,
  scheduledMs: number,
  ackedMs: number,
  sentMs: number,
  target: number,
];

/** One ids-file line (tab-separated, no newline): the format `parseIdsLine` reads back. */
export function formatIdsLine([id, scheduledMs, ackedMs, sentMs, target]: AcceptedSubmit): string {
  return `${id}\t${scheduledMs.toFixed(3)}\t${ackedMs.toFixed(3)}\t${sentMs.toFixed(3)}\t${target}`;
}

/** Parses one ids-file line; undefined when it is not one (a field missing, extra or not a number). */
export function parseIdsLine(line: string): AcceptedSubmit | undefined {
  const fields = line.split("\t");
  if (fields.length !== 5 || fields[0] === "") return undefined;
  const [id, scheduled, acked, sent, target] = fields as [string, string, string, string, string];
  const times = [scheduled, acked, sent].map((f) => (f.trim() === "" ? NaN : Number(f)));
  if (!times.every(Number.isFinite)) return undefined;
  if (!/^\d+$/.test(target)) return undefined;
  return [id, times[0]!, times[1]!, times[2]!, Number(target)];
}

/** Reads a generator ids file (one `AcceptedSubmit` a line); throws at the first bad line. */
export async function readIdsFile(path: string): Promise<AcceptedSubmit[]> {
  const text = await Deno.readTextFile(path);
  const out: AcceptedSubmit[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const entry = parseIdsLine(line);
    if (entry === undefined) {
      throw new Error(
        `${path}: not an ids line (id, three times in ms and a target index, tab-separated): ${line}`,
      );
    }
    out.push(entry);
  }
  return out;
}
