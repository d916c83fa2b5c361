/**
 * The socket adapter: the sans-I/O `Endpoint` on a `Deno.listenDatagram` UDP socket.
 *
 * Owns the socket, the receive loop, the one timer (armed at the core's next deadline), the
 * clock, ingress loss injection and handler dispatch. Protocol decisions all live in the core.
 * Sends made during one event-loop turn are flushed together in a microtask, so they share
 * datagrams. Ingress loss is applied to raw datagrams before authentication or decoding, so a
 * dropped packet can be anything: data, an ack, a probe.
 */

import { DeadlineTimer } from "../lib/deadline_timer.ts";
import { randomRng, type Rng, Sfc32 } from "../lib/rng.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import { probability } from "../config/checks.ts";
import type { TransportConfig } from "../config/transport.ts";
import { type Counter, MetricsRegistry } from "../metrics/registry.ts";
import { canonicalAddress, formatAddress, type HostPort, parseAddress } from "./address.ts";
import { bindUdpSocket, type DatagramSocket } from "./datagram_socket.ts";
import { Endpoint } from "./endpoint.ts";
import type {
  Authenticator,
  DeliveredMessage,
  PeerStats,
  PiggybackProvider,
  SendResult,
  TransportEvent,
} from "./types.ts";

export interface UdpTransportOptions {
  /** This node's id (1..64 bytes UTF-8). */
  nodeId: string;
  /** `"host:port"` to bind; port 0 picks a free port. @default "127.0.0.1:0" */
  listen?: string;
  /** Cluster key (>= 16 bytes); see auth.ts `clusterKeyFrom`. */
  clusterKey?: string;
  /** The older way to hand in the cluster key (an `HmacSha256Authenticator`); see Endpoint. */
  authenticator?: Authenticator;
  config?: Partial<TransportConfig>;
  metrics?: MetricsRegistry;
  /** Probability of dropping each received datagram before any processing. @default 0 */
  lossProbability?: number;
  /** Seed for the loss decisions, for a reproducible drop pattern. @default random */
  lossSeed?: number;
  /** Randomness for the core (session epoch). @default randomRng() */
  rng?: Rng;
  /** Session epoch for this incarnation. @default random */
  epoch?: number;
  /** A socket to run on instead of binding `listen` (the simulator's). */
  socket?: DatagramSocket;
  /** Clock and timers. @default realRuntime */
  runtime?: Runtime;
}

/** Datagrams handled back to back before the receive loop lets timers run (in a flood). */
const RECEIVE_BURST_MAX = 256;
/**
 * Peers whose address string a transport keeps (`#keepAddress`): far more than a cluster's
 * nodes and clients; past it the kept strings are dropped and kept afresh.
 */
const HEARD_FROM_MAX = 4096;

/** A burst that took less than this is a flood: 256 in 16 ms is 16,000 datagrams/s. */
const RECEIVE_BURST_MS = 16;

type MessageHandler = (message: DeliveredMessage) => void;
type EventHandler = (event: TransportEvent) => void;

