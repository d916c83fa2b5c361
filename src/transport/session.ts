/**
 * One peer's session: the reliable-delivery state machine between this endpoint and one
 * `"host:port"`.
 *
 * Owns the send side (queue, message ids, chunks, packets in flight, window, loss detection,
 * retransmission, RTT) and the receive side (received packet ranges, acknowledgement
 * schedule, duplicate suppression, reassembly) for that peer. It does no I/O and reads no
 * clock: every entry point takes `nowMs`, and datagrams, deliveries and events are appended to
 * the `SessionOutput` it is handed. Authentication and restart detection happen in
 * endpoint.ts before a datagram reaches here.
 *
 * Reliability model. Packet numbers are per datagram and never reused; acknowledgements name
 * packet ranges. A message is cut into chunks when it first leaves the queue (one chunk, or
 * fragments when it does not fit a datagram); a lost packet puts its unacknowledged chunks back
 * in the retransmission queue, to travel in a new packet. The receiver suppresses duplicates by
 * message id and hands each message to the application as soon as it is complete, in whatever
 * order: no head-of-line blocking.
 */

import { assert, unreachable } from "../lib/assert.ts";
import { TRANSPORT_WINDOW_MESSAGES_MAX, type TransportConfig } from "../config.ts";
import {
  ACK_FRAME_BASE_BYTES,
  ACK_RANGE_BYTES,
  ackFrameBytes,
  type DatagramWriter,
  type DecodedDatagram,
  FRAG_FRAME_OVERHEAD_BYTES,
  type Frame,
  HEADER_FIXED_BYTES,
  MSG_FRAME_OVERHEAD_BYTES,
  type PacketRange,
  UNRELIABLE_FRAME_OVERHEAD_BYTES,
} from "./frame_codec.ts";
import { ReceivedRanges } from "./received_ranges.ts";
import { RttEstimator } from "./rtt_estimator.ts";
import type { TransportCounters } from "./transport_metrics.ts";
import {
  type DeliveredMessage,
  type OutgoingDatagram,
  PIGGYBACK_CHANNEL,
  type PiggybackProvider,
  type TransportEvent,
} from "./types.ts";

export interface SessionOutput {
  datagrams: OutgoingDatagram[];
  messages: DeliveredMessage[];
  events: TransportEvent[];
}

/** What the endpoint shares with every session: identity, codec scratch and outputs. */
export interface SessionContext {
  readonly config: Readonly<TransportConfig>;
  readonly nodeIdBytes: Uint8Array;
  readonly writer: DatagramWriter;
  readonly sign: (body: Uint8Array) => Uint8Array;
  readonly counters: TransportCounters;
  readonly piggyback: () => PiggybackProvider | null;
  /** Where sessions append their outputs; the endpoint swaps the arrays when they are taken. */
  readonly out: SessionOutput;
  /** Called with the session's address whenever its RTT estimate changes. */
  readonly onRtt: (address: string, srttMs: number) => void;
}

interface OutMessage {
  channel: number;
  bytes: Uint8Array;
  /** -1 until the message leaves the queue and gets its id. */
  id: number;
  chunksUnacked: number;
}

interface Chunk {
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
}

interface Reassembly {
  channel: number;
  buf: Uint8Array;
  /** Offset -> length of each fragment received. */
  fragments: Map<number, number>;
  receivedBytes: number;
}

type RetransmitKind = "fast" | "probe" | "timeout";

/** Epochs of earlier incarnations of the peer kept to drop their late datagrams. */
const RETIRED_EPOCHS_MAX = 4;

/**
 * How far past its lowest undelivered message id a receiver tracks ids, whatever its own
 * `windowMessages`, so that nodes configured with different windows still take each other's
 * messages: a sender keeps at most `windowMessages` <= `TRANSPORT_WINDOW_MESSAGES_MAX` ids
 * ahead of its lowest unacknowledged one, which the receiver has reached. Bounds the
 * duplicate-suppression set and the reassembly count per peer.
 */
