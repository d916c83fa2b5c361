/**
 * `randomId`, the ids a node mints (jobs, events, endpoints): the same ids, draw for draw, as
 * hex pairs concatenated (what it replaced, so the simulator's seeds replay as before), and a
 * fresh string each time although it builds them in reused arrays.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { randomId } from "../../src/jobs/submit_path.ts";
import { type Rng, Sfc32 } from "../../src/lib/rng.ts";

/** The implementation `randomId` replaced: two hex digits a byte, concatenated, cut. */
function concatenatedHex(prefix: string, rng: Rng, bytes: number): string {
  let out = "";
  for (let i = 0; i < bytes; i += 4) {
    const word = Math.floor(rng.next() * 0x1_0000_0000);
    for (const b of [word >>> 24, (word >>> 16) & 0xff, (word >>> 8) & 0xff, word & 0xff]) {
      out += b.toString(16).padStart(2, "0");
    }
  }
  return prefix + out.slice(0, bytes * 2);
}

Deno.test("randomId draws the ids hex pairs did, for any seed, prefix and length", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      fc.constantFrom("job_", "evt_", "ep_", ""),
      fc.integer({ min: 0, max: 24 }),
      (seed, prefix, bytes) => {
        const mine = new Sfc32(seed);
        const reference = new Sfc32(seed);
        // Several in a row: each draws on from where the last left off, as minting does.
        for (let i = 0; i < 3; i++) {
          assertEquals(randomId(prefix, mine, bytes), concatenatedHex(prefix, reference, bytes));
        }
      },
    ),
  );
});

Deno.test("randomId's ids are fresh strings: the next one does not change the last", () => {
  const rng = new Sfc32(7);
  const first = randomId("job_", rng, 16);
  const copy = `${first}`;
  const second = randomId("job_", rng, 16);
  assert(first !== second, "two draws differ");
  assertEquals(first, copy);
  assertEquals(first.length, 36);
  assert(/^job_[0-9a-f]{32}$/.test(first), first);
});
