// The measurement behind src/wal/wal_fs.ts writing small batches with writeSync (issue 19):
// `deno run -A bench/results/cost/wal_write_modes.ts` (writes a scratch file in the current directory).
import process from "node:process";
const f = await Deno.open(`.wal-write-modes-${Deno.pid}.bin`, { write: true, create: true, truncate: true });
const buf = new Uint8Array(200);
async function run(mode: string, n: number) {
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    if (mode === "sync") f.writeSync(buf); else await f.write(buf);
    await f.syncData();
  }
  const c = process.cpuUsage(c0); const t = performance.now() - t0;
  console.log(`${mode}: ${n} x write(200)+syncData: CPU ${((c.user + c.system) / n).toFixed(1)} µs/op, wall ${(t * 1000 / n).toFixed(1)} µs/op`);
}
for (const m of ["async", "sync", "async", "sync"]) await run(m, 1000);
f.close(); Deno.removeSync(`.wal-write-modes-${Deno.pid}.bin`);
