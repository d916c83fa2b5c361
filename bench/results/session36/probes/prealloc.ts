// write 512 B + fdatasync: appending (file grows) vs overwriting a zero-filled file.
import process from "node:process";
const dir = Deno.args[0] ?? "/work/main";
const n = Number(Deno.args[1] ?? 2000);
function sysTicks(): number {
  const l = Deno.readTextFileSync("/proc/stat").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  return l[0]! + l[1]! + l[2]! + l[5]! + l[6]! + l[7]!; // user nice system irq softirq steal... busy
}
const buf = new Uint8Array(512).fill(7);
function run(mode: string) {
  const path = `${dir}/.prealloc-${mode}-${Date.now()}`;
  const f = Deno.openSync(path, { create: true, read: true, write: true });
  if (mode === "overwrite") {
    const zeros = new Uint8Array(1 << 20);
    for (let i = 0; i < Math.ceil((n * 512) / zeros.length) + 1; i++) f.writeSync(zeros);
    f.syncSync();
    f.seekSync(0, Deno.SeekMode.Start);
  }
  const c0 = process.cpuUsage();
  const s0 = sysTicks();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    f.writeSync(buf);
    f.syncDataSync();
  }
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const s = sysTicks() - s0;
  f.close();
  Deno.removeSync(path);
  console.log(
    `${mode.padEnd(9)} wall µs/op ${(wall * 1000 / n).toFixed(1)}  process CPU µs/op ${((c.user + c.system) / n).toFixed(1)} (sys ${(c.system / n).toFixed(1)})  machine busy µs/op ${(s * 10000 / n).toFixed(1)}`,
  );
}
for (let r = 0; r < 3; r++) {
  run("append");
  run("overwrite");
}
