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
  /**
   * Sends one datagram; rejects on a socket error. Pass the same `to` object for the same peer
   * (the socket keeps what it derives from it).
   */
  send(bytes: Uint8Array, to: HostPort): Promise<unknown>;
  close(): void;
}

/**
 * Binds a UDP socket with `Deno.listenDatagram`. Per datagram it adds nothing to what Deno
 * allocates: `receive` hands on Deno's own answer (its address object is a `HostPort`), and
 * `send` looks the peer's `Deno.NetAddr` up by the `to` object, made once a peer.
 */
export function bindUdpSocket(listen: HostPort): DatagramSocket {
  const conn = Deno.listenDatagram({
    transport: "udp",
    hostname: listen.hostname,
    port: listen.port,
  });
  const local = conn.addr as Deno.NetAddr;
  const targets = new WeakMap<HostPort, Deno.NetAddr>();
  return {
    localAddress: { hostname: local.hostname, port: local.port },
    receive(buffer) {
      // A UDP socket's peer is always a `Deno.NetAddr`: hostname and port.
      return conn.receive(buffer) as Promise<[Uint8Array, Deno.NetAddr]>;
    },
    send(bytes, to) {
      let target = targets.get(to);
      if (target === undefined) {
        target = { transport: "udp", hostname: to.hostname, port: to.port };
        targets.set(to, target);
      }
      return conn.send(bytes, target);
    },
    close() {
      conn.close();
    },
  };
}
