/**
 * Bearer-token check for the `/v1/` routes and `/metrics`.
 *
 * Owns the comparison only. Both sides are hashed to SHA-256 first and the digests compared
 * with `timingSafeEqual`: equal lengths whatever was presented, so neither the token's bytes
 * nor its length leak through response timing.
 */

import { createHash, timingSafeEqual } from "node:crypto";

/** What a token may be: visible ASCII (it travels in a header), at least 16 characters. */
const TOKEN = /^[\x21-\x7e]+$/;
export const API_TOKEN_CHARS_MIN = 16;
/** Longest Authorization header looked at; a longer one cannot carry a valid token. */
const AUTHORIZATION_CHARS_MAX = 4096;

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** Why `token` cannot be the API token, or undefined when it can. */
export function apiTokenProblem(token: string): string | undefined {
  if (token.length < API_TOKEN_CHARS_MIN) {
    return `must be at least ${API_TOKEN_CHARS_MIN} visible ASCII characters ` +
      `(got ${token.length} characters)`;
  }
  if (!TOKEN.test(token)) {
    return "must be visible ASCII characters only (no spaces or other characters): it " +
      "travels in an Authorization header";
  }
  return undefined;
}

/** A checker for `Authorization` header values; throws RangeError on an unusable token. */
export function bearerChecker(token: string): (authorization: string | null) => boolean {
  const problem = apiTokenProblem(token);
  if (problem !== undefined) throw new RangeError(`apiToken ${problem}`);
  const expected = digest(token);
  return (authorization) => {
    if (authorization === null || authorization.length > AUTHORIZATION_CHARS_MAX) return false;
    const match = /^bearer[ ]+(\S+)[ ]*$/i.exec(authorization);
    if (match === null) return false;
    return timingSafeEqual(digest(match[1]!), expected);
  };
}
