/**
 * One peer's session: the pairing of a `SessionSender` (what we send to `"host:port"`) and a
 * `SessionReceiver` (what it sends us), with the peer's identity and epochs.
 *
 * Owns what the two halves share: the peer's node id and epoch, our epoch as this peer sees
 * it, dispatching a datagram's frames to the half they concern, and laying out each outgoing
 * datagram (header, the receiver's ack, the sender's chunks and unreliable messages,
 * piggybacked gossip). It does no I/O and reads no clock: every entry point takes `nowMs`,
 * and datagrams, deliveries and events are appended to the `SessionOutput` it is handed.
 * Authentication and restart detection happen in endpoint.ts before a datagram reaches here.
 */

import { assert, unreachable } from "../lib/assert.ts";
import type { TransportConfig } from "../config/transport.ts";
import {
  ackFrameBytes,
  type DatagramWriter,
  type DecodedDatagram,
  FRAG_FRAME_OVERHEAD_BYTES,
  HEADER_FIXED_BYTES,
  type PacketRange,
  UNRELIABLE_FRAME_OVERHEAD_BYTES,
} from "./frame_codec.ts";
import { SessionReceiver } from "./receiver.ts";
import { SessionSender } from "./sender.ts";
import type { TokenBucket } from "./token_bucket.ts";
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
  /** This endpoint's key id, in every datagram's clear header. */
  readonly keyId: Uint8Array;
  readonly writer: DatagramWriter;
  /** Takes the next counter and seals the datagram in place (endpoint.ts). */
  readonly seal: (datagram: Uint8Array) => void;
  readonly counters: TransportCounters;
  readonly piggyback: () => PiggybackProvider | null;
  /** Where sessions append their outputs; the endpoint swaps the arrays when they are taken. */
  readonly out: SessionOutput;
  /** Called with the session's address whenever its RTT estimate changes. */
  readonly onRtt: (address: string, srttMs: number) => void;
}

/**
 * Least time between two datagrams a session sends only to tell a peer its epoch: answers to
 * stale or replayed datagrams must not become a flood of our own.
 */
const ANNOUNCE_INTERVAL_MS = 5;

export class Session {
  readonly address: string;
  /**
   * Our epoch as this peer sees it, this session's alone (endpoint.ts `#session`): a datagram
   * addressed to it can only be accepted by this session. It changes when another process
   * takes the peer's address over (`resetForPeerRestart`), so that nothing addressed to the
   * session before can ever reset it again.
   */
  #localEpoch: number;
  readonly #ctx: SessionContext;
  readonly #sender: SessionSender;
  readonly #receiver: SessionReceiver;

  peerNodeId: string | undefined;
  peerEpoch: number | undefined;
  /** The key id (endpoint.ts) of the peer process this session is bound to. */
  peerKeyId: string | undefined;
  /** The counter of the datagram the current peer epoch was adopted from. */
  peerEpochSinceCounter = 0;
  /**
   * When the peer was last heard from (a datagram of it admitted), or the session created:
   * which session a full table releases first (endpoint.ts `#session`).
   */
  lastHeardMs: number;
  /** Send a datagram even with nothing to say, so the peer learns our epoch. */
  #announce = false;
  /**
   * A datagram with no frames to send first, addressed to this epoch: our answer to a
   * datagram that addressed another session or incarnation of ours (`requestAnnounce`).
   */
  #announceTo: number | undefined;
  #lastAnnounceMs = -Infinity;

  /** Key derivations for datagrams from this address (endpoint.ts `#open`). */
  readonly keyDerivations: TokenBucket;

