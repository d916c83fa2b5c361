// One of N concurrent writers: write 512 B + fdatasync, every `gapMs` (0 = back to back), for `secs`.
import process from "node:process";
const [dir, mode, secsS, gapS] = Deno.args;
const secs = Number(secsS), gapMs = Number(gapS);
const path = `${dir}/.conc-${mode}-${Deno.pid}`;
const f = Deno.openSync(path, { create: true, read: true, write: true, truncate: true });
if (mode === "overwrite") {
  const zeros = new Uint8Array(1 << 20);
  for (let i = 0; i < 16; i++) f.writeSync(zeros);
  f.syncSync();
  f.seekSync(0, Deno.SeekMode.Start);
}
const buf = new Uint8Array(512).fill(7);
const lat: number[] = [];
const c0 = process.cpuUsage();
const end = performance.now() + secs * 1000;
while (performance.now() < end) {
  const t = performance.now();
  f.writeSync(buf);
  f.syncDataSync();
  lat.push(performance.now() - t);
  if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
}
const c = process.cpuUsage(c0);
f.close(); Deno.removeSync(path);
lat.sort((a, b) => a - b);
const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(2);
console.log(JSON.stringify({ mode, n: lat.length, p50: q(0.5), p99: q(0.99), max: lat.at(-1)!.toFixed(1), cpu_us_per_op: ((c.user + c.system) / lat.length).toFixed(1) }));
