/**
 * Transport (src/transport/)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { nonNegative, positiveInteger, relation } from "./checks.ts";

export interface TransportConfig {
  /**
   * Largest datagram the transport builds, header and MAC included. 1,400 bytes stays under a
   * 1,500-byte Ethernet MTU with room for IP/UDP headers; on loopback up to 65,000 is allowed
   * and lets one socket write carry hundreds of small messages.
   * @default 1400
   */
  datagramBytes: number;
  /**
   * Ceiling of the congestion window: most bytes in flight (sent, neither acknowledged nor
   * declared lost, retransmissions included) per peer, whatever the congestion controller's
   * model says. The kernel's default receive buffer (212,992 bytes, counting ~2.3 KB per
   * 1,400-byte datagram) holds ~90 datagrams; four peers sending to one node (a five-node
   * cluster) must fit in it together while that node's event loop stalls. Measured with `hookd
   * bench transport --senders 2|4` (real processes): 65,536 let the receiver's kernel drop
   * 45-989 datagrams per 3 s run, 32,768 dropped 0-42, at the same goodput.
   * @default 32768
   */
  windowBytes: number;
  /**
   * Congestion window before the first measurement, in datagrams (RFC 9002 §7.2's 10), capped
   * at `windowBytes`.
   * @default 10
   */
  cwndInitialDatagrams: number;
  /**
   * Least congestion window, in datagrams: BBR's 4, so that loss recovery and probing always
   * have room whatever the model says.
   * @default 4
   */
  cwndMinDatagrams: number;
  /**
   * Least RTT used in the congestion window's bandwidth-delay product. Two processes on a host
   * measure a least RTT of tens of µs, but an ack waits for the receiver's event-loop turn
   * (1-3 ms on a busy 2-core machine): a window of two least-RTT products would starve the
   * sender. `windowBytes` still caps the window.
   * @default 2
   */
  cwndRttFloorMs: number;
  /**
   * Round trips over which the largest delivery rate is the bottleneck estimate (BBR's 10): long
   * enough that 20 % random loss and the probing cycle do not pull it down, short enough (tens
   * of ms on a LAN) that a receiver that slows down is followed at once.
   * @default 10
   */
  bandwidthWindowRounds: number;
  /**
   * How long the least RTT seen stays valid before the next sample replaces it (BBR's 10 s).
   * @default 10000
   */
  minRttWindowMs: number;
  /**
   * Most of the pacing rate that may leave in one burst, in ms of that rate (never less than
   * `cwndMinDatagrams` datagrams). Timers fire 2-5 ms late here, so each flush sends what the
   * elapsed time paid for, up to this; 2 ms at a receiver's 15,000 datagrams/s is 30 datagrams,
   * a third of what its socket buffer holds.
   * @default 2
   */
  pacingBurstMs: number;
  /**
   * Most reliable messages per peer between the oldest unacknowledged one and the newest sent
   * one. At most `TRANSPORT_WINDOW_MESSAGES_MAX`: receivers track message ids over twice that
   * span whatever their own setting, so nodes configured differently still interoperate.
   * @default 8192
   */
  windowMessages: number;
  /**
   * Most reliable messages waiting per peer (queued or in flight). Past it `send` answers
   * backpressure instead of growing memory.
   * @default 16384
   */
  sendQueueMessagesMax: number;
  /** Most bytes of reliable messages waiting per peer (queued or in flight). @default 8 MiB */
  sendQueueBytesMax: number;
  /**
   * Most unreliable messages waiting per peer for the next flush; extra ones are dropped and
   * counted (they are unreliable by contract, so dropping them is the bounded answer).
   * @default 1024
   */
  unreliableQueueMessagesMax: number;
  /**
   * Largest reliable message; larger ones are fragmented up to this. A job-store record with
   * the largest payload (1 MiB) and its headers must fit. @default 2 MiB
   */
  messageBytesMax: number;
  /**
   * Most bytes of partly reassembled messages kept per peer, so also the largest message
   * taken from a peer (whose `messageBytesMax` may differ). A datagram whose fragments would
   * exceed it is dropped unacknowledged (and counted), so the sender retransmits later.
   * @default 8 MiB
   */
  reassemblyBytesMax: number;
  /**
   * RTO before any RTT sample (RFC 6298 says 1 s for the Internet; a LAN answers in well under
   * a millisecond, and the first packets of a session should not wait a second on a loss).
   * @default 30
   */
  rtoInitialMs: number;
  /**
   * Floor of the RTO, > 0 (a zero RTO would re-arm its timer for now, forever). RFC 6298
   * recommends 1 s for the Internet; on a LAN a few milliseconds covers event-loop stalls on
   * a busy 2-core machine without making a lost packet wait long.
   * @default 5
   */
  rtoMinMs: number;
  /** Ceiling of the RTO, backoff included. @default 2000 */
  rtoMaxMs: number;
  /**
   * Longest a receiver holds back an acknowledgement. Acks go out at once when a gap or a
   * repeat is seen, after `ackEveryPackets` ack-eliciting datagrams, or after a quiet spell
   * (`ackImmediateAfterMs`), and they ride on every data datagram.
   * @default 1
   */
  maxAckDelayMs: number;
  /**
   * In a burst, every this-many ack-eliciting datagrams are acknowledged at once; halving the
   * acks gave ~15 % more messages/s at 1,400-byte datagrams on loopback.
   * @default 2
   */
  ackEveryPackets: number;
  /**
   * An ack-eliciting datagram arriving at least this long after our previous ack to its
   * sender is acknowledged at once. So below ~2,000 datagrams/s every datagram is acked in
   * the flush that follows it, with no timer: `setTimeout` fires 2-5 ms late on a busy 2-core
   * machine, longer than a LAN RTT. Only a burst's last odd datagram waits `maxAckDelayMs`.
   * @default 0.5
   */
  ackImmediateAfterMs: number;
  /**
   * Longest a receiver holds the acknowledgement of a datagram its sender marked "ack may
   * wait" (see `lazyAckQuietMs`), so that a datagram it sends that peer anyway carries it. The
   * job store marks its votes, which the proposer answers with a COMMIT within
   * `jobs.lazySendMs`, and its messages of lazy records only (COMMITs, DONEs), which the
   * peer's next vote or SUBMIT answers. Acknowledged at once, each cost a datagram of its own
   * and a wake-up of the peer that got it (bench/results/session36/). Longer than
   * `jobs.lazySendMs`, so the COMMIT's timer fires first. A marking sender waits twice this
   * longer before it probes (timers fire late on a loaded host). A node from before the flag
   * refuses a marked datagram as malformed; the retransmission, never marked, gets through.
   * 0: nothing is marked.
   * @default 100
   */
  lazyAckMs: number;
  /**
   * A sender marks datagrams "ack may wait" only after this long without a loss on the path
   * (a packet declared lost by fast retransmit or timeout; a speculative tail-loss probe does
   * not count): on a lossy path a lost vote would wait `2 × lazyAckMs` for its
   * retransmission, and a proposal short of its majority with it.
   * @default 1000
   */
  lazyAckQuietMs: number;
  /** Most acknowledgement ranges in one datagram. @default 16 */
  ackRangesMax: number;
  /**
   * Most received-packet ranges remembered per peer; the oldest are forgotten first (a
   * retransmission of a forgotten one is then suppressed by message ids instead).
   * @default 64
   */
  receivedRangesMax: number;
  /**
   * Fast retransmit: a packet is lost once a packet this many numbers later is acknowledged
   * (RFC 9002's kPacketThreshold).
   * @default 3
   */
  packetThreshold: number;
  /**
   * Time-threshold loss: a packet is lost once a later one is acknowledged and this multiple
   * of max(SRTT, latest RTT) has passed since it was sent (RFC 9002's kTimeThreshold).
   * @default 1.125
   */
  timeThreshold: number;
  /** Least time-threshold loss delay; the timer granularity of the event loop. @default 1 */
  lossDelayMinMs: number;
  /**
   * Tail-loss probe: with data in flight and no acknowledgement for
   * max(2·SRTT + maxAckDelayMs, tlpMinMs), resend the newest unacknowledged data once so the
   * tail of a burst is not left to the RTO.
   * @default 2
   */
  tlpMinMs: number;
  /** Tail-loss probes before the RTO takes over. @default 2 */
  tlpMax: number;
  /**
   * A datagram with at least this many spare bytes asks the piggyback provider for gossip.
   * @default 32
   */
  piggybackBytesMin: number;
  /** Most peer sessions; datagrams from further addresses are dropped and counted. @default 1024 */
  peersMax: number;
  /**
   * A session not heard from for this long is released to make room when the table is full
   * and a new peer comes (its unacknowledged messages reported as `messages-dropped`). Sessions
   * are never released otherwise (a member's is, by membership, once it is dead), so without
   * this every UDP client process that ever talked to a node kept a session, and the
   * (peersMax + 1)th was refused for good. A minute of silence is far past SWIM's detection
   * bound, so no live member's session goes this way. @default 60_000
   */
  sessionIdleMs: number;
  /**
   * Most keys derived per second for key ids not seen yet (new peers, restarted ones). Each
   * costs an HMAC before its datagram can even be checked, so junk with random key ids must not
   * be able to force one per datagram; a thousand peers restarting at once are all known again
   * within seconds. Datagrams from an address we have a session with draw on that session's
   * own budget instead (`keyDerivationsPerPeerPerSecondMax`).
   * @default 200
   */
  keyDerivationsPerSecondMax: number;
  /**
   * Most keys derived per second for datagrams from the address of one existing session (its
   * peer restarted with a new key id, or moved to its next key generation every 2^24
   * datagrams). Kept apart from the shared budget above, which a junk flood with random key ids
   * spends entirely: a restarted member must not be locked out by a flood it has no part in.
   * Four is a restart and a generation change at once, twice over.
   * @default 4
   */
  keyDerivationsPerPeerPerSecondMax: number;
}

