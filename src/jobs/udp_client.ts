/**
 * A UDP job client: submits jobs to nodes over hookd's own transport, without HTTP. It is an
 * endpoint of the transport (it holds the cluster key, so its datagrams authenticate) with its
 * own node id, but NOT a membership member: it never probes, gossips or votes. It sends
 * `client-submit` messages on JOBS_CHANNEL to a node's UDP address, and the node answers each
 * with one `client-result` once every submit in it is majority-durable or refused — the same
 * answer the HTTP API gives. `bench replication` and the sweeps' `--submit-via udp` use it, so
 * a packet lost on ingress can be a submit, as in the write-up.
 *
 * Owns: its transport endpoint, batching (the submits made to one node in one event-loop turn
 * share one message), the outstanding requests with their deadlines (one timer, armed through
 * `DeadlineTimer` at the oldest deadline: every request gets the same timeout, so deadlines
 * arrive in send order), and the bound on outstanding submits. Must not: interpret outcomes
 * (callers do), retry (a retried submit without an idempotency key is a second job).
 */

import type { TransportConfig } from "../config/transport.ts";
import {
  type UdpClientConfig,
  udpClientDefaults,
  validateUdpClientConfig,
} from "../config/udp_client.ts";
import { DeadlineTimer } from "../lib/deadline_timer.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import type { DatagramSocket } from "../transport/datagram_socket.ts";
import { UdpTransport } from "../transport/udp_transport.ts";
import type { DeliveredMessage } from "../transport/types.ts";
import { type ClientOutcome, decodeMessage, encodeMessage, JOBS_CHANNEL } from "./job_messages.ts";
import { checkJobLimits } from "../delivery/job_limits.ts";
import type { SubmitRequest } from "./service.ts";

/** What a UDP submit comes to: the node's answer, or why the client has none. */
export type UdpSubmitOutcome =
  | ClientOutcome
  | {
    readonly ok: false;
    /**
     * `timeout`: no answer within `requestTimeoutMs` (the node may still have acknowledged
     * it); `client_busy`: `submitsOutstandingMax` reached, nothing sent; `send_refused`: the
     * transport refused the message (backpressure, closed), nothing sent; `closed`: the client
     * closed before the answer came.
     */
    readonly code: "timeout" | "client_busy" | "send_refused" | "closed";
    readonly message: string;
  };

export interface UdpJobsClientOptions {
  /** This client's transport node id (1..64 bytes), distinct from every node's. */
  readonly nodeId: string;
  readonly clusterKey: string;
  /** `host:port` to bind. @default "127.0.0.1:0" */
  readonly listen?: string;
  readonly config?: Partial<UdpClientConfig>;
  readonly transport?: Partial<TransportConfig>;
  /** Ingress loss on the client's own socket (a lost answer). @default 0 */
  readonly lossProbability?: number;
  readonly metrics?: MetricsRegistry;
  readonly runtime?: Runtime;
  /** A socket instead of binding `listen` (the simulator's). */
  readonly socket?: DatagramSocket;
}

interface Waiting {
  readonly resolve: (outcome: UdpSubmitOutcome) => void;
}

interface Outstanding {
  readonly requestId: number;
  readonly deadlineMs: number;
  readonly waiting: Waiting[];
}

export class UdpJobsClient {
  readonly transport: UdpTransport;
  readonly config: UdpClientConfig;
  readonly #runtime: Runtime;
  readonly #timer: DeadlineTimer;
  /** Submits made this turn, by node address, not yet sent. */
  readonly #queued = new Map<string, Array<{ request: SubmitRequest; waiting: Waiting }>>();
  /** Sent requests by id; a Map iterates in insertion order, which is deadline order. */
  readonly #outstanding = new Map<number, Outstanding>();
  readonly #unsubscribe: () => void;
  #submitsOutstanding = 0;
  #nextRequestId = 1;
  #flushQueued = false;
  #closed = false;
  /** Answers that came after their request timed out (or were never asked for). */
  lateAnswers = 0;
  /** Answers that did not decode, or whose outcome count did not match the request. */
  badAnswers = 0;

  private constructor(options: UdpJobsClientOptions, transport: UdpTransport) {
    this.transport = transport;
    this.config = validateUdpClientConfig({ ...udpClientDefaults, ...options.config });
    this.#runtime = options.runtime ?? realRuntime;
    this.#timer = new DeadlineTimer(this.#runtime, () => this.#expire());
    this.#unsubscribe = transport.onMessage((m) => this.#onMessage(m));
  }

  /** Binds the client's socket. Throws `RangeError` on bad options (as the transport does). */
  static start(options: UdpJobsClientOptions): UdpJobsClient {
    const transport = UdpTransport.start({
      nodeId: options.nodeId,
      listen: options.listen ?? "127.0.0.1:0",
      clusterKey: options.clusterKey,
      metrics: options.metrics ?? new MetricsRegistry(),
      lossProbability: options.lossProbability ?? 0,
      ...(options.transport !== undefined ? { config: options.transport } : {}),
      ...(options.runtime !== undefined ? { runtime: options.runtime } : {}),
      ...(options.socket !== undefined ? { socket: options.socket } : {}),
    });
    return new UdpJobsClient(options, transport);
  }

