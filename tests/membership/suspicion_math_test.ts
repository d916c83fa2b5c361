/**
 * Table tests of the pure timing formulas (suspicion bounds and shrinking timeout, retransmit
 * limit, detection bound).
 */

import { assertEquals, assertThrows } from "../assert.ts";
import { membershipDefaults } from "../../src/config/membership.ts";
import {
  clusterScale,
  detectionBoundMs,
  gossipRoundsToAll,
  retransmitLimit,
  suspicionBounds,
  suspicionTimeoutMs,
} from "../../src/membership/suspicion_math.ts";

Deno.test("clusterScale is max(1, log10 N)", () => {
  const table: Array<[number, number]> = [[0, 1], [1, 1], [5, 1], [10, 1], [100, 2], [1000, 3]];
  for (const [n, want] of table) assertEquals(clusterScale(n), want, `N=${n}`);
});

Deno.test("suspicionBounds follows the documented formula", () => {
  const c = { suspicionMult: 4, suspicionMaxTimeoutMult: 5, probeIntervalMs: 200 };
  const table: Array<[number, number, number, number]> = [
    // members, minMs, maxMs, confirmations wanted
    [1, 800, 4000, 0],
    [3, 800, 4000, 1],
    [5, 800, 4000, 2],
    [100, 1600, 8000, 2],
  ];
  for (const [n, minMs, maxMs, k] of table) {
    assertEquals(suspicionBounds(n, c), { minMs, maxMs, confirmationsWanted: k }, `N=${n}`);
  }
});

Deno.test("suspicionTimeoutMs shrinks logarithmically from max to min", () => {
  const table: Array<[number, number, number]> = [
    // confirmations, wanted, expected ms (min 800, max 4000)
    [0, 2, 4000],
    [1, 2, 1981], // 4000 - 3200 * log(2)/log(3) = 1981.0…
    [2, 2, 800],
    [3, 2, 800], // never below min
    [0, 0, 800], // nobody can confirm: min at once
    [0, 3, 4000],
    [1, 3, 2400], // log(2)/log(4) = 0.5
  ];
  for (const [c, k, want] of table) {
    assertEquals(suspicionTimeoutMs(c, k, 800, 4000), want, `c=${c} k=${k}`);
  }
});

Deno.test("retransmitLimit is mult * ceil(log10(N + 1))", () => {
  const table: Array<[number, number, number]> = [
    [4, 0, 0],
    [4, 1, 4],
    [4, 5, 4],
    [4, 9, 4],
    [4, 10, 8],
    [4, 50, 8],
    [4, 100, 12],
    [3, 1000, 12],
  ];
  for (const [mult, n, want] of table) assertEquals(retransmitLimit(mult, n), want, `N=${n}`);
});

Deno.test("detectionBoundMs is the documented formula, with and without awareness stretching", () => {
  // Healthy probers (score 0): 2·4·200 + 200 + 4000 + 3·200.
  assertEquals(detectionBoundMs(5, membershipDefaults, { awarenessScore: 0 }), 6400);
  // Stretched to the most (score 3, A = 4): 2·4·800 + 800 + 4000 + 3·200.
  assertEquals(detectionBoundMs(5, membershipDefaults), 11_800);
  assertEquals(detectionBoundMs(5, membershipDefaults, { awarenessScore: 3 }), 11_800);
  // minMs = floor(4 · log10(50) · 200) = 1359, maxMs = 6795; R = ceil(log4 50) + 1 = 4.
  assertEquals(
    detectionBoundMs(50, membershipDefaults, { awarenessScore: 0 }),
    2 * 49 * 200 + 200 + 6795 + 4 * 200,
  );
  assertEquals(detectionBoundMs(50, membershipDefaults), 2 * 49 * 800 + 800 + 6795 + 4 * 200);
  assertThrows(() => detectionBoundMs(5, membershipDefaults, { awarenessScore: 4 }), RangeError);
});

Deno.test("gossipRoundsToAll is ceil(log_{fanout+1} N) + 1", () => {
  const table: Array<[number, number, number]> = [
    [2, 3, 2],
    [4, 3, 2],
    [5, 3, 3],
    [16, 3, 3],
    [50, 3, 4],
    [200, 3, 5],
    [200, 1, 9],
  ];
  for (const [n, fanout, want] of table) {
    assertEquals(gossipRoundsToAll(n, fanout), want, `N=${n} fanout=${fanout}`);
  }
});
