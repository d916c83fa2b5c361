/**
 * The receiving end of the transport bench (and of the two-process transport tests): a process
 * that receives bench messages from one or more senders, checks them for duplicates, measures
 * one-way latency against each message's scheduled time, and answers control requests.
 *
 * Owns the bench's wire vocabulary (data payload layout, control messages) and the receiver
 * loop. Started as `hookd bench transport --role peer`; prints `listening <host:port>` as its
 * first stdout line, progress on stderr, and exits 0 after an `exit` request.
 *
 * Latency is one-way, measured across processes on one machine with
 * `performance.timeOrigin + performance.now()` on both sides (the same system clock, but two
 * time origins taken at process start): a negative one-way time is a measurement error and is
 * counted and reported, never clamped to 0 and hidden.
 */

import { Histogram, type HistogramSummary } from "../metrics/histogram.ts";
import type { TransportConfig } from "../config/transport.ts";
import { type DeliveredMessage, UdpTransport } from "../transport/mod.ts";
import { udpSocketDrops } from "./udp_drops.ts";

export const DATA_CHANNEL = 1;
export const CONTROL_CHANNEL = 2;
/** phase u8, sequence u32, scheduled send time f64 (epoch ms). */
export const DATA_HEADER_BYTES = 13;
/** Most sequence numbers tracked per phase and sender for duplicate detection (bits). */
const SEQ_MAX = 1 << 27;

export type ControlRequest =
  | { cmd: "hello" }
  /** Start counting a phase: the receiver snapshots its counters. */
  | { cmd: "begin"; phase: number }
  | { cmd: "report"; phase: number }
  | { cmd: "exit" };

/** What the receiver saw from one sender in one phase. */
export interface SenderReceipt {
  address: string;
  delivered: number;
  duplicates: number;
  /**
   * Messages delivered while an earlier sequence number was still missing: under in-order
   * delivery (KCP, TCP) each of these would have waited behind the missing one.
   */
  aheadOfMissing: number;
  /** Wall-clock ms of the first and last delivery. */
  firstMs: number;
  lastMs: number;
}

/** Receiver counters over one phase (differences between `begin` and `report`). */
export interface ReceiverCounters {
  datagramsIn: number;
  /** Datagrams the kernel dropped at the receiver's socket (buffer full); null if unknown. */
  kernelDrops: number | null;
  /** Datagrams dropped on purpose by `--loss`. */
  dropsInjected: number;
  /** Socket receive (or send) errors. */
  socketErrors: number;
  authFailures: number;
  decodeErrors: number;
}

export interface PhaseReport {
  phase: number;
  senders: SenderReceipt[];
  /** One-way latency of every first delivery, negative ones excluded (see `negativeOneWay`). */
  latency: HistogramSummary;
  /** Deliveries whose one-way time came out negative (clock error between the processes). */
  negativeOneWay: number;
  /** The least one-way time seen, negative when the clocks disagree; null when none. */
  minOneWayMs: number | null;
  counters: ReceiverCounters;
}

export type ControlReply =
  | { type: "hello"; nodeId: string; epoch: number }
  | { type: "begun"; phase: number }
  | { type: "report"; report: PhaseReport }
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

/** Sequence numbers seen from one sender in one phase. */
class SenderTracker {
  #seen = new Uint8Array(1024);
  /** Every sequence number below this one has been delivered. */
  #prefix = 0;
  readonly receipt: SenderReceipt;

  constructor(address: string) {
    this.receipt = {
      address,
      delivered: 0,
      duplicates: 0,
      aheadOfMissing: 0,
      firstMs: 0,
      lastMs: 0,
    };
  }