  /** The client's bound `host:port` (where answers come back). */
  get address(): string {
    return this.transport.address;
  }

  /** Submits sent or queued whose answers have not come yet. */
  get submitsOutstanding(): number {
    return this.#submitsOutstanding;
  }

  /**
   * Submits one job to the node at `nodeAddress` (its UDP `host:port`). Never rejects: every
   * way it can end is an outcome. Submits to one node in one turn share a message.
   */
  submit(nodeAddress: string, request: SubmitRequest): Promise<UdpSubmitOutcome> {
    if (this.#closed) return Promise.resolve(refusal("closed", "the client is closed"));
    // A request past the job limits can never be stored: say so now, as the node would, and
    // send nothing (the encoder refuses it, and a node would drop the whole message).
    const limited = checkJobLimits(request);
    if (limited !== undefined) {
      return Promise.resolve({
        ok: false,
        code: "bad_request",
        message: `${limited.field}: ${limited.message}`,
      });
    }
    if (this.#submitsOutstanding >= this.config.submitsOutstandingMax) {
      return Promise.resolve(
        refusal(
          "client_busy",
          `${this.#submitsOutstanding} submits are waiting for answers (submitsOutstandingMax)`,
        ),
      );
    }
    const { promise, resolve } = Promise.withResolvers<UdpSubmitOutcome>();
    let list = this.#queued.get(nodeAddress);
    if (list === undefined) {
      list = [];
      this.#queued.set(nodeAddress, list);
    }
    list.push({ request, waiting: { resolve } });
    this.#submitsOutstanding++;
    if (list.length >= this.config.batchSubmitsMax) this.#sendQueued(nodeAddress);
    this.#scheduleFlush();
    return promise;
  }

  /** Stops: every submit still waiting resolves `closed`; the socket closes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer.close();
    this.#unsubscribe();
    const closed = refusal("closed", "the client closed before the answer came");
    for (const list of this.#queued.values()) for (const q of list) q.waiting.resolve(closed);
    this.#queued.clear();
    for (const o of this.#outstanding.values()) for (const w of o.waiting) w.resolve(closed);
    this.#outstanding.clear();
    this.#submitsOutstanding = 0;
    await this.transport.close();
  }

  #scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      for (const address of [...this.#queued.keys()]) this.#sendQueued(address);
    });
  }

  #sendQueued(address: string): void {
    const list = this.#queued.get(address);
    this.#queued.delete(address);
    if (list === undefined || list.length === 0 || this.#closed) return;
    const requestId = this.#nextRequestId++;
    const bytes = encodeMessage({
      kind: "client-submit",
      requestId,
      submits: list.map((q) => ({ request: q.request })),
    });
    const result = this.transport.send(address, JOBS_CHANNEL, bytes);
    if (!result.accepted) {
      this.#submitsOutstanding -= list.length;
      const outcome = refusal(
        "send_refused",
        `the transport refused the message: ${result.reason}`,
      );
      for (const q of list) q.waiting.resolve(outcome);
      return;
    }
    const deadlineMs = this.#runtime.nowMs() + this.config.requestTimeoutMs;
    this.#outstanding.set(requestId, {
      requestId,
      deadlineMs,
      waiting: list.map((q) => q.waiting),
    });
    this.#timer.arm(deadlineMs);
  }

  #onMessage(m: DeliveredMessage): void {
    if (m.channel !== JOBS_CHANNEL || this.#closed) return;
    const decoded = decodeMessage(m.bytes);
    if (!decoded.ok || decoded.value.kind !== "client-result") {
      this.badAnswers++;
      return;
    }
    const answer = decoded.value;
    const o = this.#outstanding.get(answer.requestId);
    if (o === undefined) {
      this.lateAnswers++;
      return;
    }
    this.#outstanding.delete(answer.requestId);
    this.#submitsOutstanding -= o.waiting.length;
    if (answer.outcomes.length !== o.waiting.length) {
      // A node answers every submit of a message in one result; anything else is a bug there.
      this.badAnswers++;
      const bad = refusal("timeout", "the node's answer did not match the request");
      for (const w of o.waiting) w.resolve(bad);
      return;
    }
    o.waiting.forEach((w, i) => w.resolve(answer.outcomes[i]!));
  }

  #expire(): void {
    const nowMs = this.#runtime.nowMs();
    for (const o of this.#outstanding.values()) {
      if (o.deadlineMs > nowMs) {
        this.#timer.arm(o.deadlineMs);
        return;
      }
      this.#outstanding.delete(o.requestId);
      this.#submitsOutstanding -= o.waiting.length;
      const outcome = refusal(
        "timeout",
        `no answer within ${this.config.requestTimeoutMs} ms (the submit may still have been acknowledged)`,
      );
      for (const w of o.waiting) w.resolve(outcome);
    }
  }
}

function refusal(
  code: "timeout" | "client_busy" | "send_refused" | "closed",
  message: string,
): UdpSubmitOutcome {
  return { ok: false, code, message };
}