export class UdpTransport {
  readonly endpoint: Endpoint;
  readonly metrics: MetricsRegistry;
  readonly #conn: DatagramSocket;
  readonly #runtime: Runtime;
  readonly #address: string;
  readonly #lossProbability: number;
  readonly #lossRng: Rng;
  readonly #dropsInjected: Counter;
  readonly #socketErrors: Counter;
  readonly #handlerErrors: Counter;
  readonly #messageHandlers = new Set<MessageHandler>();
  readonly #eventHandlers = new Set<EventHandler>();
  readonly #addressCache = new Map<string, string | null>();
  readonly #socketAddress = new Map<string, HostPort>();
  readonly #receiveLoop: Promise<void>;
  readonly #timer: DeadlineTimer;
  #flushQueued = false;
  #closed = false;
  #sendsInFlight = 0;
  #sendsDrained: (() => void) | undefined;
  /**
   * The address string of each peer that authenticated, by hostname then port, so a datagram
   * from a known peer does not format a new one; at most `HEARD_FROM_MAX` of them.
   */
  readonly #heardFrom = new Map<string, Map<number, string>>();
  #heardFromCount = 0;
  /** A send's settlements, made once, not as two closures per datagram. */
  readonly #onSent = (): void => this.#sendDone();
  readonly #onSendFailed = (): void => {
    this.#socketErrors.inc();
    this.#sendDone();
  };

  private constructor(options: UdpTransportOptions, conn: DatagramSocket) {
    this.#conn = conn;
    this.#runtime = options.runtime ?? realRuntime;
    this.#timer = new DeadlineTimer(this.#runtime, () => this.#flushNow());
    const local = conn.localAddress;
    this.#address = formatAddress(local.hostname, local.port);
    this.metrics = options.metrics ?? new MetricsRegistry();
    const rng = options.rng ?? randomRng();
    this.endpoint = new Endpoint({
      nodeId: options.nodeId,
      ...(options.clusterKey !== undefined ? { clusterKey: options.clusterKey } : {}),
      ...(options.authenticator !== undefined ? { authenticator: options.authenticator } : {}),
      rng,
      ...(options.epoch !== undefined ? { epoch: options.epoch } : {}),
      ...(options.config !== undefined ? { config: options.config } : {}),
      metrics: this.metrics,
    });
    this.#lossProbability = options.lossProbability ?? 0;
    this.#lossRng = options.lossSeed !== undefined ? new Sfc32(options.lossSeed) : randomRng();
    this.#dropsInjected = this.metrics.counter(
      "hookd_transport_drops_injected_total",
      "Received datagrams dropped by ingress loss injection",
    );
    this.#socketErrors = this.metrics.counter(
      "hookd_transport_socket_errors_total",
      "Socket send or receive errors",
    );
    this.#handlerErrors = this.metrics.counter(
      "hookd_transport_handler_errors_total",
      "Exceptions thrown by message or event handlers or the piggyback provider",
    );
    this.#receiveLoop = this.#receive();
  }

  /** Binds the socket and starts receiving. Throws `RangeError` on bad options. */
  static start(options: UdpTransportOptions): UdpTransport {
    const listen = parseAddress(options.listen ?? "127.0.0.1:0", { allowPortZero: true });
    if (!listen.ok) throw new RangeError(`listen: ${listen.reason}`);
    probability("lossProbability", options.lossProbability ?? 0);
    if (options.authenticator === undefined && options.clusterKey === undefined) {
      throw new RangeError(
        "clusterKey: a cluster key is required (--cluster-key or HOOKD_CLUSTER_KEY)",
      );
    }
    const conn = options.socket ?? bindUdpSocket(listen.value);
    try {
      return new UdpTransport(options, conn);
    } catch (error) {
      conn.close();
      throw error;
    }
  }

  /** The bound `"host:port"`, the address peers send to. */
  get address(): string {
    return this.#address;
  }

  get nodeId(): string {
    return this.endpoint.nodeId;
  }

  get epoch(): number {
    return this.endpoint.epoch;
  }

  /** Queues a reliable message; `ackMayWait`: see `SessionSender.enqueue`. */
  send(address: string, channel: number, bytes: Uint8Array, ackMayWait = false): SendResult {
    const to = this.#canonical(address);
    if (this.#closed) return { accepted: false, reason: "closed" };
    if (to === null) return { accepted: false, reason: "invalid-address" };
    const result = this.endpoint.send(this.#runtime.nowMs(), to, channel, bytes, ackMayWait);
    if (result.accepted) this.#scheduleFlush();
    return result;
  }

  sendUnreliable(address: string, channel: number, bytes: Uint8Array): SendResult {
    const to = this.#canonical(address);
    if (this.#closed) return { accepted: false, reason: "closed" };
    if (to === null) return { accepted: false, reason: "invalid-address" };
    const result = this.endpoint.sendUnreliable(this.#runtime.nowMs(), to, channel, bytes);
    if (result.accepted) this.#scheduleFlush();
    return result;
  }

  /** Subscribes to delivered messages; returns the unsubscribe function. */
  onMessage(handler: MessageHandler): () => void {
    this.#messageHandlers.add(handler);
    return () => void this.#messageHandlers.delete(handler);
  }

  /** Subscribes to transport events; returns the unsubscribe function. */
  onEvent(handler: EventHandler): () => void {
    this.#eventHandlers.add(handler);
    return () => void this.#eventHandlers.delete(handler);
  }

  /**
   * Registers (or clears) the gossip piggyback provider. It runs inside the flush, from a
   * microtask or the timer, where an exception would escape to the runtime and end the
   * process; so one that throws counts as a handler error and the datagram goes without.
   */
  setPiggyback(provider: PiggybackProvider | null): void {
    if (provider === null) {
      this.endpoint.setPiggyback(null);
      return;
    }
    this.endpoint.setPiggyback((peer, spaceBytes) => {
      try {
        return provider(peer, spaceBytes);
      } catch (error) {
        this.#errorIn("piggyback provider", error);
        return null;
      }
    });
  }

  peerStats(address: string): PeerStats | undefined {
    const to = this.#canonical(address);
    return to === null ? undefined : this.endpoint.peerStats(to);
  }

  isIdle(address?: string): boolean {
    if (address === undefined) return this.endpoint.isIdle();
    const to = this.#canonical(address);
    return to === null || this.endpoint.isIdle(to);
  }

  /**
   * Drops the session with `address` and everything queued or in flight to it (a node removed
   * for good); a later datagram from it starts a fresh session. Reliable messages given up are
   * reported at once in a `messages-dropped` event.
   */
  forgetPeer(address: string): void {
    const to = this.#canonical(address);
    if (to === null) return;
    this.endpoint.forgetPeer(to);
    this.#socketAddress.delete(to);
    this.#dispatch();
  }

  /** Stops the timer and the receive loop, waits for sends in progress, closes the socket. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer.close();
    if (this.#sendsInFlight > 0) {
      await new Promise<void>((resolve) => (this.#sendsDrained = resolve));
    }
    this.#conn.close();
    await this.#receiveLoop;
  }

  #canonical(address: string): string | null {
    let to = this.#addressCache.get(address);
    if (to === undefined) {
      to = canonicalAddress(address) ?? null;
      if (this.#addressCache.size < 4096) this.#addressCache.set(address, to);
    }
    return to;
  }

  async #receive(): Promise<void> {
    // Without a buffer, `receive` allocates 64 KiB per datagram, which at thousands of
    // datagrams per second is mostly garbage collection. Receive into one buffer; opening a
    // datagram copies what it keeps (delivered messages are views into the opened copy).
    const buffer = new Uint8Array(65536);
    let burst = 0;
    let burstStartMs = this.#runtime.nowMs();
    while (!this.#closed) {
      let received: [Uint8Array, HostPort];
      try {
        received = await this.#conn.receive(buffer);
      } catch {
        if (this.#closed) return;
        this.#socketErrors.inc();
        // A socket error that repeats would otherwise spin this loop at full speed.
        await new Promise<void>((resolve) => this.#runtime.setTimer(1, resolve));
        continue;
      }
      if (this.#closed) return;
      if (this.#lossProbability > 0 && this.#lossRng.next() < this.#lossProbability) {
        this.#dropsInjected.inc();
        continue;
      }
      const [data, from] = received;
      // Under a flood of junk, every datagram must cost as little as the socket read itself:
      // a few byte comparisons reject it before an address string is built, before any key
      // or cryptography, and without a flush or a dispatch (nothing changed).
      if (!this.endpoint.plausible(data)) {
        this.endpoint.receive(0, "", data); // counts it
      } else {
        const kept = this.#keptAddress(from);
        const address = kept ?? formatAddress(from.hostname, from.port);
        // The endpoint keeps no reference to `data` (messages are views of the opened copy).
        if (this.endpoint.receive(this.#runtime.nowMs(), address, data)) {
          // Kept only once a datagram from it authenticated: forged sources cannot fill it.
          if (kept === undefined) this.#keepAddress(from, address);
          this.#dispatch();
          this.#scheduleFlush();
        }
      }
      // Bounded work per turn: when datagrams keep arriving faster than a burst per
      // RECEIVE_BURST_MS (a flood), give the timers (probes, retransmissions, held-back acks)
      // their turn every RECEIVE_BURST_MAX of them. At ordinary rates nothing waits.
      if (++burst >= RECEIVE_BURST_MAX) {
        const nowMs = this.#runtime.nowMs();
        if (nowMs - burstStartMs < RECEIVE_BURST_MS) {
          await new Promise<void>((resolve) => this.#runtime.setTimer(0, resolve));
        }
        burst = 0;
        burstStartMs = this.#runtime.nowMs();
      }
    }
  }

  #dispatch(): void {
    const onError = this.#errorIn;
    for (const m of this.endpoint.takeMessages()) {
      callEach(this.#messageHandlers, m, "message handler", onError);
    }
    for (const e of this.endpoint.takeEvents()) {
      callEach(this.#eventHandlers, e, "event handler", onError);
    }
  }

  /** A handler threw: count it and go on, so one bad subscriber cannot stop the transport. */
  readonly #errorIn = (what: string, error: unknown): void => {
    this.#handlerErrors.inc();
    console.error(`transport: ${what} threw: ${error}`);
  };

  #scheduleFlush(): void {
    if (this.#flushQueued || this.#closed) return;
    this.#flushQueued = true;
    // Not a microtask: the job store's outputs of this turn (a vote after an inline fsync, a
    // COMMIT) then leave in the datagram that carries the ack, instead of one datagram each.
    this.#runtime.defer(() => {
      this.#flushQueued = false;
      this.#flushNow();
    });
  }

  /**
   * Sends now the messages queued for peers instead of at the end of the turn; acks with no
   * message to ride on still wait for the turn's flush. For a caller about to block the thread
   * (the job store before an inline fsync), so a SUBMIT's replicas start on it meanwhile.
   */
  sendQueuedNow(): void {
    if (this.#closed) return;
    this.endpoint.flush(this.#runtime.nowMs(), true);
    for (const d of this.endpoint.takeDatagrams()) this.#sendDatagram(d.address, d.bytes);
    this.#dispatch();
    this.#armTimer();
  }

  #flushNow(): void {
    if (this.#closed) return;
    this.endpoint.tick(this.#runtime.nowMs());
    for (const d of this.endpoint.takeDatagrams()) this.#sendDatagram(d.address, d.bytes);
    // Acks processed while flushing can raise `writable` events.
    this.#dispatch();
    this.#armTimer();
  }

  #sendDatagram(address: string, bytes: Uint8Array): void {
    let to = this.#socketAddress.get(address);
    if (to === undefined) {
      const parsed = parseAddress(address);
      if (!parsed.ok) {
        this.#socketErrors.inc();
        return;
      }
      to = parsed.value;
      this.#socketAddress.set(address, to);
    }
    this.#sendsInFlight++;
    this.#conn.send(bytes, to).then(this.#onSent, this.#onSendFailed);
  }

  /** The address string kept for `from` (a peer that authenticated), if any. */
  #keptAddress(from: HostPort): string | undefined {
    return this.#heardFrom.get(from.hostname)?.get(from.port);
  }

  /**
   * Keeps `address` as `from`'s string. Past `HEARD_FROM_MAX` peers (clients come and go on
   * new ports) every kept string is dropped first, and the peers still talking come back.
   */
  #keepAddress(from: HostPort, address: string): void {
    if (this.#heardFromCount >= HEARD_FROM_MAX) {
      this.#heardFrom.clear();
      this.#heardFromCount = 0;
    }
    let ports = this.#heardFrom.get(from.hostname);
    if (ports === undefined) {
      ports = new Map();
      this.#heardFrom.set(from.hostname, ports);
    }
    ports.set(from.port, address);
    this.#heardFromCount++;
  }

  /** How many peers' address strings are kept (`#keepAddress`): bounded, for tests. */
  get addressesKept(): number {
    return this.#heardFromCount;
  }

  #sendDone(): void {
    this.#sendsInFlight--;
    if (this.#sendsInFlight === 0 && this.#sendsDrained !== undefined) {
      const drained = this.#sendsDrained;
      this.#sendsDrained = undefined;
      drained();
    }
  }

  #armTimer(): void {
    this.#timer.arm(this.endpoint.nextWakeMs());
  }
}

function callEach<T>(
  handlers: ReadonlySet<(value: T) => void>,
  value: T,
  what: string,
  onError: (what: string, error: unknown) => void,
): void {
  for (const h of handlers) {
    try {
      h(value);
    } catch (error) {
      onError(what, error);
    }
  }
}
