/**
 * `hookd bench transport`: two transport endpoints in two processes on loopback.
 *
 * Phase 1 sends 100-byte messages open-loop at a fixed offered rate (`--rate`) for `--seconds`;
 * latency is one-way, from each message's scheduled send time to its delivery in the peer
 * process. Phase 2 sends as fast as the transport accepts for `--max-seconds`; its rate is
 * the messages delivered divided by the time from its start until the last was acknowledged.
 * Both ends apply `--loss` at ingress. The last stdout line is one JSON object describing
 * phase 1, with `messages_per_s` from phase 2.
 *
 * Owns the bench driver and the spawning of its peer (transport_peer.ts, through
 * `hookdCommand`); the transport itself is src/transport/ with src/config.ts defaults unless a
 * flag overrides one.
 */

import { encodeHex } from "../lib/hex.ts";
import { setImmediate } from "node:timers";
import { booleanFlag, numberFlag, stringFlag, UsageError } from "../cli/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../cli/command.ts";
import { hookdCommand } from "../cli/self_command.ts";
import { type TransportConfig, transportDefaults } from "../config.ts";
import { CLUSTER_KEY_ENV, clusterKeyFrom, UdpTransport } from "../transport/mod.ts";
import {
  CONTROL_CHANNEL,
  type ControlReply,
  type ControlRequest,
  DATA_CHANNEL,
  decodeControl,
  encodeControl,
  encodeData,
  type PhaseReport,
  runTransportPeer,
  wallNowMs,
} from "./transport_peer.ts";

export interface TransportBenchOptions {
  seconds: number;
  maxSeconds: number;
  lossProbability: number;
  ratePerS: number;
  messageBytes: number;
  config: Partial<TransportConfig>;
  log: (line: string) => void;
}

export interface TransportBenchResult {
  messages_per_s: number;
  sent: number;
  delivered: number;
  lost: number;
  retransmits: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  duplicates: number;
  /**
   * Percent of phase-1 messages delivered while an earlier one was still missing: the share
   * that an in-order transport would have held back (head-of-line blocking avoided).
   */
  ahead_of_missing_pct: number;
  loss: number;
  rate: number;
  seconds: number;
  message_bytes: number;
  datagram_bytes: number;
  /** Phase 1: messages whose send was refused with backpressure at least once. */
  backpressured: number;
  max_phase: {
    seconds: number;
    sent: number;
    delivered: number;
    lost: number;
    duplicates: number;
    retransmits: number;
    retransmits_by_kind: Record<string, number>;
    datagrams_out: number;
    /** Smoothed RTT at the end of the sending, under full load. */
    srtt_ms: number;
    p50_ms: number;
    p99_ms: number;
  };
}

/** A `hookd bench transport --role peer` child process and its address. */
export interface PeerProcess {
  address: string;
  child: Deno.ChildProcess;
  /** Waits for exit (killing it after `timeoutMs`); returns the exit code. */
  stop(timeoutMs: number): Promise<number>;
}

