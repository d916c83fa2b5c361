import { KeyOrderQueue } from "../../../../src/lib/key_order_queue.ts";
const q = new KeyOrderQueue<{ n: number }>();
const objs = Array.from({ length: 64 }, (_, n) => ({ n }));
let k = 0; const live: number[] = []; let h = 0;
const mode = Deno.args[0];
for (let i = 0; i < 5_000_000; i++) {
  k++; if (mode !== "none") q.push(k, objs[k & 63]!); live.push(k);
  const keep = mode === "burst" ? (i % 100 < 50 ? 40 : 2) : 3;
  while (live.length - h > keep) { const x = live[h++]!; if (mode !== "none") q.delete(x); }
  if (h > 1000) { live.splice(0, h); h = 0; }
}
console.log("done", q.size, q.slots);
