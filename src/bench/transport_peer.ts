/**
 * The far end of the transport bench (and of the two-process transport tests): a process that
 * receives bench messages, checks them for duplicates, measures one-way latency against the
 * sender's scheduled time, and answers control requests.
 *
 * Owns the bench's wire vocabulary (data payload layout, control messages) and the peer loop.
 * Started as `hookd bench transport --role peer`; prints `listening <host:port>` as its first
 * stdout line, progress on stderr, and exits 0 after an `exit` request.
 *
 * Latency is one-way, measured across two processes on one machine with
 * `performance.timeOrigin + performance.now()` on both sides (the same system clock).
 */

import { Histogram, type HistogramSummary } from "../metrics/histogram.ts";
import { type TransportConfig } from "../config.ts";
import { type DeliveredMessage, UdpTransport } from "../transport/mod.ts";

export const DATA_CHANNEL = 1;
export const CONTROL_CHANNEL = 2;
/** phase u8, sequence u32, scheduled send time f64 (epoch ms). */
export const DATA_HEADER_BYTES = 13;
/** Most sequence numbers tracked per phase for duplicate detection (bits). */
const SEQ_MAX = 1 << 27;

export type ControlRequest =
  | { cmd: "hello" }
  | { cmd: "report"; phase: number }
  | { cmd: "exit" };

export interface PhaseReport {
  phase: number;
  delivered: number;
  duplicates: number;
  /**
   * Messages delivered while an earlier sequence number was still missing: under in-order
   * delivery (KCP, TCP) each of these would have waited behind the missing one.
   */
  aheadOfMissing: number;
  latency: HistogramSummary;
  /** Wall-clock ms of the first and last delivery of the phase. */
  firstMs: number;
  lastMs: number;
}

export type ControlReply =
  | { type: "hello"; nodeId: string; epoch: number }
  | { type: "report"; report: PhaseReport; metrics: Record<string, number> }
  | { type: "bye" };

export function wallNowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function encodeData(
  phase: number,
  seq: number,
  scheduledMs: number,
  messageBytes: number,
): Uint8Array {
  const bytes = new Uint8Array(Math.max(DATA_HEADER_BYTES, messageBytes));
  const view = new DataView(bytes.buffer);
  view.setUint8(0, phase);
  view.setUint32(1, seq, true);
  view.setFloat64(5, scheduledMs, true);
  return bytes;
}

export function encodeControl(value: ControlRequest | ControlReply): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

export function decodeControl<T>(bytes: Uint8Array): T | undefined {
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as T;
  } catch {
    return undefined;
  }
}

class PhaseTracker {
  readonly latency = new Histogram(0.001);
  #seen = new Uint8Array(1024);
  delivered = 0;
  duplicates = 0;
  aheadOfMissing = 0;
  /** Every sequence number below this one has been delivered. */
  #prefix = 0;
  firstMs = 0;
  lastMs = 0;

  constructor(readonly phase: number) {}

  record(seq: number, scheduledMs: number, nowMs: number): void {
    if (seq >= SEQ_MAX) return;
    const byte = seq >>> 3;
    if (byte >= this.#seen.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.#seen.length * 2));
      grown.set(this.#seen);
      this.#seen = grown;
    }
    const bit = 1 << (seq & 7);
    if ((this.#seen[byte]! & bit) !== 0) {
      this.duplicates++;
      return;
    }
    this.#seen[byte]! |= bit;
    this.delivered++;
    if (seq > this.#prefix) this.aheadOfMissing++;
    while (this.#has(this.#prefix)) this.#prefix++;
    if (this.firstMs === 0) this.firstMs = nowMs;
    this.lastMs = nowMs;
    this.latency.record(Math.max(0, nowMs - scheduledMs));
  }

  #has(seq: number): boolean {
    const byte = seq >>> 3;
    return byte < this.#seen.length && (this.#seen[byte]! & (1 << (seq & 7))) !== 0;
  }

  report(): PhaseReport {
    return {
      phase: this.phase,
      delivered: this.delivered,
      duplicates: this.duplicates,
      aheadOfMissing: this.aheadOfMissing,
      latency: this.latency.summary(),
      firstMs: this.firstMs,
      lastMs: this.lastMs,
    };
  }
}

export interface TransportPeerOptions {
  listen: string;
  clusterKey: string;
  lossProbability: number;
  lossSeed?: number;
  config: Partial<TransportConfig>;
  log: (line: string) => void;
}

/** Runs the peer until an `exit` request; resolves with the process exit code. */
export async function runTransportPeer(options: TransportPeerOptions): Promise<number> {
  const transport = UdpTransport.start({
    nodeId: "bench-peer",
    listen: options.listen,
    clusterKey: options.clusterKey,
    lossProbability: options.lossProbability,
    ...(options.lossSeed !== undefined ? { lossSeed: options.lossSeed } : {}),
    config: options.config,
  });
  const phases = new Map<number, PhaseTracker>();
  let exitRequested: (() => void) | undefined;
  const exited = new Promise<void>((resolve) => (exitRequested = resolve));
  const reply = (to: string, value: ControlReply) =>
    transport.send(to, CONTROL_CHANNEL, encodeControl(value));
  transport.onMessage((m: DeliveredMessage) => {
    if (m.channel === DATA_CHANNEL && m.bytes.length >= DATA_HEADER_BYTES) {
      const view = new DataView(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
      const phase = view.getUint8(0);
      let tracker = phases.get(phase);
      if (tracker === undefined) {
        tracker = new PhaseTracker(phase);
        phases.set(phase, tracker);
      }
      tracker.record(view.getUint32(1, true), view.getFloat64(5, true), wallNowMs());
      return;
    }
    if (m.channel !== CONTROL_CHANNEL) return;
    const request = decodeControl<ControlRequest>(m.bytes);
    if (request === undefined) return;
    switch (request.cmd) {
      case "hello":
        reply(m.fromAddress, { type: "hello", nodeId: transport.nodeId, epoch: transport.epoch });
        break;
      case "report": {
        const tracker = phases.get(request.phase) ?? new PhaseTracker(request.phase);
        const metrics: Record<string, number> = {};
        for (const [k, v] of Object.entries(transport.metrics.snapshot())) {
          if (typeof v === "number") metrics[k] = v;
        }
        reply(m.fromAddress, { type: "report", report: tracker.report(), metrics });
        break;
      }
      case "exit":
        reply(m.fromAddress, { type: "bye" });
        exitRequested?.();
        break;
      default:
        break;
    }
  });
  console.log(`listening ${transport.address}`);
  options.log(`transport peer: listening on ${transport.address}, loss ${options.lossProbability}`);
  await exited;
  // Let the goodbye be acknowledged (bounded), so the sender is not left retransmitting.
  const deadline = performance.now() + 2000;
  while (!transport.isIdle() && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await transport.close();
  return 0;
}