/** Spawns a transport peer process; the cluster key travels in the environment, not argv. */
export async function spawnTransportPeer(
  args: readonly string[],
  clusterKey: string,
  stderr: "inherit" | "null" = "inherit",
): Promise<PeerProcess> {
  const child = hookdCommand(["bench", "transport", "--role", "peer", ...args], {
    env: { [CLUSTER_KEY_ENV]: clusterKey },
    stdout: "piped",
    stderr,
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let address: string | undefined;
  try {
    while (address === undefined) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      const line = /^listening (\S+)\n/m.exec(buffered);
      if (line !== null) address = line[1];
    }
  } finally {
    reader.releaseLock();
  }
  // Drain the rest of stdout so the child never blocks on a full pipe.
  const drained = child.stdout.pipeTo(new WritableStream()).catch(() => {});
  if (address === undefined) {
    await drained;
    await child.status;
    throw new Error("transport peer exited before it was listening");
  }
  return {
    address,
    child,
    async stop(timeoutMs: number): Promise<number> {
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, timeoutMs);
      const status = await child.status;
      clearTimeout(timer);
      await drained;
      return status.code;
    },
  };
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

/**
 * Loopback settings for the bench. A 16,000-byte datagram carries ~140 messages of 100 bytes,
 * so 300,000 messages/s need ~2,100 datagrams/s instead of ~21,000 at 1,400 bytes (a receiver
 * here drains 15-17k datagrams/s). Ten of them in flight stay inside the kernel's 208 KB
 * receive buffer, per-datagram overhead included; measured: no receive-buffer errors.
 */
export const LOOPBACK_DATAGRAM_BYTES = 16000;
export const LOOPBACK_WINDOW_BYTES = 163840;

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

function counter(transport: UdpTransport, name: string): number {
  const v = transport.metrics.snapshot()[name];
  return typeof v === "number" ? v : 0;
}

function retransmitsOf(transport: UdpTransport): number {
  return ["fast", "probe", "timeout"].reduce(
    (sum, kind) => sum + counter(transport, `hookd_transport_retransmits_total{kind="${kind}"}`),
    0,
  );
}

function retransmitsByKind(transport: UdpTransport): Record<string, number> {
  const out: Record<string, number> = {};
  for (const kind of ["fast", "probe", "timeout"]) {
    out[kind] = counter(transport, `hookd_transport_retransmits_total{kind="${kind}"}`);
  }
  return out;
}

async function waitIdle(transport: UdpTransport, peer: string, limitMs: number): Promise<number> {
  const deadline = performance.now() + limitMs;
  while (!transport.isIdle(peer) && performance.now() < deadline) await sleep(1);
  return performance.now();
}

export async function runTransportBench(
  options: TransportBenchOptions,
): Promise<TransportBenchResult> {
  const { log } = options;
  const key = encodeHex(crypto.getRandomValues(new Uint8Array(24)));
  const configArgs = Object.entries(options.config).flatMap(([k, v]) => [
    "--transport-option",
    `${k}=${v}`,
  ]);
  const peer = await spawnTransportPeer(
    ["--loss", String(options.lossProbability), ...configArgs],
    key,
  );
  const transport = UdpTransport.start({
    nodeId: "bench-sender",
    clusterKey: key,
    lossProbability: options.lossProbability,
    config: options.config,
  });
  try {
    const control = new ControlClient(transport, peer.address);
    await control.request({ cmd: "hello" }, 10_000);
    log(`transport bench: peer ${peer.address}, loss ${options.lossProbability}`);

    // Phase 1: fixed offered rate, open loop (a late or refused send keeps its scheduled time).
    const retransmitsBefore = retransmitsOf(transport);
    const intervalMs = 1000 / options.ratePerS;
    const total = Math.round(options.seconds * options.ratePerS);
    const startMs = performance.now();
    const startWallMs = wallNowMs();
    let next = 0;
    let backpressured = 0;
    let refusedSeq = -1;
    while (next < total) {
      const due = Math.min(total, Math.floor((performance.now() - startMs) / intervalMs) + 1);
      let refused = false;
      while (next < due) {
        const body = encodeData(1, next, startWallMs + next * intervalMs, options.messageBytes);
        if (!transport.send(peer.address, DATA_CHANNEL, body).accepted) {
          if (refusedSeq !== next) backpressured++;
          refusedSeq = next;
          refused = true;
          break;
        }
        next++;
      }
      // A refused message's scheduled time has passed, so sleepUntil would return at once and
      // this loop would never yield to the event loop that brings the acks that end the
      // backpressure: wait for I/O instead.
      if (refused) await new Promise((resolve) => setImmediate(resolve));
      else await sleepUntil(startMs + next * intervalMs);
    }
    await waitIdle(transport, peer.address, 30_000);
    const retransmits = retransmitsOf(transport) - retransmitsBefore;
    const fixed = await control.request({ cmd: "report", phase: 1 }, 10_000);
    if (fixed.type !== "report") throw new Error("unexpected reply to report");
    log(
      `phase 1: ${total} sent, ${fixed.report.delivered} delivered, p99 ${
        fixed.report.latency.p99.toFixed(2)
      } ms`,
    );

    // Phase 2: as fast as the transport accepts.
    const retransmitsBefore2 = retransmitsOf(transport);
    const byKindBefore2 = retransmitsByKind(transport);
    const datagramsBefore2 = counter(transport, 'hookd_transport_datagrams_total{direction="out"}');
    const maxStartMs = performance.now();
    const maxEndMs = maxStartMs + options.maxSeconds * 1000;
    let sent2 = 0;
    while (performance.now() < maxEndMs) {
      const wall = wallNowMs();
      for (let i = 0; i < 50_000; i++) {
        const body = encodeData(2, sent2, wall, options.messageBytes);
        if (!transport.send(peer.address, DATA_CHANNEL, body).accepted) break;
        sent2++;
      }
      await sleep(0);
    }
    const srttMs = transport.peerStats(peer.address)?.srttMs ?? 0;
    const maxDoneMs = await waitIdle(transport, peer.address, 30_000);
    const maxSeconds = (maxDoneMs - maxStartMs) / 1000;
    const max = await control.request({ cmd: "report", phase: 2 }, 10_000);
    if (max.type !== "report") throw new Error("unexpected reply to report");
    const maxReport: PhaseReport = max.report;
    log(
      `phase 2: ${sent2} sent, ${maxReport.delivered} delivered in ${maxSeconds.toFixed(2)} s`,
    );
    const bye = await control.request({ cmd: "exit" }, 10_000);
    if (bye.type !== "bye") throw new Error("unexpected reply to exit");
    return {
      messages_per_s: Math.round(maxReport.delivered / maxSeconds),
      sent: total,
      delivered: fixed.report.delivered,
      lost: total - fixed.report.delivered + (sent2 - maxReport.delivered),
      retransmits,
      p50_ms: round3(fixed.report.latency.p50),
      p99_ms: round3(fixed.report.latency.p99),
      max_ms: round3(fixed.report.latency.max),
      duplicates: fixed.report.duplicates + maxReport.duplicates,
      ahead_of_missing_pct: round3(
        100 * fixed.report.aheadOfMissing / Math.max(1, fixed.report.delivered),
      ),
      loss: options.lossProbability,
      rate: options.ratePerS,
      seconds: options.seconds,
      message_bytes: options.messageBytes,
      datagram_bytes: options.config.datagramBytes ?? transportDefaults.datagramBytes,
      backpressured,
      max_phase: {
        seconds: round3(maxSeconds),
        sent: sent2,
        delivered: maxReport.delivered,
        lost: sent2 - maxReport.delivered,
        duplicates: maxReport.duplicates,
        retransmits: retransmitsOf(transport) - retransmitsBefore2,
        retransmits_by_kind: Object.fromEntries(
          Object.entries(retransmitsByKind(transport)).map(([k, n]) => [k, n - byKindBefore2[k]!]),
        ),
        datagrams_out: counter(transport, 'hookd_transport_datagrams_total{direction="out"}') -
          datagramsBefore2,
        srtt_ms: round3(srttMs),
        p50_ms: round3(maxReport.latency.p50),
        p99_ms: round3(maxReport.latency.p99),
      },
    };
  } finally {
    await transport.close();
    const code = await peer.stop(5_000);
    if (code !== 0) log(`transport peer exited with ${code}`);
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** `--transport-option name=value` pairs onto a partial TransportConfig (numbers only). */
function transportOptions(
  values: string[],
  base: Partial<TransportConfig>,
): Partial<TransportConfig> {
  const out: Record<string, number> = { ...base } as Record<string, number>;
  for (const pair of values) {
    const [name, raw] = pair.split("=", 2);
    if (name === undefined || raw === undefined || !(name in transportDefaults)) {
      throw new UsageError(`--transport-option ${JSON.stringify(pair)}: unknown option`);
    }
    const value = Number(raw);
    if (!Number.isFinite(value)) {
      throw new UsageError(`--transport-option ${JSON.stringify(pair)}: not a number`);
    }
    out[name] = value;
  }
  return out as Partial<TransportConfig>;
}

export const transportBenchCommand: LeafCommand = {
  spec: {
    name: "bench transport",
    summary: "Reliable UDP between two processes: latency at a fixed rate, then maximum rate",
    flags: {
      seconds: {
        type: "string",
        help: "Length of the fixed-rate phase",
        valueName: "S",
        default: "5",
      },
      "max-seconds": {
        type: "string",
        help: "Length of the maximum-rate phase (default: --seconds)",
        valueName: "S",
      },
      loss: {
        type: "string",
        help: "Ingress drop probability on both endpoints",
        valueName: "P",
        default: "0",
      },
      rate: {
        type: "string",
        help: "Offered messages/s in the fixed-rate phase",
        valueName: "N",
        default: "1000",
      },
      "message-bytes": {
        type: "string",
        help: "Message size",
        valueName: "BYTES",
        default: "100",
      },
      "datagram-bytes": {
        type: "string",
        default: String(LOOPBACK_DATAGRAM_BYTES),
        help:
          `Datagram size; the bench runs on loopback, so larger than the LAN default of ${transportDefaults.datagramBytes}`,
        valueName: "BYTES",
      },
      "window-bytes": {
        type: "string",
        default: String(LOOPBACK_WINDOW_BYTES),
        help: "Bytes in flight per peer",
        valueName: "BYTES",
      },
      json: { type: "boolean", help: "Print the result as one JSON line" },
      role: { type: "string", help: "Internal: 'peer' runs the far end", valueName: "ROLE" },
      listen: {
        type: "string",
        help: "Internal (peer): address to bind",
        valueName: "HOST:PORT",
        default: "127.0.0.1:0",
      },
      "transport-option": {
        type: "string",
        multiple: true,
        help: "Internal: a TransportConfig override name=value, passed to the peer",
        valueName: "NAME=VALUE",
      },
      "cluster-key": {
        type: "string",
        help: `Internal (peer): cluster key (else $${CLUSTER_KEY_ENV})`,
        valueName: "KEY",
      },
    },
  },
  async run(parsed) {
    const v = parsed.values;
    const lossProbability = numberFlag(v, "loss", 0, { min: 0, max: 0.9 });
    const rawOptions = Array.isArray(v["transport-option"])
      ? (v["transport-option"] as string[])
      : [];
    const base: Partial<TransportConfig> = {};
    base.datagramBytes = numberFlag(v, "datagram-bytes", LOOPBACK_DATAGRAM_BYTES, {
      min: 512,
      max: 65000,
      integer: true,
    });
    base.windowBytes = numberFlag(v, "window-bytes", LOOPBACK_WINDOW_BYTES, {
      min: 1,
      integer: true,
    });
    const config = transportOptions(rawOptions, base);
    const log = (line: string) => console.error(line);
    if (stringFlag(v, "role") === "peer") {
      const clusterKey = clusterKeyFrom(stringFlag(v, "cluster-key"));
      if (clusterKey === undefined) throw new UsageError("transport peer: no cluster key");
      return await runTransportPeer({
        listen: stringFlag(v, "listen") ?? "127.0.0.1:0",
        clusterKey,
        lossProbability,
        config,
        log,
      });
    }
    if (stringFlag(v, "role") !== undefined) {
      throw new UsageError(`--role ${JSON.stringify(stringFlag(v, "role"))}: only 'peer'`);
    }
    const seconds = numberFlag(v, "seconds", 5, { min: 0.1, max: 3600 });
    const result = await runTransportBench({
      seconds,
      maxSeconds: numberFlag(v, "max-seconds", seconds, { min: 0.1, max: 3600 }),
      lossProbability,
      ratePerS: numberFlag(v, "rate", 1000, { min: 1, max: 1_000_000 }),
      messageBytes: numberFlag(v, "message-bytes", 100, { min: 13, max: 60000, integer: true }),
      config,
      log,
    });
    if (booleanFlag(v, "json")) console.log(JSON.stringify(result));
    else console.log(JSON.stringify(result, null, 2));
    return result.lost === 0 ? EXIT_OK : EXIT_FAILURE;
  },
};