export const MESSAGE_ID_SPAN = 2 * TRANSPORT_WINDOW_MESSAGES_MAX;

export class Session {
  readonly address: string;
  /**
   * Our epoch as this peer sees it: the endpoint's epoch, or a fresh one for a session that
   * replaces a forgotten one (endpoint.ts `forgetPeer`), since its numbering starts again.
   */
  readonly localEpoch: number;
  readonly #ctx: SessionContext;
  readonly #cfg: Readonly<TransportConfig>;

  peerNodeId: string | undefined;
  peerEpoch: number | undefined;
  readonly retiredEpochs: number[] = [];

  // ---- send side -------------------------------------------------------------------------
  #nextPn = 1;
  #nextMsgId = 0;
  #lowestUnackedId = 0;
  readonly #unackedById = new Map<number, OutMessage>();
  #pending: OutMessage[] = [];
  #pendingHead = 0;
  #newChunks: Chunk[] = [];
  #newChunksHead = 0;
  #retransmit: Chunk[] = [];
  #retransmitHead = 0;
  #unreliable: Array<{ channel: number; bytes: Uint8Array }> = [];
  readonly #sent = new Map<number, SentPacket>();
  #bytesInFlight = 0;
  #messagesUnacked = 0;
  #queuedBytes = 0;
  #backpressured = false;
  #largestAckedPn = -1;
  #lossTimeMs = Infinity;
  #lastElicitingSentMs = 0;
  #tlpCount = 0;
  #rtoCount = 0;
  readonly #rtt: RttEstimator;

  // ---- receive side ----------------------------------------------------------------------
  #received: ReceivedRanges;
  #largestRecvAtMs = 0;
  #ackPending = 0;
  #ackDeadlineMs = Infinity;
  #ackNow = false;
  #lastAckSentMs = -Infinity;
  /** Send a datagram even with nothing to say, so the peer learns our epoch. */
  #announce = false;
  #deliveredBelow = 0;
  #deliveredAbove = new Set<number>();
  #reassembly = new Map<number, Reassembly>();
  #reassemblyBytes = 0;
  /** Largest payload of a whole-message chunk so that it fits a datagram with a full ack. */
  readonly #chunkBytesMax: number;

