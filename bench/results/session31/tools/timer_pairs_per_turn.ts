// CPU of PAIRS arm-and-clear pairs of a 10-s timer in each turn of a 5-ms interval, over 5 s.
// Usage: deno run -A timer_pairs_per_turn.ts PAIRS
import { cpuMs } from "./proc_self.ts";

const pairs = Number(Deno.args[0] ?? 1);
const c0 = cpuMs();
const interval = setInterval(() => {
  for (let i = 0; i < pairs; i++) clearTimeout(setTimeout(() => {}, 10_000));
}, 5);
await new Promise((resolve) => setTimeout(resolve, 5000));
clearInterval(interval);
console.log("pairs per turn", pairs, "cpu_ms", cpuMs() - c0);
