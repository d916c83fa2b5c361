// Bytes of V8 heap allocated, and ns, to seal and to open one 1,400-byte datagram
// (src/transport/datagram_crypto.ts): V8's own count (`total_allocated_bytes`), best ns of 5
// rounds. Run from a tree's root, this file and measure_alloc.ts copied into it for the tree before:
// deno run -A --config deno.json bench/results/session30/micro/aead_alloc.ts
import { measureAlloc } from "./measure_alloc.ts";
import { ClusterKeyring, openDatagram, sealDatagram } from "../../../../src/transport/datagram_crypto.ts";

const key = new ClusterKeyring("aead-alloc-micro-cluster-key-0123").derive(new Uint8Array(16), 0);
const datagram = Uint8Array.from({ length: 1400 }, (_, i) => i & 0xff);
const sealed = datagram.slice();
sealDatagram(key, sealed);
const work = datagram.slice();
measureAlloc("seal a 1,400-byte datagram", 50_000, () => sealDatagram(key, work));
measureAlloc("open a 1,400-byte datagram", 50_000, () => openDatagram(key, sealed));
