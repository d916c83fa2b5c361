/**
 * `hookd bench transport`: reliable UDP between processes on loopback, one receiver and
 * `--senders` senders (this process, plus one process per further sender).
 *
 * Phase 1 (`fixed_rate`): each sender offers 100-byte messages open-loop at `--rate` for
 * `--seconds`; latency is one-way, from each message's scheduled send time to its delivery in
 * the receiver process. Phase 2 (`max_rate`): each sender sends as fast as its transport
 * accepts for `--max-seconds`; goodput is the messages delivered over the time from the
 * phase's start until the last sender had everything acknowledged, and latency runs from the
 * accepted send (send-queue wait included). Every process applies `--loss` at ingress. Each
 * phase reports its own figures; nothing is summed across phases. Loss the senders caused
 * themselves shows as the kernel's drops at the receiver's socket (a full receive buffer),
 * next to the drops `--loss` injected.
 *
 * Owns the bench driver and the spawning of its other processes (transport_peer.ts,
 * transport_sender.ts, through `hookdCommand`); the transport itself is src/transport/ with
 * src/config.ts defaults (1,400-byte datagrams) unless a flag overrides one.
 */

import { encodeHex } from "../lib/hex.ts";
import { readLines } from "../lib/lines.ts";
import { round } from "../lib/round.ts";
import { booleanFlag, numberFlag, stringFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { hookdCommand } from "../process/self_command.ts";
import {
  TRANSPORT_DATAGRAM_BYTES_MAX,
  TRANSPORT_DATAGRAM_BYTES_MIN,
  type TransportConfig,
  transportDefaults,
} from "../config/transport.ts";
import { CLUSTER_KEY_ENV, clusterKeyFrom, UdpTransport } from "../transport/mod.ts";
import { type PhaseReport, type ReceiverCounters, runTransportPeer } from "./transport_peer.ts";
import {
  ControlClient,
  FIXED_RATE_PHASE,
  MAX_RATE_PHASE,
  runSenderPhase,
  runSenderProcess,
  type SenderPhaseResult,
} from "./transport_sender.ts";

export { ControlClient } from "./transport_sender.ts";

/** Most sender processes the bench starts (the machine has two cores). */
export const BENCH_SENDERS_MAX = 8;

export interface TransportBenchOptions {
  seconds: number;
  maxSeconds: number;
  lossProbability: number;
  /** Fixed-rate phase: messages per second offered by each sender. */
  ratePerS: number;
  messageBytes: number;
  senders: number;
  config: Partial<TransportConfig>;
  log: (line: string) => void;
}

/** Counters of the receiving socket (or the senders' sockets, summed) over one phase. */
export interface SocketFigures {
  datagrams_in: number;
  /** Dropped by the kernel: the socket's receive buffer was full. Null where unknown. */
  kernel_drops: number | null;
  /** Dropped on purpose by `--loss`. */
  drops_injected: number;
  /** Socket receive or send errors. */
  socket_errors: number;
  auth_failures: number;
  decode_errors: number;
}

interface PhaseCommon {
  senders: number;
  /** Messages accepted by the senders' transports. */
  sent: number;
  /** Distinct messages the receiver got. */
  delivered: number;
  /** `sent - delivered`: messages never delivered. */
  lost: number;
  duplicates: number;
  /** Senders that still had unacknowledged messages when the wait gave up. */
  senders_not_idle: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
  /** The least one-way time seen: negative when the processes' clocks disagree. */
  min_one_way_ms: number | null;
  /** Deliveries with a negative one-way time, left out of the percentiles above. */
  negative_one_way: number;
  retransmits: number;
  retransmits_by_kind: { fast: number; probe: number; timeout: number };
  datagrams_out: number;
  receiver: SocketFigures;
  senders_sockets: SocketFigures;
}

export interface FixedRatePhase extends PhaseCommon {
  seconds: number;
  rate_per_sender: number;
  /** Messages whose send was refused with backpressure at least once. */
  backpressured: number;
  /** Messages never accepted by a sender's transport before it gave up (a problem). */
  unsent: number;
  /** Percent of messages delivered while an earlier one was still missing. */
  ahead_of_missing_pct: number | null;
}

export interface MaxRatePhase extends PhaseCommon {
  /** Seconds of sending. */
  sending_seconds: number;
  /** From the phase's start until every sender had everything acknowledged. */
  seconds: number;
  messages_per_s: number | null;
  /** Message bytes delivered per second. */
  goodput_bytes_per_s: number | null;
  per_sender: Array<{
    sent: number;
    delivered: number;
    messages_per_s: number | null;
    retransmits: number;
    /** At the end of the sending, under full load. */
    srtt_ms: number | null;
    cwnd_bytes: number | null;
    pacing_bytes_per_ms: number | null;
  }>;
}

export interface TransportBenchResult {
  datagram_bytes: number;
  window_bytes: number;
  message_bytes: number;
  loss: number;
  senders: number;
  fixed_rate: FixedRatePhase;
  max_rate: MaxRatePhase;
}

/** A child process of the bench and its address. */
export interface PeerProcess {
  address: string;
  child: Deno.ChildProcess;
  /** Waits for exit (killing it after `timeoutMs`); returns the exit code. */
  stop(timeoutMs: number): Promise<number>;
}

/** Waits for `child` to exit, killing it after `timeoutMs`; returns its exit code. */
async function stopChild(
  child: Deno.ChildProcess,
  drained: Promise<unknown>,
  timeoutMs: number,
): Promise<number> {
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }, timeoutMs);
  const status = await child.status;
  clearTimeout(timer);
  await drained;
  return status.code;
}

