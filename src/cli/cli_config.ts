/**
 * Command-line clients of the API: hookd submit, status and cluster (src/cli/)
 *
 * Part of hookd's configuration, kept beside its only users rather than in src/config/ (see
 * src/config.ts for the other areas): each default with its unit in its name and the reason for
 * its value, and the validator of this area's relations.
 */

import { positiveInteger, relation } from "../config/checks.ts";

export interface CliConfig {
  /**
   * Longest one API request of `submit` or `status` may take before the next node is tried,
   * ms. A node answers a submit within jobs.submitTimeoutMs (1 s) or refuses it at once; ten
   * times that covers a stalled event loop without leaving a user staring at nothing.
   * @default 10_000
   */
  requestTimeoutMs: number;
  /**
   * Largest API response the CLI reads, bytes; a node's /metrics is tens of KiB and a job
   * view with its 1 MiB payload a little over 1 MiB. A larger answer is an error, not memory.
   * @default 8_388_608
   */
  responseBytesMax: number;
  /**
   * How long `submit --wait` follows a job before it gives up (exit 4; the job goes on), ms.
   * It covers the first retry (5 s) of a receiver that is briefly down; the next is minutes
   * away on the default schedule, which `hookd status` can follow instead.
   * @default 120_000
   */
  waitTimeoutMs: number;
  /** `submit --wait`'s first pause between two reads of the job, ms. @default 100 */
  waitPollFirstMs: number;
  /**
   * Longest pause between two reads of a followed job, ms (pauses double up to it): about one
   * request every two seconds per waiting CLI, nothing next to what a node serves.
   * @default 2000
   */
  waitPollMaxMs: number;
  /**
   * `status` scrapes every node's /metrics twice this far apart and reports counters' rates
   * over the window (the node's counters are totals since it started). One second: long
   * enough to see a few submits, short enough for a command a person waits on.
   * @default 1000
   */
  statusWindowMs: number;
  /** `cluster` gives its nodes this long to converge and report ready, ms. @default 60_000 */
  clusterReadyTimeoutMs: number;
  /** `cluster --sink` reads the sink's counters this often to report receipts, ms. @default 500 */
  clusterSinkPollMs: number;
}

export const cliDefaults: Readonly<CliConfig> = Object.freeze({
  requestTimeoutMs: 10_000,
  responseBytesMax: 8 * 1024 * 1024,
  waitTimeoutMs: 120_000,
  waitPollFirstMs: 100,
  waitPollMaxMs: 2000,
  statusWindowMs: 1000,
  clusterReadyTimeoutMs: 60_000,
  clusterSinkPollMs: 500,
});

export function validateCliConfig(config: CliConfig): CliConfig {
  for (
    const name of [
      "requestTimeoutMs",
      "responseBytesMax",
      "waitTimeoutMs",
      "waitPollFirstMs",
      "waitPollMaxMs",
      "statusWindowMs",
      "clusterReadyTimeoutMs",
      "clusterSinkPollMs",
    ] as const
  ) positiveInteger(`cli.${name}`, config[name]);
  relation(
    "cli.waitPollFirstMs",
    config.waitPollFirstMs,
    "<=",
    "cli.waitPollMaxMs",
    config.waitPollMaxMs,
  );
  return config;
}
