// FIFO eviction from a Map at steady size N: a fresh keys() iterator per eviction (what
// JobTable's bounds did) against one iterator per batch. V8 leaves a deleted entry in place
// until the table is rebuilt, and a new iterator walks those from the front.
// deno run -A map_fifo.ts [N=1000000] [OPS=20000]
const n = Number(Deno.args[0] ?? 1_000_000);
const ops = Number(Deno.args[1] ?? 20_000);
function fill(): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < n; i++) m.set(`job_${i}`, i);
  return m;
}
let next = n;
{
  const m = fill();
  const t0 = performance.now();
  for (let i = 0; i < ops; i++) {
    m.set(`job_${next++}`, i);
    const oldest = m.keys().next();
    if (!oldest.done) m.delete(oldest.value);
  }
  console.log(`fresh iterator per eviction: ${((performance.now() - t0) * 1000 / ops).toFixed(2)} µs an eviction`);
}
{
  const m = fill();
  const t0 = performance.now();
  for (let batch = 0; batch < ops / 1000; batch++) {
    for (let i = 0; i < 1000; i++) m.set(`job_${next++}`, i);
    let excess = m.size - n;
    for (const key of m.keys()) {
      if (excess-- <= 0) break;
      m.delete(key);
    }
  }
  console.log(`one iterator per 1,000 evictions: ${((performance.now() - t0) * 1000 / ops).toFixed(2)} µs an eviction`);
}