/** Spawns the receiver process; the cluster key travels in the environment, not argv. */
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
  const lines = readLines(child.stdout);
  let address: string | undefined;
  for await (const line of lines) {
    const m = /^listening (\S+)$/.exec(line);
    if (m !== null) {
      address = m[1];
      break;
    }
  }
  // Drain the rest of stdout so the child never blocks on a full pipe.
  const drained = (async () => {
    for await (const _ of lines) { /* discard */ }
  })().catch(() => {});
  if (address === undefined) {
    await drained;
    await child.status;
    throw new Error("transport peer exited before it was listening");
  }
  return { address, child, stop: (timeoutMs) => stopChild(child, drained, timeoutMs) };
}

/** A `--role sender` process, driven line by line over its stdin. */
interface SenderProcess {
  address: string;
  run(phase: number): Promise<SenderPhaseResult>;
  /** Asks it to exit and waits (killing it after `timeoutMs`). */
  stop(timeoutMs: number): Promise<number>;
}

async function spawnSender(args: readonly string[], clusterKey: string): Promise<SenderProcess> {
  const child = hookdCommand(["bench", "transport", "--role", "sender", ...args], {
    env: { [CLUSTER_KEY_ENV]: clusterKey },
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = readLines(child.stdout)[Symbol.asyncIterator]();
  const writer = child.stdin.getWriter();
  const encoder = new TextEncoder();
  const nextLine = async (what: string): Promise<string> => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`transport sender exited before ${what}`);
    return value;
  };
  const ready = /^ready (\S+)$/.exec(await nextLine("it was ready"));
  if (ready === null) throw new Error("transport sender: unexpected first line");
  let closed = false;
  return {
    address: ready[1]!,
    async run(phase) {
      await writer.write(encoder.encode(`run ${phase}\n`));
      return JSON.parse(await nextLine(`phase ${phase} ended`)) as SenderPhaseResult;
    },
    async stop(timeoutMs) {
      if (!closed) {
        closed = true;
        await writer.write(encoder.encode("exit\n")).catch(() => {});
        await writer.close().catch(() => {});
      }
      const drained = (async () => {
        for (let r = await lines.next(); !r.done; r = await lines.next()) { /* discard */ }
      })().catch(() => {});
      return await stopChild(child, drained, timeoutMs);
    },
  };
}

const ms3 = (x: number) => round(x, 3);

