/**
 * Bearer-token check for the `/v1/` routes.
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

/** A checker for `Authorization` header values; throws RangeError on an unusable token. */
export function bearerChecker(token: string): (authorization: string | null) => boolean {
  if (!TOKEN.test(token) || token.length < API_TOKEN_CHARS_MIN) {
    throw new RangeError(
      `apiToken must be at least ${API_TOKEN_CHARS_MIN} visible ASCII characters ` +
        `(got ${token.length} characters)`,
    );
  }
  const expected = digest(token);
  return (authorization) => {
    if (authorization === null || authorization.length > AUTHORIZATION_CHARS_MAX) return false;
    const match = /^bearer[ ]+(\S+)[ ]*$/i.exec(authorization);
    if (match === null) return false;
    return timingSafeEqual(digest(match[1]!), expected);
  };
}
