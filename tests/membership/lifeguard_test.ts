/**
 * Lifeguard state: the suspicion timer that shrinks with independent confirmations, and the
 * local health score that stretches probe timeouts.
 */

import { assertEquals } from "../assert.ts";
import { Awareness } from "../../src/membership/awareness.ts";
import { Suspicion } from "../../src/membership/suspicion.ts";

const bounds = { minMs: 800, maxMs: 4000, confirmationsWanted: 2 };

Deno.test("Suspicion starts at the longest timeout and shrinks per independent confirmation", () => {
  const s = new Suspicion(1000, "a", bounds);
  assertEquals(s.deadlineMs, 5000);
  assertEquals(s.confirm("a"), false, "the first suspector is not a confirmation");
  assertEquals(s.confirm("b"), true);
  assertEquals(s.deadlineMs, 1000 + 1981);
  assertEquals(s.confirm("b"), false, "a repeated suspector counts once");
  assertEquals(s.confirm("c"), true);
  assertEquals(s.deadlineMs, 1800);
  assertEquals(s.confirm("d"), false, "beyond the wanted count nothing changes");
  assertEquals(s.confirmations, 2);
});

Deno.test("Suspicion with nobody able to confirm uses the shortest timeout", () => {
  const s = new Suspicion(0, "a", { minMs: 800, maxMs: 4000, confirmationsWanted: 0 });
  assertEquals(s.deadlineMs, 800);
  assertEquals(s.confirm("b"), false);
});

Deno.test("Awareness scales timeouts by score + 1 and stays within its bounds", () => {
  const a = new Awareness(8);
  assertEquals(a.scaleMs(100), 100);
  a.applyDelta(3);
  assertEquals(a.score, 3);
  assertEquals(a.scaleMs(100), 400);
  a.applyDelta(100);
  assertEquals(a.score, 7);
  a.applyDelta(-100);
  assertEquals(a.score, 0);
});
