/**
 * The public vocabulary of the transport: what the application hands in and gets out.
 *
 * Owns type definitions and a few constants only; no behaviour. The sans-I/O core
 * (endpoint.ts) and the socket adapter (udp_transport.ts) both speak these types, so a caller
 * written against the adapter can be moved onto the simulator unchanged.
 */

/** Highest channel number an application may use; 255 is reserved for piggybacked gossip. */
export const APP_CHANNEL_MAX = 254;

/**
 * The channel on which piggybacked bytes (see `PiggybackProvider`) arrive at the receiver.
 * They are delivered like any unreliable message of that channel.
 */
export const PIGGYBACK_CHANNEL = 255;

/** A message handed to the application. `bytes` is a view that stays valid after the call. */
export interface DeliveredMessage {
  /** The sender's `"host:port"` as seen by the receiving socket (the key used for replies). */
  fromAddress: string;
  /** The sender's node id, from the authenticated datagram header. */
  fromNodeId: string;
  channel: number;
  /** True when it came through the reliable path (retransmitted until acknowledged). */
  reliable: boolean;
  bytes: Uint8Array;
}

/** Things the transport tells the application besides messages. */
export type TransportEvent =
  | {
    /**
     * The peer at `address` came back with a new session epoch. Its old session state was
     * discarded; messages it had not acknowledged were queued again for the new session
     * (at-least-once across a restart: the peer may have seen some of them already).
     */
    type: "peer-restarted";
    address: string;
    nodeId: string;
    previousEpoch: number;
    epoch: number;
  }
  | {
    /** First authenticated datagram from a peer we had no session with. */
    type: "peer-discovered";
    address: string;
    nodeId: string;
    epoch: number;
  }
  | {
    /**
     * The send queue to `address` drained below half of its bound after a `send` to it was
     * refused with backpressure: the application may send again.
     */
    type: "writable";
    address: string;
  }
  | {
    /**
     * Reliable messages to `address` that the transport gave up without knowing they were
     * delivered (queued, or sent and not acknowledged; some may have arrived), oldest first:
     * `peer-forgotten` after `forgetPeer`; `session-reset` when another node (a different
     * node id) now answers at the address, so they were not handed to it; `session-expired`
     * when the session, silent for `sessionIdleMs`, made room for a new peer in a full table.
     * A restart of the same node requeues them instead (see `peer-restarted`).
     */
    type: "messages-dropped";
    address: string;
    /** The node the messages were meant for; undefined if it never answered. */
    nodeId: string | undefined;
    reason: "peer-forgotten" | "session-reset" | "session-expired";
    messages: Array<{ channel: number; bytes: Uint8Array }>;
  };

/** Why `send` refused a message. Only `backpressure` is transient. */
export type SendRefusal =
  /** The peer's bounded send queue is full; wait for a `writable` event. */
  | "backpressure"
  /** Larger than `TransportConfig.messageBytesMax` (or, unreliable, than one datagram). */
  | "message-too-large"
  /** Channel outside 0..APP_CHANNEL_MAX. */
  | "invalid-channel"
  /** `TransportConfig.peersMax` sessions exist already. */
  | "peer-limit"
  /** `address` is not a `"host:port"` string (adapter only). */
  | "invalid-address"
  /** The transport is closed (adapter only). */
  | "closed";

export type SendResult = { accepted: true } | { accepted: false; reason: SendRefusal };

/**
 * Asked whenever the transport builds a datagram to `peerAddress` with at least
 * `TransportConfig.piggybackBytesMin` spare bytes. Returns at most `spaceBytes` bytes to ride
 * along unreliably on `PIGGYBACK_CHANNEL`, or null for none. It must not call back into the
 * transport.
 */
export type PiggybackProvider = (peerAddress: string, spaceBytes: number) => Uint8Array | null;

/** A datagram the core wants sent; the adapter hands `bytes` to the socket as is. */
export interface OutgoingDatagram {
  address: string;
  bytes: Uint8Array;
}

/**
 * The MAC of wire version 1 (see auth.ts); datagrams are now sealed with ChaCha20-Poly1305 instead,
 * and an `HmacSha256Authenticator` only hands its cluster key to the endpoint. Synchronous:
 * the core runs inside the simulator with no awaits.
 */
export interface Authenticator {
  /** Bytes of tag appended to each datagram. */
  readonly tagBytes: number;
  /** The tag over `data`, exactly `tagBytes` long. */
  sign(data: Uint8Array): Uint8Array;
  /** Whether `tag` is the tag over `data` (constant time). */
  verify(data: Uint8Array, tag: Uint8Array): boolean;
}

/** Per-peer figures for metrics and tests. */
export interface PeerStats {
  address: string;
  /** Undefined until the peer's first datagram arrives. */
  nodeId: string | undefined;
  peerEpoch: number | undefined;
  /** Smoothed RTT (RFC 6298 SRTT); undefined before the first sample. */
  srttMs: number | undefined;
  rttVarMs: number | undefined;
  /** Current retransmission timeout, backoff included. */
  rtoMs: number;
  bytesInFlight: number;
  packetsInFlight: number;
  /** Messages queued or in flight, not yet fully acknowledged. */
  messagesUnacked: number;
  queuedBytes: number;
  /** Congestion window: most bytes in flight the controller allows now. */
  cwndBytes: number;
  /** The rate data datagrams are paced at, bytes per ms. */
  pacingRateBytesPerMs: number;
  /** The controller's bottleneck estimate, bytes per ms; 0 before the first sample. */
  bottleneckBytesPerMs: number;
  /** Least RTT in the controller's window; undefined before the first sample. */
  minRttMs: number | undefined;
  /** The controller's phase (see congestion.ts). */
  congestionMode: "startup" | "drain" | "probe-bw";
}
