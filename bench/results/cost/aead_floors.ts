// The measurement behind src/lib/sodium.ts (issue 19): `deno run -A --config deno.json bench/results/cost/aead_floors.ts`.
// Seal and open of one datagram-sized text, µs of wall time per operation, sequential, one process:
// node:crypto AES-256-GCM (what datagram_crypto.ts used), node:crypto ChaCha20-Poly1305, and libsodium's
// ChaCha20-Poly1305 through src/lib/sodium.ts.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chachaOpenInPlace, chachaSealInPlace } from "../../../src/lib/sodium.ts";
const key = new Uint8Array(randomBytes(32));
const nonce = new Uint8Array(12);
const ad = new Uint8Array(28);
function time(f: () => void): number {
  for (let i = 0; i < 2_000; i++) f();
  const n = 20_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f();
  return (performance.now() - t0) * 1000 / n;
}
function nodeSeal(alg: "aes-256-gcm" | "chacha20-poly1305", text: Uint8Array) {
  const c = createCipheriv(alg as "aes-256-gcm", key, nonce, { authTagLength: 16 });
  c.setAAD(ad, { plaintextLength: text.length });
  const out = c.update(text);
  c.final();
  return { out: new Uint8Array(out), tag: new Uint8Array(c.getAuthTag()) };
}
function nodeOpen(alg: "aes-256-gcm" | "chacha20-poly1305", sealed: { out: Uint8Array; tag: Uint8Array }) {
  const d = createDecipheriv(alg as "aes-256-gcm", key, nonce, { authTagLength: 16 });
  d.setAAD(ad, { plaintextLength: sealed.out.length });
  d.setAuthTag(sealed.tag);
  d.update(sealed.out);
  d.final();
}
console.log(`# ${new Date().toISOString()} load ${Deno.loadavg().join(" ")}`);
console.log("bytes | AES-256-GCM node:crypto seal / open | ChaCha20-Poly1305 node:crypto seal / open | ChaCha20-Poly1305 libsodium seal / open (µs)");
for (const bytes of [60, 200, 1_350]) {
  const text = new Uint8Array(bytes);
  const row: string[] = [String(bytes)];
  for (const alg of ["aes-256-gcm", "chacha20-poly1305"] as const) {
    const sealed = nodeSeal(alg, text);
    row.push(`${time(() => void nodeSeal(alg, text)).toFixed(2)} / ${time(() => nodeOpen(alg, sealed)).toFixed(2)}`);
  }
  const tag = new Uint8Array(16);
  const work = text.slice();
  const sealedText = text.slice();
  chachaSealInPlace(key, nonce, ad, sealedText, tag);
  const sealTag = new Uint8Array(16);
  const seal = time(() => chachaSealInPlace(key, nonce, ad, work, sealTag));
  const open = time(() => {
    work.set(sealedText);
    if (!chachaOpenInPlace(key, nonce, ad, work, tag)) throw new Error("did not open");
  });
  row.push(`${seal.toFixed(2)} / ${open.toFixed(2)}`);
  console.log(row.join(" | "));
}
