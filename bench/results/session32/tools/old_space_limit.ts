// One process: does V8 keep `--initial-old-space-size` as the old generation's limit after its
// first mark-compact, or shrink it to the live size times its growing factor? Makes old-space
// garbage (a long-lived Map that takes and drops a key per step, whose new tables V8 allocates in
// the old generation, plus a retained array that grows) and prints, at every mark-compact, the
// heap's object size before and after. Run with --v8-flags=--trace-gc-nvp[,--initial-old-space-size=N].
const churn = new Map<number, number[]>();
const kept: number[][] = [];
const t0 = performance.now();
let i = 0;
while (performance.now() - t0 < Number(Deno.args[0] ?? 8000)) {
  for (let j = 0; j < 1000; j++, i++) {
    churn.set(i, [i, i + 1, i + 2]);
    churn.delete(i - 200_000);
    if (i % 50 === 0) kept.push([i]);
  }
}
console.error(`done: ${i} steps, ${kept.length} kept`);
