/** Hex encoding (the stand-in for `@std/encoding/hex`). */

export function encodeHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}
