// ASCII bytes to a string, the ways `decodeUtf8` (src/lib/bytes.ts) could: by
// `String.fromCharCode.apply` (V8 first builds an argument list of 8 bytes a byte), by the fatal
// TextDecoder, by a TextDecoder without `fatal` (ASCII cannot be malformed), and each of the
// last two after a loop that checks the bytes are ASCII, and the lax decoder whose result is
// looked through for U+FFFD (a malformed input always makes one; only then the fatal one runs). ns a decode over N decodes, the
// scavenges its garbage causes included.
// deno run --v8-flags=--expose-gc bench/results/session29/micro/decode_ascii.ts
const gc = (globalThis as unknown as { gc: () => void }).gc;
const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const lax = new TextDecoder("utf-8", { ignoreBOM: true });
function isAscii(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (b[i]! >= 0x80) return false;
  return true;
}
const ways: Record<string, (b: Uint8Array) => string> = {
  fromCharCodeApply: (b) => String.fromCharCode.apply(null, b as unknown as number[]),
  textDecoderFatal: (b) => fatal.decode(b),
  textDecoderLax: (b) => lax.decode(b),
  checkThenLax: (b) => (isAscii(b) ? lax.decode(b) : fatal.decode(b)),
  laxThenReplacementCheck: (b) => {
    const s = lax.decode(b);
    return s.indexOf("\uFFFD") < 0 ? s : fatal.decode(b);
  },
};
for (const len of [8, 16, 24, 32, 64, 128, 200, 256, 1024, 4096, 65536]) {
  const N = Math.max(2_000, Math.round(200_000_000 / (len + 200)));
  const buf = new Uint8Array(len + 64);
  for (let i = 0; i < buf.length; i++) buf[i] = 97 + (i % 26);
  const row: Record<string, number | string> = { len };
  for (const [name, f] of Object.entries(ways)) {
    if (name === "fromCharCodeApply" && len > 4096) continue;
    let sink = 0;
    for (let i = 0; i < 20_000; i++) sink += f(buf.subarray(i % 64, (i % 64) + len)).length;
    gc();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) sink += f(buf.subarray(i % 64, (i % 64) + len)).length;
    row[name] = Math.round(((performance.now() - t0) * 1e6) / N);
    if (sink === 0) console.log("");
  }
  console.log(JSON.stringify(row));
}
