/**
 * Chaos runs (src/chaos/): `hookd chaos`, its seeded fault schedule and its checks
 *
 * Part of hookd's configuration, kept beside its only users rather than in src/config/ (see
 * src/config.ts for the other areas): each default with its unit in its name and the reason for
 * its value, and the validator of this area's relations.
 */

import { nonNegative, positiveInteger, probability, relation } from "../config/checks.ts";

/** A closed range `[min, max]` a duration or probability is drawn from, uniformly. */
export type Range = readonly [number, number];

export interface ChaosConfig {
  /** Submits per second the load offers, open loop, round-robin over the nodes. @default 100 */
  rate: number;
  /** Load before the first fault, ms: the cluster settles and delivers a baseline. @default 5_000 */
  warmupMs: number;
  /** Time between two fault starts, ms. @default [1_500, 5_000] */
  gapMs: Range;
  /** Most nodes impaired at once (killed, stopped, cut off by a partition). @default 2 */
  impairedMax: number;
  /** How long a SIGKILLed node stays down before its restart, ms. @default [2_000, 8_000] */
  killDownMs: Range;
  /**
   * How long a node stays SIGSTOPped, ms: past the detection bound at 5 nodes (6.4 s with
   * healthy probers, see membership) plus a confirm round (3 s), so the others declare it
   * dead and take its jobs over before it resumes. @default [10_000, 14_000]
   */
  stopMs: Range;
  /** A one-way partition (a node's ingress from 1-2 peers dropped), ms. @default [5_000, 12_000] */
  onewayMs: Range;
  /** A full partition of two nodes from three, ms. @default [8_000, 15_000] */
  splitMs: Range;
  /** An ingress loss burst on 1-3 nodes, ms. @default [3_000, 8_000] */
  lossMs: Range;
  /** Its loss probability: up to the 20 % the design must survive, and past it. @default [0.2, 0.5] */
  lossProbability: Range;
  /** A receiver outage (500, 503, slow, reset), ms. @default [3_000, 10_000] */
  outageMs: Range;
  /**
   * Retry delays the nodes run with, ms: short, so that jobs failed by an outage finish within
   * the run; about 30 s of retrying at the last step outlasts every outage. @default
   * [100, 250, 500, 1_000, 2_000]
   */
  retryScheduleMs: readonly number[];
  /**
   * Attempts a chaos job gets before it is dead-lettered (the largest a submit may ask, jobs.maxAttemptsMax):
   * at the schedule's last step that is over three minutes of failures, so never within a run.
   * @default 100
   */
  jobMaxAttempts: number;
  /** Per-attempt timeout of a chaos job, ms; the slow receiver holds requests longer. @default 1_000 */
  jobTimeoutMs: number;
  /** How long the slow receiver holds a request, ms (past `jobTimeoutMs`). @default 2_000 */
  slowReceiverMs: number;
  /** A submit with no answer after this long counts as an error (not acked), ms. @default 5_000 */
  submitTimeoutMs: number;
  /**
   * Submits the generator keeps waiting for answers at once (its --in-flight): a stopped node
   * holds its share until the submit timeout; past it a due submit waits its turn. @default 2_000
   */
  submitsInFlightMax: number;
  /**
   * After the heal, how long the run waits for every acknowledged job to reach the sink, ms;
   * a breaker opened by an outage may stay open up to a minute on the node. @default 120_000
   */
  drainMsMax: number;
  /**
   * A member-dead about a node that was killed, stopped or cut off from the observer is
   * explained for this long after that fault ended (a late notice of the old incarnation);
   * later, or without such a fault, it counts as false. Detection bound (11.8 s at the largest
   * awareness stretch) plus dissemination. @default 15_000
   */
  deadExplainedMs: number;
  /** Longest the nodes may take to start and report ready, ms. @default 60_000 */
  readyLimitMs: number;
}

export const chaosDefaults: Readonly<ChaosConfig> = Object.freeze(
  {
    rate: 100,
    warmupMs: 5_000,
    gapMs: [1_500, 5_000],
    impairedMax: 2,
    killDownMs: [2_000, 8_000],
    stopMs: [10_000, 14_000],
    onewayMs: [5_000, 12_000],
    splitMs: [8_000, 15_000],
    lossMs: [3_000, 8_000],
    lossProbability: [0.2, 0.5],
    outageMs: [3_000, 10_000],
    retryScheduleMs: Object.freeze([100, 250, 500, 1_000, 2_000]),
    jobMaxAttempts: 100,
    jobTimeoutMs: 1_000,
    slowReceiverMs: 2_000,
    submitTimeoutMs: 5_000,
    submitsInFlightMax: 2_000,
    drainMsMax: 120_000,
    deadExplainedMs: 15_000,
    readyLimitMs: 60_000,
  } as const,
);

/**
 * The relations a chaos run's meaning rests on: the slow receiver holds a request past the
 * attempt timeout (else a "slow" outage tests nothing), a job retries for longer than the
 * longest outage (else an outage dead-letters jobs and `lost` 0 proves less), the schedule's
 * loop advances (gapMs > 0) and every range is ordered.
 */
export function validateChaosConfig(config: ChaosConfig): ChaosConfig {
  for (
    const name of [
      "gapMs",
      "killDownMs",
      "stopMs",
      "onewayMs",
      "splitMs",
      "lossMs",
      "lossProbability",
      "outageMs",
    ] as const
  ) {
    const [min, max] = config[name];
    nonNegative(`chaos.${name}[0]`, min);
    relation(`chaos.${name}[0]`, min, "<=", `chaos.${name}[1]`, max);
  }
  probability("chaos.lossProbability[1]", config.lossProbability[1]);
  relation("0", 0, "<", "chaos.gapMs[0]", config.gapMs[0]);
  for (const name of ["jobMaxAttempts", "impairedMax", "submitsInFlightMax"] as const) {
    positiveInteger(`chaos.${name}`, config[name]);
  }
  relation(
    "chaos.jobTimeoutMs",
    config.jobTimeoutMs,
    "<",
    "chaos.slowReceiverMs",
    config.slowReceiverMs,
  );
  const steps = config.retryScheduleMs;
  let retryingMs = 0;
  for (let attempt = 1; attempt < config.jobMaxAttempts; attempt++) {
    retryingMs += steps[Math.min(attempt, steps.length) - 1] ?? 0;
  }
  relation("chaos.outageMs[1]", config.outageMs[1], "<", "retrying time (ms)", retryingMs);
  return config;
}
