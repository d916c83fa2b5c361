// Bytes of V8 heap allocated, and µs, per reliable message between two transport endpoints
// (src/transport/endpoint.ts, no sockets): the sender builds and seals a datagram, the receiver
// reads its header, opens, decodes and delivers it, and its ack goes back the same way. V8's
// own count (`total_allocated_bytes`); best of 5 rounds. Run from a tree's root, this file
// copied into it for the tree before:
// deno run -A --config deno.json bench/results/session30/micro/endpoint_alloc.ts
import { allocatedBytes as allocated } from "./measure_alloc.ts";
import { Endpoint } from "../../../../src/transport/mod.ts";
import { Sfc32 } from "../../../../src/lib/rng.ts";

const A = "127.0.0.1:7001";
const B = "127.0.0.1:7002";
const endpoint = (nodeId: string, epoch: number) =>
  new Endpoint({ nodeId, epoch, clusterKey: "endpoint-alloc-micro-key-012345", rng: new Sfc32(epoch) });
const a = endpoint(A, 1);
const b = endpoint(B, 2);
let nowMs = 0;
let datagrams = 0;
function deliver(from: Endpoint, fromAddress: string, to: Endpoint): void {
  from.tick(nowMs);
  for (const d of from.takeDatagrams()) {
    datagrams++;
    to.receive(nowMs, fromAddress, d.bytes);
  }
}
// Each learns the other's epoch first, as any first exchange does.
a.sendUnreliable(nowMs, B, 0, new Uint8Array(1));
b.sendUnreliable(nowMs, A, 0, new Uint8Array(1));
for (let i = 0; i < 10; i++) {
  deliver(a, A, b);
  deliver(b, B, a);
}
a.takeMessages();
b.takeMessages();
const payload = new Uint8Array(200).fill(9);
function oneMessage(): void {
  nowMs += 5; // past the receiver's ack delay: the ack leaves at its next tick
  a.send(nowMs, B, 1, payload);
  deliver(a, A, b);
  if (b.takeMessages().length !== 1) throw new Error("not delivered");
  nowMs += 5;
  deliver(b, B, a);
  a.takeMessages();
  a.takeEvents();
  b.takeEvents();
}
for (let i = 0; i < 1_000; i++) oneMessage();
const n = 20_000;
let bestUs = Infinity;
let bytes = 0;
let perMessage = 0;
for (let round = 0; round < 5; round++) {
  const d0 = datagrams;
  const a0 = allocated();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) oneMessage();
  bestUs = Math.min(bestUs, (performance.now() - t0) * 1e3 / n);
  bytes = (allocated() - a0) / n;
  perMessage = (datagrams - d0) / n;
}
console.log(
  `a reliable 200-byte message and its ack: ${bytes.toFixed(0)} bytes, ${bestUs.toFixed(2)} µs, ` +
    `${perMessage.toFixed(2)} datagrams (last round's bytes, best µs)`,
);
