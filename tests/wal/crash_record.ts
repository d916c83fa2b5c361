/** The record format shared by the SIGKILL crash test and its child process. */

export function crashRecord(n: number): Uint8Array {
  const bytes = 20 + (n % 280);
  const out = new Uint8Array(bytes);
  new DataView(out.buffer).setUint32(0, n, true);
  for (let i = 4; i < bytes; i++) out[i] = (n * 31 + i) & 0xff;
  return out;
}

/** The number of a recovered record, or an error if any byte differs from what was written. */
export function checkCrashRecord(payload: Uint8Array): number {
  const n = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  const expected = crashRecord(n);
  if (expected.length !== payload.length) throw new Error(`record ${n}: length ${payload.length}`);
  for (let i = 0; i < payload.length; i++) {
    if (payload[i] !== expected[i]) throw new Error(`record ${n} is damaged at byte ${i}`);
  }
  return n;
}
