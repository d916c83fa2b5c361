// Bytes of V8 heap allocated per datagram sent and received on loopback through
// `bindUdpSocket` (src/transport/datagram_socket.ts), against the wrapper it replaced (copied
// below): V8's own count (`total_allocated_bytes`), Deno's allocations included, best ns.
// deno run -A --config deno.json bench/results/session30/micro/socket_alloc.ts
import { allocatedBytes as allocated } from "./measure_alloc.ts";
import { bindUdpSocket, type DatagramSocket } from "../../../../src/transport/datagram_socket.ts";
import type { HostPort } from "../../../../src/transport/address.ts";

/** The wrapper before session 30: an async receive making a new tuple and address, a key string per send. */
function bindBefore(listen: HostPort): DatagramSocket {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: listen.hostname, port: listen.port });
  const local = conn.addr as Deno.NetAddr;
  const targets = new Map<string, Deno.NetAddr>();
  return {
    localAddress: { hostname: local.hostname, port: local.port },
    async receive(buffer) {
      const [data, addr] = await conn.receive(buffer);
      const from = addr as Deno.NetAddr;
      return [data, { hostname: from.hostname, port: from.port }];
    },
    async send(bytes, to) {
      const key = `${to.hostname}|${to.port}`;
      let target = targets.get(key);
      if (target === undefined) {
        target = { transport: "udp", hostname: to.hostname, port: to.port };
        if (targets.size < 4096) targets.set(key, target);
      }
      await conn.send(bytes, target);
    },
    close() {
      conn.close();
    },
  };
}


async function measure(name: string, bind: (l: HostPort) => DatagramSocket): Promise<void> {
  const a = bind({ hostname: "127.0.0.1", port: 0 });
  const b = bind({ hostname: "127.0.0.1", port: 0 });
  const to = b.localAddress;
  const payload = new Uint8Array(1200);
  const buffer = new Uint8Array(65536);
  const n = 20_000;
  let bytes = 0;
  let bestNs = Infinity;
  for (let round = 0; round < 4; round++) {
    const a0 = allocated();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      // One in flight at a time: a send, then its receive.
      const received = b.receive(buffer);
      await a.send(payload, to);
      const [data, from] = await received;
      if (data.length !== 1200 || from.port !== a.localAddress.port) throw new Error("bad datagram");
    }
    bestNs = Math.min(bestNs, (performance.now() - t0) * 1e6 / n);
    bytes = (allocated() - a0) / n;
  }
  console.log(`${name}: ${bytes.toFixed(0)} bytes a datagram sent and received, ${bestNs.toFixed(0)} ns (last round's bytes, best ns)`);
  a.close();
  b.close();
}

await measure("before (async wrapper)", bindBefore);
await measure("bindUdpSocket", bindUdpSocket);
