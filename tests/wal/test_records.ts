/**
 * Self-checking WAL payloads for the WAL tests: record `n` carries its number and a body derived
 * from it, so a replayed payload proves both which record it is and that no byte of it changed.
 */

/** Record `n`, `bytes` long (at least 4). */
export function testRecord(n: number, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  new DataView(out.buffer).setUint32(0, n, true);
  for (let i = 4; i < bytes; i++) out[i] = (n + i) & 0xff;
  return out;
}

/** The record's number, after checking that its body is exactly what `testRecord` wrote. */
export function testRecordNumber(payload: Uint8Array): number {
  const n = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  for (let i = 4; i < payload.length; i++) {
    if (payload[i] !== ((n + i) & 0xff)) throw new Error(`record ${n} is damaged at byte ${i}`);
  }
  return n;
}
