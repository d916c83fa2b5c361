// The measurement behind wal.inlineSyncMsMax (issue 19): `deno run -A bench/results/cost/fsync_modes.ts` (a scratch file in the current directory).
// 1,000 × (writeSync of 200 bytes + fdatasync), the fsync through the blocking pool (`await syncData()`) or inline (`syncDataSync()`).
import process from "node:process";
const f = await Deno.open(`.fsync-modes-${Deno.pid}.bin`, { write: true, create: true, truncate: true });
const buf = new Uint8Array(200);
async function run(mode: string, n: number) {
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    f.writeSync(buf);
    if (mode === "fullsync") f.syncDataSync(); else await f.syncData();
  }
  const c = process.cpuUsage(c0); const t = performance.now() - t0;
  console.log(`${mode}: CPU ${((c.user + c.system) / n).toFixed(1)} µs/op, wall ${(t * 1000 / n).toFixed(1)} µs/op`);
}
for (const m of ["asyncfsync", "fullsync", "asyncfsync", "fullsync"]) await run(m, 1000);
f.close(); Deno.removeSync(`.fsync-modes-${Deno.pid}.bin`);
