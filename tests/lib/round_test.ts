import { assertEquals, assertThrows } from "../assert.ts";
import { round } from "../../src/lib/round.ts";

Deno.test("round keeps the asked decimal places, half up", () => {
  assertEquals(round(3.14159, 2), 3.14);
  assertEquals(round(3.14159, 0), 3);
  assertEquals(round(2.5, 0), 3);
  assertEquals(round(-2.5, 0), -2);
  assertEquals(round(0.000123456, 5), 0.00012);
  assertEquals(round(1234.5678, 1), 1234.6);
});

Deno.test("round gives null for what is not a finite number, and leaves huge values alone", () => {
  assertEquals(round(NaN, 2), null);
  assertEquals(round(Infinity, 2), null);
  assertEquals(round(-Infinity, 3), null);
  assertEquals(round(1e300, 12), 1e300);
});

Deno.test("round refuses digits that are not a whole number from 0 to 12", () => {
  assertThrows(() => round(1, -1));
  assertThrows(() => round(1, 1.5));
  assertThrows(() => round(1, 13));
});
