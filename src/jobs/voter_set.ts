/**
 * The configured voters as each piece of the replication core sees them: the core works them
 * out once (replication_core.ts) and hands the same view to its submit path, proposal driver,
 * job duties and catch-up client.
 *
 * Owns the shape only; must not import anything.
 */

export interface VoterSet {
  /** This node's voter address. */
  readonly self: string;
  /** The configured voters, this node included. */
  readonly voters: readonly string[];
  /** The voters but this node. */
  readonly peers: readonly string[];
  /** Voters that make a majority: ⌊N/2⌋ + 1. */
  readonly quorum: number;
}
