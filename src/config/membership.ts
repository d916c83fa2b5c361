/**
 * Membership: SWIM with the Lifeguard extensions (src/membership/)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { nonNegative, positiveInteger, relation } from "./checks.ts";

/**
 * Timing formulas (T = probeIntervalMs, N = members known, a = awareness score 0..max-1):
 * - a probe round lasts T·(a+1); its direct ack is awaited probeTimeoutMs·(a+1), then
 *   `indirectChecks` members are asked to probe and a second direct ping is sent;
 * - suspicion timeout: minMs = suspicionMult · max(1, log10 N) · T, maxMs =
 *   suspicionMaxTimeoutMult · minMs; it starts at maxMs and falls (logarithmically) to minMs as
 *   k = suspicionMult − 2 independent confirmations arrive (Lifeguard);
 * - gossip: each update is sent at most retransmitMult · ceil(log10(N + 1)) times.
 * Detection bound after a crash, no loss (see `detectionBoundMs` in
 * src/membership/suspicion_math.ts), with A = a + 1 the probers' awareness stretch:
 * 2·(N−1)·T·A (worst wait until some member's round-robin reaches the crashed node) + T·A (that
 * probe fails) + maxMs (suspicion with no confirmation; awareness does not stretch it) +
 * R·gossipIntervalMs with R = ceil(log_{gossipFanout+1} N) + 1 (the dead notice spreads).
 * At N = 5 with the defaults: healthy probers (A = 1) 1,600 + 200 + 4,000 + 600 = 6,400 ms;
 * probers at the largest stretch (A = awarenessMaxMultiplier = 4) 6,400 + 800 + 4,000 + 600 =
 * 11,800 ms. Measured figures (README, `hookd bench membership`) are far lower: confirmations
 * shrink the suspicion towards minMs = 800 ms.
 */
export interface MembershipConfig {
  /**
   * Protocol period: each member probes one other member per period. 200 ms keeps detection
   * near one to two seconds on a LAN while costing ~15 small datagrams per node per second.
   * @default 200
   */
  probeIntervalMs: number;
  /**
   * How long a direct ping waits for its ack before indirect probes start. Loopback and LAN
   * round trips are well under 1 ms; 100 ms leaves room for a busy event loop and GC pauses
   * and still leaves half a period for the indirect probes.
   * @default 100
   */
  probeTimeoutMs: number;
  /**
   * Members asked to probe a target whose direct ping went unanswered (ping-req). Three relays
   * make a false suspicion at 20 % loss rare (each relayed path needs four datagrams).
   * @default 3
   */
  indirectChecks: number;
  /**
   * Suspicion timeout multiplier (see the formula above); k = suspicionMult − 2 confirmations
   * shrink the timeout to its minimum.
   * @default 4
   */
  suspicionMult: number;
  /**
   * Ratio of the longest suspicion timeout (no confirmation) to the shortest. A lone suspicion
   * (most likely a false one from packet loss) gets 5× longer to be refuted.
   * @default 5
   */
  suspicionMaxTimeoutMult: number;
  /**
   * Lifeguard local-health awareness: probe timeouts stretch by (score + 1), score in
   * [0, awarenessMaxMultiplier − 1]. It rises on missed nacks and on refuting a suspicion of
   * ourselves, and falls on every successful probe. memberlist uses 8; at 20 % loss healthy
   * nodes then stretched their probe period so far that detection p99 reached 2.6 s (bench,
   * 12 seeds); 4 keeps it near 2.1 s and still gives a struggling node 4× the time.
   * @default 4
   */
  awarenessMaxMultiplier: number;
  /**
   * A step this much later than the deadline the core asked to be woken at means this node's
   * event loop stalled: timers that expired meanwhile wait probeTimeoutMs for the datagrams
   * queued during the stall, and the awareness score rises. Timer lateness on a busy host is a
   * few ms; a false alarm only delays an expired suspicion by probeTimeoutMs.
   * @default 50
   */
  lateWakeToleranceMs: number;
  /**
   * Gossip retransmit multiplier: an update is piggybacked at most
   * retransmitMult · ceil(log10(N + 1)) times. memberlist uses 4; at 20 % loss that left a
   * member missing a join for a whole sync period in ~2 % of the simulated joins, and extra
   * retransmissions ride on datagrams that are sent anyway.
   * @default 6
   */
  retransmitMult: number;
  /** Period of the dedicated gossip send (updates not yet piggybacked elsewhere). @default 200 */
  gossipIntervalMs: number;
  /**
   * Random live members a notice is pushed to at once, besides gossip: a death or leave by
   * every member that first learns it, a refutation by the refuted member. A member then gets
   * about noticeFanout pushes, so at 20 % loss it misses all of them with probability about
   * e^(−0.8·fanout): 9 % at 3, under 1 % at 6. `hookd bench membership --nodes 50 --loss 0.2
   * --minutes 20 --seeds 4`: fanout 3 gives detection p50 1.76 s and p99 2.94 s, 6 gives 1.69 s
   * and 2.59 s, against 1.74 s and 2.62 s when every notice went to every member, at 41.8
   * instead of 45.2 packets per node per second (README, Membership, for 5 and 200 nodes).
   * @default 6
   */
  noticeFanout: number;
  /** Members sent a gossip packet each gossip period. @default 3 */
  gossipFanout: number;
  /**
   * Recently dead members still receive gossip for this long, so the side of a healed partition
   * learns it was declared dead and refutes. @default 30000
   */
  gossipToDeadMs: number;
  /**
   * Period of the full state sync (push-pull) with one random member: a slow anti-entropy for
   * anything gossip missed, and the way healed partitions converge. @default 10000
   */
  syncIntervalMs: number;
  /** A node that has not heard back from any seed retries the join this often. @default 1000 */
  joinRetryMs: number;
  /**
   * Dead or left members leave the table after this long; a bounded tombstone keeps their last
   * incarnation so a stale alive message cannot resurrect them. @default 30000
   */
  deadReapMs: number;
  /** Tombstones kept (oldest evicted first). @default 1024 */
  tombstonesMax: number;
  /** Most members the table accepts; more are refused and counted. @default 1024 */
  membersMax: number;
  /**
   * Largest membership datagram (a message plus piggybacked gossip). Fits one Ethernet frame
   * after the transport's header and MAC. Full state syncs are exempt (sent reliably).
   * @default 1100
   */
  packetBytesMax: number;
  /** Most indirect probes this node relays at once for others; more are refused. @default 256 */
  relayPendingMax: number;
  /** Most distinct updates queued for gossip; the most-sent are dropped first. @default 1024 */
  gossipQueueMax: number;
}

