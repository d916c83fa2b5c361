/**
 * Delivery-rate samples for the congestion controller (draft-cheng-iccrg-delivery-rate-
 * estimation, the estimator under BBR): how fast the path delivered our data, measured per
 * acknowledgement.
 *
 * Owns the running totals (bytes delivered, when) and the per-packet snapshot taken at send
 * time. Pure arithmetic on what the sender hands in; no clock, no I/O.
 *
 * The naive rate, bytes acked over the time between acks, spikes when acks arrive bunched
 * (an event-loop turn on either side releases many at once). The estimator divides by the
 * longer of the send interval and the ack interval of the data acknowledged, which a bunch
 * of acks cannot shorten. Samples taken while the application had nothing more to send are
 * marked app-limited: they show what we offered, not what the path could carry.
 */

/** What a packet remembers from its send time, to turn its acknowledgement into a sample. */
export interface PacketRateState {
  /** Bytes delivered (acknowledged) in total when the packet was sent. */
  delivered: number;
  /** When `delivered` last changed, as of the send. */
  deliveredTimeMs: number;
  /** Send time of the packet most recently acknowledged, as of the send. */
  firstSentTimeMs: number;
  sentTimeMs: number;
  /** Sent while the application left the window unused. */
  appLimited: boolean;
}

export interface RateSample {
  deliveryRateBytesPerMs: number;
  /** Bytes delivered over the sample's interval. */
  deliveredBytes: number;
  intervalMs: number;
  appLimited: boolean;
  /** `delivered` of the most recently sent packet acknowledged: the round-trip counter's input. */
  priorDelivered: number;
}

interface Pending {
  priorDelivered: number;
  sendElapsedMs: number;
  ackElapsedMs: number;
  appLimited: boolean;
}

export class DeliveryRateEstimator {
  #delivered = 0;
  #deliveredTimeMs = 0;
  #firstSentTimeMs = 0;
  /** Nonzero while app-limited: the `delivered` total past which samples are full again. */
  #appLimitedUntil = 0;
  #pending: Pending | undefined;

  /** Bytes acknowledged in total. */
  get delivered(): number {
    return this.#delivered;
  }

  /** Snapshot for a packet sent now; `bytesInFlight` is before counting the packet. */
  onSent(nowMs: number, bytesInFlight: number): PacketRateState {
    if (bytesInFlight === 0) {
      // Nothing in flight: the send and ack clocks both start from this packet.
      this.#firstSentTimeMs = nowMs;
      this.#deliveredTimeMs = nowMs;
    }
    return {
      delivered: this.#delivered,
      deliveredTimeMs: this.#deliveredTimeMs,
      firstSentTimeMs: this.#firstSentTimeMs,
      sentTimeMs: nowMs,
      appLimited: this.#appLimitedUntil > 0,
    };
  }

  /** One packet newly acknowledged (call for each, then `takeSample` once per ack frame). */
  onAcked(nowMs: number, packet: PacketRateState, bytes: number): void {
    this.#delivered += bytes;
    this.#deliveredTimeMs = nowMs;
    // The sample is taken over the most recently sent packet acknowledged: the shortest
    // history, so the freshest view of the path.
    if (this.#pending === undefined || packet.delivered > this.#pending.priorDelivered) {
      this.#pending = {
        priorDelivered: packet.delivered,
        sendElapsedMs: packet.sentTimeMs - packet.firstSentTimeMs,
        ackElapsedMs: nowMs - packet.deliveredTimeMs,
        appLimited: packet.appLimited,
      };
      this.#firstSentTimeMs = packet.sentTimeMs;
    }
  }

  /**
   * The sample of the acks processed since the last call, or undefined when none was
   * acknowledged or the interval is shorter than `minIntervalMs` (the least RTT: a shorter
   * one cannot be a real measurement of the path).
   */
  takeSample(minIntervalMs: number): RateSample | undefined {
    if (this.#appLimitedUntil > 0 && this.#delivered > this.#appLimitedUntil) {
      this.#appLimitedUntil = 0;
    }
    const p = this.#pending;
    this.#pending = undefined;
    if (p === undefined) return undefined;
    const intervalMs = Math.max(p.sendElapsedMs, p.ackElapsedMs);
    if (!(intervalMs > 0) || intervalMs < minIntervalMs) return undefined;
    const deliveredBytes = this.#delivered - p.priorDelivered;
    return {
      deliveryRateBytesPerMs: deliveredBytes / intervalMs,
      deliveredBytes,
      intervalMs,
      appLimited: p.appLimited,
      priorDelivered: p.priorDelivered,
    };
  }

  /** The application has nothing more to send and the window is not full. */
  markAppLimited(bytesInFlight: number): void {
    this.#appLimitedUntil = Math.max(this.#delivered + bytesInFlight, 1);
  }
}
