/**
 * Session 43: what a fresh small Uint8Array costs against a view of a slab, in one process.
 * Run: for m in fresh slab; do /usr/bin/time -f "%U user %S sys" deno run fresh_vs_slab.ts $m; done
 * (user + sys over 2,000,000 arrays is the CPU each costs, the GC's threads included).
 */
const mode = Deno.args[0] ?? "fresh";
const arrays = 2_000_000;
let sink = 0;
let slab = new Uint8Array(65536);
let used = 0;
const start = performance.now();
for (let i = 0; i < arrays; i++) {
  let b: Uint8Array;
  if (mode === "fresh") b = new Uint8Array(320);
  else {
    if (used + 320 > slab.length) {
      slab = new Uint8Array(65536);
      used = 0;
    }
    b = slab.subarray(used, used + 320);
    used += 320;
  }
  b[0] = i;
  sink += b[0]!;
}
console.log(mode, ((performance.now() - start) * 1000 / arrays).toFixed(3), "µs of wall time each", sink > 0);
