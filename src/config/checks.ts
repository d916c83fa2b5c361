/**
 * Checks shared by every validate function.
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

export function positiveInteger(name: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
}

export function nonNegative(name: string, value: number): void {
  if (!(value >= 0) || !Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
  }
}

export function probability(name: string, value: number): void {
  if (!(value >= 0 && value <= 1)) {
    throw new RangeError(`${name} must be in [0, 1], got ${value}`);
  }
}

export function relation(
  leftName: string,
  left: number,
  op: "<" | "<=",
  rightName: string,
  right: number,
): void {
  const holds = op === "<" ? left < right : left <= right;
  if (!holds) {
    throw new RangeError(`${leftName} (${left}) must be ${op} ${rightName} (${right})`);
  }
}
