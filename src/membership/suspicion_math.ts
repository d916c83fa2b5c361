/**
 * The pure arithmetic behind SWIM/Lifeguard timing, split out so it can be table-tested.
 *
 * Owns formulas only: no state, no clock. Config documents the same formulas in words
 * (src/config.ts, MembershipConfig).
 */

import type { MembershipConfig } from "../config/membership.ts";

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

/** Gossip periods for a notice to reach `members` nodes: ceil(log_{fanout+1} N) + 1. */
export function gossipRoundsToAll(members: number, gossipFanout: number): number {
  const n = Math.max(2, members);
  return Math.ceil(Math.log(n) / Math.log(gossipFanout + 1)) + 1;
}

export interface DetectionBoundOptions {
  /**
   * The Lifeguard awareness score of the probers (0 = healthy): probe periods and timeouts
   * stretch by (score + 1). @default awarenessMaxMultiplier − 1, the most it can stretch
   */
  awarenessScore?: number;
}

/**
 * Worst-case time from a crash until every live member holds the crashed node dead, with no
 * packet loss, for probers whose Lifeguard awareness score is a (A = a + 1; by default the
 * largest, so the bound holds however unhealthy the probers feel):
 *   2·(N−1)·T·A   the longest wait until some member's round-robin reaches the crashed node
 *                 (it was just probed, and the reshuffled next pass puts it last), a probe
 *                 period being T·A when stretched;
 * + T·A           for that probe to fail;
 * + maxMs         of suspicion with no confirmation (Lifeguard's dynamic timeout at its top;
 *                 awareness does not stretch it);
 * + R·gossipIntervalMs, R = ceil(log_{fanout+1} N) + 1 gossip periods for the dead notice to
 *                 reach everyone (each period every holder tells `gossipFanout` more).
 * Under loss it is not a bound: every term can repeat. Measured figures are the bench's.
 */
export function detectionBoundMs(
  members: number,
  config: Pick<
    MembershipConfig,
    | "suspicionMult"
    | "suspicionMaxTimeoutMult"
    | "probeIntervalMs"
    | "gossipIntervalMs"
    | "gossipFanout"
    | "awarenessMaxMultiplier"
  >,
  options: DetectionBoundOptions = {},
): number {
  const score = options.awarenessScore ?? config.awarenessMaxMultiplier - 1;
  if (!(Number.isInteger(score) && score >= 0 && score < config.awarenessMaxMultiplier)) {
    throw new RangeError(
      `awarenessScore must be an integer in [0, ${
        config.awarenessMaxMultiplier - 1
      }], got ${score}`,
    );
  }
  const { maxMs } = suspicionBounds(members, config);
  const periodMs = config.probeIntervalMs * (score + 1);
  const rounds = gossipRoundsToAll(members, config.gossipFanout);
  return 2 * Math.max(1, members - 1) * periodMs + periodMs + maxMs +
    rounds * config.gossipIntervalMs;
}
