/**
 * A `DatagramSocket` on the simulator's seeded network, so the real transport adapter
 * (`UdpTransport`) runs inside a simulation: loss, duplication, reordering and partitions come
 * from `SimNetwork`, time from the `SimScheduler`.
 *
 * Owns one simulated socket: its receive queue (bounded, like a kernel receive buffer: past it
 * datagrams are dropped and counted) and its attachment to the network. `close()` (or a crash)
 * detaches it, so datagrams to it vanish.
 */

import { formatAddress, type HostPort, parseAddress } from "../transport/address.ts";
import type { DatagramSocket } from "../transport/datagram_socket.ts";
import type { SimNetwork } from "./network.ts";

/** Datagrams a simulated socket buffers before it drops (a kernel buffer of ~208 KB). */
export const SIM_SOCKET_QUEUE_MAX = 4096;

export class SimSocket implements DatagramSocket {
  readonly localAddress: HostPort;
  readonly #address: string;
  readonly #network: SimNetwork<Uint8Array>;
  readonly #queue: Array<[Uint8Array, HostPort]> = [];
  #waiter: { resolve: (v: [Uint8Array, HostPort]) => void; reject: (e: Error) => void } | undefined;
  #closed = false;
  /** Datagrams dropped because the receive queue was full. */
  overflowDrops = 0;

  constructor(network: SimNetwork<Uint8Array>, address: string) {
    const parsed = parseAddress(address);
    if (!parsed.ok) throw new RangeError(`SimSocket: ${parsed.reason}`);
    this.localAddress = parsed.value;
    this.#address = formatAddress(parsed.value.hostname, parsed.value.port);
    this.#network = network;
    network.attach(this.#address, (from, packet) => this.#arrive(from, packet));
  }

  receive(buffer: Uint8Array): Promise<[Uint8Array, HostPort]> {
    if (this.#closed) return Promise.reject(new Error("socket closed"));
    const next = this.#queue.shift();
    if (next !== undefined) return Promise.resolve(copyInto(buffer, next));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve: (v) => resolve(copyInto(buffer, v)), reject };
    });
  }

  send(bytes: Uint8Array, to: HostPort): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("socket closed"));
    // The network holds the packet until it arrives; the sender may reuse its buffer.
    this.#network.send(this.#address, formatAddress(to.hostname, to.port), bytes.slice());
    return Promise.resolve();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#network.detach(this.#address);
    this.#queue.length = 0;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.reject(new Error("socket closed"));
  }

  #arrive(from: string, packet: Uint8Array): void {
    if (this.#closed) return;
    const parsed = parseAddress(from);
    if (!parsed.ok) return;
    const item: [Uint8Array, HostPort] = [packet, parsed.value];
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve(item);
      return;
    }
    if (this.#queue.length >= SIM_SOCKET_QUEUE_MAX) {
      this.overflowDrops++;
      return;
    }
    this.#queue.push(item);
  }
}

function copyInto(
  buffer: Uint8Array,
  [data, from]: [Uint8Array, HostPort],
): [Uint8Array, HostPort] {
  const n = Math.min(data.length, buffer.length);
  buffer.set(data.subarray(0, n));
  return [buffer.subarray(0, n), from];
}
