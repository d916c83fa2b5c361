/**
 * Invariant checks that stay on in production.
 *
 * Owns: `assert`, `unreachable` and the `AssertionError` they throw. A broken invariant means
 * state is already wrong; crashing beats writing that state to disk or to a peer. Use these
 * for programmer errors only — hostile input from the network or disk is answered with an
 * error value, never with an assertion.
 */

export class AssertionError extends Error {
  override name = "AssertionError";
}

/** Throws `AssertionError` with `message` unless `condition` holds. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** Marks a branch the type checker proves impossible (exhaustive `switch` on a union). */
export function unreachable(value: never, what = "value"): never {
  throw new AssertionError(`unreachable: unexpected ${what} ${JSON.stringify(value)}`);
}

/**
 * Throws `AssertionError` with `message`: for a check whose message is built from values,
 * written `if (!ok) fail(\`…${value}…\`)`. `assert(ok, \`…\`)` would build that string on
 * every call, passing or not: an allocation per call on the hot paths (per datagram, per
 * record), for a message almost never read.
 */
export function fail(message: string): never {
  throw new AssertionError(message);
}
