const n = 1_000_000;
const ids = Array.from({ length: n }, (_, i) => `job_${i.toString(16).padStart(32, "0")}`);
function heap(): number {
  // deno-lint-ignore no-explicit-any
  (globalThis as any).gc?.();
  // deno-lint-ignore no-explicit-any
  (globalThis as any).gc?.();
  return Deno.memoryUsage().heapUsed;
}
// Hashed once first, as ids in a table are (a fresh template string is a cons string).
{
  const warm = new Set(ids);
  warm.clear();
}
heap();
const h0 = heap();
const set = new Set<string>();
for (const id of ids) set.add(id);
const h1 = heap();
console.log(`set: ${((h1 - h0) / n).toFixed(1)} bytes/entry (${set.size}, ${ids.length})`);
