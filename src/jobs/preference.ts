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
  return fmix32(h);
}

/** murmur3's 32-bit finaliser: every input bit flips each output bit with probability ~1/2. */
function fmix32(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const VOTER_SEED_A = 0x9e3779b9;
const VOTER_SEED_B = 0x85ebca77;
const JOB_SEED_A = 0x7f4a7c15;
const JOB_SEED_B = 0x2545f491;

/**
 * Each voter's two seed hashes, computed once: voters are a handful of fixed strings, and
 * ownership is asked for on every record a node applies and for every id it mints.
 */
const voterSeeds = new Map<string, readonly [number, number]>();
/** Bound on remembered voter seeds (a cluster has a handful; tests build many). */
const VOTER_SEEDS_MAX = 4096;

function voterSeed(voter: string): readonly [number, number] {
  let seed = voterSeeds.get(voter);
  if (seed === undefined) {
    if (voterSeeds.size >= VOTER_SEEDS_MAX) voterSeeds.clear();
    seed = [hash32(voter, VOTER_SEED_A), hash32(voter, VOTER_SEED_B)];
    voterSeeds.set(voter, seed);
  }
  return seed;
}

/**
 * The job's two hash lanes, in one pass over its id (ownership is hot: one string pass per
 * lookup, then two integer mixes per voter).
 */
function jobLanes(jobId: string): [number, number] {
  let a = (0x811c9dc5 ^ JOB_SEED_A) >>> 0;
  let b = (0x811c9dc5 ^ JOB_SEED_B) >>> 0;
  for (let i = 0; i < jobId.length; i++) {
    const c = jobId.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return [fmix32(a), fmix32(b)];
}

/** Two mixed 32-bit halves: ties (and so ordering by the voter string) are vanishingly rare. */
function weightOf(lanes: readonly [number, number], seed: readonly [number, number]): number {
  return fmix32(lanes[0] ^ seed[0]) * 0x10_0000 + (fmix32(lanes[1] ^ seed[1]) >>> 12);
}

/** The weight of `voter` for `jobId`: higher ranks first. */
export function rendezvousWeight(jobId: string, voter: string): number {
  return weightOf(jobLanes(jobId), voterSeed(voter));
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
  const lanes = jobLanes(jobId);
  for (const voter of voters) {
    if (isDown(voter)) continue;
    const w = weightOf(lanes, voterSeed(voter));
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
