// How long a setTimeout asked for 0-1 ms takes when armed right after a write + fsync, as the
// WAL's pacing arms it (200 each; ms). deno run -A timer_after_fsync.ts (in a scratch directory).
const f = await Deno.open("./timer_after_fsync.dat", { write: true, create: true });
for (const d of [0, 0.3, 0.7, 1]) {
  const N = 200; let total = 0;
  for (let i = 0; i < N; i++) {
    await f.write(new Uint8Array(16));
    await f.syncData();
    const t0 = performance.now(); await new Promise((r) => setTimeout(r, d)); total += performance.now() - t0;
  }
  console.log(d, (total / N).toFixed(3));
}
f.close();
