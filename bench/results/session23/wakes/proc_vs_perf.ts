// /proc/<pid>/stat utime+stime vs perf task-clock for the same whole process: print /proc's total at exit.
function ticks(path: string): number { const f = Deno.readTextFileSync(path).split(") ")[1]!.split(" "); return Number(f[11]) + Number(f[12]); }
const ms = Number(Deno.args[0]); const n = Number(Deno.args[1]);
let k = 0;
await new Promise<void>((res) => { const step = () => { if (++k < n) setTimeout(step, ms); else res(); }; setTimeout(step, ms); });
// Let the kernel fold the running time in: sleep briefly so the reading is taken after a switch.
await new Promise((r) => setTimeout(r, 20));
console.log(`/proc utime+stime at exit: ${ticks(`/proc/${Deno.pid}/stat`) * 10} ms`);
