// The measurement behind src/lib/sodium.ts (issue 19): `deno run -A --config deno.json bench/results/cost/aead_floors.ts`.
// Seal and open of one datagram-sized text, µs of wall time per operation, sequential, one process:
// node:crypto AES-256-GCM (what datagram_crypto.ts used), node:crypto ChaCha20-Poly1305, and libsodium's
// ChaCha20-Poly1305 through src/lib/sodium.ts.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
// Since session 30 sodium.ts seals a whole message (associated data, text, tag) in place and
// opens it into a new array; this script calls that form (its output files predate it).
import { chachaOpenMessage, chachaSealMessage } from "../../../src/lib/sodium.ts";
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
  const sealedMessage = new Uint8Array(ad.length + bytes + 16);
  sealedMessage.set(ad);
  sealedMessage.set(text, ad.length);
  const work = sealedMessage.slice();
  chachaSealMessage(key, nonce, sealedMessage, ad.length);
  const seal = time(() => chachaSealMessage(key, nonce, work, ad.length));
  const open = time(() => {
    if (chachaOpenMessage(key, nonce, sealedMessage, ad.length) === undefined) {
      throw new Error("did not open");
    }
  });
  row.push(`${seal.toFixed(2)} / ${open.toFixed(2)}`);
  console.log(row.join(" | "));
}
