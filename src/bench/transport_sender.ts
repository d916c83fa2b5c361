/**
 * The sending side of the transport bench: one phase of load from one `UdpTransport` to the
 * receiver (transport_peer.ts), run by the bench process itself and, with `--senders N`, by
 * N - 1 more processes started as `hookd bench transport --role sender`.
 *
 * Owns the phase loops (fixed-rate open loop, then as fast as the transport accepts), the
 * control-request helper, and the sender process, which takes `run <phase>` / `exit` lines on
 * stdin and answers each run with one JSON line on stdout. It measures only what a sender can
 * see (sent, refused, retransmitted, its own socket's counters); what arrived is the
 * receiver's to say.
 */

import { setImmediate } from "node:timers";
import { readLines } from "../lib/lines.ts";
import type { TransportConfig } from "../config/transport.ts";
import { UdpTransport } from "../transport/mod.ts";
import {
  CONTROL_CHANNEL,
  type ControlReply,
  type ControlRequest,
  countersSince,
  DATA_CHANNEL,
  decodeControl,
  encodeControl,
  encodeData,
  type ReceiverCounters,
  transportCounters,
  wallNowMs,
} from "./transport_peer.ts";

/** Phase 1 offers a fixed rate; phase 2 sends as fast as the transport accepts. */
export const FIXED_RATE_PHASE = 1;
export const MAX_RATE_PHASE = 2;
/** Longest a sender waits, after its last send, for everything to be acknowledged. */
export const IDLE_WAIT_MS_MAX = 30_000;

export interface SenderPhaseOptions {
  /** Seconds of sending. */
  seconds: number;
  /**
   * Longest the fixed-rate phase keeps trying past its `seconds` when the transport refuses
   * (a receiver that stopped acknowledging), and the longest wait for everything sent to be
   * acknowledged, ms. @default IDLE_WAIT_MS_MAX
   */
  waitMsMax?: number;
  /** Fixed-rate phase: messages per second offered by this sender. */
  ratePerS: number;
  messageBytes: number;
}

export interface SenderPhaseResult {
  address: string;
  phase: number;
  /** Messages accepted by `send` (each counted once). */
  sent: number;
  /** Fixed-rate phase: messages never accepted before it gave up (the transport refused). */
  unsent: number;
  /** Fixed-rate phase: messages whose send was refused with backpressure at least once. */
  backpressured: number;
  /** From the phase's start until everything sent was acknowledged (or the wait gave up). */
  seconds: number;
  /** Whether everything sent was acknowledged within `IDLE_WAIT_MS_MAX`. */
  idle: boolean;
  retransmits: { fast: number; probe: number; timeout: number };
  datagramsOut: number;
  /** At the end of the sending, under the phase's load; null before any sample. */
  srttMs: number | null;
  cwndBytes: number | null;
  pacingRateBytesPerMs: number | null;
  /** This sender's own socket over the phase (its kernel drops are acks it lost). */
  counters: ReceiverCounters;
}

/** A request/response helper over the control channel. */
export class ControlClient {
  readonly #transport: UdpTransport;
  readonly #peer: string;
  readonly #waiters: Array<(reply: ControlReply) => void> = [];

  constructor(transport: UdpTransport, peer: string) {
    this.#transport = transport;
    this.#peer = peer;
    transport.onMessage((m) => {
      if (m.channel !== CONTROL_CHANNEL) return;
      const reply = decodeControl<ControlReply>(m.bytes);
      if (reply !== undefined) this.#waiters.shift()?.(reply);
    });
  }

