/**
 * Congestion control for one peer: how many bytes may be in flight (`cwndBytes`) and how
 * fast they may leave (`pacingRateBytesPerMs`), from a model of the path in the manner of BBR
 * (Cardwell et al., draft-cardwell-iccrg-bbr-congestion-control, v1).
 *
 * Owns the model (the bottleneck's delivery rate, the least RTT), the mode and gains, and the
 * window. It does no I/O and reads no clock: the sender calls `onSent`, `onAcked` (per packet)
 * and `onAckEnd` (per ack frame) with `nowMs`, and reads the two outputs. Pacing itself (a
 * token bucket) is pacer.ts; loss recovery stays in sender.ts.
 *
 * Why a rate model rather than AIMD. Random loss here is not congestion: the loss sweep drops
 * 20 % of datagrams at every node's ingress, after the socket, and a loss-based controller
 * would halve its window on every loss and crawl. The model reacts to what congestion does to
 * delivery instead: the bottleneck rate is the largest delivery rate seen over the last
 * `bandwidthWindowRounds` round trips, and the sender paces at that rate times a gain. Loss
 * only lowers the samples by the fraction lost, which the probing gain of 1.25 offsets up to
 * 20 % loss; a receiver that drains more slowly (a real bottleneck) lowers every sample, and
 * the rate follows within those rounds.
 *
 * Departures from BBR v1, and why:
 * - The RTT in the window's bandwidth-delay product is at least `cwndRttFloorMs`. The least
 *   RTT between two processes on a host is tens of microseconds, but an ack waits for the
 *   receiver's event-loop turn (milliseconds on a busy 2-core machine), so a window of two
 *   least-RTT products would starve the sender. The ceiling `cwndMaxBytes` (the transport's
 *   `windowBytes`) keeps what is in flight under the receiver's socket buffer whatever the
 *   model says.
 * - No ProbeRTT: the least RTT expires after `minRttWindowMs` and is replaced by the next
 *   sample. Draining the queue to a four-packet window every ten seconds would cost more
 *   here (sub-millisecond paths) than a slightly high least RTT, which the floor above
 *   outweighs anyway.
 * - The ProbeBW gain cycle advances once per round trip, and starts in a cruise phase.
 */

import { assert } from "../lib/assert.ts";
import { DeliveryRateEstimator, type PacketRateState } from "./delivery_rate.ts";

export type { PacketRateState } from "./delivery_rate.ts";

export interface CongestionOptions {
  /** Window before any measurement. */
  cwndInitialBytes: number;
  /** Least window, so that loss recovery always has room for a few datagrams. */
  cwndMinBytes: number;
  /** Greatest window: the transport's `windowBytes`, sized to the receiver's socket buffer. */
  cwndMaxBytes: number;
  /** Least RTT used in the bandwidth-delay product (see the header). */
  cwndRttFloorMs: number;
  /** Round trips over which the largest delivery rate is the bottleneck estimate. */
  bandwidthWindowRounds: number;
  /** How long the least RTT seen stays valid. */
  minRttWindowMs: number;
}

export type CongestionMode = "startup" | "drain" | "probe-bw";

/** 2/ln 2: the smallest gain that doubles the delivery rate every round in startup. */
export const STARTUP_GAIN = 2 / Math.LN2;
/** ProbeBW pacing gains, one per round: probe up, drain the probe's queue, cruise. */
export const PROBE_BW_GAINS: readonly number[] = [1.25, 0.75, 1, 1, 1, 1, 1, 1];
const PROBE_BW_CWND_GAIN = 2;
/** Startup ends once the bottleneck estimate grew less than this in `FULL_BW_ROUNDS` rounds. */
const FULL_BW_GROWTH = 1.25;
const FULL_BW_ROUNDS = 3;
/** RTT assumed for the pacing rate before the first sample (a LAN or loopback round trip). */
const INITIAL_RTT_MS = 1;

/** The largest value over the last `windowRounds` rounds (a monotonic deque). */
export class WindowedMax {
  readonly #windowRounds: number;
  readonly #entries: Array<{ value: number; round: number }> = [];

  constructor(windowRounds: number) {
    assert(windowRounds >= 1, "WindowedMax needs a window of at least one round");
    this.#windowRounds = windowRounds;
  }

  get value(): number {
    return this.#entries[0]?.value ?? 0;
  }

  update(value: number, round: number): void {
    const e = this.#entries;
    while (e.length > 0 && e[0]!.round <= round - this.#windowRounds) e.shift();
    while (e.length > 0 && e[e.length - 1]!.value <= value) e.pop();
    e.push({ value, round });
  }
}

export class CongestionController {
  readonly #o: CongestionOptions;
  readonly #rate = new DeliveryRateEstimator();
  readonly #bandwidth: WindowedMax;
  #mode: CongestionMode = "startup";
  #minRttMs = Infinity;
  #minRttStampMs = -Infinity;
  #round = 0;
  #nextRoundDelivered = 0;
  /** Largest `delivered` snapshot among the packets of the ack frame being processed. */
  #ackedPriorDelivered = -1;
  #ackedBytes = 0;
  #fullBw = 0;
  #fullBwRounds = 0;
  #filledPipe = false;
  #cycleIndex = 2;
  #cwndBytes: number;
  #pacingRateBytesPerMs: number;

  constructor(options: CongestionOptions) {
    assert(
      options.cwndMinBytes > 0 && options.cwndMinBytes <= options.cwndMaxBytes,
      "congestion window bounds",
    );
    this.#o = options;
    this.#bandwidth = new WindowedMax(options.bandwidthWindowRounds);
    this.#cwndBytes = clamp(options.cwndInitialBytes, options.cwndMinBytes, options.cwndMaxBytes);
    this.#pacingRateBytesPerMs = STARTUP_GAIN * this.#cwndBytes / INITIAL_RTT_MS;
  }

