/**
 * One simulated node's place in the cluster across its lives: its identity, its disk (kept
 * across crashes), its clock skew, the running stack and store of its current life, and the
 * faults waiting for it.
 *
 * Owns the shape only; cluster_sim.ts starts and crashes the lives, sim_faults.ts arms the
 * traps, sim_workload.ts submits to the live ones.
 */

import type { JobStore } from "../jobs/job_store.ts";
import type { SimDisk } from "./disk.ts";
import type { SimNodeStack } from "./sim_node_stack.ts";

export interface Slot {
  readonly nodeId: string;
  readonly address: string;
  readonly disk: SimDisk;
  readonly skewMs: number;
  life: number;
  stack: SimNodeStack | undefined;
  store: JobStore | undefined;
  /** Stays down after the heal. */
  permanent: boolean;
  /** A crash waiting for the node's next fsync (until `untilMs`), then down for `downMs`. */
  syncTrap: { downMs: number; untilMs: number } | undefined;
  /**
   * A crash waiting for the node's next acknowledgement (until `untilMs`), then down for
   * `downMs`: its lazy COMMIT has not left yet, so the job is held uncommitted everywhere
   * and only a confirm round by its next owner makes it deliverable.
   */
  ackTrap: { downMs: number; untilMs: number } | undefined;
  /** An injected disk fault: waiting to strike, or struck (the WAL failed). */
  diskFault: "armed" | "failed" | undefined;
}
