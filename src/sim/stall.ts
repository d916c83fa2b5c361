/**
 * Event-loop stalls for simulated nodes: a node whose process is busy (a long GC pause, a
 * synchronous fsync, a CPU-starved container) runs nothing for a while. Its timers fire late
 * and the datagrams that reach its socket wait in the receive buffer; when the stall ends,
 * everything that came due runs at once, timers first and then I/O, as an event loop does.
 *
 * Owns one node's stall window (`StallGate`) and the two wrappers that route a shell's entry
 * points through it: a `Runtime` whose timers wait for the stall to end, and a
 * `DatagramSocket` whose receives do. Together they cover every way work enters a node's
 * shells, so nothing in the node runs while it is stalled. Must not know about any protocol.
 */

import { assert } from "../lib/assert.ts";
import type { Runtime } from "../lib/runtime.ts";
import type { HostPort } from "../transport/address.ts";
import type { DatagramSocket } from "../transport/datagram_socket.ts";
import type { SimScheduler, TimerHandle } from "./scheduler.ts";

export class StallGate {
  readonly #scheduler: SimScheduler;
  #untilMs = -Infinity;
  #timers: Array<() => void> = [];
  #io: Array<() => void> = [];
  #wake: TimerHandle | undefined;
  #halted = false;
  /** Total stalled time asked for, ms (overlapping stalls counted once). */
  stalledMs = 0;
  /** Stalls begun (an extension of a running stall does not count). */
  stalls = 0;

  constructor(scheduler: SimScheduler) {
    this.#scheduler = scheduler;
  }

  get stalled(): boolean {
    return !this.#halted && this.#scheduler.nowMs < this.#untilMs;
  }

  /** When the current stall ends (virtual ms); in the past when not stalled. */
  get untilMs(): number {
    return this.#untilMs;
  }

  /** Stalls the node for `durationMs` from now; a stall already running is extended. */
  stall(durationMs: number): void {
    assert(durationMs >= 0 && Number.isFinite(durationMs), `stall of ${durationMs} ms`);
    if (this.#halted) return;
    const now = this.#scheduler.nowMs;
    const until = now + durationMs;
    if (until <= this.#untilMs) return;
    if (this.stalled) {
      this.stalledMs += until - this.#untilMs;
    } else {
      this.stalledMs += durationMs;
      this.stalls++;
    }
    this.#untilMs = until;
    this.#wake?.cancel();
    this.#wake = this.#scheduler.at(until, () => this.#end());
  }

  /** Runs a timer callback now, or when the stall ends. */
  timer(fn: () => void): void {
    if (this.#halted) return;
    if (this.stalled) this.#timers.push(fn);
    else fn();
  }

  /** Runs an I/O completion now, or when the stall ends (after the timers that came due). */
  io(fn: () => void): void {
    if (this.#halted) return;
    if (this.stalled) this.#io.push(fn);
    else fn();
  }

  /** The node crashed: deferred work is dropped and nothing runs through the gate again. */
  halt(): void {
    this.#halted = true;
    this.#wake?.cancel();
    this.#timers = [];
    this.#io = [];
  }

  #end(): void {
    this.#wake = undefined;
    const timers = this.#timers;
    const io = this.#io;
    this.#timers = [];
    this.#io = [];
    for (const fn of timers) fn();
    for (const fn of io) fn();
  }
}

/** A `Runtime` whose timers do not fire while the gate is stalled (they run late instead). */
export class StallingRuntime implements Runtime {
  readonly #inner: Runtime;
  readonly #gate: StallGate;

  constructor(inner: Runtime, gate: StallGate) {
    this.#inner = inner;
    this.#gate = gate;
  }

  nowMs(): number {
    return this.#inner.nowMs();
  }

  wallMs(): number {
    return this.#inner.wallMs();
  }

  setTimer(delayMs: number, fn: () => void): () => void {
    let cancelled = false;
    const cancel = this.#inner.setTimer(delayMs, () => {
      this.#gate.timer(() => {
        if (!cancelled) fn();
      });
    });
    return () => {
      cancelled = true;
      cancel();
    };
  }

  defer(fn: () => void): void {
    this.#inner.defer(() => this.#gate.timer(fn));
  }
}

/** A `DatagramSocket` whose received datagrams reach the node only when it is not stalled. */
export class StallingSocket implements DatagramSocket {
  readonly #inner: DatagramSocket;
  readonly #gate: StallGate;
  /** Rejects the receive held back by a stall, so a close during one ends the receive loop. */
  #rejectHeld: ((error: Error) => void) | undefined;

  constructor(inner: DatagramSocket, gate: StallGate) {
    this.#inner = inner;
    this.#gate = gate;
  }

  get localAddress(): HostPort {
    return this.#inner.localAddress;
  }

  async receive(buffer: Uint8Array): Promise<[Uint8Array, HostPort]> {
    // The datagram stays in the inner socket's bounded queue until the node asks for it; one
    // held here while stalled stands for the one the kernel would hand over first.
    const received = await this.#inner.receive(buffer);
    if (!this.#gate.stalled) return received;
    return await new Promise((resolve, reject) => {
      this.#rejectHeld = reject;
      this.#gate.io(() => {
        this.#rejectHeld = undefined;
        resolve(received);
      });
    });
  }

  send(bytes: Uint8Array, to: HostPort): Promise<unknown> {
    return this.#inner.send(bytes, to);
  }

  close(): void {
    this.#inner.close();
    const reject = this.#rejectHeld;
    this.#rejectHeld = undefined;
    reject?.(new Error("socket closed"));
  }
}
