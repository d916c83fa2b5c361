/**
 * The transport's node flags (`--cluster-key`, `--loss`, `--loss-seed`, `--datagram-bytes`),
 * so `hookd node` and any other command that opens a transport spread one flag spec and call
 * one function.
 *
 * Owns the flag names and their translation into `UdpTransportOptions`; it does not open
 * sockets. It lives in src/cli because flags are the command line's business: the transport
 * takes options and never imports anything above it. A missing cluster key is a usage error:
 * an unauthenticated cluster is never the default.
 */

import {
  type FlagSpec,
  type FlagValues,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import {
  TRANSPORT_DATAGRAM_BYTES_MAX,
  TRANSPORT_DATAGRAM_BYTES_MIN,
  transportDefaults,
} from "../config/transport.ts";
import {
  CLUSTER_KEY_BYTES_MIN,
  CLUSTER_KEY_ENV,
  clusterKeyFrom,
  type UdpTransportOptions,
} from "../transport/mod.ts";

export const transportFlags: Record<string, FlagSpec> = {
  "cluster-key": {
    type: "string",
    help: `Cluster key (>= ${CLUSTER_KEY_BYTES_MIN} bytes) every datagram is authenticated with; ` +
      `else $${CLUSTER_KEY_ENV}`,
    valueName: "KEY",
  },
  loss: {
    type: "string",
    help: "Drop this fraction of received datagrams before any processing (fault injection)",
    valueName: "P",
    default: "0",
  },
  "loss-seed": {
    type: "string",
    help: "Seed for --loss, for a reproducible drop pattern (default: random)",
    valueName: "N",
  },
  "datagram-bytes": {
    type: "string",
    help: `Largest datagram built (up to ${TRANSPORT_DATAGRAM_BYTES_MAX} on loopback)`,
    valueName: "BYTES",
    default: String(transportDefaults.datagramBytes),
  },
};

/** The transport options the flags describe; `nodeId` and `listen` come from the caller. */
export function transportOptionsFromFlags(
  values: FlagValues,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): Pick<UdpTransportOptions, "lossProbability" | "lossSeed" | "config"> & { clusterKey: string } {
  const clusterKey = clusterKeyFrom(stringFlag(values, "cluster-key"), env);
  if (clusterKey === undefined) {
    throw new UsageError(`no cluster key: pass --cluster-key or set ${CLUSTER_KEY_ENV}`);
  }
  if (new TextEncoder().encode(clusterKey).length < CLUSTER_KEY_BYTES_MIN) {
    throw new UsageError(`--cluster-key must be at least ${CLUSTER_KEY_BYTES_MIN} bytes`);
  }
  const lossProbability = numberFlag(values, "loss", 0, { min: 0, max: 1 });
  const seed = stringFlag(values, "loss-seed");
  const datagramBytes = numberFlag(values, "datagram-bytes", transportDefaults.datagramBytes, {
    min: TRANSPORT_DATAGRAM_BYTES_MIN,
    max: TRANSPORT_DATAGRAM_BYTES_MAX,
    integer: true,
  });
  return {
    clusterKey,
    lossProbability,
    ...(seed !== undefined
      ? { lossSeed: numberFlag(values, "loss-seed", 0, { min: 0, max: 0xffffffff, integer: true }) }
      : {}),
    config: { datagramBytes },
  };
}
