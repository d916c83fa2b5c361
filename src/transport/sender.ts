/**
 * The send half of one peer's session: the reliable queue, message ids and chunks, packets in
 * flight, loss detection and retransmission, RTT, and the unreliable queue.
 *
 * Owns only state about what we send to the peer. It never touches what the peer sent us
 * (receiver.ts), nor epochs, headers and authentication (session.ts, endpoint.ts). It does no
 * I/O and reads no clock: every entry point takes `nowMs`. How much may be in flight and how
 * fast it may leave are the congestion controller's (congestion.ts) and the pacer's (pacer.ts);
 * this module asks them before every data datagram, retransmissions included.
 *
 * Reliability model. Packet numbers are per datagram and never reused; acknowledgements name
 * packet ranges. A message is cut into chunks when it first leaves the queue (one chunk, or
 * fragments when it does not fit a datagram); a lost packet puts its unacknowledged chunks back
 * in the retransmission queue, to travel in a new packet.
 */

import { assert } from "../lib/assert.ts";
import { KeyOrderQueue } from "../lib/key_order_queue.ts";
import type { TransportConfig } from "../config/transport.ts";
import {
  type DatagramWriter,
  FRAG_FRAME_OVERHEAD_BYTES,
  MSG_FRAME_OVERHEAD_BYTES,
  type PacketRange,
  UNRELIABLE_FRAME_OVERHEAD_BYTES,
} from "./frame_codec.ts";
import { CongestionController, type PacketRateState } from "./congestion.ts";
import { Pacer } from "./pacer.ts";
import { RttEstimator } from "./rtt_estimator.ts";
import type { TransportCounters } from "./transport_metrics.ts";

interface OutMessage {
  channel: number;
  bytes: Uint8Array;
  /** -1 until the message leaves the queue and gets its id. */
  id: number;
  /** Its acknowledgement may wait for a datagram the peer sends anyway (`lazyAckMs`). */
  ackMayWait: boolean;
  chunksUnacked: number;
  /** Cut into fragments (set when it leaves the queue). */
  fragmented: boolean;
}

/** A piece of a message as it travels: the whole message, or one fragment of it. */
export interface Chunk {
  msg: OutMessage;
  offset: number;
  length: number;
  fragmented: boolean;
  acked: boolean;
  /** Packet that last carried it; -1 while it waits in the retransmission queue. */
  lastPn: number;
}

interface SentPacket {
  pn: number;
  sentMs: number;
  bytes: number;
  chunks: Chunk[];
  rate: PacketRateState;
}

type RetransmitKind = "fast" | "probe" | "timeout";

export interface SenderOptions {
  config: Readonly<TransportConfig>;
  counters: TransportCounters;
  /** Largest payload of one fragment (what a datagram offers after header, full ack and MAC). */
  chunkBytesMax: number;
  /** The queue drained below half its bound after a refusal: the application may send again. */
  onWritable: () => void;
  /** The RTT estimate changed. */
  onRtt: (srttMs: number) => void;
}

export class SessionSender {
  readonly #cfg: Readonly<TransportConfig>;
  readonly #counters: TransportCounters;
  readonly #chunkBytesMax: number;
  readonly #onWritable: () => void;
  readonly #onRtt: (srttMs: number) => void;

  #nextPn = 1;
  #nextMsgId = 0;
  #lowestUnackedId = 0;
  /** Messages sent and not wholly acknowledged, by id (key_order_queue.ts: no Map churn). */
  readonly #unackedById = new KeyOrderQueue<OutMessage>();
  #pending: OutMessage[] = [];
  #pendingHead = 0;
  #newChunks: Chunk[] = [];
  #newChunksHead = 0;
  #retransmit: Chunk[] = [];
  #retransmitHead = 0;
  #unreliable: Array<{ channel: number; bytes: Uint8Array }> = [];
  /** Packets in flight that carry data, by packet number (key_order_queue.ts). */
  readonly #sent = new KeyOrderQueue<SentPacket>();
  #bytesInFlight = 0;
  #messagesUnacked = 0;
  #queuedBytes = 0;
  /** Bytes of the fragmented messages cut and not yet wholly acknowledged (see `#peekNewChunk`). */
  #fragmentedBytesUnacked = 0;
  #backpressured = false;
  #largestAckedPn = -1;
  #lossTimeMs = Infinity;
  #lastElicitingSentMs = 0;
  /** Whether the last ack-eliciting datagram was marked "ack may wait" (probe allowance). */
  #lastElicitingAckMayWait = false;
  /** Whether the datagram `writeChunks` last wrote may be marked "ack may wait". */
  #writtenAckMayWait = false;
  /** When a packet was last declared lost (not a speculative probe): marking waits for quiet. */
  #lastLossMs = -Infinity;
  #tlpCount = 0;
  #rtoCount = 0;
  /**
   * Data datagrams owed to a tail-loss probe or an RTO, which may leave past the pacer and
   * one datagram past a full window (see `#mayLeave`), or a lost tail would never be found.
   */
  #probeCredit = 0;
  readonly #rtt: RttEstimator;
  readonly #cc: CongestionController;
  readonly #pacer: Pacer;

