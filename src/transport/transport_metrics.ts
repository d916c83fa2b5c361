/**
 * The transport's metrics, registered once in a `MetricsRegistry`.
 *
 * Owns metric names and labels. The core bumps these counters on its hot paths (a property
 * increment each); the adapter adds its own (ingress drops, socket errors). Names follow
 * Prometheus conventions with the `hookd_transport_` prefix.
 */

import type { Counter, Gauge, MetricsRegistry } from "../metrics/registry.ts";

export interface TransportCounters {
  datagramsIn: Counter;
  datagramsOut: Counter;
  bytesIn: Counter;
  bytesOut: Counter;
  sent(reliable: boolean): Counter;
  delivered(reliable: boolean): Counter;
  retransmits: { fast: Counter; probe: Counter; timeout: Counter };
  authFailures: Counter;
  keyDerivationsRefused: Counter;
  replays: Counter;
  addressMismatches: Counter;
  decodeErrors: Counter;
  duplicates: Counter;
  staleAcks: Counter;
  epochMismatch: Counter;
  staleEpochDrops: Counter;
  peerLimitDrops: Counter;
  sessionsExpired: Counter;
  reassemblyOverflow: Counter;
  protocolErrors: Counter;
  unreliableDropped: Counter;
  backpressure: Counter;
  peerRestarts: Counter;
  piggybacked: Counter;
  ackOnly: Counter;
  rttMs(address: string): Gauge;
}

export function transportCounters(registry: MetricsRegistry): TransportCounters {
  const c = (name: string, help: string, labels = {}) =>
    registry.counter(`hookd_transport_${name}`, help, labels);
  const sentReliable = c("messages_sent_total", "Messages put on the wire the first time", {
    reliable: "true",
  });
  const sentUnreliable = c("messages_sent_total", "Messages put on the wire the first time", {
    reliable: "false",
  });
  const deliveredReliable = c("messages_delivered_total", "Messages handed to the application", {
    reliable: "true",
  });
  const deliveredUnreliable = c(
    "messages_delivered_total",
    "Messages handed to the application",
    { reliable: "false" },
  );
  const rttGauges = new Map<string, Gauge>();
  return {
    datagramsIn: c("datagrams_total", "Datagrams received or sent", { direction: "in" }),
    datagramsOut: c("datagrams_total", "Datagrams received or sent", { direction: "out" }),
    bytesIn: c("bytes_total", "Datagram bytes received or sent", { direction: "in" }),
    bytesOut: c("bytes_total", "Datagram bytes received or sent", { direction: "out" }),
    sent: (reliable) => reliable ? sentReliable : sentUnreliable,
    delivered: (reliable) => reliable ? deliveredReliable : deliveredUnreliable,
    retransmits: {
      fast: c("retransmits_total", "Message chunks sent again, by trigger", { kind: "fast" }),
      probe: c("retransmits_total", "Message chunks sent again, by trigger", { kind: "probe" }),
      timeout: c("retransmits_total", "Message chunks sent again, by trigger", {
        kind: "timeout",
      }),
    },
    authFailures: c("auth_failures_total", "Datagrams dropped because they did not open (AEAD)"),
    replays: c(
      "replays_total",
      "Datagrams dropped unopened because their counter was seen before or is too old",
    ),
    addressMismatches: c(
      "address_mismatches_total",
      "Datagrams under a peer's key id arriving from another address than its own",
    ),
    keyDerivationsRefused: c(
      "key_derivations_refused_total",
      "Datagrams under a key id not seen yet, dropped because key derivations were rate-limited",
    ),
    decodeErrors: c("decode_errors_total", "Authenticated datagrams that did not parse"),
    duplicates: c("duplicates_suppressed_total", "Reliable messages received again and dropped"),
    staleAcks: c("stale_acks_total", "Ack frames naming an earlier epoch of this node"),
    epochMismatch: c(
      "epoch_mismatch_total",
      "Datagrams whose reliable frames were numbered for another incarnation of this node",
    ),
    staleEpochDrops: c(
      "stale_epoch_drops_total",
      "Datagrams from an earlier incarnation of a peer",
    ),
    peerLimitDrops: c("peer_limit_drops_total", "Datagrams from new peers past peersMax"),
    sessionsExpired: c(
      "sessions_expired_total",
      "Sessions silent for sessionIdleMs released to make room for a new peer",
    ),
    reassemblyOverflow: c(
      "reassembly_overflow_total",
      "Datagrams dropped unacknowledged because reassembly memory was full",
    ),
    protocolErrors: c("protocol_errors_total", "Frames that break the protocol's rules"),
    unreliableDropped: c(
      "unreliable_dropped_total",
      "Unreliable messages refused because their queue was full",
    ),
    backpressure: c("backpressure_total", "Reliable sends refused because the queue was full"),
    peerRestarts: c("peer_restarts_total", "Peers seen coming back with a new epoch"),
    piggybacked: c("piggybacked_total", "Datagrams that carried piggybacked bytes"),
    ackOnly: c(
      "ack_only_datagrams_total",
      "Datagrams sent carrying nothing but an acknowledgement (no message, no piggyback)",
    ),
    rttMs(address: string): Gauge {
      let g = rttGauges.get(address);
      if (g === undefined) {
        g = registry.gauge("hookd_transport_rtt_ms", "Smoothed RTT per peer (RFC 6298)", {
          peer: address,
        });
        rttGauges.set(address, g);
      }
      return g;
    },
  };
}
