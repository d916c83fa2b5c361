// Which half of a timer change costs a turn its extra CPU on Deno: arming, or clearing? A 5-ms
// interval runs for 5 s (1,000 turns). "arm": each turn arms a 60-s timer (never fired or
// cleared within the run); "clear": 1,000 such timers armed before the run, each turn clears
// one; "none": neither. Usage: deno run -A timer_arm_or_clear_per_turn.ts none|arm|clear
import { cpuMs } from "./proc_self.ts";

const arm = Deno.args[0] ?? "none";
const handles: ReturnType<typeof setTimeout>[] = [];
if (arm === "clear") for (let i = 0; i < 1000; i++) handles.push(setTimeout(() => {}, 60_000));
const c0 = cpuMs();
let turn = 0;
const interval = setInterval(() => {
  if (arm === "arm") handles.push(setTimeout(() => {}, 60_000));
  else if (arm === "clear" && turn < handles.length) clearTimeout(handles[turn]);
  turn++;
}, 5);
await new Promise((resolve) => setTimeout(resolve, 5000));
const used = cpuMs() - c0;
clearInterval(interval);
for (const h of handles) clearTimeout(h);
console.log(arm, "turns", turn, "cpu_ms", used);
