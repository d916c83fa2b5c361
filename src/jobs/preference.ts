/**
 * Job ownership: each job's preference list is the configured voters ranked by a rendezvous
 * (highest-random-weight) hash of (job id, voter). The owner is the first voter in that list
 * that the local membership view does not hold dead. Rendezvous hashing needs no ring and no
 * coordination: every node computes the same list from the same voter set, and when a voter
 * dies only its jobs move (each to its own next voter), spread evenly over the survivors.
 *
 * Owns the hash and the ranking only; pure functions.
 */

/** 32-bit FNV-1a over UTF-16 code units, then a murmur3 finaliser for avalanche. */
function hash32(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The weight of `voter` for `jobId`: higher ranks first. */
export function rendezvousWeight(jobId: string, voter: string): number {
  return weightOf(jobId, voter, voterSeed(voter), hash32(jobId, JOB_SEED));
}

const VOTER_SEED = 0x9e3779b9;
const JOB_SEED = 0x7f4a7c15;

/**
 * Each voter's seed hash, computed once: voters are a handful of fixed strings, and ownership
 * is asked for on every record a node applies, so the hot path hashes each string once.
 */
const voterSeeds = new Map<string, number>();
/** Bound on remembered voter seeds (a cluster has a handful; tests build many). */
const VOTER_SEEDS_MAX = 4096;

function voterSeed(voter: string): number {
  let seed = voterSeeds.get(voter);
  if (seed === undefined) {
    if (voterSeeds.size >= VOTER_SEEDS_MAX) voterSeeds.clear();
    seed = hash32(voter, VOTER_SEED);
    voterSeeds.set(voter, seed);
  }
  return seed;
}

/** Two 32-bit halves make ties (and so ordering by the voter string) vanishingly rare. */
function weightOf(jobId: string, voter: string, seedOfVoter: number, seedOfJob: number): number {
  return hash32(jobId, seedOfVoter) * 0x10_0000 + (hash32(voter, seedOfJob) >>> 12);
}

/** `voters` ranked for `jobId`, best first. Ties break by voter string, so all nodes agree. */
export function preferenceList(jobId: string, voters: readonly string[]): string[] {
  return voters
    .map((voter) => ({ voter, weight: rendezvousWeight(jobId, voter) }))
    .sort((a, b) => b.weight - a.weight || (a.voter < b.voter ? -1 : a.voter > b.voter ? 1 : 0))
    .map((x) => x.voter);
}

/** The first voter of `jobId`'s list that `isDown` does not reject (undefined: all are down). */
export function ownerOf(
  jobId: string,
  voters: readonly string[],
  isDown: (voter: string) => boolean,
): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  const seedOfJob = hash32(jobId, JOB_SEED);
  for (const voter of voters) {
    if (isDown(voter)) continue;
    const w = weightOf(jobId, voter, voterSeed(voter), seedOfJob);
    if (w > bestWeight || (w === bestWeight && best !== undefined && voter < best)) {
      best = voter;
      bestWeight = w;
    }
  }
  return best;
}

/** The first voter of `jobId`'s list, regardless of liveness. */
export function preferredOwner(jobId: string, voters: readonly string[]): string {
  const owner = ownerOf(jobId, voters, () => false);
  if (owner === undefined) throw new RangeError("preferredOwner: no voters");
  return owner;
}