function socketFigures(c: ReceiverCounters): SocketFigures {
  return {
    datagrams_in: c.datagramsIn,
    kernel_drops: c.kernelDrops,
    drops_injected: c.dropsInjected,
    socket_errors: c.socketErrors,
    auth_failures: c.authFailures,
    decode_errors: c.decodeErrors,
  };
}

function sumSockets(all: readonly ReceiverCounters[]): SocketFigures {
  const sum = (pick: (c: ReceiverCounters) => number) => all.reduce((s, c) => s + pick(c), 0);
  return {
    datagrams_in: sum((c) => c.datagramsIn),
    kernel_drops: all.some((c) => c.kernelDrops === null) ? null : sum((c) => c.kernelDrops ?? 0),
    drops_injected: sum((c) => c.dropsInjected),
    socket_errors: sum((c) => c.socketErrors),
    auth_failures: sum((c) => c.authFailures),
    decode_errors: sum((c) => c.decodeErrors),
  };
}

/** The figures both phases report, from the senders' results and the receiver's report. */
function phaseCommon(results: readonly SenderPhaseResult[], report: PhaseReport): PhaseCommon {
  const sent = results.reduce((s, r) => s + r.sent, 0);
  const delivered = report.senders.reduce((s, r) => s + r.delivered, 0);
  const byKind = { fast: 0, probe: 0, timeout: 0 };
  for (const r of results) {
    byKind.fast += r.retransmits.fast;
    byKind.probe += r.retransmits.probe;
    byKind.timeout += r.retransmits.timeout;
  }
  const latency = report.latency;
  return {
    senders: results.length,
    sent,
    delivered,
    lost: sent - delivered,
    duplicates: report.senders.reduce((s, r) => s + r.duplicates, 0),
    senders_not_idle: results.filter((r) => !r.idle).length,
    p50_ms: latency.count > 0 ? ms3(latency.p50) : null,
    p99_ms: latency.count > 0 ? ms3(latency.p99) : null,
    max_ms: latency.count > 0 ? ms3(latency.max) : null,
    min_one_way_ms: report.minOneWayMs === null ? null : ms3(report.minOneWayMs),
    negative_one_way: report.negativeOneWay,
    retransmits: byKind.fast + byKind.probe + byKind.timeout,
    retransmits_by_kind: byKind,
    datagrams_out: results.reduce((s, r) => s + r.datagramsOut, 0),
    receiver: socketFigures(report.counters),
    senders_sockets: sumSockets(results.map((r) => r.counters)),
  };
}

