/**
 * The sans-I/O transport core: one local endpoint and its per-peer sessions.
 *
 * Owns the session table, sealing and opening datagrams (keys from datagram_crypto.ts, the
 * send counter, the cache of peers' keys), decoding, peer-restart detection and the output
 * queues. Drive it with `send`/`sendUnreliable`/`receive` and `tick(nowMs)` (timers,
 * then one flush that coalesces everything queued into as few datagrams as fit), and pull
 * `takeDatagrams()`, `takeMessages()` and `takeEvents()` after each step. Nothing here touches
 * a socket, a timer or the clock, so the simulator replays it exactly from a seed. Nothing
 * needs to be durable before it is sent.
 */

import { fail } from "../lib/assert.ts";
import type { Rng } from "../lib/rng.ts";
import {
  type TransportConfig,
  transportDefaults,
  validateTransportConfig,
} from "../config/transport.ts";
import { StringCache } from "../lib/string_cache.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import {
  ackFrameBytes,
  DatagramWriter,
  decodeAfterOuterHeader,
  type DecodedDatagram,
  encodeNodeId,
  FLAGS_KNOWN,
  FRAG_FRAME_OVERHEAD_BYTES,
  HEADER_FIXED_BYTES,
  KEY_ID_BYTES,
  KEY_ID_OFFSET,
  MAGIC,
  readOuterHeader,
  UNRELIABLE_FRAME_OVERHEAD_BYTES,
  VERSION,
  writeCounter,
} from "./frame_codec.ts";
import { clusterKeyOf } from "./auth.ts";
import {
  AEAD_TAG_BYTES,
  ClusterKeyring,
  keyGeneration,
  openDatagram,
  sealDatagram,
} from "./datagram_crypto.ts";
import { Session, type SessionContext, type SessionOutput } from "./session.ts";
import { ReplayWindow } from "./replay_window.ts";
import { TokenBucket } from "./token_bucket.ts";
import { type TransportCounters, transportCounters } from "./transport_metrics.ts";
import {
  APP_CHANNEL_MAX,
  type Authenticator,
  type DeliveredMessage,
  type OutgoingDatagram,
  type PeerStats,
  type PiggybackProvider,
  type SendResult,
  type TransportEvent,
} from "./types.ts";

export interface EndpointOptions {
  /** This node's id, 1..64 bytes of UTF-8, carried in every datagram. */
  nodeId: string;
  /** The cluster key (>= 16 bytes): every datagram is sealed under keys derived from it. */
  clusterKey?: string | Uint8Array;
  /**
   * The older way to hand in the cluster key: an `HmacSha256Authenticator` built with it.
   * Ignored when `clusterKey` is given.
   */
  authenticator?: Authenticator;
  /**
   * This endpoint's key id (16 bytes), which with the counter keeps nonces unique: it must
   * never repeat across processes sharing the cluster key. Tests pass one drawn from their
   * seed. @default 16 bytes from crypto.getRandomValues
   */
  keyId?: Uint8Array;
  /**
   * The first datagram's nonce counter. Any start keeps nonces unique, since the key id is this
   * endpoint's alone; tests start near a key generation boundary (2^24) to cross it.
   * @default 0
   */
  counter?: number;
  /** Injected randomness; used to choose session epochs (see `epoch`). */
  rng: Rng;
  /**
   * This incarnation's epoch (u32): the first session's. Every later session, and a session
   * whose peer address another process took over, draws an epoch of its own from `rng`.
   * @default drawn from `rng`
   */
  epoch?: number;
  config?: Partial<TransportConfig>;
  metrics?: MetricsRegistry;
  piggyback?: PiggybackProvider;
}

const MAGIC_LOW = MAGIC & 0xff;
const MAGIC_HIGH = MAGIC >>> 8;

/**
 * Datagram counters of one sender key remembered for replay protection (~1 s of a busy
 * sender's datagrams to all its peers, at 512 bytes per key).
 */
export const REPLAY_WINDOW_DATAGRAMS = 4096;

/** What the endpoint knows of one peer key id that authenticated. */
interface PeerKeyState {
  id: string;
  /** The address it first authenticated from; datagrams under it from elsewhere are dropped. */
  address: string;
  /** The session it is bound to, if any. */
  boundTo: string | undefined;
  /** A newer process took its address over: its datagrams are late, or replayed. */
  retired: boolean;
  /** Derived keys by generation (see datagram_crypto.ts). */
  keys: Map<number, Uint8Array>;
  window: ReplayWindow;
}

