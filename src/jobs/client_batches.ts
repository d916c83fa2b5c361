/**
 * Submits that arrive from UDP clients in batches (`client-submit`): each submit of a batch
 * runs as an internal request of the core, and the batch is answered in one `client-result`
 * once every one of its submits has an outcome.
 *
 * Owns: internal request ids of client submits and the outcomes collected per batch. Must
 * not validate or run submits, or send anything: the core (replication_core.ts) runs each
 * submit and sends the result `settle` hands back.
 */

import type { ClientOutcome } from "./job_messages.ts";
import type { SubmitOutcome } from "./service.ts";

interface ClientBatch {
  readonly address: string;
  readonly clientRequestId: number;
  readonly outcomes: Array<ClientOutcome | undefined>;
  pending: number;
}

/** A completed batch: its client's address and the `client-result` to send there. */
export interface ClientResult {
  readonly address: string;
  readonly requestId: number;
  readonly outcomes: ClientOutcome[];
}

export class ClientBatches {
  readonly #batches = new Map<number, ClientBatch>();
  /** Internal submit request ids that belong to a UDP client batch: id → (batch, index). */
  readonly #requests = new Map<number, { batch: number; index: number }>();
  #nextInternalId = 0x4000_0000;
  #nextBatch = 1;

  /** Opens a batch of `size` (at least 1) submits from `address`; returns its id. */
  open(address: string, clientRequestId: number, size: number): number {
    const batchId = this.#nextBatch++;
    this.#batches.set(batchId, {
      address,
      clientRequestId,
      outcomes: new Array(size).fill(undefined),
      pending: size,
    });
    return batchId;
  }

  /** The internal request id of submit `index` of batch `batchId`. */
  request(batchId: number, index: number): number {
    const requestId = this.#nextInternalId++;
    this.#requests.set(requestId, { batch: batchId, index });
    return requestId;
  }

  /**
   * Records the outcome of request `requestId`. Returns "not-client" if it is not a client
   * submit (the caller answers it), the batch's result once its last submit settled, else
   * undefined.
   */
  settle(requestId: number, outcome: SubmitOutcome): ClientResult | "not-client" | undefined {
    const client = this.#requests.get(requestId);
    if (client === undefined) return "not-client";
    this.#requests.delete(requestId);
    const batch = this.#batches.get(client.batch);
    if (batch === undefined) return undefined;
    batch.outcomes[client.index] = outcome.ok
      ? { ok: true, id: outcome.id, existing: outcome.existing }
      : { ok: false, code: outcome.code, message: outcome.message };
    if (--batch.pending !== 0) return undefined;
    this.#batches.delete(client.batch);
    return {
      address: batch.address,
      requestId: batch.clientRequestId,
      outcomes: batch.outcomes.map((o) => o!),
    };
  }
}
