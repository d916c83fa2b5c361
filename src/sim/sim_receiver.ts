/**
 * A simulated webhook receiver for the whole-cluster simulation, and the `AttemptTransport`
 * each simulated node's delivery engine uses to reach it. The receiver records every request
 * that reaches it (webhook-id, body, signature, which node and life sent it, at what time,
 * what it answered), so a checker can count deliveries, duplicates and their causes.
 *
 * Owns the receiver's behaviour: a latency per request, and modes set by the fault schedule:
 * `ok` (2xx, now and then a stray 500 or an answer slower than the attempt's timeout),
 * `error` (500), `unavailable` (503 with Retry-After), `slow` (every answer past the timeout)
 * and `refuse` (connection refused: the request never arrives). Must not know about jobs
 * beyond what an HTTP receiver sees.
 *
 * Timing: the request reaches the receiver on the simulator's clock (it is on the wire even if
 * its node dies the next instant); the answer reaches the node through the node's own
 * `Runtime`, so a crashed node never hears it and a stalled one hears it late. The attempt's
 * timeout runs on the node's runtime too, as the HTTP transport's timer does.
 */

import type { Rng } from "../lib/rng.ts";
import type { Runtime } from "../lib/runtime.ts";
import type { AttemptRequest, AttemptTransport } from "../delivery/http_transport.ts";
import { webhookHeaders } from "../delivery/signing.ts";
import { type AttemptResult, type DeliveryJob, webhookIdOf } from "../delivery/types.ts";
import type { EndpointState } from "../jobs/endpoint_model.ts";
import type { SimScheduler } from "./scheduler.ts";

export type ReceiverMode = "ok" | "error" | "unavailable" | "slow" | "refuse";

/** What the node made of an attempt (filled in when it learns it; "none" if it never does). */
export type NodeSaw = "none" | "response" | "timeout" | "network_error";

export interface ReceivedRequest {
  /** Serial of the request, in the order requests were sent. */
  readonly serial: number;
  readonly node: string;
  /** The node's life (1 for its first start, 2 after one restart, ...). */
  readonly life: number;
  readonly jobId: string;
  readonly attempt: number;
  readonly sentAtMs: number;
  /** Virtual time the receiver got it; undefined while on the wire or when refused. */
  arrivedAtMs: number | undefined;
  /** The receiver's answer; 0 when the connection was refused. */
  status: number;
  /** Headers as the HTTP transport would send them. */
  readonly webhookId: string;
  readonly signature: string | undefined;
  readonly timestampS: number;
  readonly payload: string;
  readonly url: string;
  /** Secrets the node signed with (checked by the checker against what the client sent). */
  readonly secrets: readonly string[];
  /**
   * What the sending node's own table held of the job's endpoint as the attempt started, and
   * its wall clock then (runs with events only: `transportFor`'s `observe`).
   */
  readonly senderSaw?: SenderView;
  nodeSaw: NodeSaw;
  /** Virtual time the node learnt the outcome (undefined: it never did). */
  nodeSawAtMs: number | undefined;
}

/** The sender's own view of an event job's endpoint when it starts an attempt. */
export interface SenderView {
  readonly wallMs: number;
  /** Undefined: the node held no live value of the endpoint. */
  readonly endpoint: EndpointState | undefined;
}

export interface SimReceiverOptions {
  scheduler: SimScheduler;
  rng: Rng;
  /** Probability that an answer in `ok` mode is a 500. @default 0.02 */
  strayErrorProbability?: number;
  /** Probability that an answer in `ok` mode comes after the attempt's timeout. @default 0.01 */
  straySlowProbability?: number;
}

export class SimReceiver {
  readonly #scheduler: SimScheduler;
  readonly #rng: Rng;
  readonly #strayError: number;
  readonly #straySlow: number;
  #mode: ReceiverMode = "ok";
  readonly requests: ReceivedRequest[] = [];
  /** URLs that answer 410 Gone to every request that reaches them (the event workload's). */
  readonly goneUrls = new Set<string>();
  /** Called for every request as it arrives (or is refused). */
  onRequest: ((request: ReceivedRequest) => void) | undefined;
  /**
   * Answers 500 to a request it names while the receiver is up (`ok` mode): a workload's own
   * failing receiver (sim_events.ts). Draws nothing from the receiver's generator, so a run
   * that sets none draws the numbers it did before.
   */
  failWhen: ((request: ReceivedRequest) => boolean) | undefined;
  /**
   * Answers 422 to a request it names that would otherwise get a 2xx: the receiver is up and
   * refuses the body, which does not count against its host's circuit breaker
   * (`isOriginFailure`), so a share of jobs can die without slowing the rest of the host's
   * (sim_revives.ts). Draws nothing, as `failWhen`.
   */
  rejectWhen: ((request: ReceivedRequest) => boolean) | undefined;

  constructor(options: SimReceiverOptions) {
    this.#scheduler = options.scheduler;
    this.#rng = options.rng;
    this.#strayError = options.strayErrorProbability ?? 0.02;
    this.#straySlow = options.straySlowProbability ?? 0.01;
  }

  get mode(): ReceiverMode {
    return this.#mode;
  }

  set mode(mode: ReceiverMode) {
    this.#mode = mode;
  }