/**
 * Driven like every core (docs/architecture.md, "Driving a core"): inputs `send`,
 * `sendUnreliable` and `receive(nowMs, …)`; `tick(nowMs)`; outputs by `take…()` — three kinds
 * here, `takeDatagrams()`, `takeMessages()`, `takeEvents()`; `nextWakeMs()` for the next tick
 * (Infinity: none).
 */
export class Endpoint {
  readonly nodeId: string;
  readonly epoch: number;
  readonly config: Readonly<TransportConfig>;
  readonly metrics: MetricsRegistry;
  readonly counters: TransportCounters;
  /** Largest unreliable message one datagram carries: probes and gossip must fit in it. */
  readonly unreliableBytesMax: number;
  readonly #keyring: ClusterKeyring;
  readonly #keyId: Uint8Array;
  /** The next datagram's nonce counter; never reused while this endpoint lives. */
  #counter = 0;
  #sendKey: { generation: number; key: Uint8Array } | undefined;
  /** Every peer key id that opened a datagram, by key id (latin1), oldest first. */
  readonly #peerKeys = new Map<string, PeerKeyState>();
  /** The shared budget for deriving keys for datagrams from addresses with no session. */
  readonly #derivations: TokenBucket;
  readonly #sessions = new Map<string, Session>();
  readonly #ctx: SessionContext;
  readonly #out: SessionOutput = { datagrams: [], messages: [], events: [] };
  #piggyback: PiggybackProvider | null;
  readonly #minDatagramBytes: number;
  readonly #rng: Rng;
  /** Sessions created so far: the first takes `epoch`, every later one an epoch of its own. */
  #sessionsCreated = 0;