  constructor(address: string, localEpoch: number, ctx: SessionContext) {
    assert(localEpoch !== 0, "epoch 0 means unknown on the wire");
    this.address = address;
    this.localEpoch = localEpoch;
    this.#ctx = ctx;
    this.#cfg = ctx.config;
    this.#rtt = new RttEstimator({
      rtoInitialMs: this.#cfg.rtoInitialMs,
      rtoMinMs: this.#cfg.rtoMinMs,
      rtoMaxMs: this.#cfg.rtoMaxMs,
      granularityMs: this.#cfg.lossDelayMinMs,
    });
    this.#received = new ReceivedRanges(this.#cfg.receivedRangesMax);
    this.#chunkBytesMax = this.frameSpaceBytes() - FRAG_FRAME_OVERHEAD_BYTES;
    assert(this.#chunkBytesMax > 0, "datagram too small for one fragment");
  }

  /** Frame bytes a fresh datagram offers once header, a full ack and the MAC are counted. */
  frameSpaceBytes(): number {
    return this.#cfg.datagramBytes - this.#ctx.writer.tagBytes - HEADER_FIXED_BYTES -
      this.#ctx.nodeIdBytes.length - ackFrameBytes(this.#cfg.ackRangesMax);
  }

  // ---- application side ------------------------------------------------------------------

  /** Queues a reliable message; false (and remembered, for `writable`) when the queue is full. */
  enqueue(channel: number, bytes: Uint8Array): boolean {
    if (
      this.#messagesUnacked + 1 > this.#cfg.sendQueueMessagesMax ||
      this.#queuedBytes + bytes.length > this.#cfg.sendQueueBytesMax
    ) {
      this.#backpressured = true;
      return false;
    }
    this.#pending.push({ channel, bytes, id: -1, chunksUnacked: 0 });
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

  /** Whether an unreliable message of `length` bytes fits one datagram. */
  fitsUnreliable(length: number): boolean {
    return UNRELIABLE_FRAME_OVERHEAD_BYTES + length <= this.frameSpaceBytes();
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
    };
  }

  // ---- timers ----------------------------------------------------------------------------

  /** Earliest time at which `onTimers` has work; Infinity when none. */
  nextDeadlineMs(): number {
    let deadline = Math.min(this.#ackDeadlineMs, this.#lossTimeMs);
    if (this.#sent.size > 0) deadline = Math.min(deadline, this.#probeOrRtoDeadlineMs());
    return deadline;
  }

  #probeOrRtoDeadlineMs(): number {
    const srtt = this.#rtt.srttMs;
    const rttVar = this.#rtt.rttVarMs;
    if (srtt !== undefined && rttVar !== undefined && this.#tlpCount < this.#cfg.tlpMax) {
      // RFC 8985's 2·SRTT, widened by the variance: event-loop stalls make RTT samples jumpy
      // here, and a probe sent too early is pure overhead.
      const probeMs = Math.max(2 * srtt, srtt + 4 * rttVar) + this.#cfg.maxAckDelayMs;
      return this.#lastElicitingSentMs + Math.max(probeMs, this.#cfg.tlpMinMs);
    }
    return this.#lastElicitingSentMs + this.#rtt.rtoMs(this.#rtoCount);
  }

  onTimers(nowMs: number): void {
    if (this.#ackDeadlineMs <= nowMs) this.#ackNow = true;
    if (this.#lossTimeMs <= nowMs) this.#detectLosses(nowMs);
    if (this.#sent.size > 0 && this.#probeOrRtoDeadlineMs() <= nowMs) {
      if (this.#rtt.srttMs !== undefined && this.#tlpCount < this.#cfg.tlpMax) {
        this.#tlpCount++;
        this.#probe();
      } else {
        // RFC 6298 §5.4: retransmit the earliest unacknowledged packet only. Its ack lets the
        // loss detector sort the rest out; declaring the whole window lost would resend it
        // all after every event-loop stall longer than the RTO, which here is common.
        this.#rtoCount++;
        const oldest = this.#sent.values().next().value;
        if (oldest !== undefined) this.#declareLost(oldest, "timeout");
      }
      // The probe or retransmission goes out in this flush; time the next one from now even
      // if the window or an empty probe means nothing is sent.
      this.#lastElicitingSentMs = nowMs;
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
        this.#ctx.counters.retransmits.probe.inc();
        return;
      }
    }
  }

  // ---- receive ---------------------------------------------------------------------------

  /**
   * Processes an authenticated datagram from this peer's current epoch. Returns false when it
   * was dropped unprocessed (see `#refusal`: reassembly memory exhausted, or a reliable frame
   * we cannot take), in which case it is not acknowledged either.
   */
  onDatagram(nowMs: number, datagram: DecodedDatagram): boolean {
    const frames = datagram.frames;
    // Reliable frames are numbered for one incarnation of us. A sender that does not know our
    // epoch yet (0) or knows an earlier one would mix two numberings in our duplicate
    // suppression, so its reliable frames are ignored, left unacknowledged (it retransmits
    // them) and answered at once with a datagram that tells it our epoch.
    if (datagram.dstEpoch !== this.localEpoch) {
      let reliable = false;
      for (const frame of frames) {
        if (frame.type === "ack") {
          this.#onAck(nowMs, frame.ackEpoch, frame.ackDelayUs, frame.ranges);
        } else if (frame.type === "unreliable") this.#deliver(frame.channel, false, frame.bytes);
        else reliable = true;
      }
      if (reliable) {
        this.#announce = true;
        this.#ctx.counters.epochMismatch.inc();
      }
      return true;
    }
    // Decide on every reliable frame before any state changes: a datagram we acknowledge is
    // one the sender forgets, so a frame we would refuse (from a peer whose limits differ from
    // ours, or a broken one) must not be acknowledged with the rest and silently lost.
    const refusal = this.#refusal(frames);
    if (refusal !== undefined) {
      if (refusal === "reassembly-full") this.#ctx.counters.reassemblyOverflow.inc();
      else this.#ctx.counters.protocolErrors.inc();
      return false;
    }
    const pn = datagram.packetNumber;
    const previousLargest = this.#received.largest;
    const isNew = this.#received.add(pn);
    if (pn > previousLargest) this.#largestRecvAtMs = nowMs;
    let eliciting = false;
    for (const frame of frames) {
      switch (frame.type) {
        case "ack":
          this.#onAck(nowMs, frame.ackEpoch, frame.ackDelayUs, frame.ranges);
          break;
        case "message":
          eliciting = true;
          this.#onMessage(frame.channel, frame.msgId, frame.bytes);
          break;
        case "fragment":
          eliciting = true;
          this.#onFragment(frame);
          break;
        case "unreliable":
          this.#deliver(frame.channel, false, frame.bytes);
          break;
        default:
          unreachable(frame, "frame");
      }
    }
    if (eliciting) {
      this.#ackPending++;
      // A gap (a loss or reordering) or a repeat (our ack was lost) is news the sender needs
      // now: it drives fast retransmit on the other side.
      const gap = pn !== previousLargest + 1 && previousLargest >= 0;
      if (
        !isNew || gap || this.#ackPending >= this.#cfg.ackEveryPackets ||
        nowMs - this.#lastAckSentMs >= this.#cfg.ackImmediateAfterMs
      ) this.#ackNow = true;
      else this.#ackDeadlineMs = Math.min(this.#ackDeadlineMs, nowMs + this.#cfg.maxAckDelayMs);
    }
    return true;
  }

  /**
   * Why this datagram's reliable frames cannot all be taken, or undefined when they can: an id
   * beyond `MESSAGE_ID_SPAN`, a message larger than the whole reassembly budget, fragments that
   * disagree with each other or with a message already being reassembled (only a broken peer
   * sends these), or reassembly memory that is full for now. The sender keeps such a
   * datagram's data until it is taken. Limits here are the receiver's memory bounds, not the
   * sender-side `messageBytesMax` and `windowMessages`, so peers whose settings differ still
   * interoperate.
   */
  #refusal(frames: readonly Frame[]): "protocol" | "reassembly-full" | undefined {
    const idLimit = this.#deliveredBelow + MESSAGE_ID_SPAN;
    let neededBytes = 0;
    /** New messages this datagram carries fragments of: id -> [totalBytes, channel]. */
    let fragmented: Map<number, [number, number]> | undefined;
    for (const f of frames) {
      if (f.type === "message") {
        if (!this.#isNewMessage(f.msgId)) continue;
        if (f.msgId >= idLimit || this.#reassembly.has(f.msgId)) return "protocol";
        continue;
      }
      if (f.type !== "fragment" || !this.#isNewMessage(f.msgId)) continue;
      if (f.msgId >= idLimit || f.totalBytes > this.#cfg.reassemblyBytesMax) return "protocol";
      fragmented ??= new Map();
      const first = fragmented.get(f.msgId);
      if (first !== undefined) {
        if (first[0] !== f.totalBytes || first[1] !== f.channel) return "protocol";
        continue;
      }
      fragmented.set(f.msgId, [f.totalBytes, f.channel]);
      const entry = this.#reassembly.get(f.msgId);
      if (entry === undefined) neededBytes += f.totalBytes;
      else if (entry.buf.length !== f.totalBytes || entry.channel !== f.channel) return "protocol";
    }
    if (fragmented === undefined) return undefined;
    // A message is sent whole or in fragments, never both (its entry would never complete).
    for (const f of frames) {
      if (f.type === "message" && fragmented.has(f.msgId)) return "protocol";
    }
    if (neededBytes > 0 && this.#reassemblyBytes + neededBytes > this.#cfg.reassemblyBytesMax) {
      return "reassembly-full";
    }
    return undefined;
  }

  #isNewMessage(id: number): boolean {
    return id >= this.#deliveredBelow && !this.#deliveredAbove.has(id);
  }

  /** Marks `id` delivered. `#refusal` let through only ids within `MESSAGE_ID_SPAN`. */
  #acceptId(id: number): void {
    assert(id < this.#deliveredBelow + MESSAGE_ID_SPAN, "message id past the tracked span");
    if (id === this.#deliveredBelow) {
      this.#deliveredBelow++;
      while (this.#deliveredAbove.delete(this.#deliveredBelow)) this.#deliveredBelow++;
    } else {
      this.#deliveredAbove.add(id);
    }
  }

  #onMessage(channel: number, id: number, bytes: Uint8Array): void {
    if (!this.#isNewMessage(id)) {
      this.#ctx.counters.duplicates.inc();
      return;
    }
    this.#acceptId(id);
    this.#deliver(channel, true, bytes);
  }

  #onFragment(f: Extract<Frame, { type: "fragment" }>): void {
    if (!this.#isNewMessage(f.msgId)) {
      this.#ctx.counters.duplicates.inc();
      return;
    }
    let entry = this.#reassembly.get(f.msgId);
    if (entry === undefined) {
      entry = {
        channel: f.channel,
        buf: new Uint8Array(f.totalBytes),
        fragments: new Map(),
        receivedBytes: 0,
      };
      this.#reassembly.set(f.msgId, entry);
      this.#reassemblyBytes += f.totalBytes;
    }
    assert(
      entry.buf.length === f.totalBytes && entry.channel === f.channel,
      "fragment disagrees with its message (#refusal checks this)",
    );
    if (entry.fragments.has(f.offset)) {
      this.#ctx.counters.duplicates.inc();
      return;
    }
    entry.fragments.set(f.offset, f.bytes.length);
    entry.buf.set(f.bytes, f.offset);
    entry.receivedBytes += f.bytes.length;
    if (entry.receivedBytes < entry.buf.length) return;
    this.#reassembly.delete(f.msgId);
    this.#reassemblyBytes -= entry.buf.length;
    if (!coversExactly(entry.fragments, entry.buf.length)) {
      // The sender cuts at fixed offsets, so overlapping fragments (which can add up to the
      // length while leaving a hole) come from a broken peer: never deliver the hole.
      this.#ctx.counters.protocolErrors.inc();
      return;
    }
    this.#acceptId(f.msgId);
    this.#deliver(entry.channel, true, entry.buf);
  }

  #deliver(channel: number, reliable: boolean, bytes: Uint8Array): void {
    this.#ctx.counters.delivered(reliable).inc();
    this.#ctx.out.messages.push({
      fromAddress: this.address,
      fromNodeId: this.peerNodeId ?? "",
      channel,
      reliable,
      bytes,
    });
  }

  #onAck(
    nowMs: number,
    ackEpoch: number,
    ackDelayUs: number,
    ranges: readonly PacketRange[],
  ): void {
    // Acks that name another incarnation of us describe packets of a dead session.
    if (ackEpoch !== this.localEpoch) {
      this.#ctx.counters.staleAcks.inc();
      return;
    }
    const largest = ranges[0]!.hi;
    if (largest >= this.#nextPn) {
      this.#ctx.counters.protocolErrors.inc();
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
      ackedAny = true;
    }
    if (largest > this.#largestAckedPn) this.#largestAckedPn = largest;
    if (largestSentMs >= 0) {
      this.#rtt.update(nowMs - largestSentMs, ackDelayUs / 1000);
      this.#ctx.onRtt(this.address, this.#rtt.srttMs!);
    }
    if (ackedAny) {
      this.#tlpCount = 0;
      this.#rtoCount = 0;
      this.#detectLosses(nowMs);
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
      assert(this.#messagesUnacked >= 0 && this.#queuedBytes >= 0, "send queue accounting");
    }
    while (
      this.#lowestUnackedId < this.#nextMsgId && !this.#unackedById.has(this.#lowestUnackedId)
    ) this.#lowestUnackedId++;
  }

  #maybeWritable(): void {
    if (!this.#backpressured) return;
    if (
      this.#messagesUnacked <= this.#cfg.sendQueueMessagesMax / 2 &&
      this.#queuedBytes <= this.#cfg.sendQueueBytesMax / 2
    ) {
      this.#backpressured = false;
      this.#ctx.out.events.push({ type: "writable", address: this.address });
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
    if (queued > 0) this.#ctx.counters.retransmits[kind].inc(queued);
  }

  // ---- peer epochs ----------------------------------------------------------------------

  /**
   * First datagram from the peer. Everything we sent before carried destination epoch 0, which
   * the peer ignores, so it is all lost: retransmit it now rather than after an RTO.
   */
  learnPeerEpoch(nodeId: string, epoch: number): void {
    this.peerNodeId = nodeId;
    this.peerEpoch = epoch;
    for (const packet of [...this.#sent.values()]) this.#declareLost(packet, "fast");
  }

  /**
   * The peer came back as a new incarnation: forget everything received from the old one,
   * and requeue every message it had not acknowledged (in their original order, ahead of the
   * ones never sent) with fresh ids for the new session.
   */
  resetForPeerRestart(nodeId: string, epoch: number): void {
    if (this.peerEpoch !== undefined) {
      this.retiredEpochs.push(this.peerEpoch);
      if (this.retiredEpochs.length > RETIRED_EPOCHS_MAX) this.retiredEpochs.shift();
    }
    this.peerNodeId = nodeId;
    this.peerEpoch = epoch;
    const unacked = [...this.#unackedById.values()].sort((a, b) => a.id - b.id);
    const requeued: OutMessage[] = [];
    for (const m of unacked) requeued.push({ ...m, id: -1, chunksUnacked: 0 });
    for (let i = this.#pendingHead; i < this.#pending.length; i++) requeued.push(this.#pending[i]!);
    this.#pending = requeued;
    this.#pendingHead = 0;
    this.#unackedById.clear();
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
    // Our packet numbers keep rising, so a late ack for an old packet matches nothing.
    this.#received = new ReceivedRanges(this.#cfg.receivedRangesMax);
    this.#ackPending = 0;
    this.#ackDeadlineMs = Infinity;
    this.#ackNow = false;
    this.#announce = false;
    this.#deliveredBelow = 0;
    this.#deliveredAbove = new Set();
    this.#reassembly = new Map();
    this.#reassemblyBytes = 0;
  }

  // ---- building datagrams ----------------------------------------------------------------

  #ackDue(nowMs: number): boolean {
    return this.#ackNow || (this.#ackPending > 0 && this.#ackDeadlineMs <= nowMs);
  }

  #windowOpen(): boolean {
    return this.#bytesInFlight === 0 ||
      this.#bytesInFlight + this.#cfg.datagramBytes <= this.#cfg.windowBytes;
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
    const m = this.#pending[this.#pendingHead++]!;
    m.id = this.#nextMsgId++;
    this.#unackedById.set(m.id, m);
    const len = m.bytes.length;
    if (MSG_FRAME_OVERHEAD_BYTES + len <= this.#chunkBytesMax + FRAG_FRAME_OVERHEAD_BYTES) {
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
    for (let offset = 0; offset < len; offset += this.#chunkBytesMax) {
      const length = Math.min(this.#chunkBytesMax, len - offset);
      this.#newChunks.push({ msg: m, offset, length, fragmented: true, acked: false, lastPn: -1 });
      m.chunksUnacked++;
    }
    return this.#newChunks[this.#newChunksHead];
  }

  #hasData(): boolean {
    if (this.#peekRetransmit() !== undefined) return true;
    if (this.#unreliable.length > 0) return true;
    return this.#windowOpen() && this.#peekNewChunk() !== undefined;
  }

  /** Builds every datagram this session may send now (data within the window, acks). */
  flush(nowMs: number): void {
    // Bounded: each iteration sends at least one chunk, one unreliable message or the ack.
    for (;;) {
      const hasData = this.#hasData();
      if (!hasData && !this.#ackDue(nowMs) && !this.#announce) break;
      this.#buildDatagram(nowMs);
      if (!hasData) break;
    }
    this.#compactQueues();
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

  #buildDatagram(nowMs: number): void {
    const ctx = this.#ctx;
    const w = ctx.writer;
    const pn = this.#nextPn++;
    w.begin(ctx.nodeIdBytes, this.localEpoch, this.peerEpoch ?? 0, pn);
    this.#announce = false;
    if (this.#received.size > 0 && this.peerEpoch !== undefined) {
      const fit = Math.floor((w.remaining - ACK_FRAME_BASE_BYTES) / ACK_RANGE_BYTES) + 1;
      const count = Math.min(this.#cfg.ackRangesMax, this.#received.size, fit);
      const delayUs = Math.max(0, nowMs - this.#largestRecvAtMs) * 1000;
      w.writeAck(this.peerEpoch, delayUs, this.#received.top(count));
      this.#lastAckSentMs = nowMs;
      this.#ackPending = 0;
      this.#ackNow = false;
      this.#ackDeadlineMs = Infinity;
    }
    const chunks: Chunk[] = [];
    for (let c = this.#peekRetransmit(); c !== undefined; c = this.#peekRetransmit()) {
      if (!this.#writeChunk(c)) break;
      this.#retransmitHead++;
      chunks.push(c);
    }
    if (this.#peekRetransmit() === undefined && this.#windowOpen()) {
      for (let c = this.#peekNewChunk(); c !== undefined; c = this.#peekNewChunk()) {
        if (!this.#writeChunk(c)) break;
        this.#newChunksHead++;
        chunks.push(c);
        ctx.counters.sent(true).inc();
      }
    }
    let unreliableSent = 0;
    while (unreliableSent < this.#unreliable.length) {
      const u = this.#unreliable[unreliableSent]!;
      if (w.remaining < UNRELIABLE_FRAME_OVERHEAD_BYTES + u.bytes.length) break;
      w.writeUnreliable(u.channel, u.bytes);
      unreliableSent++;
      ctx.counters.sent(false).inc();
    }
    if (unreliableSent > 0) this.#unreliable.splice(0, unreliableSent);
    const provider = ctx.piggyback();
    const spare = w.remaining - UNRELIABLE_FRAME_OVERHEAD_BYTES;
    if (provider !== null && spare >= this.#cfg.piggybackBytesMin) {
      const extra = provider(this.address, spare);
      if (extra !== null && extra.length > 0 && extra.length <= spare) {
        w.writeUnreliable(PIGGYBACK_CHANNEL, extra);
        ctx.counters.piggybacked.inc();
      }
    }
    const bytes = w.finish(ctx.sign);
    if (chunks.length > 0) {
      for (const c of chunks) c.lastPn = pn;
      this.#sent.set(pn, { pn, sentMs: nowMs, bytes: bytes.length, chunks });
      this.#bytesInFlight += bytes.length;
      this.#lastElicitingSentMs = nowMs;
    }
    ctx.out.datagrams.push({ address: this.address, bytes });
  }

  #writeChunk(c: Chunk): boolean {
    const w = this.#ctx.writer;
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
}

/** Whether `fragments` (offset -> length) tile [0, totalBytes) with no gap and no overlap. */
function coversExactly(fragments: ReadonlyMap<number, number>, totalBytes: number): boolean {
  let end = 0;
  for (const offset of [...fragments.keys()].sort((a, b) => a - b)) {
    if (offset !== end) return false;
    end = offset + fragments.get(offset)!;
  }
  return end === totalBytes;
}
