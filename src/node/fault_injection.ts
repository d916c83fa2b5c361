/**
 * Fault injection for chaos runs and tests — TEST-ONLY. A node builds a `FaultInjector` only
 * when started with `--fault-injection`; without the flag none of this code is on any path.
 *
 * What it can do to its own node, and nothing else:
 * - partitions: drop every datagram that arrives FROM given peer addresses (ingress only; a
 *   one-way partition is this on one side, a full partition is this on both sides);
 * - loss bursts: drop each arriving datagram with a probability, for a while;
 * - disk failure: make the WAL's next write or fsync fail (and every one after it), as a
 *   dying disk would; the WAL then fails for good and the node must stop acknowledging.
 *
 * Owns the fault state and two thin wrappers: one around the `DatagramSocket` the transport
 * runs on (drops happen before the transport sees a byte, so a dropped datagram can be
 * anything: data, ack, probe), one around the `WalFs` the WAL writes through. Must not touch
 * the transport, the WAL or the job store themselves. Time comes from the injected `Runtime`
 * (faults with a duration end by themselves, so a harness that dies cannot leave a node
 * partitioned) and randomness from an injected `Rng`.
 */

import { err, ok, type Result } from "../lib/result.ts";
import type { Rng } from "../lib/rng.ts";
import type { Runtime } from "../lib/runtime.ts";
import { type Counter, MetricsRegistry } from "../metrics/registry.ts";
import { canonicalAddress, formatAddress } from "../transport/address.ts";
import type { DatagramSocket } from "../transport/datagram_socket.ts";
import type { WalFile, WalFs } from "../wal/wal_fs.ts";
import { type FaultInjectionConfig, faultInjectionDefaults } from "../config/fault_injection.ts";

/** What a control request asks for. */
export type FaultCommand =
  /** Drop ingress from exactly these addresses (replaces the set; `[]` ends the partition). */
  | { readonly op: "partition"; readonly from: readonly string[]; readonly ms?: number }
  /** Drop each arriving datagram with `probability` (0 ends the burst). */
  | { readonly op: "loss"; readonly probability: number; readonly ms?: number }
  /** The WAL's next write (or fsync) fails, and every one after it. */
  | { readonly op: "wal-fail"; readonly kind: WalFailKind }
  /** Ends partitions and loss (a failed disk stays failed: the WAL cannot take it back). */
  | { readonly op: "heal" };

export type WalFailKind = "write" | "fsync";

/** The injector's state as the control route reports it. */
export interface FaultState {
  readonly partitionFrom: readonly string[];
  /** Monotonic ms left, or null when the fault lasts until healed. */
  readonly partitionRemainingMs: number | null;
  readonly lossProbability: number;
  readonly lossRemainingMs: number | null;
  readonly walFail: WalFailKind | null;
  readonly dropped: { readonly partition: number; readonly loss: number };
  readonly walFailures: number;
}

export interface FaultInjectorOptions {
  readonly runtime: Runtime;
  readonly rng: Rng;
  readonly metrics?: MetricsRegistry;
  readonly config?: Partial<FaultInjectionConfig>;
}

/** The error an injected disk failure throws, named so logs cannot mistake it for a real one. */
export class InjectedDiskError extends Error {
  override name = "InjectedDiskError";
}

export class FaultInjector {
  readonly config: FaultInjectionConfig;
  readonly #runtime: Runtime;
  readonly #rng: Rng;
  #partitionFrom = new Set<string>();
  #partitionUntilMs = Infinity;
  #lossProbability = 0;
  #lossUntilMs = Infinity;
  #walFail: WalFailKind | undefined;
  readonly #droppedPartition: Counter;
  readonly #droppedLoss: Counter;
  readonly #walFailures: Counter;