  get cwndBytes(): number {
    return this.#cwndBytes;
  }

  get pacingRateBytesPerMs(): number {
    return this.#pacingRateBytesPerMs;
  }

  get mode(): CongestionMode {
    return this.#mode;
  }

  /** The bottleneck estimate; 0 before the first sample. */
  get bottleneckBytesPerMs(): number {
    return this.#bandwidth.value;
  }

  /** Least RTT seen in the window; Infinity before the first sample. */
  get minRttMs(): number {
    return this.#minRttMs;
  }

  get round(): number {
    return this.#round;
  }

  /** A data packet leaves now; `bytesInFlight` is before counting it. */
  onSent(nowMs: number, bytesInFlight: number): PacketRateState {
    return this.#rate.onSent(nowMs, bytesInFlight);
  }

  /** One packet newly acknowledged; call for each, then `onAckEnd` once. */
  onAcked(nowMs: number, packet: PacketRateState, bytes: number): void {
    this.#rate.onAcked(nowMs, packet, bytes);
    this.#ackedBytes += bytes;
    if (packet.delivered > this.#ackedPriorDelivered) this.#ackedPriorDelivered = packet.delivered;
  }

  /**
   * The end of one ack frame: feeds the RTT sample it produced (if any), updates the model
   * and recomputes the window and the pacing rate. `bytesInFlight` is after the ack.
   */
  onAckEnd(nowMs: number, rttSampleMs: number | undefined, bytesInFlight: number): void {
    if (rttSampleMs !== undefined && rttSampleMs >= 0) {
      if (rttSampleMs <= this.#minRttMs || nowMs - this.#minRttStampMs > this.#o.minRttWindowMs) {
        this.#minRttMs = rttSampleMs;
        this.#minRttStampMs = nowMs;
      }
    }
    let roundStart = false;
    if (this.#ackedPriorDelivered >= 0 && this.#ackedPriorDelivered >= this.#nextRoundDelivered) {
      this.#nextRoundDelivered = this.#rate.delivered;
      this.#round++;
      roundStart = true;
    }
    const ackedBytes = this.#ackedBytes;
    this.#ackedPriorDelivered = -1;
    this.#ackedBytes = 0;
    const sample = this.#rate.takeSample(Number.isFinite(this.#minRttMs) ? this.#minRttMs : 0);
    if (
      sample !== undefined &&
      (!sample.appLimited || sample.deliveryRateBytesPerMs >= this.#bandwidth.value)
    ) {
      this.#bandwidth.update(sample.deliveryRateBytesPerMs, this.#round);
    }
    this.#advanceMode(roundStart, sample?.appLimited ?? true, bytesInFlight);
    this.#setPacingRate();
    this.#setCwnd(ackedBytes);
  }

  /** The application has nothing more to send and the window is not full. */
  markAppLimited(bytesInFlight: number): void {
    this.#rate.markAppLimited(bytesInFlight);
  }

  /** The bandwidth-delay product at the current estimate (bytes). */
  #bdpBytes(): number {
    const rttMs = Math.max(
      Number.isFinite(this.#minRttMs) ? this.#minRttMs : 0,
      this.#o.cwndRttFloorMs,
    );
    return this.#bandwidth.value * rttMs;
  }

  #advanceMode(roundStart: boolean, appLimited: boolean, bytesInFlight: number): void {
    if (this.#mode === "startup" && roundStart && !appLimited) {
      const bw = this.#bandwidth.value;
      if (bw >= this.#fullBw * FULL_BW_GROWTH) {
        this.#fullBw = bw;
        this.#fullBwRounds = 0;
      } else if (++this.#fullBwRounds >= FULL_BW_ROUNDS) {
        this.#filledPipe = true;
        this.#mode = "drain";
      }
    }
    if (this.#mode === "drain" && bytesInFlight <= this.#bdpBytes()) {
      this.#mode = "probe-bw";
      this.#cycleIndex = 2;
      return;
    }
    if (this.#mode === "probe-bw" && roundStart) {
      this.#cycleIndex = (this.#cycleIndex + 1) % PROBE_BW_GAINS.length;
    }
  }

  #pacingGain(): number {
    switch (this.#mode) {
      case "startup":
        return STARTUP_GAIN;
      case "drain":
        return 1 / STARTUP_GAIN;
      case "probe-bw":
        return PROBE_BW_GAINS[this.#cycleIndex]!;
    }
  }

  #setPacingRate(): void {
    const bw = this.#bandwidth.value;
    if (bw <= 0) return;
    const rate = this.#pacingGain() * bw;
    // Until the pipe is known full, never slow down: app-limited or early samples are low.
    if (this.#filledPipe || rate > this.#pacingRateBytesPerMs) this.#pacingRateBytesPerMs = rate;
  }

  #setCwnd(ackedBytes: number): void {
    const o = this.#o;
    if (this.#bandwidth.value > 0) {
      const gain = this.#mode === "probe-bw" ? PROBE_BW_CWND_GAIN : STARTUP_GAIN;
      const target = gain * this.#bdpBytes();
      if (this.#filledPipe) {
        this.#cwndBytes = Math.min(this.#cwndBytes + ackedBytes, target);
      } else if (this.#cwndBytes < target || this.#rate.delivered < o.cwndInitialBytes) {
        this.#cwndBytes += ackedBytes;
      }
    }
    this.#cwndBytes = clamp(this.#cwndBytes, o.cwndMinBytes, o.cwndMaxBytes);
  }
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
