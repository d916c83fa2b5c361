/**
 * Pacing: spreads a session's data datagrams over time at the congestion controller's rate,
 * as a token bucket (RFC 9002 §7.7).
 *
 * Owns the bucket only: tokens (bytes) accrue at the rate handed in, up to a burst, and each
 * datagram sent spends its size. No clock, no I/O. The burst is what timers force on us: a
 * timer here fires 2-5 ms late on a busy 2-core machine, so a pacer that released one
 * datagram per interval would send far below its rate; instead a flush (an ack arriving, or
 * the timer) sends everything the elapsed time paid for, up to `burstMs` of it.
 */

/** Least wait the pacer asks for, so a deadline always lies strictly in the future. */
const WAIT_MS_MIN = 0.001;
/** Rounding slack, in bytes, when the bucket is refilled exactly to zero at its deadline. */
const TOKENS_EPSILON = 1e-6;

export class Pacer {
  readonly #burstMs: number;
  readonly #burstBytesMin: number;
  #tokensBytes: number;
  #lastMs = -Infinity;

  /**
   * `burstMs`: how much of the rate may leave at once; `burstBytesMin`: a burst is never
   * smaller than this (so a slow estimate still lets a small message out at once).
   */
  constructor(burstMs: number, burstBytesMin: number) {
    this.#burstMs = burstMs;
    this.#burstBytesMin = burstBytesMin;
    this.#tokensBytes = burstBytesMin;
  }

  #refill(nowMs: number, rateBytesPerMs: number): void {
    if (nowMs <= this.#lastMs) return;
    const burst = Math.max(rateBytesPerMs * this.#burstMs, this.#burstBytesMin);
    const earned = this.#lastMs === -Infinity ? burst : (nowMs - this.#lastMs) * rateBytesPerMs;
    this.#tokensBytes = Math.min(burst, this.#tokensBytes + earned);
    this.#lastMs = nowMs;
  }

  /** Whether a datagram may leave now (it may overdraw the bucket by one datagram). */
  canSend(nowMs: number, rateBytesPerMs: number): boolean {
    this.#refill(nowMs, rateBytesPerMs);
    return this.#tokensBytes > -TOKENS_EPSILON;
  }

  /**
   * When `canSend` will next hold, without refilling: the bucket's last update if it was not
   * overdrawn then, else the moment the overdraft is paid back.
   */
  readyAtMs(rateBytesPerMs: number): number {
    if (this.#tokensBytes > -TOKENS_EPSILON) return this.#lastMs;
    return this.#lastMs + Math.max(WAIT_MS_MIN, -this.#tokensBytes / rateBytesPerMs);
  }

  /**
   * Spends `bytes` sent now. Datagrams that bypass pacing (probes, acks with unreliable
   * messages) are charged too, so the rate still bounds the total.
   */
  onSent(nowMs: number, rateBytesPerMs: number, bytes: number): void {
    this.#refill(nowMs, rateBytesPerMs);
    this.#tokensBytes -= bytes;
  }
}
