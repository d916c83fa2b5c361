/**
 * The one rounding of a measured figure for a report (bench JSON, progress lines).
 *
 * Owns only that: `round(value, digits)` to a number of decimal places, or null for a value
 * that is not a finite number (a rate over an empty window), which is what JSON can carry
 * honestly (JSON.stringify would print NaN as null anyway, but a caller could not see it).
 */

import { fail } from "./assert.ts";

/** The most decimal places asked for; past about 15 a double has no more to give. */
const DIGITS_MAX = 12;

/**
 * `value` rounded half up (toward +∞) to `digits` decimal places; null if it is NaN or
 * infinite. `digits` is a whole number from 0 to 12.
 */
export function round(value: number, digits: number): number | null {
  if (!(Number.isInteger(digits) && digits >= 0 && digits <= DIGITS_MAX)) {
    fail(`round: digits must be a whole number from 0 to ${DIGITS_MAX}, got ${digits}`);
  }
  if (!Number.isFinite(value)) return null;
  const scale = 10 ** digits;
  const rounded = Math.round(value * scale) / scale;
  // Past 2^53 / scale, value * scale has no fraction left to round: keep the value as it is
  // rather than let the product overflow to Infinity.
  return Number.isFinite(rounded) ? rounded : value;
}