  async request(request: ControlRequest, timeoutMs: number): Promise<ControlReply> {
    const accepted = this.#transport.send(this.#peer, CONTROL_CHANNEL, encodeControl(request));
    if (!accepted.accepted) throw new Error(`control request refused: ${accepted.reason}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await new Promise<ControlReply>((resolve, reject) => {
        this.#waiters.push(resolve);
        timer = setTimeout(
          () => reject(new Error(`no reply to ${request.cmd} within ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
    } finally {
      clearTimeout(timer);
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `performance.now()` reaches `atMs`. `setTimeout` fires 2-5 ms late on this
 * machine, which would be measured as transport latency; so the last 3 ms are waited with
 * `setImmediate`, which yields to I/O (the transport keeps running) and returns within µs.
 */
async function sleepUntil(atMs: number): Promise<void> {
  for (;;) {
    const leftMs = atMs - performance.now();
    if (leftMs <= 0) return;
    if (leftMs > 3) await sleep(leftMs - 3);
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

function metric(transport: UdpTransport, name: string): number {
  const v = transport.metrics.snapshot()[name];
  return typeof v === "number" ? v : 0;
}

function retransmits(transport: UdpTransport): SenderPhaseResult["retransmits"] {
  const kind = (k: string) => metric(transport, `hookd_transport_retransmits_total{kind="${k}"}`);
  return { fast: kind("fast"), probe: kind("probe"), timeout: kind("timeout") };
}

async function waitIdle(
  transport: UdpTransport,
  peer: string,
  waitMsMax: number,
): Promise<boolean> {
  const deadline = performance.now() + waitMsMax;
  while (!transport.isIdle(peer)) {
    if (performance.now() > deadline) return false;
    await sleep(1);
  }
  return true;
}

/** Runs one phase of load from `transport` to `peer`. */
export async function runSenderPhase(
  transport: UdpTransport,
  peer: string,
  phase: number,
  options: SenderPhaseOptions,
): Promise<SenderPhaseResult> {
  const countersBefore = transportCounters(transport);
  const retransmitsBefore = retransmits(transport);
  const datagramsBefore = metric(transport, 'hookd_transport_datagrams_total{direction="out"}');
  const startMs = performance.now();
  const waitMsMax = options.waitMsMax ?? IDLE_WAIT_MS_MAX;
  let sent = 0;
  let unsent = 0;
  let backpressured = 0;
  if (phase === FIXED_RATE_PHASE) {
    // Open loop: a late or refused send keeps its scheduled time.
    const intervalMs = 1000 / options.ratePerS;
    const total = Math.round(options.seconds * options.ratePerS);
    const startWallMs = wallNowMs();
    let refusedSeq = -1;
    // Bounded: a transport that refuses for good (its peer gone) ends the phase here.
    const giveUpMs = startMs + options.seconds * 1000 + waitMsMax;
    while (sent < total) {
      if (performance.now() > giveUpMs) {
        unsent = total - sent;
        break;
      }
      const due = Math.min(total, Math.floor((performance.now() - startMs) / intervalMs) + 1);
      let refused = false;
      while (sent < due) {
        const body = encodeData(phase, sent, startWallMs + sent * intervalMs, options.messageBytes);
        if (!transport.send(peer, DATA_CHANNEL, body).accepted) {
          if (refusedSeq !== sent) backpressured++;
          refusedSeq = sent;
          refused = true;
          break;
        }
        sent++;
      }
      // A refused message's scheduled time has passed, so sleepUntil would return at once and
      // this loop would never yield to the event loop that brings the acks that end the
      // backpressure: wait for I/O instead.
      if (refused) await new Promise((resolve) => setImmediate(resolve));
      else await sleepUntil(startMs + sent * intervalMs);
    }
  } else {
    const endMs = startMs + options.seconds * 1000;
    while (performance.now() < endMs) {
      const wall = wallNowMs();
      for (let i = 0; i < 50_000; i++) {
        const body = encodeData(phase, sent, wall, options.messageBytes);
        if (!transport.send(peer, DATA_CHANNEL, body).accepted) break;
        sent++;
      }
      await sleep(0);
    }
  }
  const stats = transport.peerStats(peer);
  const idle = await waitIdle(transport, peer, waitMsMax);
  const after = retransmits(transport);
  return {
    address: transport.address,
    phase,
    sent,
    unsent,
    backpressured,
    seconds: (performance.now() - startMs) / 1000,
    idle,
    retransmits: {
      fast: after.fast - retransmitsBefore.fast,
      probe: after.probe - retransmitsBefore.probe,
      timeout: after.timeout - retransmitsBefore.timeout,
    },
    datagramsOut: metric(transport, 'hookd_transport_datagrams_total{direction="out"}') -
      datagramsBefore,
    srttMs: stats?.srttMs ?? null,
    cwndBytes: stats?.cwndBytes ?? null,
    pacingRateBytesPerMs: stats?.pacingRateBytesPerMs ?? null,
    counters: countersSince(transportCounters(transport), countersBefore),
  };
}

export interface SenderProcessOptions extends SenderPhaseOptions {
  target: string;
  /** Seconds of the maximum-rate phase. */
  maxSeconds: number;
  clusterKey: string;
  lossProbability: number;
  config: Partial<TransportConfig>;
  log: (line: string) => void;
}

/**
 * The `--role sender` process: says hello to the receiver, prints `ready <address>`, then
 * runs each `run <phase>` line from stdin and prints its result as one JSON line, until
 * `exit` (or stdin closes).
 */
export async function runSenderProcess(options: SenderProcessOptions): Promise<number> {
  const transport = UdpTransport.start({
    nodeId: `bench-sender-${Deno.pid}`,
    clusterKey: options.clusterKey,
    lossProbability: options.lossProbability,
    config: options.config,
  });
  try {
    const control = new ControlClient(transport, options.target);
    await control.request({ cmd: "hello" }, 10_000);
    console.log(`ready ${transport.address}`);
    for await (const line of readLines(Deno.stdin.readable)) {
      const run = /^run (\d+)$/.exec(line.trim());
      if (run !== null) {
        const phase = Number(run[1]);
        const result = await runSenderPhase(transport, options.target, phase, {
          ...options,
          seconds: phase === MAX_RATE_PHASE ? options.maxSeconds : options.seconds,
        });
        console.log(JSON.stringify(result));
      } else if (line.trim() === "exit") break;
    }
    return 0;
  } finally {
    await transport.close();
  }
}