  constructor(options: FaultInjectorOptions) {
    this.config = { ...faultInjectionDefaults, ...options.config };
    this.#runtime = options.runtime;
    this.#rng = options.rng;
    const metrics = options.metrics ?? new MetricsRegistry();
    const help = "Datagrams dropped by fault injection (test-only --fault-injection)";
    this.#droppedPartition = metrics.counter("hookd_faults_dropped_total", help, {
      reason: "partition",
    });
    this.#droppedLoss = metrics.counter("hookd_faults_dropped_total", help, { reason: "loss" });
    this.#walFailures = metrics.counter(
      "hookd_faults_wal_failures_total",
      "WAL writes or fsyncs failed on purpose by fault injection",
    );
  }

  /** Applies a decoded command. */
  apply(command: FaultCommand): void {
    const nowMs = this.#runtime.nowMs();
    switch (command.op) {
      case "partition":
        this.#partitionFrom = new Set(command.from);
        this.#partitionUntilMs = this.#until(nowMs, command.ms);
        return;
      case "loss":
        this.#lossProbability = command.probability;
        this.#lossUntilMs = this.#until(nowMs, command.ms);
        return;
      case "wal-fail":
        this.#walFail = command.kind;
        return;
      case "heal":
        this.#partitionFrom = new Set();
        this.#lossProbability = 0;
        return;
    }
  }

  state(): FaultState {
    const nowMs = this.#runtime.nowMs();
    this.#expire(nowMs);
    const remaining = (untilMs: number, active: boolean) =>
      active && Number.isFinite(untilMs) ? Math.max(0, Math.round(untilMs - nowMs)) : null;
    return {
      partitionFrom: [...this.#partitionFrom].sort(),
      partitionRemainingMs: remaining(this.#partitionUntilMs, this.#partitionFrom.size > 0),
      lossProbability: this.#lossProbability,
      lossRemainingMs: remaining(this.#lossUntilMs, this.#lossProbability > 0),
      walFail: this.#walFail ?? null,
      dropped: { partition: this.#droppedPartition.value, loss: this.#droppedLoss.value },
      walFailures: this.#walFailures.value,
    };
  }

  /** Whether a datagram from `from` (canonical `host:port`) is dropped now, and why. */
  dropReason(from: string): "partition" | "loss" | undefined {
    this.#expire(this.#runtime.nowMs());
    if (this.#partitionFrom.size > 0 && this.#partitionFrom.has(from)) {
      this.#droppedPartition.inc();
      return "partition";
    }
    if (this.#lossProbability > 0 && this.#rng.next() < this.#lossProbability) {
      this.#droppedLoss.inc();
      return "loss";
    }
    return undefined;
  }

  /** `socket`, with ingress filtered: a dropped datagram is never returned by `receive`. */
  wrapSocket(socket: DatagramSocket): DatagramSocket {
    return {
      localAddress: socket.localAddress,
      receive: async (buffer) => {
        for (;;) {
          const received = await socket.receive(buffer);
          const from = received[1];
          if (this.dropReason(formatAddress(from.hostname, from.port)) === undefined) {
            return received;
          }
        }
      },
      send: (bytes, to) => socket.send(bytes, to),
      close: () => socket.close(),
    };
  }

  /** `fs`, with WAL files whose writes or fsyncs fail once `wal-fail` was asked for. */
  wrapFs(fs: WalFs): WalFs {
    const wrapFile = (file: WalFile): WalFile => ({
      writeAll: async (bytes) => {
        this.#maybeFail("write");
        await file.writeAll(bytes);
      },
      syncData: async () => {
        this.#maybeFail("fsync");
        await file.syncData();
      },
      close: () => file.close(),
    });
    return {
      mkdirp: (dir) => fs.mkdirp(dir),
      list: (dir) => fs.list(dir),
      readFile: (path) => fs.readFile(path),
      readRange: (path, offset, lengthBytes) => fs.readRange(path, offset, lengthBytes),
      openAppend: async (path, create) => wrapFile(await fs.openAppend(path, create)),
      truncate: (path, lengthBytes) => fs.truncate(path, lengthBytes),
      remove: (path) => fs.remove(path),
      syncDir: (dir) => fs.syncDir(dir),
    };
  }

  #maybeFail(kind: WalFailKind): void {
    // A failed write also means a failed fsync: a disk that cannot write cannot sync either.
    if (this.#walFail === undefined) return;
    if (this.#walFail === "fsync" && kind === "write") return;
    this.#walFailures.inc();
    throw new InjectedDiskError(`injected ${kind} failure (EIO)`);
  }

  #until(nowMs: number, ms: number | undefined): number {
    return ms === undefined ? Infinity : nowMs + ms;
  }

  #expire(nowMs: number): void {
    if (nowMs >= this.#partitionUntilMs) {
      this.#partitionFrom = new Set();
      this.#partitionUntilMs = Infinity;
    }
    if (nowMs >= this.#lossUntilMs) {
      this.#lossProbability = 0;
      this.#lossUntilMs = Infinity;
    }
  }
}

/**
 * Decodes a control request body (parsed JSON). Never throws: a bad command is an error value
 * naming what is wrong.
 */
export function decodeFaultCommand(
  value: unknown,
  config: FaultInjectionConfig = faultInjectionDefaults,
): Result<FaultCommand> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return err("the body must be a JSON object with an `op`");
  }
  const body = value as Record<string, unknown>;
  const ms = decodeDuration(body.ms, config);
  if (!ms.ok) return ms;
  const withMs = ms.value === undefined ? {} : { ms: ms.value };
  switch (body.op) {
    case "partition": {
      const from = body.from;
      if (!Array.isArray(from) || from.length > config.partitionAddressesMax) {
        return err(`from must be an array of at most ${config.partitionAddressesMax} addresses`);
      }
      const addresses: string[] = [];
      for (const a of from) {
        const canonical = typeof a === "string" ? canonicalAddress(a) : undefined;
        if (canonical === undefined) return err(`from: ${JSON.stringify(a)} is not host:port`);
        addresses.push(canonical);
      }
      return ok({ op: "partition", from: addresses, ...withMs });
    }
    case "loss": {
      const p = body.probability;
      if (typeof p !== "number" || !(p >= 0 && p <= 1)) {
        return err("probability must be a number in [0, 1]");
      }
      return ok({ op: "loss", probability: p, ...withMs });
    }
    case "wal-fail":
      if (body.kind !== "write" && body.kind !== "fsync") {
        return err('kind must be "write" or "fsync"');
      }
      return ok({ op: "wal-fail", kind: body.kind });
    case "heal":
      return ok({ op: "heal" });
    default:
      return err('op must be one of "partition", "loss", "wal-fail", "heal"');
  }
}

function decodeDuration(
  value: unknown,
  config: FaultInjectionConfig,
): Result<number | undefined> {
  if (value === undefined) return ok(undefined);
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    return err("ms must be a non-negative number of milliseconds");
  }
  return ok(Math.min(value, config.faultDurationMaxMs));
}
