/**
 * The pure arithmetic behind SWIM/Lifeguard timing, split out so it can be table-tested.
 *
 * Owns formulas only: no state, no clock. Config documents the same formulas in words
 * (src/config.ts, MembershipConfig).
 */

import type { MembershipConfig } from "../config.ts";

/** max(1, log10 N): timeouts grow slowly with the cluster so gossip has time to spread. */
export function clusterScale(members: number): number {
  return Math.max(1, Math.log10(Math.max(1, members)));
}

export interface SuspicionBounds {
  minMs: number;
  maxMs: number;
  /** Independent confirmations that shrink the timeout all the way to `minMs`. */
  confirmationsWanted: number;
}

/**
 * Suspicion timeout bounds for a cluster of `members` (self included):
 * minMs = suspicionMult · max(1, log10 N) · probeIntervalMs, maxMs = suspicionMaxTimeoutMult ·
 * minMs, and k = suspicionMult − 2 confirmations wanted, capped at N − 2 (the members other than
 * the suspect and the first suspector).
 */
export function suspicionBounds(
  members: number,
  config: Pick<MembershipConfig, "suspicionMult" | "suspicionMaxTimeoutMult" | "probeIntervalMs">,
): SuspicionBounds {
  const minMs = Math.floor(config.suspicionMult * clusterScale(members) * config.probeIntervalMs);
  const maxMs = config.suspicionMaxTimeoutMult * minMs;
  const confirmationsWanted = Math.max(0, Math.min(config.suspicionMult - 2, members - 2));
  return { minMs, maxMs, confirmationsWanted };
}

/**
 * Lifeguard's shrinking suspicion timeout: with c of k wanted confirmations, the timeout is
 * maxMs − (maxMs − minMs) · log(c + 1) / log(k + 1), never below minMs; k = 0 means minMs.
 * Returns the total timeout measured from the start of the suspicion (floored to whole ms).
 */
export function suspicionTimeoutMs(
  confirmations: number,
  wanted: number,
  minMs: number,
  maxMs: number,
): number {
  if (wanted < 1) return minMs;
  const fraction = Math.log(confirmations + 1) / Math.log(wanted + 1);
  const raw = Math.floor(maxMs - fraction * (maxMs - minMs));
  return Math.max(minMs, raw);
}

/** Times an update is piggybacked: retransmitMult · ceil(log10(N + 1)). */
export function retransmitLimit(retransmitMult: number, members: number): number {
  return retransmitMult * Math.ceil(Math.log10(Math.max(0, members) + 1));
}

/**
 * Worst-case time from a crash until every live member holds the crashed node dead, without
 * awareness stretching: 2·(N−1)·T to be probed (round-robin over a reshuffled list), T for that
 * probe to fail, maxMs of unconfirmed suspicion, and 3 gossip periods for the dead notice.
 */
export function detectionBoundMs(
  members: number,
  config: Pick<
    MembershipConfig,
    "suspicionMult" | "suspicionMaxTimeoutMult" | "probeIntervalMs" | "gossipIntervalMs"
  >,
): number {
  const { maxMs } = suspicionBounds(members, config);
  const t = config.probeIntervalMs;
  return 2 * Math.max(1, members - 1) * t + t + maxMs + 3 * config.gossipIntervalMs;
}