  /** The transport one life of one node delivers through. */
  transportFor(
    node: string,
    life: number,
    runtime: Runtime,
    observe?: (job: DeliveryJob) => SenderView | undefined,
  ): AttemptTransport {
    let closed = false;
    return {
      send: (request) => {
        if (closed) {
          return Promise.resolve({
            kind: "network_error",
            message: "transport closed",
            latencyMs: 0,
          });
        }
        return this.#send(node, life, runtime, request, observe?.(request.job));
      },
      close: () => {
        closed = true;
      },
    };
  }

  #send(
    node: string,
    life: number,
    runtime: Runtime,
    request: AttemptRequest,
    senderSaw: SenderView | undefined,
  ): Promise<AttemptResult> {
    const { job } = request;
    const timestampS = Math.floor(runtime.wallMs() / 1000);
    const headers = webhookHeaders(job.secrets, webhookIdOf(job), timestampS, job.payload);
    const record: ReceivedRequest = {
      serial: this.requests.length,
      node,
      life,
      jobId: job.id,
      attempt: request.attempt,
      sentAtMs: this.#scheduler.nowMs,
      arrivedAtMs: undefined,
      status: 0,
      webhookId: headers["webhook-id"]!,
      signature: headers["webhook-signature"],
      timestampS,
      payload: job.payload,
      url: job.url,
      secrets: job.secrets,
      ...(senderSaw !== undefined ? { senderSaw } : {}),
      nodeSaw: "none",
      nodeSawAtMs: undefined,
    };
    this.requests.push(record);
    const upMs = 0.2 + this.#rng.next() * 3;
    const sentAt = runtime.nowMs();
    const onLate = request.onLateAnswer;
    const listenMs = onLate !== undefined ? Math.max(0, request.lateAnswerMs ?? 0) : 0;
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      /** Timed out, still listening for the answer (as the HTTP transport does). */
      let listening = false;
      const settle = (result: AttemptResult, saw: NodeSaw) => {
        if (listening) {
          // The answer after the timeout: the node hears it through `onLateAnswer`.
          listening = false;
          if (saw === "response") {
            record.nodeSaw = saw;
            record.nodeSawAtMs = this.#scheduler.nowMs;
          }
          onLate!(result);
          return;
        }
        if (settled) return;
        settled = true;
        record.nodeSaw = saw;
        record.nodeSawAtMs = this.#scheduler.nowMs;
        resolve(result);
      };
      runtime.setTimer(request.timeoutMs, () => {
        if (settled) return;
        if (listenMs > 0) {
          settle(
            { kind: "timeout", latencyMs: runtime.nowMs() - sentAt, listening: true },
            "timeout",
          );
          listening = true;
          runtime.setTimer(listenMs, () => {
            if (listening) {
              settle({ kind: "timeout", latencyMs: runtime.nowMs() - sentAt }, "timeout");
            }
          });
          return;
        }
        settle({ kind: "timeout", latencyMs: runtime.nowMs() - sentAt }, "timeout");
      });
      if (this.#mode === "refuse") {
        this.onRequest?.(record);
        runtime.setTimer(2 * upMs, () =>
          settle(
            {
              kind: "network_error",
              message: "connection refused (simulated)",
              latencyMs: runtime.nowMs() - sentAt,
            },
            "network_error",
          ));
        return;
      }
      // On the wire: it arrives whatever becomes of its node meanwhile.
      this.#scheduler.after(upMs, () => {
        record.arrivedAtMs = this.#scheduler.nowMs;
        const mode = this.#mode;
        const stray = this.#rng.next();
        let status = 200 + (this.#rng.int(2) === 0 ? 0 : 4);
        let retryAfter: string | undefined;
        let processMs = 0.5 + this.#rng.next() * 20;
        if (mode === "error" || (mode === "ok" && stray < this.#strayError)) status = 500;
        else if (mode === "ok" && this.failWhen?.(record) === true) status = 500;
        else if (mode === "unavailable") {
          status = 503;
          retryAfter = String(1 + this.#rng.int(2));
        } else if (mode === "refuse") {
          // Became unreachable while the request was on the wire: reset.
          status = 0;
        }
        // After every draw, so a run without such URLs draws what it did before.
        if (status !== 0 && this.goneUrls.has(job.url)) status = 410;
        if (status >= 200 && status < 300 && this.rejectWhen?.(record) === true) status = 422;
        if (mode === "slow" || (mode === "ok" && stray > 1 - this.#straySlow)) {
          processMs = request.timeoutMs * (1.05 + this.#rng.next());
        }
        record.status = status;
        this.onRequest?.(record);
        const downMs = 0.2 + this.#rng.next() * 3;
        runtime.setTimer(processMs + downMs, () => {
          if (status === 0) {
            settle(
              {
                kind: "network_error",
                message: "connection reset (simulated)",
                latencyMs: runtime.nowMs() - sentAt,
              },
              "network_error",
            );
            return;
          }
          settle(
            {
              kind: "response",
              status,
              ...(retryAfter !== undefined ? { retryAfter } : {}),
              body: "",
              latencyMs: runtime.nowMs() - sentAt,
            },
            "response",
          );
        });
      });
    });
  }
}