  constructor(
    address: string,
    localEpoch: number,
    ctx: SessionContext,
    nowMs: number,
    keyDerivations: TokenBucket,
  ) {
    assert(localEpoch !== 0, "epoch 0 means unknown on the wire");
    this.address = address;
    this.keyDerivations = keyDerivations;
    this.lastHeardMs = nowMs;
    this.#localEpoch = localEpoch;
    this.#ctx = ctx;
    this.#sender = new SessionSender({
      config: ctx.config,
      counters: ctx.counters,
      chunkBytesMax: this.frameSpaceBytes() - FRAG_FRAME_OVERHEAD_BYTES,
      onWritable: () => ctx.out.events.push({ type: "writable", address }),
      onRtt: (srttMs) => ctx.onRtt(address, srttMs),
    });
    this.#receiver = new SessionReceiver(
      ctx.config,
      ctx.counters,
      (channel, reliable, bytes) => this.#deliver(channel, reliable, bytes),
    );
  }

  get localEpoch(): number {
    return this.#localEpoch;
  }

  /** Frame bytes a fresh datagram offers once headers, a full ack and the tag are counted. */
  frameSpaceBytes(): number {
    return this.#ctx.config.datagramBytes - this.#ctx.writer.tagBytes - HEADER_FIXED_BYTES -
      this.#ctx.nodeIdBytes.length - ackFrameBytes(this.#ctx.config.ackRangesMax);
  }

  // ---- application side ------------------------------------------------------------------

  /**
   * Queues a reliable message; false (and remembered, for `writable`) when the queue is full.
   * `ackMayWait`: see `SessionSender.enqueue`.
   */
  enqueue(channel: number, bytes: Uint8Array, ackMayWait = false): boolean {
    return this.#sender.enqueue(channel, bytes, ackMayWait);
  }

  /** Queues an unreliable message; false when its bounded queue is full. */
  enqueueUnreliable(channel: number, bytes: Uint8Array): boolean {
    return this.#sender.enqueueUnreliable(channel, bytes);
  }

  /** Whether an unreliable message of `length` bytes fits one datagram. */
  fitsUnreliable(length: number): boolean {
    return UNRELIABLE_FRAME_OVERHEAD_BYTES + length <= this.frameSpaceBytes();
  }

  get idle(): boolean {
    return this.#sender.idle;
  }

  stats() {
    return this.#sender.stats();
  }

  // ---- timers ----------------------------------------------------------------------------

  /** Earliest time at which `onTimers` has work; Infinity when none. */
  nextWakeMs(): number {
    return Math.min(this.#receiver.nextWakeMs(), this.#sender.nextWakeMs());
  }

  onTimers(nowMs: number): void {
    this.#receiver.onTimers(nowMs);
    this.#sender.onTimers(nowMs);
  }

  // ---- receive ---------------------------------------------------------------------------

  /**
   * Processes an authenticated datagram from this peer's current epoch. Returns false when it
   * was dropped unprocessed (the receiver refused a reliable frame: reassembly memory
   * exhausted, or a broken peer), in which case it is not acknowledged either.
   */
  onDatagram(nowMs: number, datagram: DecodedDatagram): boolean {
    const frames = datagram.frames;
    // Reliable frames are numbered for one incarnation of us. A sender that does not know our
    // epoch yet (0) or knows an earlier one would mix two numberings in our duplicate
    // suppression, so its reliable frames are ignored, left unacknowledged (it retransmits
    // them) and answered at once with a datagram that tells it our epoch.
    if (datagram.dstEpoch !== this.#localEpoch) {
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
    const refusal = this.#receiver.refusal(frames);
    if (refusal !== undefined) {
      if (refusal === "reassembly-full") this.#ctx.counters.reassemblyOverflow.inc();
      else this.#ctx.counters.protocolErrors.inc();
      return false;
    }
    const mark = this.#receiver.beginPacket(nowMs, datagram.packetNumber);
    let eliciting = false;
    for (const frame of frames) {
      switch (frame.type) {
        case "ack":
          this.#onAck(nowMs, frame.ackEpoch, frame.ackDelayUs, frame.ranges);
          break;
        case "message":
          eliciting = true;
          this.#receiver.onMessage(frame.channel, frame.msgId, frame.bytes);
          break;
        case "fragment":
          eliciting = true;
          this.#receiver.onFragment(frame);
          break;
        case "unreliable":
          this.#deliver(frame.channel, false, frame.bytes);
          break;
        default:
          unreachable(frame, "frame");
      }
    }
    if (eliciting) this.#receiver.endPacket(nowMs, mark, datagram.ackMayWait);
    return true;
  }

  #onAck(
    nowMs: number,
    ackEpoch: number,
    ackDelayUs: number,
    ranges: readonly PacketRange[],
  ): void {
    // Acks that name another incarnation of us describe packets of a dead session.
    if (ackEpoch !== this.#localEpoch) {
      this.#ctx.counters.staleAcks.inc();
      return;
    }
    this.#sender.onAck(nowMs, ackDelayUs, ranges);
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

  // ---- peer epochs ----------------------------------------------------------------------

  /**
   * First datagram from the peer (key id `keyId`, counter `counter`). Everything we sent
   * before carried destination epoch 0, which the peer ignores, so it is all lost: retransmit
   * it now rather than after an RTO.
   */
  bindPeer(keyId: string, counter: number, nodeId: string, epoch: number): void {
    this.peerKeyId = keyId;
    this.peerEpochSinceCounter = counter;
    this.peerNodeId = nodeId;
    this.peerEpoch = epoch;
    this.#sender.declareAllLost();
  }

  /**
   * The peer came back as a new incarnation (or forgot us): forget everything received from
   * the old one. Messages it had not acknowledged are queued again with fresh ids for the new
   * session when the same node answers; when another node now answers at this address, they
   * are not handed to it: they are returned (dropped) for the application to hear of.
   *
   * `localEpoch`: another process took the address over (a new key id), and the session
   * starts again under this new epoch of ours, which the next datagram announces. Every
   * datagram addressed to the session until now names the old epoch, so none of them (a
   * replay of the dead process's, whose key id the endpoint may have forgotten) can reset it.
   */
  resetForPeerRestart(
    keyId: string,
    counter: number,
    nodeId: string,
    epoch: number,
    localEpoch?: number,
  ): Array<{ channel: number; bytes: Uint8Array }> {
    assert(localEpoch !== 0, "epoch 0 means unknown on the wire");
    const otherNode = this.peerNodeId !== undefined && this.peerNodeId !== nodeId;
    this.peerKeyId = keyId;
    this.peerEpochSinceCounter = counter;
    this.peerNodeId = nodeId;
    this.peerEpoch = epoch;
    const dropped = otherNode ? this.#sender.dropAll() : [];
    if (!otherNode) this.#sender.resetForPeerRestart();
    this.#receiver.reset();
    this.#announce = false;
    if (localEpoch !== undefined && localEpoch !== this.#localEpoch) {
      this.#localEpoch = localEpoch;
      this.#announce = true;
    }
    return dropped;
  }

  /** Releases the session for good: everything not known to be delivered is dropped. */
  release(): Array<{ channel: number; bytes: Uint8Array }> {
    return this.#sender.dropAll();
  }

  /**
   * Sends, soon and at most every `ANNOUNCE_INTERVAL_MS`, a datagram that tells the peer our
   * epoch: it addressed another session or incarnation of ours. `dstEpoch` is the epoch it
   * said it has, which an announce from a session not bound yet is addressed to.
   */
  requestAnnounce(nowMs: number, dstEpoch: number): void {
    if (nowMs - this.#lastAnnounceMs < ANNOUNCE_INTERVAL_MS) return;
    this.#lastAnnounceMs = nowMs;
    this.#announceTo = dstEpoch;
  }

  // ---- building datagrams ----------------------------------------------------------------

  /** Builds every datagram this session may send now (data within the window, acks). */
  /**
   * Builds the datagrams due. `dataOnly`: only when data waits for this peer (a pending ack
   * rides along); an ack alone stays pending for the next full flush.
   */
  flush(nowMs: number, dataOnly = false): void {
    if (dataOnly && !this.#sender.hasData(nowMs)) return;
    if (this.#announceTo !== undefined) this.#buildAnnounce(this.#announceTo);
    // Bounded: each iteration sends at least one chunk, one unreliable message or the ack.
    for (;;) {
      const hasData = this.#sender.hasData(nowMs);
      if (!hasData && !this.#receiver.ackDue(nowMs) && !this.#announce) break;
      this.#buildDatagram(nowMs);
      if (!hasData) break;
    }
    this.#sender.endFlush();
  }

  /** A datagram with no frames, addressed to `dstEpoch`: it only tells the peer our epoch. */
  #buildAnnounce(dstEpoch: number): void {
    this.#announceTo = undefined;
    const ctx = this.#ctx;
    const w = ctx.writer;
    w.begin(
      ctx.nodeIdBytes,
      this.#localEpoch,
      dstEpoch,
      this.#sender.takePacketNumber(),
      ctx.keyId,
    );
    ctx.out.datagrams.push({ address: this.address, bytes: w.finish(ctx.seal) });
  }

  #buildDatagram(nowMs: number): void {
    const ctx = this.#ctx;
    const w = ctx.writer;
    const pn = this.#sender.takePacketNumber();
    w.begin(ctx.nodeIdBytes, this.#localEpoch, this.peerEpoch ?? 0, pn, ctx.keyId);
    this.#announce = false;
    if (this.#receiver.hasReceived && this.peerEpoch !== undefined) {
      this.#receiver.writeAck(w, this.peerEpoch, nowMs);
    }
    const chunks = this.#sender.writeChunks(w, nowMs);
    if (this.#sender.writtenAckMayWait) w.markAckMayWait();
    const unreliable = this.#sender.writeUnreliable(w);
    const provider = ctx.piggyback();
    const spare = w.remaining - UNRELIABLE_FRAME_OVERHEAD_BYTES;
    let piggybacked = false;
    if (provider !== null && spare >= ctx.config.piggybackBytesMin) {
      const extra = provider(this.address, spare);
      if (extra !== null && extra.length > 0 && extra.length <= spare) {
        w.writeUnreliable(PIGGYBACK_CHANNEL, extra);
        ctx.counters.piggybacked.inc();
        piggybacked = true;
      }
    }
    // A datagram (and a wake-up of the peer) spent on an acknowledgement alone: what a reply
    // that could have carried it would save (bench/results/session36/).
    if (chunks.length === 0 && unreliable === 0 && !piggybacked) ctx.counters.ackOnly.inc();
    const bytes = w.finish(ctx.seal);
    this.#sender.onSent(pn, nowMs, bytes.length, chunks, unreliable);
    ctx.out.datagrams.push({ address: this.address, bytes });
  }
}
