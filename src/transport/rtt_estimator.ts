/**
 * Round-trip time estimation and the retransmission timeout of RFC 6298.
 *
 * Owns SRTT, RTTVAR and the RTO with its floor and ceiling; pure arithmetic on samples the
 * session hands in. Backoff on repeated timeouts is applied by the caller (`rtoMs(backoff)`),
 * so one estimator serves both the RTO and the tail-loss probe.
 */

export interface RttEstimatorOptions {
  rtoInitialMs: number;
  rtoMinMs: number;
  rtoMaxMs: number;
  /** Clock granularity G of RFC 6298 §2: the least the variance term may add. */
  granularityMs: number;
}

export class RttEstimator {
  readonly #options: RttEstimatorOptions;
  #srttMs: number | undefined;
  #rttVarMs: number | undefined;
  #latestMs: number | undefined;
  #minMs = Infinity;

  constructor(options: RttEstimatorOptions) {
    this.#options = options;
  }

  get srttMs(): number | undefined {
    return this.#srttMs;
  }

  get rttVarMs(): number | undefined {
    return this.#rttVarMs;
  }

  get latestMs(): number | undefined {
    return this.#latestMs;
  }

  /**
   * Feeds one sample: the time from sending a packet to receiving the acknowledgement that
   * first acknowledged it, minus the delay the receiver reports it held the ack (RFC 9002
   * §5.3: only when that leaves at least the least RTT seen, so a lying peer cannot drive the
   * estimate below the path's floor).
   */
  update(sampleMs: number, ackDelayMs: number): void {
    if (!(sampleMs >= 0) || !Number.isFinite(sampleMs)) return;
    this.#latestMs = sampleMs;
    if (sampleMs < this.#minMs) this.#minMs = sampleMs;
    const adjusted = sampleMs - ackDelayMs >= this.#minMs ? sampleMs - ackDelayMs : sampleMs;
    if (this.#srttMs === undefined || this.#rttVarMs === undefined) {
      this.#srttMs = adjusted;
      this.#rttVarMs = adjusted / 2;
    } else {
      this.#rttVarMs = 0.75 * this.#rttVarMs + 0.25 * Math.abs(this.#srttMs - adjusted);
      this.#srttMs = 0.875 * this.#srttMs + 0.125 * adjusted;
    }
  }

  /** RTO = SRTT + max(G, 4·RTTVAR), doubled `backoff` times, within [floor, ceiling]. */
  rtoMs(backoff = 0): number {
    const { rtoInitialMs, rtoMinMs, rtoMaxMs, granularityMs } = this.#options;
    const base = this.#srttMs === undefined || this.#rttVarMs === undefined
      ? rtoInitialMs
      : this.#srttMs + Math.max(granularityMs, 4 * this.#rttVarMs);
    const floored = Math.max(rtoMinMs, base);
    return Math.min(rtoMaxMs, floored * 2 ** Math.min(backoff, 30));
  }
}
