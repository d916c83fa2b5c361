/**
 * Every default hookd uses, in one place, with its unit in its name and the reason for its
 * value. Each area has a `XxxConfig` type, its `xxxDefaults`, and a `validateXxxConfig` that
 * checks the relations between its limits once at start-up and throws a `RangeError` naming
 * the option and its value.
 *
 * Each area lives in src/config/<area>.ts; this barrel re-exports them all, so `../config.ts`
 * still names every default. Settings only one command uses live beside it: the CLI clients'
 * in src/cli/cli_config.ts, chaos runs' in src/chaos/chaos_config.ts (a barrel here would
 * make the bottom layer import the top one).
 *
 * Owns defaults and validation only. Subsystems receive a config object; none reads
 * environment variables or flags itself.
 */

export { LINE_CHARS_MAX } from "./lib/lines.ts";
export * from "./config/job_limits.ts";
export * from "./config/endpoints.ts";
export * from "./config/wal.ts";
export * from "./config/delivery.ts";
export * from "./config/membership.ts";
export * from "./config/transport.ts";
export * from "./config/api.ts";
export * from "./config/jobs.ts";
export * from "./config/udp_client.ts";
export * from "./config/node.ts";
export * from "./config/fault_injection.ts";
export * from "./config/dashboard.ts";
export * from "./config/checks.ts";
