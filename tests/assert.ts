/**
 * Test assertions in the shape of `@std/assert`, over `node:assert/strict` (JSR is not
 * reachable here). Moving to `@std/assert` later is a change to this one file.
 */

import nodeAssert from "node:assert/strict";

export function assert(condition: unknown, message?: string): asserts condition {
  nodeAssert.ok(condition, message);
}

export function assertEquals<T>(
  actual: unknown,
  expected: T,
  message?: string,
): asserts actual is T {
  nodeAssert.deepStrictEqual(actual, expected, message);
}

export function assertNotEquals(actual: unknown, expected: unknown, message?: string): void {
  nodeAssert.notDeepStrictEqual(actual, expected, message);
}

export function assertThrows(
  fn: () => unknown,
  errorClass?: new (...args: never[]) => Error,
): void {
  if (errorClass === undefined) nodeAssert.throws(fn);
  else nodeAssert.throws(fn, errorClass);
}

/** Awaits `fn`, asserts it rejects (with `errorClass` when given) and returns the error. */
export async function assertRejects<E extends Error = Error>(
  fn: () => Promise<unknown>,
  errorClass?: new (...args: never[]) => E,
  includes?: string,
): Promise<E> {
  try {
    await fn();
  } catch (error) {
    if (errorClass !== undefined && !(error instanceof errorClass)) {
      throw new nodeAssert.AssertionError({
        message: `expected ${errorClass.name}, got ${
          error instanceof Error ? error.name : String(error)
        }: ${error}`,
      });
    }
    if (includes !== undefined) {
      nodeAssert.ok(
        String((error as Error).message).includes(includes),
        `"${(error as Error).message}" should include "${includes}"`,
      );
    }
    return error as E;
  }
  throw new nodeAssert.AssertionError({ message: "expected the promise to reject" });
}
