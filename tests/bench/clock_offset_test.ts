/**
 * `measureClockOffset`: another clock's offset from the midpoint of the try with the shortest
 * round trip, within half of that round trip of the truth.
 */

import { assert, assertEquals } from "../assert.ts";
import { measureClockOffset } from "../../src/bench/clock_offset.ts";

Deno.test("measureClockOffset keeps the try with the shortest round trip and is within half of it", async () => {
  // Their clock is 7 ms ahead of ours. Each read takes a different time out and back; ours
  // moves only when a read happens (a virtual clock).
  const trueOffsetMs = 7;
  const legs: Array<[number, number]> = [[3, 0.5], [0.1, 0.3], [1, 1], [0.05, 4], [2, 2]];
  let ourMs = 1_000;
  let i = 0;
  const readTheirs = () => {
    const [out, back] = legs[i++]!;
    ourMs += out;
    const theirs = ourMs + trueOffsetMs;
    ourMs += back;
    return Promise.resolve(theirs);
  };
  const result = await measureClockOffset(readTheirs, () => ourMs, legs.length);
  assertEquals(i, legs.length);
  assert(Math.abs(result.roundTripMs - 0.4) < 1e-9, `round trip ${result.roundTripMs}`);
  // Out 0.1, back 0.3: the midpoint is 0.1 late, within half the round trip (0.2).
  assert(Math.abs(result.offsetMs - (trueOffsetMs - 0.1)) < 1e-9, `offset ${result.offsetMs}`);
  assert(Math.abs(result.offsetMs - trueOffsetMs) <= result.roundTripMs / 2);
});

Deno.test("measureClockOffset of a clock that is ours is off only by where in the round trip it was read", async () => {
  let ourMs = 5;
  const result = await measureClockOffset(() => Promise.resolve(ourMs += 1), () => ourMs, 3);
  // Read halfway between our two looks (we move 1 ms into it, and 0 after).
  assertEquals(result.offsetMs, 0.5);
});
