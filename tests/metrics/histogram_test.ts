import { assert } from "../assert.ts";
import { Histogram } from "../../src/metrics/histogram.ts";

Deno.test("Histogram never reports a percentile above the exact maximum", () => {
  const h = new Histogram();
  // 2284.0 falls in a bucket whose top is above it; p99 must still not exceed max.
  for (let i = 0; i < 100; i++) h.record(2000 + i * 2.84);
  const s = h.summary();
  assert(s.p99 <= s.max, `p99 ${s.p99} > max ${s.max}`);
  assert(s.p999 <= s.max, `p999 ${s.p999} > max ${s.max}`);
});