export const transportDefaults: Readonly<TransportConfig> = Object.freeze({
  datagramBytes: 1400,
  windowBytes: 32768,
  cwndInitialDatagrams: 10,
  cwndMinDatagrams: 4,
  cwndRttFloorMs: 2,
  bandwidthWindowRounds: 10,
  minRttWindowMs: 10_000,
  pacingBurstMs: 2,
  windowMessages: 8192,
  sendQueueMessagesMax: 16384,
  sendQueueBytesMax: 8 * 1024 * 1024,
  unreliableQueueMessagesMax: 1024,
  messageBytesMax: 2 * 1024 * 1024,
  reassemblyBytesMax: 8 * 1024 * 1024,
  rtoInitialMs: 30,
  rtoMinMs: 5,
  rtoMaxMs: 2000,
  maxAckDelayMs: 1,
  ackEveryPackets: 2,
  ackImmediateAfterMs: 0.5,
  lazyAckMs: 100,
  lazyAckQuietMs: 1000,
  ackRangesMax: 16,
  receivedRangesMax: 64,
  packetThreshold: 3,
  timeThreshold: 1.125,
  lossDelayMinMs: 1,
  tlpMinMs: 2,
  tlpMax: 2,
  piggybackBytesMin: 32,
  peersMax: 1024,
  sessionIdleMs: 60_000,
  keyDerivationsPerSecondMax: 200,
  keyDerivationsPerPeerPerSecondMax: 4,
});

