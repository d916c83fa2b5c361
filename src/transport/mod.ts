/**
 * The transport's public API: reliable and unreliable messages between `"host:port"` peers
 * over one UDP socket, every datagram sealed (ChaCha20-Poly1305) under keys derived from the
 * cluster key.
 *
 * Owns nothing but this list of re-exports and the design notes below. Applications use
 * `UdpTransport`; simulations use `Endpoint` (the same core, driven by virtual time) with the
 * same `clusterKey`.
 *
 * Design notes (what departs from the textbook, and why):
 * - Destination epoch. Every header carries the sender's epoch and the epoch it believes the
 *   receiver has (0 = unknown). Reliable frames are accepted only by the incarnation they were
 *   numbered for; anyone else ignores them (unacknowledged) and answers at once with a
 *   datagram carrying its epoch. Without this, a restarted node that received the middle of
 *   a session would mix two message numberings in its duplicate suppression. Cost: the first
 *   reliable message to a peer not heard from yet takes one extra round trip.
 * - No head-of-line blocking: acknowledgements name packets (SACK ranges, repeated in every
 *   datagram); messages are delivered as soon as they are whole and deduplicated by message
 *   id, tracked up to `MESSAGE_ID_SPAN` ids ahead (a protocol constant, not the local
 *   `windowMessages`, so nodes with different settings interoperate).
 * - A datagram is acknowledged only if every reliable frame in it was taken: one the receiver
 *   cannot take (reassembly memory full, or a broken peer) leaves the whole datagram
 *   unacknowledged, so the sender keeps its data instead of losing it silently.
 * - `forgetPeer` ends a session for good; a later session with that address numbers from the
 *   start again, so it (and any session created after it) draws a fresh epoch, which the peer
 *   treats as a restart of ours.
 * - Acks do not wait on a timer at low rates: a datagram arriving 0.5 ms or more after our
 *   last ack is acknowledged in the flush that follows it (`setTimeout` fires 2-5 ms late on
 *   a busy 2-core machine, longer than a LAN RTT); in bursts every second one is, and gaps
 *   and repeats always are at once.
 * - Loss recovery is ack-driven (RFC 9002 packet and time thresholds). The tail-loss probe
 *   resends one chunk, after max(2·SRTT, SRTT + 4·RTTVAR); the RTO (RFC 6298, floor
 *   `rtoMinMs`) resends only the earliest packet, so an event-loop stall longer than the RTO
 *   costs one packet, not the window.
 * - Congestion control is a rate model in the manner of BBR (congestion.ts): the bottleneck
 *   is the largest delivery rate of the last ten round trips, data datagrams (retransmissions
 *   included) are paced at it times a gain (pacer.ts) and bounded by a window of twice its
 *   bandwidth-delay product, itself capped by `windowBytes`. Random loss (the loss sweep's 20 %
 *   at ingress) only lowers the samples by the fraction lost, which the probing gain offsets; a
 *   loss-halving controller would crawl there. Datagrams with only acks or unreliable messages
 *   are not held back (SWIM probes must not wait behind a backlog) but spend pacing tokens.
 * - Confidentiality (datagram_crypto.ts): the clear outer header carries only the sender's
 *   random per-process key id and a counter; epochs, packet numbers, node id and frames are
 *   sealed. Keys are HKDF-derived per key id (and per 2^24 datagrams), the nonce is the
 *   counter, so nonces never repeat under one key, across restarts too. Keys of key ids not
 *   seen yet are derived at a bounded rate, so junk cannot buy an HMAC per datagram.
 * - Replay protection: each sender key id has a window of the counters accepted (4,096 below
 *   the largest), checked before any cryptography, so a datagram replayed or duplicated is
 *   processed at most once whatever address it comes from; a key id belongs to the address it
 *   first authenticated from. A different key at a peer's address (a restarted process) resets
 *   the session only with a datagram addressed to this session's epoch, and the key it
 *   replaces is retired: a captured datagram of an older incarnation, replayed later, neither
 *   resets nor moves the session. Limits: a datagram captured before *this* node restarted and
 *   sent before its sender had heard of us (destination epoch 0) can still deliver its
 *   unreliable frames once; an attacker who races a process's very first datagram to us from
 *   another address can bind that key id there (it learns nothing and forges nothing; the
 *   peer's traffic is lost to it as if dropped).
 * - Nothing is dropped silently: `forgetPeer` reports the reliable messages it gives up in a
 *   `messages-dropped` event; a restart of the same node requeues them, and another node
 *   answering at the address gets none of them (`messages-dropped`, reason `session-reset`).
 * - Bounds: send queue (messages and bytes, then `backpressure` and a later `writable`
 *   event), bytes in flight, id window, unreliable queue, reassembly bytes, received ranges,
 *   peers. Receive buffers are reused (Deno allocates 64 KiB per receive otherwise).
 * - On loopback, large datagrams (the bench uses 16,000 bytes) carry ~140 small messages: a
 *   receiver here drains only 15-17k datagrams/s, so message rate comes from coalescing.
 */

export {
  APP_CHANNEL_MAX,
  type Authenticator,
  type DeliveredMessage,
  type OutgoingDatagram,
  type PeerStats,
  PIGGYBACK_CHANNEL,
  type PiggybackProvider,
  type SendRefusal,
  type SendResult,
  type TransportEvent,
} from "./types.ts";
export { Endpoint, type EndpointOptions } from "./endpoint.ts";
export { UdpTransport, type UdpTransportOptions } from "./udp_transport.ts";
export {
  CLUSTER_KEY_BYTES_MIN,
  CLUSTER_KEY_ENV,
  clusterKeyFrom,
  HmacSha256Authenticator,
  MAC_TAG_BYTES,
} from "./auth.ts";
export { AEAD_TAG_BYTES, ClusterKeyring } from "./datagram_crypto.ts";
export { canonicalAddress, formatAddress, type HostPort, parseAddress } from "./address.ts";
export {
  type TransportConfig,
  transportDefaults,
  validateTransportConfig,
} from "../config/transport.ts";