export async function runTransportBench(
  options: TransportBenchOptions,
): Promise<TransportBenchResult> {
  const { log } = options;
  const key = encodeHex(crypto.getRandomValues(new Uint8Array(24)));
  const transportArgs = [
    "--loss",
    String(options.lossProbability),
    ...Object.entries(options.config).flatMap(([k, v]) => ["--transport-option", `${k}=${v}`]),
  ];
  const peer = await spawnTransportPeer(transportArgs, key);
  const transport = UdpTransport.start({
    nodeId: "bench-sender",
    clusterKey: key,
    lossProbability: options.lossProbability,
    config: options.config,
  });
  const others: SenderProcess[] = [];
  try {
    const control = new ControlClient(transport, peer.address);
    await control.request({ cmd: "hello" }, 10_000);
    const phaseArgs = [
      "--seconds",
      String(options.seconds),
      "--max-seconds",
      String(options.maxSeconds),
      "--rate",
      String(options.ratePerS),
      "--message-bytes",
      String(options.messageBytes),
    ];
    for (let i = 1; i < options.senders; i++) {
      others.push(
        await spawnSender(["--target", peer.address, ...transportArgs, ...phaseArgs], key),
      );
    }
    log(
      `transport bench: receiver ${peer.address}, ${options.senders} sender(s), loss ${options.lossProbability}, ${
        options.config.datagramBytes ?? transportDefaults.datagramBytes
      }-byte datagrams`,
    );
    const runPhase = async (phase: number) => {
      const begun = await control.request({ cmd: "begin", phase }, 10_000);
      if (begun.type !== "begun") throw new Error("unexpected reply to begin");
      const seconds = phase === MAX_RATE_PHASE ? options.maxSeconds : options.seconds;
      const results = await Promise.all([
        runSenderPhase(transport, peer.address, phase, { ...options, seconds }),
        ...others.map((o) => o.run(phase)),
      ]);
      const reply = await control.request({ cmd: "report", phase }, 10_000);
      if (reply.type !== "report") throw new Error("unexpected reply to report");
      return { results, report: reply.report };
    };

    const fixed = await runPhase(FIXED_RATE_PHASE);
    const fixedCommon = phaseCommon(fixed.results, fixed.report);
    const aheadOfMissing = fixed.report.senders.reduce((s, r) => s + r.aheadOfMissing, 0);
    const fixedRate: FixedRatePhase = {
      seconds: options.seconds,
      rate_per_sender: options.ratePerS,
      ...fixedCommon,
      backpressured: fixed.results.reduce((s, r) => s + r.backpressured, 0),
      unsent: fixed.results.reduce((s, r) => s + r.unsent, 0),
      ahead_of_missing_pct: fixedCommon.delivered > 0
        ? round(100 * aheadOfMissing / fixedCommon.delivered, 3)
        : null,
    };
    log(
      `fixed rate: ${fixedRate.sent} sent, ${fixedRate.delivered} delivered, p99 ${fixedRate.p99_ms} ms`,
    );

    const max = await runPhase(MAX_RATE_PHASE);
    const maxCommon = phaseCommon(max.results, max.report);
    const seconds = Math.max(...max.results.map((r) => r.seconds));
    const maxRate: MaxRatePhase = {
      sending_seconds: options.maxSeconds,
      seconds: ms3(seconds) ?? seconds,
      ...maxCommon,
      messages_per_s: round(maxCommon.delivered / seconds, 0),
      goodput_bytes_per_s: round(maxCommon.delivered * options.messageBytes / seconds, 0),
      per_sender: max.results.map((r) => {
        const delivered = max.report.senders.find((s) => s.address === r.address)?.delivered ?? 0;
        return {
          sent: r.sent,
          delivered,
          messages_per_s: round(delivered / r.seconds, 0),
          retransmits: r.retransmits.fast + r.retransmits.probe + r.retransmits.timeout,
          srtt_ms: r.srttMs === null ? null : ms3(r.srttMs),
          cwnd_bytes: r.cwndBytes === null ? null : round(r.cwndBytes, 0),
          pacing_bytes_per_ms: r.pacingRateBytesPerMs === null
            ? null
            : round(r.pacingRateBytesPerMs, 0),
        };
      }),
    };
    log(
      `max rate: ${maxRate.sent} sent, ${maxRate.delivered} delivered in ${maxRate.seconds} s`,
    );
    const bye = await control.request({ cmd: "exit" }, 10_000);
    if (bye.type !== "bye") throw new Error("unexpected reply to exit");
    return {
      datagram_bytes: options.config.datagramBytes ?? transportDefaults.datagramBytes,
      window_bytes: options.config.windowBytes ?? transportDefaults.windowBytes,
      message_bytes: options.messageBytes,
      loss: options.lossProbability,
      senders: options.senders,
      fixed_rate: fixedRate,
      max_rate: maxRate,
    };
  } finally {
    for (const o of others) {
      const code = await o.stop(5_000);
      if (code !== 0) log(`transport sender exited with ${code}`);
    }
    await transport.close();
    const code = await peer.stop(5_000);
    if (code !== 0) log(`transport peer exited with ${code}`);
  }
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
    summary: "Reliable UDP between processes: latency at a fixed rate, then maximum rate",
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
        help: "Ingress drop probability on every process",
        valueName: "P",
        default: "0",
      },
      rate: {
        type: "string",
        help: "Offered messages/s per sender in the fixed-rate phase",
        valueName: "N",
        default: "1000",
      },
      senders: {
        type: "string",
        help: `Sender processes into the one receiver (1-${BENCH_SENDERS_MAX})`,
        valueName: "N",
        default: "1",
      },
      "message-bytes": {
        type: "string",
        help: "Message size",
        valueName: "BYTES",
        default: "100",
      },
      "datagram-bytes": {
        type: "string",
        default: String(transportDefaults.datagramBytes),
        help: "Datagram size (the LAN default; loopback takes up to " +
          `${TRANSPORT_DATAGRAM_BYTES_MAX})`,
        valueName: "BYTES",
      },
      "window-bytes": {
        type: "string",
        default: String(transportDefaults.windowBytes),
        help: "Ceiling of the congestion window per peer",
        valueName: "BYTES",
      },
      json: { type: "boolean", help: "Print the result as one JSON line" },
      role: {
        type: "string",
        help: "Internal: 'peer' runs the receiver, 'sender' a further sender",
        valueName: "ROLE",
      },
      target: {
        type: "string",
        help: "Internal (sender): the receiver's address",
        valueName: "HOST:PORT",
      },
      listen: {
        type: "string",
        help: "Internal (peer): address to bind",
        valueName: "HOST:PORT",
        default: "127.0.0.1:0",
      },
      "transport-option": {
        type: "string",
        multiple: true,
        help: "Internal: a TransportConfig override name=value, passed to the other processes",
        valueName: "NAME=VALUE",
      },
      "cluster-key": {
        type: "string",
        help: `Internal: cluster key (else $${CLUSTER_KEY_ENV})`,
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
    base.datagramBytes = numberFlag(v, "datagram-bytes", transportDefaults.datagramBytes, {
      min: TRANSPORT_DATAGRAM_BYTES_MIN,
      max: TRANSPORT_DATAGRAM_BYTES_MAX,
      integer: true,
    });
    base.windowBytes = numberFlag(v, "window-bytes", transportDefaults.windowBytes, {
      min: 1,
      integer: true,
    });
    const config = transportOptions(rawOptions, base);
    const log = (line: string) => console.error(line);
    const seconds = numberFlag(v, "seconds", 5, { min: 0.1, max: 3600 });
    const maxSeconds = numberFlag(v, "max-seconds", seconds, { min: 0.1, max: 3600 });
    const ratePerS = numberFlag(v, "rate", 1000, { min: 1, max: 1_000_000 });
    const messageBytes = numberFlag(v, "message-bytes", 100, {
      min: 13,
      max: 60000,
      integer: true,
    });
    const role = stringFlag(v, "role");
    if (role === "peer" || role === "sender") {
      const clusterKey = clusterKeyFrom(stringFlag(v, "cluster-key"));
      if (clusterKey === undefined) throw new UsageError(`transport ${role}: no cluster key`);
      if (role === "peer") {
        return await runTransportPeer({
          listen: stringFlag(v, "listen") ?? "127.0.0.1:0",
          clusterKey,
          lossProbability,
          config,
          log,
        });
      }
      const target = stringFlag(v, "target");
      if (target === undefined) throw new UsageError("transport sender: --target is required");
      return await runSenderProcess({
        target,
        seconds,
        maxSeconds,
        ratePerS,
        messageBytes,
        clusterKey,
        lossProbability,
        config,
        log,
      });
    }
    if (role !== undefined) {
      throw new UsageError(`--role ${JSON.stringify(role)}: only 'peer' or 'sender'`);
    }
    const result = await runTransportBench({
      seconds,
      maxSeconds,
      lossProbability,
      ratePerS,
      messageBytes,
      senders: numberFlag(v, "senders", 1, { min: 1, max: BENCH_SENDERS_MAX, integer: true }),
      config,
      log,
    });
    if (booleanFlag(v, "json")) console.log(JSON.stringify(result));
    else console.log(JSON.stringify(result, null, 2));
    const clean = (p: PhaseCommon) => p.lost === 0 && p.duplicates === 0;
    return clean(result.fixed_rate) && result.fixed_rate.unsent === 0 && clean(result.max_rate)
      ? EXIT_OK
      : EXIT_FAILURE;
  },
};
