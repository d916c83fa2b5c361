/**
 * The datagram socket the transport adapter runs on: `Deno.listenDatagram` in production, a
 * simulated socket on the seeded network in the simulator (src/sim/sim_socket.ts).
 *
 * Owns the socket seam only. Addresses are `HostPort` pairs; the adapter formats them.
 */

import type { HostPort } from "./address.ts";

export interface DatagramSocket {
  /** The bound address (with the real port when 0 was asked for). */
  readonly localAddress: HostPort;
  /**
   * The next datagram, copied into `buffer` (the returned view may alias it). Rejects once the
   * socket is closed, or on a socket error (the caller counts it and goes on).
   */
  receive(buffer: Uint8Array): Promise<[Uint8Array, HostPort]>;
  /** Sends one datagram; rejects on a socket error. */
  send(bytes: Uint8Array, to: HostPort): Promise<void>;
  close(): void;
}

/** Binds a UDP socket with `Deno.listenDatagram`. */
export function bindUdpSocket(listen: HostPort): DatagramSocket {
  const conn = Deno.listenDatagram({
    transport: "udp",
    hostname: listen.hostname,
    port: listen.port,
  });
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
