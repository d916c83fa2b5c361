/**
 * The receive half of one peer's session: which packets arrived (for acknowledgements), when
 * to acknowledge them, which message ids were delivered (duplicate suppression) and the
 * reassembly of fragmented messages.
 *
 * Owns only state about what the peer sent us. It never touches our send queue or what we
 * have in flight (sender.ts), nor epochs and authentication (session.ts, endpoint.ts). It does
 * no I/O and reads no clock: every entry point takes `nowMs`, and complete messages leave
 * through the `deliver` callback the session hands in.
 *
 * Messages are delivered as soon as they are whole, in whatever order (no head-of-line
 * blocking); a message id is delivered at most once per peer incarnation.
 */

import { assert } from "../lib/assert.ts";
import { TRANSPORT_WINDOW_MESSAGES_MAX, type TransportConfig } from "../config/transport.ts";
import {
  ACK_FRAME_BASE_BYTES,
  ACK_RANGE_BYTES,
  type DatagramWriter,
  type Frame,
} from "./frame_codec.ts";
import { ReceivedRanges } from "./received_ranges.ts";
import type { TransportCounters } from "./transport_metrics.ts";

/**
 * How far past its lowest undelivered message id a receiver tracks ids, whatever its own
 * `windowMessages`, so that nodes configured with different windows still take each other's
 * messages: a sender keeps at most `windowMessages` <= `TRANSPORT_WINDOW_MESSAGES_MAX` ids
 * ahead of its lowest unacknowledged one, which the receiver has reached. Bounds the
 * duplicate-suppression set and the reassembly count per peer.
 */
export const MESSAGE_ID_SPAN = 2 * TRANSPORT_WINDOW_MESSAGES_MAX;

/** Hands a complete message to the session (which turns it into a `DeliveredMessage`). */
export type DeliverFn = (channel: number, reliable: boolean, bytes: Uint8Array) => void;

/** Why a datagram's reliable frames cannot all be taken (see `SessionReceiver.refusal`). */
export type Refusal = "protocol" | "reassembly-full";

interface Reassembly {
  channel: number;
  buf: Uint8Array;
  /** Offset -> length of each fragment received. */
  fragments: Map<number, number>;
  receivedBytes: number;
}

/** What `beginPacket` learnt, handed back to `endPacket` to schedule the acknowledgement. */
export interface PacketMark {
  isNew: boolean;
  /** The packet number is not the one after the largest received: a loss or reordering. */
  gap: boolean;
}

export class SessionReceiver {
  readonly #cfg: Readonly<TransportConfig>;
  readonly #counters: TransportCounters;
  readonly #deliver: DeliverFn;

  #received: ReceivedRanges;
  #largestRecvAtMs = 0;
  #ackPending = 0;
  #ackDeadlineMs = Infinity;
  #ackNow = false;
  #lastAckSentMs = -Infinity;
  #deliveredBelow = 0;
  #deliveredAbove = new Set<number>();
  #reassembly = new Map<number, Reassembly>();
  #reassemblyBytes = 0;

  constructor(cfg: Readonly<TransportConfig>, counters: TransportCounters, deliver: DeliverFn) {
    this.#cfg = cfg;
    this.#counters = counters;
    this.#deliver = deliver;
    this.#received = new ReceivedRanges(cfg.receivedRangesMax);
  }

  /** Forgets everything received: the peer came back as a new incarnation. */
  reset(): void {
    this.#received = new ReceivedRanges(this.#cfg.receivedRangesMax);
    this.#largestRecvAtMs = 0;
    this.#ackPending = 0;
    this.#ackDeadlineMs = Infinity;
    this.#ackNow = false;
    this.#deliveredBelow = 0;
    this.#deliveredAbove = new Set();
    this.#reassembly = new Map();
    this.#reassemblyBytes = 0;
  }

  // ---- timers ----------------------------------------------------------------------------

  /** When a held-back acknowledgement must go; Infinity when none is pending. */
  nextWakeMs(): number {
    return this.#ackDeadlineMs;
  }