  /** Records `seq`; false when it is a duplicate. */
  record(seq: number, nowMs: number): boolean {
    if (seq >= SEQ_MAX) return false;
    const byte = seq >>> 3;
    if (byte >= this.#seen.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.#seen.length * 2));
      grown.set(this.#seen);
      this.#seen = grown;
    }
    const bit = 1 << (seq & 7);
    const r = this.receipt;
    if ((this.#seen[byte]! & bit) !== 0) {
      r.duplicates++;
      return false;
    }
    this.#seen[byte]! |= bit;
    r.delivered++;
    if (seq > this.#prefix) r.aheadOfMissing++;
    while (this.#has(this.#prefix)) this.#prefix++;
    if (r.firstMs === 0) r.firstMs = nowMs;
    r.lastMs = nowMs;
    return true;
  }

  #has(seq: number): boolean {
    const byte = seq >>> 3;
    return byte < this.#seen.length && (this.#seen[byte]! & (1 << (seq & 7))) !== 0;
  }
}

class PhaseTracker {
  readonly latency = new Histogram(0.001);
  readonly senders = new Map<string, SenderTracker>();
  negativeOneWay = 0;
  minOneWayMs = Infinity;
  countersAtBegin: ReceiverCounters | undefined;

  record(from: string, seq: number, scheduledMs: number, nowMs: number): void {
    let sender = this.senders.get(from);
    if (sender === undefined) this.senders.set(from, sender = new SenderTracker(from));
    if (!sender.record(seq, nowMs)) return;
    const oneWayMs = nowMs - scheduledMs;
    if (oneWayMs < this.minOneWayMs) this.minOneWayMs = oneWayMs;
    if (oneWayMs < 0) this.negativeOneWay++;
    else this.latency.record(oneWayMs);
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

/** The transport's counters that a phase report differences, read now. */
export function transportCounters(transport: UdpTransport): ReceiverCounters {
  const s = transport.metrics.snapshot();
  const n = (name: string) => {
    const v = s[name];
    return typeof v === "number" ? v : 0;
  };
  const port = Number(transport.address.slice(transport.address.lastIndexOf(":") + 1));
  return {
    datagramsIn: n('hookd_transport_datagrams_total{direction="in"}'),
    kernelDrops: udpSocketDrops(port) ?? null,
    dropsInjected: n("hookd_transport_drops_injected_total"),
    socketErrors: n("hookd_transport_socket_errors_total"),
    authFailures: n("hookd_transport_auth_failures_total"),
    decodeErrors: n("hookd_transport_decode_errors_total"),
  };
}

/** `now - before`, field by field; a kernel count unknown at either end stays unknown. */
export function countersSince(now: ReceiverCounters, before: ReceiverCounters): ReceiverCounters {
  return {
    datagramsIn: now.datagramsIn - before.datagramsIn,
    kernelDrops: now.kernelDrops === null || before.kernelDrops === null
      ? null
      : now.kernelDrops - before.kernelDrops,
    dropsInjected: now.dropsInjected - before.dropsInjected,
    socketErrors: now.socketErrors - before.socketErrors,
    authFailures: now.authFailures - before.authFailures,
    decodeErrors: now.decodeErrors - before.decodeErrors,
  };
}

/** Runs the receiver until an `exit` request; resolves with the process exit code. */
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
  const phase = (n: number) => {
    let tracker = phases.get(n);
    if (tracker === undefined) phases.set(n, tracker = new PhaseTracker());
    return tracker;
  };
  let exitRequested: (() => void) | undefined;
  const exited = new Promise<void>((resolve) => (exitRequested = resolve));
  const reply = (to: string, value: ControlReply) =>
    transport.send(to, CONTROL_CHANNEL, encodeControl(value));
  transport.onMessage((m: DeliveredMessage) => {
    if (m.channel === DATA_CHANNEL && m.bytes.length >= DATA_HEADER_BYTES) {
      const view = new DataView(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
      phase(view.getUint8(0)).record(
        m.fromAddress,
        view.getUint32(1, true),
        view.getFloat64(5, true),
        wallNowMs(),
      );
      return;
    }
    if (m.channel !== CONTROL_CHANNEL) return;
    const request = decodeControl<ControlRequest>(m.bytes);
    if (request === undefined) return;
    switch (request.cmd) {
      case "hello":
        reply(m.fromAddress, { type: "hello", nodeId: transport.nodeId, epoch: transport.epoch });
        break;
      case "begin": {
        // Several senders each ask; the first one starts the count.
        const tracker = phase(request.phase);
        tracker.countersAtBegin ??= transportCounters(transport);
        reply(m.fromAddress, { type: "begun", phase: request.phase });
        break;
      }
      case "report": {
        const tracker = phase(request.phase);
        const now = transportCounters(transport);
        reply(m.fromAddress, {
          type: "report",
          report: {
            phase: request.phase,
            senders: [...tracker.senders.values()].map((s) => s.receipt),
            latency: tracker.latency.summary(),
            negativeOneWay: tracker.negativeOneWay,
            minOneWayMs: Number.isFinite(tracker.minOneWayMs) ? tracker.minOneWayMs : null,
            counters: countersSince(now, tracker.countersAtBegin ?? now),
          },
        });
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
