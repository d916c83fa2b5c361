// Bytes of V8 heap allocated, and ns, to seal and to open one 1,400-byte datagram
// (src/transport/datagram_crypto.ts): V8's own count (`total_allocated_bytes`), best ns of 5
// rounds. Run from a tree's root, this file copied into it for the tree before:
// deno run -A --config deno.json bench/results/session30/micro/aead_alloc.ts
import v8 from "node:v8";
import { ClusterKeyring, openDatagram, sealDatagram } from "../../../../src/transport/datagram_crypto.ts";

const allocated = () =>
  (v8.getHeapStatistics() as unknown as { total_allocated_bytes: number }).total_allocated_bytes;
const key = new ClusterKeyring("aead-alloc-micro-cluster-key-0123").derive(new Uint8Array(16), 0);
const datagram = Uint8Array.from({ length: 1400 }, (_, i) => i & 0xff);
const sealed = datagram.slice();
sealDatagram(key, sealed);
let sink: unknown;

function measure(name: string, f: () => unknown): void {
  const n = 50_000;
  let bestNs = Infinity;
  let bytes = 0;
  for (let round = 0; round < 5; round++) {
    const a0 = allocated();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) sink = f();
    bestNs = Math.min(bestNs, (performance.now() - t0) * 1e6 / n);
    bytes = (allocated() - a0) / n;
  }
  console.log(`${name}: ${bytes.toFixed(0)} bytes, ${bestNs.toFixed(0)} ns (last round's bytes, best ns)`);
}

const work = datagram.slice();
measure("seal a 1,400-byte datagram", () => sealDatagram(key, work));
measure("open a 1,400-byte datagram", () => openDatagram(key, sealed));
if (sink === null) console.log("");