export const membershipDefaults: Readonly<MembershipConfig> = Object.freeze({
  probeIntervalMs: 200,
  probeTimeoutMs: 100,
  indirectChecks: 3,
  suspicionMult: 4,
  suspicionMaxTimeoutMult: 5,
  awarenessMaxMultiplier: 4,
  lateWakeToleranceMs: 50,
  retransmitMult: 6,
  gossipIntervalMs: 200,
  noticeFanout: 6,
  gossipFanout: 3,
  gossipToDeadMs: 30_000,
  syncIntervalMs: 10_000,
  joinRetryMs: 1_000,
  deadReapMs: 30_000,
  tombstonesMax: 1024,
  membersMax: 1024,
  packetBytesMax: 1100,
  relayPendingMax: 256,
  gossipQueueMax: 1024,
});

/** Smallest membership packet: the largest single message (a full-length alive) fits. */
export const MEMBERSHIP_PACKET_BYTES_MIN = 600;

export function validateMembershipConfig(config: MembershipConfig): MembershipConfig {
  positiveInteger("membership.probeIntervalMs", config.probeIntervalMs);
  positiveInteger("membership.probeTimeoutMs", config.probeTimeoutMs);
  nonNegative("membership.indirectChecks", config.indirectChecks);
  if (!Number.isInteger(config.indirectChecks)) {
    throw new RangeError(
      `membership.indirectChecks must be an integer, got ${config.indirectChecks}`,
    );
  }
  positiveInteger("membership.suspicionMult", config.suspicionMult);
  positiveInteger("membership.suspicionMaxTimeoutMult", config.suspicionMaxTimeoutMult);
  positiveInteger("membership.awarenessMaxMultiplier", config.awarenessMaxMultiplier);
  positiveInteger("membership.lateWakeToleranceMs", config.lateWakeToleranceMs);
  positiveInteger("membership.retransmitMult", config.retransmitMult);
  positiveInteger("membership.gossipIntervalMs", config.gossipIntervalMs);
  nonNegative("membership.noticeFanout", config.noticeFanout);
  if (!Number.isInteger(config.noticeFanout)) {
    throw new RangeError(
      `membership.noticeFanout must be an integer, got ${config.noticeFanout}`,
    );
  }
  positiveInteger("membership.gossipFanout", config.gossipFanout);
  nonNegative("membership.gossipToDeadMs", config.gossipToDeadMs);
  positiveInteger("membership.syncIntervalMs", config.syncIntervalMs);
  positiveInteger("membership.joinRetryMs", config.joinRetryMs);
  positiveInteger("membership.deadReapMs", config.deadReapMs);
  positiveInteger("membership.tombstonesMax", config.tombstonesMax);
  positiveInteger("membership.membersMax", config.membersMax);
  positiveInteger("membership.packetBytesMax", config.packetBytesMax);
  positiveInteger("membership.relayPendingMax", config.relayPendingMax);
  positiveInteger("membership.gossipQueueMax", config.gossipQueueMax);
  // The ack must be awaited for less than a period, or no time is left for indirect probes.
  relation(
    "membership.probeTimeoutMs",
    config.probeTimeoutMs,
    "<",
    "membership.probeIntervalMs",
    config.probeIntervalMs,
  );
  // The largest single message (a full-length alive) must fit a packet with its header.
  relation(
    "membership.packetBytesMax (min)",
    MEMBERSHIP_PACKET_BYTES_MIN,
    "<=",
    "membership.packetBytesMax",
    config.packetBytesMax,
  );
  return config;
}
