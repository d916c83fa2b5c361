/**
 * Node process (src/node/node.ts): noticing that the process was frozen
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

export interface NodeConfig {
  /**
   * Beat of the freeze monitor (src/lib/stall_monitor.ts), ms. What the monitor can promise is
   * set by the beat plus the threshold: a freeze longer than their sum (1,100 ms) is always
   * noticed. So the beat is as slow as the threshold allows: every beat is a wake-up of an idle
   * node, and at 100 ms the monitor was 10 of an idle node's 28 a second (issue 19).
   * @default 250
   */
  stallCheckIntervalMs: number;
  /**
   * A gap between beats longer than the beat plus this means the process was frozen (SIGSTOP,
   * a paused VM) and may have lost its jobs to the others: the store stops delivering and
   * catches up from a majority before it attempts anything again. The fastest the others can
   * declare a silent node dead is about one probe (probeTimeoutMs + an indirect round, ~300 ms)
   * plus the shortest suspicion (800 ms), about 1,100 ms; with the beat, 250 + 850 keeps every
   * freeze that long noticed. A false alarm (an event-loop stall past 850 ms) costs one
   * catch-up round trip. @default 850
   */
  stallThresholdMs: number;
}

export const nodeDefaults: Readonly<NodeConfig> = Object.freeze({
  stallCheckIntervalMs: 250,
  stallThresholdMs: 850,
});
