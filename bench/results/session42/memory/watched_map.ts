// Heap cost of the pending-check bookkeeping per job: a Set entry of an existing id string,
// and a Map entry to a Watched object (fields as pending_checks.ts).
const n = 1_000_000;
const ids = Array.from({ length: n }, (_, i) => `job_${i.toString(16).padStart(32, "0")}`);
function heap(): number {
  // deno-lint-ignore no-explicit-any
  (globalThis as any).gc?.();
  return Deno.memoryUsage().heapUsed;
}
// Hashed once first, as ids in a table are: a fresh template string is a cons string, and
// flattening it on first hash shrinks it, which a measurement would count against the Set.
{
  const warm = new Set(ids);
  warm.clear();
}
const h0 = heap();
const set = new Set<string>();
for (const id of ids) set.add(id);
const h1 = heap();
const map = new Map<string, { gen: number; attemptsMade: number; nextAttemptAtMs: number; sinceWallMs: number; waitMs: number }>();
const wall = 1_800_000_000_000;
for (let i = 0; i < n; i++) map.set(ids[i]!, { gen: 0, attemptsMade: 1, nextAttemptAtMs: wall + i, sinceWallMs: wall + i, waitMs: 60_000 });
const h2 = heap();
console.log(`set: ${((h1 - h0) / n).toFixed(1)} bytes/entry; watched map: ${((h2 - h1) / n).toFixed(1)} bytes/entry (${set.size} ${map.size})`);
