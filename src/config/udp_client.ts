/**
 * UDP job client (src/jobs/udp_client.ts): a non-member endpoint that submits on JOBS_CHANNEL
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

import { positiveInteger } from "./checks.ts";

export interface UdpClientConfig {
  /**
   * Longest a submit waits for its `client-result`, ms; then it resolves as `timeout` (its
   * outcome unknown: the node may still acknowledge it). A node answers every submit within
   * `jobs.submitTimeoutMs` (1 s); the rest covers retransmissions of the request and the
   * answer at 20 % loss.
   * @default 3000
   */
  requestTimeoutMs: number;
  /**
   * Submits waiting for their answers at once, over all nodes. Past it a submit is refused at
   * once (`client_busy`) instead of queueing without end. A node takes `jobs.proposalsMax`
   * (20,000) at once; five nodes' worth is more than any one client needs.
   * @default 50_000
   */
  submitsOutstandingMax: number;
  /**
   * Submits to one node made in one event-loop turn travel in one `client-submit` message, up
   * to this many (the transport fragments a message into datagrams; 256 submits of a few
   * hundred bytes is about 64 KiB, well under `transport.messageBytesMax`).
   * @default 256
   */
  batchSubmitsMax: number;
}

export const udpClientDefaults: Readonly<UdpClientConfig> = Object.freeze({
  requestTimeoutMs: 3000,
  submitsOutstandingMax: 50_000,
  batchSubmitsMax: 256,
});

export function validateUdpClientConfig(config: UdpClientConfig): UdpClientConfig {
  for (const name of ["requestTimeoutMs", "submitsOutstandingMax", "batchSubmitsMax"] as const) {
    positiveInteger(`udpClient.${name}`, config[name]);
  }
  return config;
}
