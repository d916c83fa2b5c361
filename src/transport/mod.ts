/**
 * The transport's public API: reliable and unreliable messages between `"host:port"` peers
 * over one authenticated UDP socket.
 *
 * Owns nothing but this list of re-exports. Applications use `UdpTransport`; simulations use
 * `Endpoint` (the same core, driven by virtual time) with `HmacSha256Authenticator`.
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
export { canonicalAddress, formatAddress, type HostPort, parseAddress } from "./address.ts";
export { type TransportConfig, transportDefaults, validateTransportConfig } from "../config.ts";
export { transportFlags, transportOptionsFromFlags } from "./cli_flags.ts";
