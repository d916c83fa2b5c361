/**
 * Dashboard (src/dashboard/): what a node keeps for its own page, beyond its metrics
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { positiveInteger, relation } from "./checks.ts";

export interface DashboardConfig {
  /**
   * One point of the node's series per this many ms (submits, deliveries, p50/p99). One
   * second is what a person reads as "live"; the page polls at the same pace.
   * @default 1000
   */
  sampleIntervalMs: number;
  /**
   * A point may close up to this many ms late, at a wake-up the node makes anyway (membership's
   * probe timer fires every 100-200 ms): an idle node then does not wake for its dashboard,
   * which on the 2-core VM costs about 2 of an idle node's 38 wake-ups a second
   * (bench/results/session23/wakes/). A point is stamped when it closes.
   * @default 250
   */
  sampleSlackMs: number;
  /**
   * Points kept: 300 at one a second is the last five minutes, enough to see a burst come and
   * go; about 40 KiB of JSON per poll.
   * @default 300
   */
  seriesPoints: number;
  /**
   * "Recent" for a receiver's failure rate, ms: long enough that a receiver failing one
   * request in ten shows a rate, short enough that one that recovered stops standing out
   * within a minute.
   * @default 60_000
   */
  receiverWindowMs: number;
  /** Buckets the receiver window slides in (60 s / 12 = 5 s steps). @default 12 */
  receiverWindowBuckets: number;
  /**
   * Receiver origins remembered; past it the one attempted longest ago is forgotten, so a
   * node delivering to many receivers keeps bounded memory (about 40 numbers each).
   * @default 256
   */
  receiverOriginsMax: number;
  /** Longest last-failure detail kept per origin, characters. @default 200 */
  failureDetailCharsMax: number;
  /**
   * "Recent" for an endpoint's health on the dashboard, ms: the attempts to it that started
   * this long ago at most, counted from the delivery records every node applies (so from every
   * node's attempts). Longer than a receiver's window: an endpoint's jobs retry for minutes,
   * and a person reading "3 of 40 failed" wants the retries of the last burst in it.
   * @default 900_000
   */
  endpointHealthWindowMs: number;
  /** The endpoint window slides in steps of this many ms (15 min / 1 min). @default 60_000 */
  endpointHealthBucketMs: number;
}

export const dashboardDefaults: Readonly<DashboardConfig> = Object.freeze({
  sampleIntervalMs: 1000,
  sampleSlackMs: 250,
  seriesPoints: 300,
  receiverWindowMs: 60_000,
  receiverWindowBuckets: 12,
  receiverOriginsMax: 256,
  failureDetailCharsMax: 200,
  endpointHealthWindowMs: 900_000,
  endpointHealthBucketMs: 60_000,
});

export function validateDashboardConfig(config: DashboardConfig): DashboardConfig {
  for (
    const name of [
      "sampleIntervalMs",
      "sampleSlackMs",
      "seriesPoints",
      "receiverWindowMs",
      "receiverWindowBuckets",
      "receiverOriginsMax",
      "failureDetailCharsMax",
      "endpointHealthWindowMs",
      "endpointHealthBucketMs",
    ] as const
  ) positiveInteger(`dashboard.${name}`, config[name]);
  relation(
    "dashboard.receiverWindowBuckets",
    config.receiverWindowBuckets,
    "<=",
    "dashboard.receiverWindowMs",
    config.receiverWindowMs,
  );
  relation(
    "dashboard.sampleSlackMs",
    config.sampleSlackMs,
    "<",
    "dashboard.sampleIntervalMs",
    config.sampleIntervalMs,
  );
  relation(
    "dashboard.endpointHealthBucketMs",
    config.endpointHealthBucketMs,
    "<=",
    "dashboard.endpointHealthWindowMs",
    config.endpointHealthWindowMs,
  );
  return config;
}
