/**
 * What a whole-cluster simulation run varies and what it fixes: the profile drawn from a seed
 * (loss, duplication, delay, clock skew, fault and submit rates, torn crashes, nodes left down,
 * scaled-down jobs, WAL and transport limits) and the short delivery settings every simulated
 * node runs with.
 *
 * Owns the seed-to-profile draw only: a pure function of the seed, with generators of its own
 * so that a change elsewhere in the run never moves a profile. Used by cluster_sim.ts (the
 * driver), sim_faults.ts and sim_workload.ts; the checker reads the profile through the
 * history (sim_history.ts).
 */

import { type DeliveryConfig, deliveryDefaults } from "../config/delivery.ts";
import { type JobsConfig, jobsDefaults } from "../config/jobs.ts";
import type { TransportConfig } from "../config/transport.ts";
import type { WalConfig } from "../config/wal.ts";
import { Sfc32 } from "../lib/rng.ts";

/** Nodes in a simulated cluster (all voters). */
export const SIM_NODES = 5;

/**
 * Delivery settings of the simulated nodes: the real defaults' shape with short times, so a
 * job's whole retry schedule fits in simulated seconds. Relations the validator checks hold.
 */
export const SIM_DELIVERY: Readonly<DeliveryConfig> = Object.freeze({
  ...deliveryDefaults,
  retryScheduleMs: Object.freeze([100, 300, 1_000, 2_000, 4_000]),
  attemptTimeoutMs: 1_000,
  attemptTimeoutMaxMs: 5_000,
  // A 503's Retry-After (1-2 s here) is honoured but cannot park a job past the drain.
  retryAfterMinMs: 100,
  retryAfterMaxMs: 5_000,
  breakerOpenMs: 500,
  breakerOpenMaxMs: 4_000,
  allowPrivateTargets: true,
});

/** What a run varies, drawn from its seed (printed with a failure). */
export interface SimProfile {
  lossProbability: number;
  duplicateProbability: number;
  delayMsMax: number;
  /** Largest wall-clock skew between a node and true time, ms. */
  skewMsMax: number;
  /** Mean time between two faults, ms. */
  faultIntervalMs: number;
  /** Mean time between two submits, ms. */
  submitIntervalMs: number;
  /** Crashes keep a seeded random part of the unsynced bytes and tear it. */
  tornCrashes: boolean;
  /** Nodes left down after the heal (their jobs must be delivered by the others). */
  downAfterHeal: number;
  jobs: Partial<JobsConfig>;
  wal: Partial<WalConfig>;
  /**
   * The transport's per-peer send queue scaled down to the simulated tables (some runs): in
   * production a table of an hour's jobs is far larger than the queue (8 MiB), and a
   * catch-up reply sent whole never got through; the simulated tables are too small to show
   * it at the real size.
   */
  transport: Partial<TransportConfig>;
  /**
   * The workload also creates endpoints and sends events to them (docs/endpoints.md), and the
   * checker holds them to their invariants. Never drawn from a seed: only a run that asks for
   * it (`hookd sim --events`), so every other seed draws the same numbers as before and keeps
   * its trace hash.
   */
  events?: boolean;
  /**
   * The workload also retries dead letters by hand (`hookd sim --revives`, sim_revives.ts),
   * with short dead-letter retention. Never drawn from a seed, as `events`.
   */
  revives?: boolean;
}

/** Draws a run's profile from its seed. */
export function profileFor(seed: number): SimProfile {
  const rng = new Sfc32(seed ^ 0x5eed_c1a5);
  const pick = <T>(items: readonly T[]): T => items[rng.int(items.length)]!;
  const lossRoll = rng.next();
  const lossProbability = lossRoll < 0.2 ? 0 : lossRoll < 0.6 ? rng.next() * 0.05 : 0.05 +
    rng.next() * 0.15;
  const profile: SimProfile = {
    lossProbability: round3(lossProbability),
    duplicateProbability: rng.next() < 0.5 ? 0 : round3(rng.next() * 0.05),
    delayMsMax: round3(0.5 + rng.next() * 4.5),
    skewMsMax: pick([0, 2_000, 30_000]),
    faultIntervalMs: pick([1_500, 3_000, 6_000]),
    submitIntervalMs: pick([25, 60, 150]),
    tornCrashes: rng.next() < 0.5,
    downAfterHeal: pick([0, 0, 0, 1, 1, 2]),
    jobs: {
      checkpointBytes: pick([16 * 1024, 64 * 1024, jobsDefaults.checkpointBytes]),
      catchupLogBytesMax: pick([16 * 1024, jobsDefaults.catchupLogBytesMax]),
      messageBytesMax: pick([4 * 1024, jobsDefaults.messageBytesMax]),
      finishedRetentionMs: pick([5_000, 20_000, jobsDefaults.finishedRetentionMs]),
    },
    wal: pick([
      {},
      { segmentBytes: 128 * 1024, batchBytesMax: 64 * 1024, recordBytesMax: 32 * 1024 },
    ]),
    transport: {},
  };
  if (rng.next() < 0.25) {
    // Queues scaled to the simulated tables (a few hundred jobs, ~250 bytes of state each),
    // and the catch-up page to an eighth of the queue, as the defaults are.
    profile.transport = {
      sendQueueBytesMax: 96 * 1024,
      messageBytesMax: 48 * 1024,
      reassemblyBytesMax: 96 * 1024,
    };
    profile.jobs = { ...profile.jobs, messageBytesMax: 4 * 1024, syncReplyBytesMax: 12 * 1024 };
  }
  // Some runs shorten the idempotency window to seconds, so the workload's keyed retries,
  // picked among every key so far, also reuse keys after their window (new incarnations, with
  // new ids), some of them across node restarts, always with skewed clocks: key expiry runs
  // on each node's clock. Drawn from a generator of its own, so the other seeds' profiles
  // stay as they were.
  const reuse = new Sfc32(seed ^ 0x1d3a_0017);
  if (reuse.next() < 0.3) {
    profile.jobs = { ...profile.jobs, idempotencyWindowMs: reuse.next() < 0.5 ? 4_000 : 8_000 };
    if (profile.skewMsMax === 0) profile.skewMsMax = 2_000;
  }
  // Some runs archive delivered jobs within a second or two instead of the default's ten, so
  // the runs' reads, late records and retention meet archived jobs (job_table.ts, Archive),
  // thawed and archived again. Its own generator too.
  const archive = new Sfc32(seed ^ 0x0a7c_41e5);
  const archiveRoll = archive.next();
  if (archiveRoll < 0.5) {
    profile.jobs = { ...profile.jobs, deliveredArchiveAfterMs: archiveRoll < 0.25 ? 0 : 2_000 };
  }
  return profile;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
