/**
 * What the replication core asks its shell (job_store.ts) to carry out, in a module of its own
 * so the pieces the core delegates to can name it without importing the core back.
 *
 * Owns: the `ReplicationOutput` union and the refusal shape of its answers. Must not: hold
 * logic; it is types only.
 */

import type { DeliveryJob, ResumeState } from "../delivery/types.ts";
import type { EndpointState } from "./endpoint_model.ts";
import type { JobStateSnapshot } from "./job_model.ts";
import type { EventOutcome, RefusalCode, SubmitOutcome } from "./service.ts";

export type ReplicationOutput =
  /** Append `payload` to the WAL; call `persisted(token)` once it is durable. */
  | { readonly type: "append"; readonly token: number; readonly payload: Uint8Array }
  /**
   * Send `bytes` reliably on JOBS_CHANNEL to a voter or a client's transport address.
   * `ackMayWait`: the receiver may hold the transport's acknowledgement (transport.lazyAckMs).
   */
  | {
    readonly type: "send";
    readonly to: string;
    readonly bytes: Uint8Array;
    readonly ackMayWait: boolean;
  }
  | { readonly type: "submit-done"; readonly requestId: number; readonly outcome: SubmitOutcome }
  | {
    readonly type: "revive-done";
    readonly requestId: number;
    readonly outcome: { readonly ok: true } | Refusal;
  }
  | {
    /** An endpoint write is durable on a majority (with the value written), or refused. */
    readonly type: "endpoint-done";
    readonly requestId: number;
    readonly outcome: { readonly ok: true; readonly endpoint: EndpointState } | Refusal;
  }
  | {
    /**
     * A client's read of an endpoint has read a majority and the table holds the newest value
     * (answer from it), or it could not.
     */
    readonly type: "endpoint-read-done";
    readonly requestId: number;
    readonly outcome: { readonly ok: true } | Refusal;
  }
  | {
    /** An event (and every job of it) is durable on a majority, or refused. */
    readonly type: "event-done";
    readonly requestId: number;
    readonly outcome: EventOutcome;
  }
  | {
    readonly type: "query-done";
    readonly requestId: number;
    readonly state: JobStateSnapshot | undefined;
  }
  /** The job is this node's to deliver (committed, owned, caught up). */
  | { readonly type: "schedule"; readonly job: DeliveryJob; readonly resume: ResumeState }
  /** The job stopped being this node's to deliver (finished elsewhere, owner changed). */
  | { readonly type: "cancel"; readonly jobId: string }
  /** Time to write a checkpoint: call `wal.checkpoint(() => core.snapshotRecords())`. */
  | { readonly type: "checkpoint" }
  /** A notable change for logs: phase changes, handoffs, catch-up progress. */
  | { readonly type: "log"; readonly event: string; readonly fields: Record<string, unknown> };

export interface Refusal {
  readonly ok: false;
  readonly code: RefusalCode;
  readonly message: string;
  readonly retryAfterS?: number;
}

/** A retry by hand refused: its `revive-done` output. */
export function reviveRefused(
  requestId: number,
  code: RefusalCode,
  message: string,
  retryAfterS?: number,
): ReplicationOutput {
  return {
    type: "revive-done",
    requestId,
    outcome: { ok: false, code, message, ...(retryAfterS !== undefined ? { retryAfterS } : {}) },
  };
}
