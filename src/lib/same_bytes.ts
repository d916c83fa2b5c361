/**
 * Byte comparison without a view: the string cache's key check and the archive's "did this
 * record change the job" both compare a short byte string against a part of another buffer.
 * Its own module: `bytes.ts` names `string_cache.ts`'s type, so neither can import the other.
 */

/** Whether `key` holds the `key.length` bytes of `source` from `start`. */
export function sameBytesAt(key: Uint8Array, source: Uint8Array, start: number): boolean {
  const n = key.length;
  if (start + n > source.length) return false;
  for (let i = 0; i < n; i++) if (key[i] !== source[start + i]) return false;
  return true;
}