  constructor(options: SenderOptions) {
    this.#cfg = options.config;
    this.#counters = options.counters;
    this.#chunkBytesMax = options.chunkBytesMax;
    assert(this.#chunkBytesMax > 0, "datagram too small for one fragment");
    this.#onWritable = options.onWritable;
    this.#onRtt = options.onRtt;
    this.#rtt = new RttEstimator({
      rtoInitialMs: this.#cfg.rtoInitialMs,
      rtoMinMs: this.#cfg.rtoMinMs,
      rtoMaxMs: this.#cfg.rtoMaxMs,
      granularityMs: this.#cfg.lossDelayMinMs,
    });
    const cfg = this.#cfg;
    const cwndMinBytes = Math.min(cfg.cwndMinDatagrams * cfg.datagramBytes, cfg.windowBytes);
    this.#cc = new CongestionController({
      cwndInitialBytes: cfg.cwndInitialDatagrams * cfg.datagramBytes,
      cwndMinBytes,
      cwndMaxBytes: cfg.windowBytes,
      cwndRttFloorMs: cfg.cwndRttFloorMs,
      bandwidthWindowRounds: cfg.bandwidthWindowRounds,
      minRttWindowMs: cfg.minRttWindowMs,
    });
    this.#pacer = new Pacer(cfg.pacingBurstMs, cwndMinBytes);
  }

  // ---- application side ------------------------------------------------------------------

  /**
   * Queues a reliable message; false (and remembered, for `writable`) when the queue is full.
   * `ackMayWait`: the peer may hold its acknowledgement for up to `lazyAckMs` (see
   * `writtenAckMayWait`).
   */
  enqueue(channel: number, bytes: Uint8Array, ackMayWait = false): boolean {
    if (
      this.#messagesUnacked + 1 > this.#cfg.sendQueueMessagesMax ||
      this.#queuedBytes + bytes.length > this.#cfg.sendQueueBytesMax
    ) {
      this.#backpressured = true;
      return false;
    }
    this.#pending.push({
      channel,
      bytes,
      id: -1,
      chunksUnacked: 0,
      fragmented: false,
      ackMayWait,
    });
    this.#messagesUnacked++;
    this.#queuedBytes += bytes.length;
    return true;
  }

  /** Queues an unreliable message; false when its bounded queue is full. */
  enqueueUnreliable(channel: number, bytes: Uint8Array): boolean {
    if (this.#unreliable.length >= this.#cfg.unreliableQueueMessagesMax) return false;
    this.#unreliable.push({ channel, bytes });
    return true;
  }

  get idle(): boolean {
    return this.#messagesUnacked === 0 && this.#unreliable.length === 0;
  }

  stats() {
    return {
      srttMs: this.#rtt.srttMs,
      rttVarMs: this.#rtt.rttVarMs,
      rtoMs: this.#rtt.rtoMs(this.#rtoCount),
      bytesInFlight: this.#bytesInFlight,
      packetsInFlight: this.#sent.size,
      messagesUnacked: this.#messagesUnacked,
      queuedBytes: this.#queuedBytes,
      cwndBytes: this.#cc.cwndBytes,
      pacingRateBytesPerMs: this.#cc.pacingRateBytesPerMs,
      bottleneckBytesPerMs: this.#cc.bottleneckBytesPerMs,
      minRttMs: Number.isFinite(this.#cc.minRttMs) ? this.#cc.minRttMs : undefined,
      congestionMode: this.#cc.mode,
    };
  }

  // ---- timers ----------------------------------------------------------------------------

  /**
   * Earliest time at which `onTimers` or a flush has work: loss detection, a probe or RTO,
   * or the pacer letting waiting data go (the window being open). Infinity when none.
   */
  nextWakeMs(): number {
    let deadline = this.#lossTimeMs;
    if (this.#sent.size > 0) deadline = Math.min(deadline, this.#probeOrRtoDeadlineMs());
    if (this.#probeCredit === 0 && this.#windowOpen() && this.#hasChunkWaiting()) {
      deadline = Math.min(deadline, this.#pacer.readyAtMs(this.#cc.pacingRateBytesPerMs));
    }
    return deadline;
  }

  #probeOrRtoDeadlineMs(): number {
    const srtt = this.#rtt.srttMs;
    const rttVar = this.#rtt.rttVarMs;
    if (srtt !== undefined && rttVar !== undefined && this.#tlpCount < this.#cfg.tlpMax) {
      // RFC 8985's 2·SRTT, widened by the variance: event-loop stalls make RTT samples jumpy
      // here, and a probe sent too early is pure overhead.
      const probeMs = Math.max(2 * srtt, srtt + 4 * rttVar) + this.#cfg.maxAckDelayMs;
      return this.#lastElicitingSentMs + this.#ackAllowanceMs() +
        Math.max(probeMs, this.#cfg.tlpMinMs);
    }
    return this.#lastElicitingSentMs + this.#ackAllowanceMs() + this.#rtt.rtoMs(this.#rtoCount);
  }

  /**
   * How much longer than usual the acknowledgement of the newest ack-eliciting datagram may
   * take: the peer holds a marked one up to `lazyAckMs`, and its timer may fire late (twice).
   */
  #ackAllowanceMs(): number {
    return this.#lastElicitingAckMayWait ? 2 * this.#cfg.lazyAckMs : 0;
  }

  onTimers(nowMs: number): void {
    if (this.#lossTimeMs <= nowMs) this.#detectLosses(nowMs);
    if (this.#sent.size > 0 && this.#probeOrRtoDeadlineMs() <= nowMs) {
      this.#probeCredit = 1;
      if (this.#rtt.srttMs !== undefined && this.#tlpCount < this.#cfg.tlpMax) {
        this.#tlpCount++;
        this.#probe();
      } else {
        // RFC 6298 §5.4: retransmit the earliest unacknowledged packet only. Its ack lets the
        // loss detector sort the rest out; declaring the whole window lost would resend it
        // all after every event-loop stall longer than the RTO, which here is common.
        // But the retransmission must fit: when the window shrank below what was already in
        // flight (the receiver slowed just before a blackout), the oldest packets go too,
        // until it does. Freeing one datagram per RTO instead left 22 datagrams in flight
        // against a 4-datagram window to drain at one per backed-off RTO (2 s each): 27 s
        // without a byte delivered after a 500 ms blackout (tests/transport/congestion_test.ts).
        this.#rtoCount++;
        this.#lastLossMs = nowMs;
        for (const packet of [...this.#sent.values()]) {
          this.#declareLost(packet, "timeout");
          if (this.#bytesInFlight <= this.#cc.cwndBytes) break;
        }
      }
      // The probe or retransmission goes out in this flush; time the next one from now even
      // if the window or an empty probe means nothing is sent.
      this.#lastElicitingSentMs = nowMs;
      this.#lastElicitingAckMayWait = false;
    }
  }

  /**
   * Tail-loss probe: resend the newest unacknowledged chunk, declaring nothing lost. Its
   * acknowledgement tells the loss detector which earlier packets are missing, so one chunk
   * is enough; resending the whole packet would mostly duplicate data that arrived.
   */
  #probe(): void {
    const packets = [...this.#sent.values()];
    for (let i = packets.length - 1; i >= 0; i--) {
      const chunks = packets[i]!.chunks;
      for (let j = chunks.length - 1; j >= 0; j--) {
        const c = chunks[j]!;
        if (c.acked || c.lastPn === -1) continue;
        c.lastPn = -1;
        this.#retransmit.push(c);
        this.#counters.retransmits.probe.inc();
        return;
      }
    }
  }

  // ---- acknowledgements ------------------------------------------------------------------

  /** An ack frame for our current epoch (the session checked the epoch). */
  onAck(nowMs: number, ackDelayUs: number, ranges: readonly PacketRange[]): void {
    const largest = ranges[0]!.hi;
    if (largest >= this.#nextPn) {
      this.#counters.protocolErrors.inc();
      return;
    }
    let idx = ranges.length - 1;
    let largestSentMs = -1;
    let ackedAny = false;
    for (const packet of this.#sent.values()) {
      const pn = packet.pn;
      if (pn > largest) break;
      while (idx >= 0 && ranges[idx]!.hi < pn) idx--;
      if (idx < 0) break;
      if (ranges[idx]!.lo > pn) continue;
      if (pn === largest) largestSentMs = packet.sentMs;
      this.#ackPacket(packet);
      this.#cc.onAcked(nowMs, packet.rate, packet.bytes);
      ackedAny = true;
    }
    if (largest > this.#largestAckedPn) this.#largestAckedPn = largest;
    const rttSampleMs = largestSentMs >= 0 ? nowMs - largestSentMs : undefined;
    if (rttSampleMs !== undefined) {
      this.#rtt.update(rttSampleMs, ackDelayUs / 1000);
      this.#onRtt(this.#rtt.srttMs!);
    }
    if (ackedAny) {
      this.#tlpCount = 0;
      this.#rtoCount = 0;
      this.#detectLosses(nowMs);
      this.#cc.onAckEnd(nowMs, rttSampleMs, this.#bytesInFlight);
      this.#maybeWritable();
    }
  }

  #ackPacket(packet: SentPacket): void {
    this.#sent.delete(packet.pn);
    this.#bytesInFlight -= packet.bytes;
    assert(this.#bytesInFlight >= 0, "bytes in flight went negative");
    for (const c of packet.chunks) {
      if (c.acked) continue;
      c.acked = true;
      const m = c.msg;
      m.chunksUnacked--;
      if (m.chunksUnacked > 0) continue;
      this.#unackedById.delete(m.id);
      this.#messagesUnacked--;
      this.#queuedBytes -= m.bytes.length;
      if (m.fragmented) this.#fragmentedBytesUnacked -= m.bytes.length;
      assert(this.#messagesUnacked >= 0 && this.#queuedBytes >= 0, "send queue accounting");
    }
    this.#lowestUnackedId = this.#unackedById.firstKey() ?? this.#nextMsgId;
  }

  #maybeWritable(): void {
    if (!this.#backpressured) return;
    if (
      this.#messagesUnacked <= this.#cfg.sendQueueMessagesMax / 2 &&
      this.#queuedBytes <= this.#cfg.sendQueueBytesMax / 2
    ) {
      this.#backpressured = false;
      this.#onWritable();
    }
  }

  /** RFC 9002 §6.1: packet- and time-threshold loss for packets below the largest acked. */
  #detectLosses(nowMs: number): void {
    const srtt = this.#rtt.srttMs ?? 0;
    const latest = this.#rtt.latestMs ?? 0;
    const lossDelayMs = Math.max(
      this.#cfg.timeThreshold * Math.max(srtt, latest),
      this.#cfg.lossDelayMinMs,
    );
    this.#lossTimeMs = Infinity;
    const lost: SentPacket[] = [];
    for (const packet of this.#sent.values()) {
      if (packet.pn > this.#largestAckedPn) break;
      if (
        this.#largestAckedPn - packet.pn >= this.#cfg.packetThreshold ||
        packet.sentMs + lossDelayMs <= nowMs
      ) {
        lost.push(packet);
      } else {
        this.#lossTimeMs = Math.min(this.#lossTimeMs, packet.sentMs + lossDelayMs);
      }
    }
    for (const packet of lost) this.#declareLost(packet, "fast");
    if (lost.length > 0) this.#lastLossMs = nowMs;
  }

  #declareLost(packet: SentPacket, kind: RetransmitKind): void {
    this.#sent.delete(packet.pn);
    this.#bytesInFlight -= packet.bytes;
    assert(this.#bytesInFlight >= 0, "bytes in flight went negative");
    let queued = 0;
    for (const c of packet.chunks) {
      if (c.acked || c.lastPn !== packet.pn) continue;
      c.lastPn = -1;
      this.#retransmit.push(c);
      queued++;
    }
    if (queued > 0) this.#counters.retransmits[kind].inc(queued);
  }

  /**
   * Everything in flight was addressed to an incarnation of the peer that will ignore it (the
   * peer's first datagram just told us its epoch): resend it now rather than after an RTO.
   */
  declareAllLost(): void {
    for (const packet of [...this.#sent.values()]) this.#declareLost(packet, "fast");
  }

  /**
   * Gives up every reliable message not known to be delivered (queued, or in flight and not
   * acknowledged), oldest first, and the unreliable queue: the session is released (its peer
   * forgotten, or another node now answers at its address). Returns what was dropped so the
   * application hears of it.
   */
  dropAll(): Array<{ channel: number; bytes: Uint8Array }> {
    const dropped: Array<{ channel: number; bytes: Uint8Array }> = [];
    const unacked = [...this.#unackedById.values()];
    for (const m of unacked) dropped.push({ channel: m.channel, bytes: m.bytes });
    for (let i = this.#pendingHead; i < this.#pending.length; i++) {
      const m = this.#pending[i]!;
      dropped.push({ channel: m.channel, bytes: m.bytes });
    }
    this.#unackedById.clear();
    this.#pending = [];
    this.#pendingHead = 0;
    this.#unreliable = [];
    this.resetForPeerRestart();
    this.#messagesUnacked = 0;
    this.#queuedBytes = 0;
    this.#maybeWritable();
    return dropped;
  }

  /**
   * The peer came back as a new incarnation: requeue every message it had not acknowledged
   * (in their original order, ahead of the ones never sent) with fresh ids for the new
   * session. Packet numbers keep rising, so a late ack for an old packet matches nothing.
   */
  resetForPeerRestart(): void {
    const unacked = [...this.#unackedById.values()];
    const requeued: OutMessage[] = [];
    for (const m of unacked) {
      requeued.push({ ...m, id: -1, chunksUnacked: 0, fragmented: false });
    }
    for (let i = this.#pendingHead; i < this.#pending.length; i++) requeued.push(this.#pending[i]!);
    this.#pending = requeued;
    this.#pendingHead = 0;
    this.#unackedById.clear();
    this.#fragmentedBytesUnacked = 0;
    this.#nextMsgId = 0;
    this.#lowestUnackedId = 0;
    this.#newChunks = [];
    this.#newChunksHead = 0;
    this.#retransmit = [];
    this.#retransmitHead = 0;
    this.#sent.clear();
    this.#bytesInFlight = 0;
    this.#lossTimeMs = Infinity;
    this.#tlpCount = 0;
    this.#rtoCount = 0;
  }

  // ---- building datagrams ----------------------------------------------------------------

  /** Takes the next packet number; every datagram gets one, eliciting or not. */
  takePacketNumber(): number {
    return this.#nextPn++;
  }

  /** Whether the congestion window has room for one more full datagram. */
  #windowOpen(): boolean {
    return this.#bytesInFlight === 0 ||
      this.#bytesInFlight + this.#cfg.datagramBytes <= this.#cc.cwndBytes;
  }

  /**
   * Whether a data datagram (new or retransmitted chunks) may leave now: the window has room
   * and the pacer has tokens, or a probe is owed. A probe ignores the pacer and may take what
   * is in flight one datagram past the window (RFC 9002 §7.5: probes are not blocked by the
   * congestion controller), no further: a second probe waits until the RTO declares the oldest
   * packet lost, which makes room.
   */
  #mayLeave(nowMs: number): boolean {
    if (this.#probeCredit > 0 && this.#bytesInFlight <= this.#cc.cwndBytes) return true;
    return this.#windowOpen() && this.#pacer.canSend(nowMs, this.#cc.pacingRateBytesPerMs);
  }

  /** Whether a chunk waits to be sent (retransmission, or new within the id window). */
  #hasChunkWaiting(): boolean {
    return this.#peekRetransmit() !== undefined || this.#peekNewChunk() !== undefined;
  }

  #peekRetransmit(): Chunk | undefined {
    while (this.#retransmitHead < this.#retransmit.length) {
      const c = this.#retransmit[this.#retransmitHead]!;
      if (!c.acked) return c;
      this.#retransmitHead++;
    }
    if (this.#retransmitHead > 0) {
      this.#retransmit = [];
      this.#retransmitHead = 0;
    }
    return undefined;
  }

  /** The next never-sent chunk, cutting the next queued message when needed and allowed. */
  #peekNewChunk(): Chunk | undefined {
    if (this.#newChunksHead < this.#newChunks.length) return this.#newChunks[this.#newChunksHead];
    if (this.#newChunksHead > 0) {
      this.#newChunks = [];
      this.#newChunksHead = 0;
    }
    if (this.#pendingHead >= this.#pending.length) {
      if (this.#pendingHead > 0) {
        this.#pending = [];
        this.#pendingHead = 0;
      }
      return undefined;
    }
    // Bound the id span the receiver must track for duplicate suppression.
    if (this.#nextMsgId >= this.#lowestUnackedId + this.#cfg.windowMessages) return undefined;
    const m = this.#pending[this.#pendingHead]!;
    const len = m.bytes.length;
    const whole = MSG_FRAME_OVERHEAD_BYTES + len <= this.#chunkBytesMax + FRAG_FRAME_OVERHEAD_BYTES;
    // Flow control for the peer's reassembly memory (reassemblyBytesMax, taken to be ours): it
    // reserves a fragmented message's whole size at its first fragment and refuses, with no
    // acknowledgement, a datagram whose new message does not fit. Cutting more than fits
    // filled it with messages that each waited for a lost fragment, the datagrams of the next
    // ones were refused, and with nothing acknowledged the missing fragment waited behind them
    // for one RTO each (2 s apiece): 0 of 60 messages in 20 s at 30 % loss with room for one
    // or two (tests/transport/sim_test.ts). One message always goes (it fits by config).
    if (
      !whole && this.#fragmentedBytesUnacked > 0 &&
      this.#fragmentedBytesUnacked + len > this.#cfg.reassemblyBytesMax
    ) return undefined;
    this.#pendingHead++;
    m.id = this.#nextMsgId++;
    this.#unackedById.push(m.id, m);
    if (whole) {
      m.chunksUnacked = 1;
      const c: Chunk = {
        msg: m,
        offset: 0,
        length: len,
        fragmented: false,
        acked: false,
        lastPn: -1,
      };
      this.#newChunks.push(c);
      return c;
    }
    m.fragmented = true;
    this.#fragmentedBytesUnacked += len;
    for (let offset = 0; offset < len; offset += this.#chunkBytesMax) {
      const length = Math.min(this.#chunkBytesMax, len - offset);
      this.#newChunks.push({ msg: m, offset, length, fragmented: true, acked: false, lastPn: -1 });
      m.chunksUnacked++;
    }
    return this.#newChunks[this.#newChunksHead];
  }

  /**
   * Whether a datagram built now would carry data: unreliable messages (never held back: SWIM
   * probes are small and must not wait behind a backlog), or chunks the window and the pacer
   * let go.
   */
  hasData(nowMs: number): boolean {
    if (this.#unreliable.length > 0) return true;
    return this.#hasChunkWaiting() && this.#mayLeave(nowMs);
  }

  /**
   * Writes retransmissions first, then new chunks, for as long as they fit, when the window
   * and the pacer let a data datagram go; returns the chunks written (the packet must then be
   * recorded with `onSent`).
   */
  writeChunks(w: DatagramWriter, nowMs: number): Chunk[] {
    const chunks: Chunk[] = [];
    this.#writtenAckMayWait = false;
    if (!this.#mayLeave(nowMs)) return chunks;
    // A retransmission is never marked: its path just lost a packet, and the sooner it is
    // acknowledged the sooner the rest is sorted out.
    let mayWait = this.#cfg.lazyAckMs > 0 &&
      nowMs - this.#lastLossMs >= this.#cfg.lazyAckQuietMs;
    for (let c = this.#peekRetransmit(); c !== undefined; c = this.#peekRetransmit()) {
      if (!writeChunk(w, c)) break;
      this.#retransmitHead++;
      chunks.push(c);
      mayWait = false;
    }
    if (this.#peekRetransmit() === undefined) {
      for (let c = this.#peekNewChunk(); c !== undefined; c = this.#peekNewChunk()) {
        if (!writeChunk(w, c)) break;
        this.#newChunksHead++;
        chunks.push(c);
        if (!c.msg.ackMayWait) mayWait = false;
        this.#counters.sent(true).inc();
      }
    }
    this.#writtenAckMayWait = mayWait && chunks.length > 0;
    return chunks;
  }

  /**
   * Whether the datagram `writeChunks` just wrote may be marked "ack may wait": it carries
   * chunks, every one new and of a message queued with `ackMayWait`, and the path has lost
   * nothing for `lazyAckQuietMs`.
   */
  get writtenAckMayWait(): boolean {
    return this.#writtenAckMayWait;
  }

  /** Writes queued unreliable messages for as long as they fit; returns how many. */
  writeUnreliable(w: DatagramWriter): number {
    let written = 0;
    while (written < this.#unreliable.length) {
      const u = this.#unreliable[written]!;
      if (w.remaining < UNRELIABLE_FRAME_OVERHEAD_BYTES + u.bytes.length) break;
      w.writeUnreliable(u.channel, u.bytes);
      written++;
      this.#counters.sent(false).inc();
    }
    if (written > 0) this.#unreliable.splice(0, written);
    return written;
  }

  /**
   * Records packet `pn` of `bytes` bytes as sent now carrying `chunks` (none: not tracked
   * for acknowledgement) and `unreliable` unreliable messages. Every datagram with data spends
   * pacing tokens; a pure ack does not (RFC 9002 §7.7: acks are not paced).
   */
  onSent(pn: number, nowMs: number, bytes: number, chunks: Chunk[], unreliable: number): void {
    if (chunks.length > 0 || unreliable > 0) {
      this.#pacer.onSent(nowMs, this.#cc.pacingRateBytesPerMs, bytes);
    }
    if (chunks.length === 0) return;
    if (this.#probeCredit > 0) this.#probeCredit--;
    for (const c of chunks) c.lastPn = pn;
    const rate = this.#cc.onSent(nowMs, this.#bytesInFlight);
    this.#sent.push(pn, { pn, sentMs: nowMs, bytes, chunks, rate });
    this.#bytesInFlight += bytes;
    this.#lastElicitingSentMs = nowMs;
    this.#lastElicitingAckMayWait = this.#writtenAckMayWait;
  }

  /**
   * The end of a flush. With nothing left to send and room in the window, the application
   * is what limits the rate: the delivery samples until this data is acknowledged say so.
   */
  endFlush(): void {
    this.#compactQueues();
    if (!this.#hasChunkWaiting() && this.#windowOpen()) {
      this.#cc.markAppLimited(this.#bytesInFlight);
    }
  }

  /**
   * Drops consumed entries at the heads of the queues in bulk (amortised O(1) per entry), so
   * a queue that never empties under sustained load does not keep every message it ever sent.
   */
  #compactQueues(): void {
    if (this.#pendingHead > 1024 && this.#pendingHead * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#pendingHead);
      this.#pendingHead = 0;
    }
    if (this.#newChunksHead > 1024 && this.#newChunksHead * 2 > this.#newChunks.length) {
      this.#newChunks = this.#newChunks.slice(this.#newChunksHead);
      this.#newChunksHead = 0;
    }
    if (this.#retransmitHead > 1024 && this.#retransmitHead * 2 > this.#retransmit.length) {
      this.#retransmit = this.#retransmit.slice(this.#retransmitHead);
      this.#retransmitHead = 0;
    }
  }
}

function writeChunk(w: DatagramWriter, c: Chunk): boolean {
  const m = c.msg;
  if (!c.fragmented) {
    if (w.remaining < MSG_FRAME_OVERHEAD_BYTES + c.length) return false;
    w.writeMessage(m.channel, m.id, m.bytes);
    return true;
  }
  if (w.remaining < FRAG_FRAME_OVERHEAD_BYTES + c.length) return false;
  w.writeFragment(
    m.channel,
    m.id,
    m.bytes.length,
    c.offset,
    m.bytes.subarray(c.offset, c.offset + c.length),
  );
  return true;
}
