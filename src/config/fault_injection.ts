/**
 * Fault injection (src/node/fault_injection.ts): TEST-ONLY, on with `hookd node --fault-injection`
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

export interface FaultInjectionConfig {
  /** Largest control request body, bytes: a command names a few addresses. @default 65_536 */
  controlBodyBytesMax: number;
  /** Addresses one partition command may name: far more than any local cluster. @default 64 */
  partitionAddressesMax: number;
  /**
   * Longest a fault with a duration lasts, ms: a mistyped `ms` still ends, so a node cannot be
   * left partitioned for days by a harness that died. @default 600_000 (10 min)
   */
  faultDurationMaxMs: number;
}

export const faultInjectionDefaults: Readonly<FaultInjectionConfig> = Object.freeze({
  controlBodyBytesMax: 65_536,
  partitionAddressesMax: 64,
  faultDurationMaxMs: 600_000,
});
