/** This process's CPU ms (utime + stime, 10-ms ticks) and voluntary context switches, from /proc. */
export function cpuMs(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function voluntarySwitches(): number {
  const match = /voluntary_ctxt_switches:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/self/status"));
  return Number(match?.[1] ?? NaN);
}
