// Does a cancelled timer cost CPU on Deno? A 5-ms interval drives both arms for 5 s; arm
// "cancel" also arms a timer of DELAY ms in each turn and clears it in the next (it never fires).
// Usage: deno run -A timer_cancel_per_turn.ts none|cancel [DELAY]
import { cpuMs, voluntarySwitches } from "./proc_self.ts";

const arm = Deno.args[0] ?? "none";
const delayMs = Number(Deno.args[1] ?? 30);
let pending: ReturnType<typeof setTimeout> | undefined;
const s0 = voluntarySwitches();
const c0 = cpuMs();
const interval = setInterval(() => {
  if (arm !== "cancel") return;
  if (pending !== undefined) clearTimeout(pending);
  pending = setTimeout(() => {
    throw new Error("a cleared timer fired");
  }, delayMs);
}, 5);
await new Promise((resolve) => setTimeout(resolve, 5000));
clearInterval(interval);
if (pending !== undefined) clearTimeout(pending);
console.log(arm, "switches", voluntarySwitches() - s0, "cpu_ms", cpuMs() - c0);
