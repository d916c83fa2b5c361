// What session 30's micro scripts share: V8's own count of the bytes a process has allocated
// (`total_allocated_bytes` of `node:v8`'s heap statistics, which Deno reports but its types leave
// out), and a loop that prints an operation's bytes and best ns. Copy it with a script into a
// tree measured "before".
import v8 from "node:v8";

export const allocatedBytes = (): number =>
  (v8.getHeapStatistics() as unknown as { total_allocated_bytes: number }).total_allocated_bytes;

/** Keeps each result alive past the loop, so the work is not optimized away. */
export let sink: unknown;

/** `f` `n` times a round, five rounds: the last round's bytes a call (warm), the best ns. */
export function measureAlloc(name: string, n: number, f: () => unknown): void {
  let bestNs = Infinity;
  let bytes = 0;
  for (let round = 0; round < 5; round++) {
    const a0 = allocatedBytes();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) sink = f();
    bestNs = Math.min(bestNs, (performance.now() - t0) * 1e6 / n);
    bytes = (allocatedBytes() - a0) / n;
  }
  console.log(`${name}: ${bytes.toFixed(0)} bytes, ${bestNs.toFixed(0)} ns (last round's bytes, best ns)`);
}
