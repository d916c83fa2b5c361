/**
 * The exact CPU time of a set of processes over a window, from Linux `perf stat`'s task clock:
 * the scheduler's own account of the time their threads ran. `/proc`'s utime + stime come in
 * 10-ms ticks and, for a process that wakes dozens of times a second, read 2–25 % above it on
 * this project's 2-core VM (bench/results/session23/wakes/proc_vs_perf_output.txt). For an idle
 * node that is 1.23 % of a core by `/proc` against 1.1 % by perf over the same window
 * (bench/results/session24/cost/), about half the gap to issue 19's "about 1 %".
 *
 * Owns running `perf` and reading its CSV. Optional by design: a machine without perf, or
 * where perf may not count these processes (`kernel.perf_event_paranoid`, containers), gets
 * undefined and the bench reports `/proc` alone.
 */

/** `perf stat -x,` lines: value, unit, event, … A value perf could not count is `<not …>`. */
export function parseTaskClockMs(csv: string): number | undefined {
  for (const line of csv.split("\n")) {
    const fields = line.trim().split(",");
    if (fields.length < 3 || fields[2] !== "task-clock") continue;
    const value = Number(fields[0]);
    if (fields[0] === "" || !Number.isFinite(value) || value < 0) return undefined;
    // perf reports task-clock in msec; any other unit would be a format this code does not know.
    return fields[1] === "msec" ? value : undefined;
  }
  return undefined;
}

/**
 * Runs `perf stat -e task-clock` on `pids` for `seconds` and returns their CPU ms over it, or
 * undefined when perf is missing, refused, or counted nothing. Resolves after the window in
 * every case, so a caller can use it as its wait.
 */
export async function perfTaskClockMs(
  pids: readonly number[],
  seconds: number,
  program = "perf",
): Promise<number | undefined> {
  const startMs = performance.now();
  const waitOut = async () => {
    const leftMs = seconds * 1000 - (performance.now() - startMs);
    if (leftMs > 0) await new Promise((resolve) => setTimeout(resolve, leftMs));
  };
  if (pids.length === 0) {
    await waitOut();
    return undefined;
  }
  try {
    const result = await new Deno.Command(program, {
      args: [
        "stat",
        "-x,",
        "-e",
        "task-clock",
        "-p",
        pids.join(","),
        "--",
        "sleep",
        String(seconds),
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    await waitOut();
    if (!result.success) return undefined;
    return parseTaskClockMs(new TextDecoder().decode(result.stderr));
  } catch {
    // No perf on this machine (NotFound), or not allowed to run it.
    await waitOut();
    return undefined;
  }
}