  constructor(options: EndpointOptions) {
    this.config = validateTransportConfig({ ...transportDefaults, ...options.config });
    const nodeIdBytes = encodeNodeId(options.nodeId);
    if (!nodeIdBytes.ok) {
      throw new RangeError(`nodeId ${JSON.stringify(options.nodeId)}: ${nodeIdBytes.reason}`);
    }
    this.nodeId = options.nodeId;
    this.#rng = options.rng;
    const epoch = options.epoch ?? this.#drawEpoch();
    if (!Number.isInteger(epoch) || epoch < 1 || epoch > 0xffff_ffff) {
      throw new RangeError(`epoch must be an integer in [1, 2^32 - 1], got ${options.epoch}`);
    }
    this.epoch = epoch;
    this.metrics = options.metrics ?? new MetricsRegistry();
    this.counters = transportCounters(this.metrics);
    const clusterKey = options.clusterKey ??
      (options.authenticator !== undefined ? clusterKeyOf(options.authenticator) : undefined);
    if (clusterKey === undefined) {
      throw new RangeError(
        "clusterKey: a cluster key is required (an authenticator other than " +
          "HmacSha256Authenticator cannot hand one over)",
      );
    }
    this.#keyring = new ClusterKeyring(clusterKey);
    const counter = options.counter ?? 0;
    if (!Number.isSafeInteger(counter) || counter < 0) {
      throw new RangeError(`counter must be a safe integer >= 0, got ${options.counter}`);
    }
    this.#counter = counter;
    this.#keyId = options.keyId ?? crypto.getRandomValues(new Uint8Array(KEY_ID_BYTES));
    if (this.#keyId.length !== KEY_ID_BYTES) {
      throw new RangeError(`keyId must be ${KEY_ID_BYTES} bytes, got ${this.#keyId.length}`);
    }
    this.#derivations = new TokenBucket(this.config.keyDerivationsPerSecondMax);
    this.#piggyback = options.piggyback ?? null;
    this.#minDatagramBytes = HEADER_FIXED_BYTES + 1 + AEAD_TAG_BYTES;
    this.#ctx = {
      config: this.config,
      nodeIdBytes: nodeIdBytes.value,
      keyId: this.#keyId,
      writer: new DatagramWriter(this.config.datagramBytes, AEAD_TAG_BYTES),
      seal: (datagram) => this.#seal(datagram),
      counters: this.counters,
      piggyback: () => this.#piggyback,
      out: this.#out,
      onRtt: (address, srttMs) => this.counters.rttMs(address).set(srttMs),
    };
    // Every datagram must carry at least one fragment byte next to a full ack; the config
    // check bounds datagramBytes from below, the node id's length is only known here.
    const frameSpaceBytes = this.config.datagramBytes - AEAD_TAG_BYTES - HEADER_FIXED_BYTES -
      nodeIdBytes.value.length - ackFrameBytes(this.config.ackRangesMax);
    this.unreliableBytesMax = frameSpaceBytes - UNRELIABLE_FRAME_OVERHEAD_BYTES;
    if (frameSpaceBytes <= FRAG_FRAME_OVERHEAD_BYTES) {
      throw new RangeError(
        `transport.datagramBytes (${this.config.datagramBytes}) leaves no room for data with node id ${
          JSON.stringify(this.nodeId)
        } and ackRangesMax ${this.config.ackRangesMax}`,
      );
    }
  }

  /** Registers (or clears, with null) the gossip piggyback provider. */
  setPiggyback(provider: PiggybackProvider | null): void {
    this.#piggyback = provider;
  }

  /** Queues a reliable message for `address`; it leaves at the next `tick`/`flush`. */
  send(
    nowMs: number,
    address: string,
    channel: number,
    bytes: Uint8Array,
    ackMayWait = false,
  ): SendResult {
    if (!validChannel(channel)) return { accepted: false, reason: "invalid-channel" };
    if (bytes.length > this.config.messageBytesMax) {
      return { accepted: false, reason: "message-too-large" };
    }
    const session = this.#session(nowMs, address);
    if (session === undefined) return { accepted: false, reason: "peer-limit" };
    if (!session.enqueue(channel, bytes, ackMayWait)) {
      this.counters.backpressure.inc();
      return { accepted: false, reason: "backpressure" };
    }
    return { accepted: true };
  }

  /** Queues an unreliable message (no retransmission, no acknowledgement) of one datagram at most. */
  sendUnreliable(nowMs: number, address: string, channel: number, bytes: Uint8Array): SendResult {
    if (!validChannel(channel)) return { accepted: false, reason: "invalid-channel" };
    const session = this.#session(nowMs, address);
    if (session === undefined) return { accepted: false, reason: "peer-limit" };
    if (!session.fitsUnreliable(bytes.length)) {
      return { accepted: false, reason: "message-too-large" };
    }
    if (!session.enqueueUnreliable(channel, bytes)) {
      this.counters.unreliableDropped.inc();
      return { accepted: false, reason: "backpressure" };
    }
    return { accepted: true };
  }

  /**
   * Whether `datagram` could be one of ours at all: its length, magic, version and flags, a
   * few byte comparisons. An adapter under a flood asks this before it spends anything on a
   * datagram (an address string, a copy); random bytes pass it once in 2^32.
   */
  plausible(datagram: Uint8Array): boolean {
    return datagram.length >= this.#minDatagramBytes && datagram[0] === MAGIC_LOW &&
      datagram[1] === MAGIC_HIGH && datagram[2] === VERSION && (datagram[3]! & ~FLAGS_KNOWN) === 0;
  }

  /**
   * Handles one datagram from `fromAddress`. Drops (and counts) short, forged, malformed,
   * replayed and stale ones; never throws on hostile bytes. Returns whether it authenticated
   * (only then can there be messages, events or datagrams to take). The endpoint keeps no
   * reference to `datagram`: the caller may reuse its buffer at once.
   */
  receive(nowMs: number, fromAddress: string, datagram: Uint8Array): boolean {
    const c = this.counters;
    c.datagramsIn.inc();
    c.bytesIn.inc(datagram.length);
    // Cheapest checks first: length and the clear header, before any key or cryptography.
    if (!this.plausible(datagram)) {
      c.decodeErrors.inc();
      return false;
    }
    const outer = readOuterHeader(datagram, AEAD_TAG_BYTES);
    if (!outer.ok) {
      c.decodeErrors.inc();
      return false;
    }
    const { keyId, counter } = outer.value;
    const id = KEY_IDS.get(datagram, KEY_ID_OFFSET, KEY_ID_BYTES, latin1);
    const known = this.#peerKeys.get(id);
    // Still before any cryptography: a key id belongs to the one address it first
    // authenticated from, and its window refuses counters seen or too old. So a datagram
    // replayed or duplicated, from any address, is dropped here and processed at most once.
    if (known !== undefined) {
      if (known.address !== fromAddress) {
        c.addressMismatches.inc();
        return false;
      }
      if (known.retired) {
        c.staleEpochDrops.inc();
        return false;
      }
      if (!known.window.isNew(counter)) {
        c.replays.inc();
        return false;
      }
    }
    const opened = this.#open(nowMs, fromAddress, id, keyId, counter, datagram);
    if (opened === undefined) return false;
    const { plain, state } = opened;
    state.window.mark(counter);
    const decoded = decodeAfterOuterHeader(plain, 0, outer.value);
    if (!decoded.ok) {
      c.decodeErrors.inc();
      return true;
    }
    const session = this.#session(nowMs, fromAddress);
    if (session === undefined) {
      c.peerLimitDrops.inc();
      return true;
    }
    if (this.#admit(nowMs, session, state, counter, decoded.value)) {
      session.lastHeardMs = nowMs;
      session.onDatagram(nowMs, decoded.value);
    }
    return true;
  }

  /**
   * Decides whether an authenticated, never-seen datagram may change or use the session's
   * view of its peer, binding or rebinding it when it may. False: the datagram is dropped
   * (counted), and where it could be an incarnation that does not know ours yet, the session
   * answers with a datagram carrying our epoch.
   *
   * A different key at the address is another process there. Only a datagram addressed to
   * this session's epoch proves that process heard us since the session began, so only such a
   * datagram resets the session: a datagram of an older incarnation replayed later cannot
   * reset it (it addresses our epoch of its own time, or none), and keys a newer process
   * replaced are retired, so their late datagrams are dropped unopened. Within one key, the
   * counter orders everything the process sent: a new epoch (the peer forgot us) is adopted
   * only from datagrams sent after the current one was.
   */
  #admit(
    nowMs: number,
    session: Session,
    state: PeerKeyState,
    counter: number,
    d: DecodedDatagram,
  ): boolean {
    const c = this.counters;
    const address = session.address;
    if (session.peerKeyId === undefined) {
      if (d.dstEpoch !== 0 && d.dstEpoch !== session.localEpoch) {
        // Addressed to an earlier session or incarnation of ours: stale, or a peer that has
        // not heard of this session yet. Tell it our epoch; bind on its answer.
        c.staleEpochDrops.inc();
        session.requestAnnounce(nowMs, d.epoch);
        return false;
      }
      session.bindPeer(state.id, counter, d.nodeId, d.epoch);
      state.boundTo = address;
      this.#out.events.push({ type: "peer-discovered", address, nodeId: d.nodeId, epoch: d.epoch });
      return true;
    }
    if (session.peerKeyId !== state.id) {
      if (d.dstEpoch !== session.localEpoch) {
        c.staleEpochDrops.inc();
        session.requestAnnounce(nowMs, d.epoch);
        return false;
      }
      const old = this.#peerKeys.get(session.peerKeyId);
      if (old !== undefined) old.retired = true;
      // The retired key's state can be evicted later, and then nothing would remember that it
      // is dead; a new epoch of ours is what keeps its replayed datagrams out for good.
      this.#restart(session, state, counter, d, this.#drawEpoch());
      return true;
    }
    if (d.epoch !== session.peerEpoch || d.nodeId !== session.peerNodeId) {
      if (counter < session.peerEpochSinceCounter) {
        c.staleEpochDrops.inc();
        return false;
      }
      if (d.dstEpoch !== 0 && d.dstEpoch !== session.localEpoch) {
        c.staleEpochDrops.inc();
        session.requestAnnounce(nowMs, d.epoch);
        return false;
      }
      this.#restart(session, state, counter, d);
    }
    return true;
  }

  /**
   * The peer at the session's address is a new incarnation, or forgot us: start afresh (under
   * `localEpoch`, a new epoch of ours, when another process took the address over).
   */
  #restart(
    session: Session,
    state: PeerKeyState,
    counter: number,
    d: DecodedDatagram,
    localEpoch?: number,
  ): void {
    const previousEpoch = session.peerEpoch!;
    const dropped = session.resetForPeerRestart(state.id, counter, d.nodeId, d.epoch, localEpoch);
    state.boundTo = session.address;
    this.counters.peerRestarts.inc();
    this.#out.events.push({
      type: "peer-restarted",
      address: session.address,
      nodeId: d.nodeId,
      previousEpoch,
      epoch: d.epoch,
    });
    if (dropped.length > 0) {
      this.#out.events.push({
        type: "messages-dropped",
        address: session.address,
        nodeId: d.nodeId,
        reason: "session-reset",
        messages: dropped,
      });
    }
  }

  /** Runs due timers (acks, loss detection, probes, RTO), then flushes. */
  tick(nowMs: number): void {
    for (const session of this.#sessions.values()) {
      if (session.nextWakeMs() <= nowMs) session.onTimers(nowMs);
    }
    this.flush(nowMs);
  }

  /**
   * Builds datagrams for everything queued; many messages share one datagram. `dataOnly`:
   * only for peers with data waiting (their pending acks ride along); acks alone wait.
   */
  flush(nowMs: number, dataOnly = false): void {
    const datagrams = this.#out.datagrams;
    const before = datagrams.length;
    for (const session of this.#sessions.values()) session.flush(nowMs, dataOnly);
    for (let i = before; i < datagrams.length; i++) {
      const length = datagrams[i]!.bytes.length;
      if (!(length <= this.config.datagramBytes)) fail(`datagram of ${length} bytes built`);
      this.counters.datagramsOut.inc();
      this.counters.bytesOut.inc(length);
    }
  }

  /** Earliest time `tick` has timer work; Infinity when none. */
  nextWakeMs(): number {
    let deadline = Infinity;
    for (const session of this.#sessions.values()) {
      const d = session.nextWakeMs();
      if (d < deadline) deadline = d;
    }
    return deadline;
  }

  takeDatagrams(): OutgoingDatagram[] {
    const out = this.#out.datagrams;
    this.#out.datagrams = [];
    return out;
  }

  takeMessages(): DeliveredMessage[] {
    const out = this.#out.messages;
    this.#out.messages = [];
    return out;
  }

  takeEvents(): TransportEvent[] {
    const out = this.#out.events;
    this.#out.events = [];
    return out;
  }

  /** Whether nothing is queued or unacknowledged towards `address` (or any peer). */
  isIdle(address?: string): boolean {
    if (address !== undefined) return this.#sessions.get(address)?.idle ?? true;
    for (const s of this.#sessions.values()) if (!s.idle) return false;
    return true;
  }

  peers(): string[] {
    return [...this.#sessions.keys()];
  }

  peerStats(address: string): PeerStats | undefined {
    const s = this.#sessions.get(address);
    if (s === undefined) return undefined;
    return { address, nodeId: s.peerNodeId, peerEpoch: s.peerEpoch, ...s.stats() };
  }

  /**
   * Drops the session with `address` and everything queued for it (e.g. a node removed). A
   * later session with that address numbers packets and messages from the start again, so it
   * must not reuse the old session's epoch: the peer, if it is still alive, would take the new
   * numbers for ones it has already seen, acknowledge them and drop them as duplicates. The new
   * session draws its own epoch (as every session but the first does), which the peer treats
   * as a restart of ours.
   */
  forgetPeer(address: string): void {
    this.#release(address, "peer-forgotten");
  }

  #release(address: string, reason: "peer-forgotten" | "session-expired"): void {
    const session = this.#sessions.get(address);
    if (session === undefined) return;
    this.#sessions.delete(address);
    const dropped = session.release();
    if (dropped.length > 0) {
      this.#out.events.push({
        type: "messages-dropped",
        address,
        nodeId: session.peerNodeId,
        reason,
        messages: dropped,
      });
    }
  }

  /** Seals a datagram the session built: the next counter, then ChaCha20-Poly1305. */
  #seal(datagram: Uint8Array): void {
    const counter = this.#counter++;
    writeCounter(datagram, counter);
    const generation = keyGeneration(counter);
    if (this.#sendKey === undefined || this.#sendKey.generation !== generation) {
      this.#sendKey = { generation, key: this.#keyring.derive(this.#keyId, generation) };
    }
    sealDatagram(this.#sendKey.key, datagram);
  }

  /**
   * The datagram opened and its key id's state, or undefined (counted) when it does not
   * authenticate or its key may not be derived now. A key id seen before costs a map lookup;
   * an unknown one costs a key derivation, which an attacker could force with every datagram,
   * so derivations are rate-limited: from the address of an existing session on that
   * session's own budget (`keyDerivationsPerPeerPerSecondMax`), so that a flood of random key
   * ids from elsewhere cannot keep a restarted peer out, and from any other address on the
   * shared one (`keyDerivationsPerSecondMax`); and a
   * key id gets state only once a datagram opened under it (authentication before state).
   */
  #open(
    nowMs: number,
    fromAddress: string,
    id: string,
    keyId: Uint8Array,
    counter: number,
    datagram: Uint8Array,
  ): { plain: Uint8Array; state: PeerKeyState } | undefined {
    const c = this.counters;
    const generation = keyGeneration(counter);
    const known = this.#peerKeys.get(id);
    const cached = known?.keys.get(generation);
    if (known !== undefined && cached !== undefined) {
      const plain = openDatagram(cached, datagram);
      if (plain === undefined) {
        c.authFailures.inc();
        return undefined;
      }
      return { plain, state: known };
    }
    const budget = this.#sessions.get(fromAddress)?.keyDerivations ?? this.#derivations;
    if (!budget.take(nowMs)) {
      c.keyDerivationsRefused.inc();
      return undefined;
    }
    const key = this.#keyring.derive(keyId, generation);
    const plain = openDatagram(key, datagram);
    if (plain === undefined) {
      c.authFailures.inc();
      return undefined;
    }
    let state = known;
    if (state === undefined) {
      this.#evictPeerKeys();
      state = {
        id,
        address: fromAddress,
        boundTo: undefined,
        retired: false,
        keys: new Map(),
        window: new ReplayWindow(REPLAY_WINDOW_DATAGRAMS),
      };
      this.#peerKeys.set(id, state);
    }
    // A sender moves up one generation at a time; keep the current one and the one before.
    for (const g of state.keys.keys()) if (g < generation - 1) state.keys.delete(g);
    state.keys.set(generation, key);
    return { plain, state };
  }

  /**
   * Keeps the key table bounded: the oldest entries not bound to a live session go first. An
   * evicted key id is derived again (rate-limited) if it comes back; its replay window is lost,
   * which is why the bound is twice `peersMax`.
   */
  #evictPeerKeys(): void {
    const max = 2 * this.config.peersMax;
    if (this.#peerKeys.size < max) return;
    for (const [id, state] of this.#peerKeys) {
      const bound = state.boundTo !== undefined &&
        this.#sessions.get(state.boundTo)?.peerKeyId === id;
      if (!bound) {
        this.#peerKeys.delete(id);
        if (this.#peerKeys.size < max) return;
      }
    }
  }

  /** A random session epoch in [1, 2^32 - 1]: 0 means "unknown" on the wire. */
  #drawEpoch(): number {
    return 1 + Math.floor(this.#rng.next() * 0xffff_ffff);
  }

  #session(nowMs: number, address: string): Session | undefined {
    let s = this.#sessions.get(address);
    if (s !== undefined) return s;
    if (this.#sessions.size >= this.config.peersMax && !this.#expireOne(nowMs)) return undefined;
    // Each session has an epoch of its own, so a datagram addressed to one session (its
    // dstEpoch) can never be accepted by another: not by a session at the address of a
    // replaying attacker, nor by one bound to another process, whatever the key table forgot.
    const epoch = this.#sessionsCreated++ === 0 ? this.epoch : this.#drawEpoch();
    s = new Session(
      address,
      epoch,
      this.#ctx,
      nowMs,
      new TokenBucket(this.config.keyDerivationsPerPeerPerSecondMax),
    );
    this.#sessions.set(address, s);
    return s;
  }

  /**
   * Releases the session heard from longest ago if that is at least `sessionIdleMs` ago (a
   * peer gone for good: a UDP client that exited, an address nobody uses any more); returns
   * whether one was. A linear scan, made only when the table is full and a new peer comes.
   */
  #expireOne(nowMs: number): boolean {
    let oldest: Session | undefined;
    for (const s of this.#sessions.values()) {
      if (oldest === undefined || s.lastHeardMs < oldest.lastHeardMs) oldest = s;
    }
    if (oldest === undefined || nowMs - oldest.lastHeardMs < this.config.sessionIdleMs) {
      return false;
    }
    this.#release(oldest.address, "session-expired");
    this.counters.sessionsExpired.inc();
    return true;
  }
}

/**
 * Key ids as map keys (one char a byte): a sender's key id comes in every datagram of its
 * process, so each is made once (`StringCache` compares the bytes in full).
 */
const KEY_IDS = new StringCache(64, KEY_ID_BYTES);

/** `source[start, start + n)` as characters 0-255, one a byte (a cache miss: one array). */
function latin1(source: Uint8Array, start: number, n: number): string {
  const codes = new Array<number>(n);
  for (let i = 0; i < n; i++) codes[i] = source[start + i]!;
  return String.fromCharCode.apply(null, codes);
}

function validChannel(channel: number): boolean {
  return Number.isInteger(channel) && channel >= 0 && channel <= APP_CHANNEL_MAX;
}
