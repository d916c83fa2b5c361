/**
 * Node process (src/node/node.ts): noticing that the process was frozen
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

export interface NodeConfig {
  /** Beat of the freeze monitor (src/lib/stall_monitor.ts), ms: one cheap timer. @default 100 */
  stallCheckIntervalMs: number;
  /**
   * A gap between beats longer than this means the process was frozen (SIGSTOP, a paused VM)
   * and may have lost its jobs to the others: the store stops delivering and catches up from a
   * majority before it attempts anything again. The fastest the others can declare a silent
   * node dead is about one probe (probeTimeoutMs + an indirect round, ~300 ms) plus the
   * shortest suspicion (800 ms), so a shorter freeze cannot have cost it its jobs; a false
   * alarm (a 1 s event-loop stall) costs one catch-up round trip. @default 1_000
   */
  stallThresholdMs: number;
}

export const nodeDefaults: Readonly<NodeConfig> = Object.freeze({
  stallCheckIntervalMs: 100,
  stallThresholdMs: 1_000,
});
