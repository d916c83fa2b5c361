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
}

export const dashboardDefaults: Readonly<DashboardConfig> = Object.freeze({
  sampleIntervalMs: 1000,
  seriesPoints: 300,
  receiverWindowMs: 60_000,
  receiverWindowBuckets: 12,
  receiverOriginsMax: 256,
  failureDetailCharsMax: 200,
});

export function validateDashboardConfig(config: DashboardConfig): DashboardConfig {
  for (
    const name of [
      "sampleIntervalMs",
      "seriesPoints",
      "receiverWindowMs",
      "receiverWindowBuckets",
      "receiverOriginsMax",
      "failureDetailCharsMax",
    ] as const
  ) positiveInteger(`dashboard.${name}`, config[name]);
  relation(
    "dashboard.receiverWindowBuckets",
    config.receiverWindowBuckets,
    "<=",
    "dashboard.receiverWindowMs",
    config.receiverWindowMs,
  );
  return config;
}