/** Smallest and largest datagram sizes the codec accepts (65,000 keeps under the UDP limit). */
export const TRANSPORT_DATAGRAM_BYTES_MIN = 512;
export const TRANSPORT_DATAGRAM_BYTES_MAX = 65000;
/** Largest `windowMessages`; a wire-protocol constant (receivers track twice this span). */
export const TRANSPORT_WINDOW_MESSAGES_MAX = 16384;

export function validateTransportConfig(config: TransportConfig): TransportConfig {
  positiveInteger("transport.datagramBytes", config.datagramBytes);
  if (
    config.datagramBytes < TRANSPORT_DATAGRAM_BYTES_MIN ||
    config.datagramBytes > TRANSPORT_DATAGRAM_BYTES_MAX
  ) {
    throw new RangeError(
      `transport.datagramBytes must be in [${TRANSPORT_DATAGRAM_BYTES_MIN}, ${TRANSPORT_DATAGRAM_BYTES_MAX}], got ${config.datagramBytes}`,
    );
  }
  for (
    const name of [
      "windowBytes",
      "cwndInitialDatagrams",
      "cwndMinDatagrams",
      "bandwidthWindowRounds",
      "windowMessages",
      "sendQueueMessagesMax",
      "sendQueueBytesMax",
      "unreliableQueueMessagesMax",
      "messageBytesMax",
      "reassemblyBytesMax",
      "ackEveryPackets",
      "ackRangesMax",
      "receivedRangesMax",
      "packetThreshold",
      "peersMax",
      "sessionIdleMs",
      "keyDerivationsPerSecondMax",
      "keyDerivationsPerPeerPerSecondMax",
    ] as const
  ) positiveInteger(`transport.${name}`, config[name]);
  for (
    const name of [
      "rtoInitialMs",
      "rtoMinMs",
      "rtoMaxMs",
      "maxAckDelayMs",
      "ackImmediateAfterMs",
      "lazyAckMs",
      "lazyAckQuietMs",
      "lossDelayMinMs",
      "tlpMinMs",
      "tlpMax",
      "cwndRttFloorMs",
      "minRttWindowMs",
      "pacingBurstMs",
      "piggybackBytesMin",
    ] as const
  ) nonNegative(`transport.${name}`, config[name]);
  if (!(config.timeThreshold >= 1) || !Number.isFinite(config.timeThreshold)) {
    throw new RangeError(`transport.timeThreshold must be >= 1, got ${config.timeThreshold}`);
  }
  if (!(config.rtoMinMs > 0)) {
    throw new RangeError(`transport.rtoMinMs must be > 0, got ${config.rtoMinMs}`);
  }
  if (config.windowMessages > TRANSPORT_WINDOW_MESSAGES_MAX) {
    throw new RangeError(
      `transport.windowMessages must be <= ${TRANSPORT_WINDOW_MESSAGES_MAX}, got ${config.windowMessages}`,
    );
  }
  if (config.ackRangesMax > 255) {
    throw new RangeError(`transport.ackRangesMax must be <= 255, got ${config.ackRangesMax}`);
  }
  // A window smaller than one datagram could never send a full one.
  relation(
    "transport.datagramBytes",
    config.datagramBytes,
    "<=",
    "transport.windowBytes",
    config.windowBytes,
  );
  relation("transport.rtoMinMs", config.rtoMinMs, "<=", "transport.rtoMaxMs", config.rtoMaxMs);
  relation(
    "transport.rtoInitialMs",
    config.rtoInitialMs,
    "<=",
    "transport.rtoMaxMs",
    config.rtoMaxMs,
  );
  // One message must fit in the queue bound and in the reassembly bound, or it could never go.
  relation(
    "transport.messageBytesMax",
    config.messageBytesMax,
    "<=",
    "transport.sendQueueBytesMax",
    config.sendQueueBytesMax,
  );
  relation(
    "transport.messageBytesMax",
    config.messageBytesMax,
    "<=",
    "transport.reassemblyBytesMax",
    config.reassemblyBytesMax,
  );
  relation(
    "transport.ackRangesMax",
    config.ackRangesMax,
    "<=",
    "transport.receivedRangesMax",
    config.receivedRangesMax,
  );
  return config;
}