  onTimers(nowMs: number): void {
    if (this.#ackDeadlineMs <= nowMs) this.#ackNow = true;
  }

  // ---- receiving -------------------------------------------------------------------------

  /**
   * Why this datagram's reliable frames cannot all be taken, or undefined when they can: an id
   * beyond `MESSAGE_ID_SPAN`, a message larger than the whole reassembly budget, fragments that
   * disagree with each other or with a message already being reassembled (only a broken peer
   * sends these), or reassembly memory that is full for now. The sender keeps such a
   * datagram's data until it is taken. Limits here are the receiver's memory bounds, not the
   * sender-side `messageBytesMax` and `windowMessages`, so peers whose settings differ still
   * interoperate. Changes no state.
   */
  refusal(frames: readonly Frame[]): Refusal | undefined {
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

  /** Records packet `pn` as received; call before its frames, then `endPacket`. */
  beginPacket(nowMs: number, pn: number): PacketMark {
    const previousLargest = this.#received.largest;
    const isNew = this.#received.add(pn);
    if (pn > previousLargest) this.#largestRecvAtMs = nowMs;
    return { isNew, gap: pn !== previousLargest + 1 && previousLargest >= 0 };
  }

  /**
   * Schedules the acknowledgement of a packet that carried ack-eliciting (reliable) frames.
   * `ackMayWait`: its sender marked it so (`lazyAckMs`).
   */
  endPacket(nowMs: number, mark: PacketMark, ackMayWait = false): void {
    this.#ackPending++;
    // A gap (a loss or reordering) or a repeat (our ack was lost) is news the sender needs
    // now: it drives fast retransmit on the other side.
    if (!mark.isNew || mark.gap || this.#ackPending >= this.#cfg.ackEveryPackets) {
      this.#ackNow = true;
    } else if (ackMayWait && this.#cfg.lazyAckMs > 0) {
      // Whatever we send this peer before then carries it; only a quiet peer costs a datagram.
      this.#ackDeadlineMs = Math.min(this.#ackDeadlineMs, nowMs + this.#cfg.lazyAckMs);
    } else if (nowMs - this.#lastAckSentMs >= this.#cfg.ackImmediateAfterMs) this.#ackNow = true;
    else this.#ackDeadlineMs = Math.min(this.#ackDeadlineMs, nowMs + this.#cfg.maxAckDelayMs);
  }

  /** A whole reliable message; `refusal` has already let its datagram through. */
  onMessage(channel: number, id: number, bytes: Uint8Array): void {
    if (!this.#isNewMessage(id)) {
      this.#counters.duplicates.inc();
      return;
    }
    this.#acceptId(id);
    this.#deliver(channel, true, bytes);
  }

  /** One fragment; delivers the message once its fragments tile it exactly. */
  onFragment(f: Extract<Frame, { type: "fragment" }>): void {
    if (!this.#isNewMessage(f.msgId)) {
      this.#counters.duplicates.inc();
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
      "fragment disagrees with its message (refusal checks this)",
    );
    if (entry.fragments.has(f.offset)) {
      this.#counters.duplicates.inc();
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
      this.#counters.protocolErrors.inc();
      return;
    }
    this.#acceptId(f.msgId);
    this.#deliver(entry.channel, true, entry.buf);
  }

  #isNewMessage(id: number): boolean {
    return id >= this.#deliveredBelow && !this.#deliveredAbove.has(id);
  }

  /** Marks `id` delivered. `refusal` let through only ids within `MESSAGE_ID_SPAN`. */
  #acceptId(id: number): void {
    assert(id < this.#deliveredBelow + MESSAGE_ID_SPAN, "message id past the tracked span");
    if (id === this.#deliveredBelow) {
      this.#deliveredBelow++;
      while (this.#deliveredAbove.delete(this.#deliveredBelow)) this.#deliveredBelow++;
    } else {
      this.#deliveredAbove.add(id);
    }
  }

  // ---- acknowledging ---------------------------------------------------------------------

  /** Whether an acknowledgement must go out in the next flush even with no data to carry it. */
  ackDue(nowMs: number): boolean {
    return this.#ackNow || (this.#ackPending > 0 && this.#ackDeadlineMs <= nowMs);
  }

  /** Whether there is anything to acknowledge at all. */
  get hasReceived(): boolean {
    return this.#received.size > 0;
  }

  /**
   * Writes an ack frame for `ackEpoch` (the peer's epoch) with as many ranges as fit, and
   * clears the ack schedule: every datagram carries one, so any datagram acknowledges.
   */
  writeAck(w: DatagramWriter, ackEpoch: number, nowMs: number): void {
    assert(this.#received.size > 0, "nothing to acknowledge");
    const fit = Math.floor((w.remaining - ACK_FRAME_BASE_BYTES) / ACK_RANGE_BYTES) + 1;
    const count = Math.min(this.#cfg.ackRangesMax, this.#received.size, fit);
    const delayUs = Math.max(0, nowMs - this.#largestRecvAtMs) * 1000;
    w.writeAck(ackEpoch, delayUs, this.#received.top(count));
    this.#lastAckSentMs = nowMs;
    this.#ackPending = 0;
    this.#ackNow = false;
    this.#ackDeadlineMs = Infinity;
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
