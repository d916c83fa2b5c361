/**
 * A hand-driven cluster of replication cores for the review's scenario tests: every message
 * waits in `inflight` until a test lets it through (by sender, receiver and kind), every WAL
 * append waits until the test persists it, and a core can crash and restart from exactly the
 * appends that were persisted. `durableHolders` reads those persisted appends the way recovery
 * would, so a test can ask on how many disks a job would survive a crash of every node.
 *
 * Owns nothing but the harness: it talks to cores only through their public inputs and
 * outputs (submit, receive, persisted, tick, viewChanged, storageFailed).
 */

import { assert } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import {
  ReplicationCore,
  type ReplicationOutput,
  type VoterState,
} from "../../src/jobs/replication_core.ts";
import { decodeWalBatch, encodeRecord } from "../../src/jobs/job_codec.ts";
import { decodeMessage, encodeMessage } from "../../src/jobs/job_messages.ts";
import type { JobRecord, JobStateSnapshot } from "../../src/jobs/job_model.ts";
import type { EventRequest, SubmitOutcome, SubmitRequest } from "../../src/jobs/service.ts";
import type { JobsConfig } from "../../src/config/jobs.ts";
import type {
  EndpointFields,
  EndpointState,
  EndpointWrite,
} from "../../src/jobs/endpoint_model.ts";
import { SAMPLE_ENDPOINT } from "./arbitraries.ts";
import { heldKey, heldKeysOf, recordIdentity } from "../../src/sim/durability_probe.ts";

export const VOTERS: readonly string[] = [1, 2, 3, 4, 5].map((i) => `10.0.0.${i}:7000`);
export const WALL = 1_800_000_000_000;

export interface InFlight {
  readonly from: number;
  readonly to: number;
  readonly kind: string;
  /** Record types of a `repl` message (empty for other kinds). */
  readonly records: readonly string[];
  readonly bytes: Uint8Array;
}

export type Pick = (m: InFlight) => boolean;

/** What an `event-done` output answered. */
export type EventDone = Extract<ReplicationOutput, { type: "event-done" }>["outcome"];

/** What an `endpoint-done` output answered. */
export type EndpointDone = Extract<ReplicationOutput, { type: "endpoint-done" }>["outcome"];

interface Append {
  readonly token: number;
  readonly payload: Uint8Array;
}

export class ReviewCluster {
  readonly cores: ReplicationCore[];
  readonly config: Partial<JobsConfig>;
  /** Appends issued and not yet persisted, per core. */
  readonly pending: Append[][];
  /** Payloads persisted, per core: what a crash leaves on its disk. */
  readonly disk: Uint8Array[][];
  readonly inflight: InFlight[] = [];
  readonly answers = new Map<number, SubmitOutcome>();
  readonly reviveAnswers = new Map<number, { ok: boolean; code?: string }>();
  readonly endpointAnswers = new Map<number, EndpointDone>();
  /** Answers to `lookupEndpoint`: ok (the core's table holds the majority's newest) or why not. */
  readonly lookupAnswers = new Map<number, { ok: boolean; code?: string }>();
  readonly eventAnswers = new Map<number, EventDone>();
  readonly scheduled: string[][];
  readonly cancelled: string[][];
  /** Cores that crashed and have not restarted: they take no input. */
  readonly down = new Set<number>();
  /**
   * The transport's per-peer send queue, bytes: a send that would hold more in flight from
   * one core to another is refused (the transport's backpressure), as `sendQueueBytesMax`.
   */
  queueBytesMax = Infinity;
  /** Sends refused by `queueBytesMax`. */
  refusedSends = 0;
  /** Pages of sync replies sent, by kind. */
  readonly syncPages = { records: 0, snapshot: 0 };
  nowMs = 0;
  /** Per-core wall-clock skew, ms (default 0): see `wallOf`. */
  skewMs: number[] = [];
  #nextRequestId = 1;

  /** Each core's metrics, by its address (a restarted core gets a new one). */
  readonly registries = new Map<string, MetricsRegistry>();
  /** The `log` outputs of every core, in order. */
  readonly logs: Array<{ core: number; event: string; fields: Record<string, unknown> }> = [];
  /** Each core's WAL record bound (`wal.recordBytesMax`). */
  readonly walRecordBytesMax: number;

  constructor(
    config: Partial<JobsConfig> = {},
    voters: readonly string[] = VOTERS,
    walRecordBytesMax = 1 << 20,
  ) {
    this.config = config;
    this.walRecordBytesMax = walRecordBytesMax;
    this.cores = voters.map((self, i) => this.#newCore(self, voters, i + 1));
    this.pending = voters.map(() => []);
    this.disk = voters.map(() => []);
    this.scheduled = voters.map(() => []);
    this.cancelled = voters.map(() => []);
  }

  get wallMs(): number {
    return WALL + this.nowMs;
  }

  /**
   * Core i's wall clock: the cluster's plus its skew. Expiry (retention, idempotency keys)
   * runs on each node's own clock, and nodes' clocks differ.
   */
  wallOf(i: number): number {
    return this.wallMs + (this.skewMs[i] ?? 0);
  }

  #newCore(self: string, voters: readonly string[], seed: number): ReplicationCore {
    const metrics = new MetricsRegistry();
    this.registries.set(self, metrics);
    return new ReplicationCore({
      self,
      voters,
      config: this.config,
      rng: new Sfc32(seed),
      metrics,
      walRecordBytesMax: this.walRecordBytesMax,
      payloadBytesMax: 1 << 20,
    });
  }

  /** Flushes every live core and takes its outputs. */
  collect(): void {
    for (const [i, core] of this.cores.entries()) {
      if (this.down.has(i)) continue;
      core.flush(this.nowMs);
      for (const out of core.takeOutputs()) this.#take(i, out);
    }
  }

  #take(i: number, out: ReplicationOutput): void {
    switch (out.type) {
      case "append":
        this.pending[i]!.push({ token: out.token, payload: out.payload });
        return;
      case "send": {
        const d = decodeMessage(out.bytes);
        const to = this.cores.findIndex((c) => c.self === out.to);
        assert(to >= 0, `a send to a voter, not ${out.to}`);
        let queued = out.bytes.length;
        for (const m of this.inflight) if (m.from === i && m.to === to) queued += m.bytes.length;
        if (queued > this.queueBytesMax) {
          this.refusedSends++;
          return;
        }
        if (d.ok && d.value.kind === "sync-reply" && d.value.part === 0) {
          this.syncPages[d.value.snapshot ? "snapshot" : "records"]++;
        }
        this.inflight.push({
          from: i,
          to,
          kind: d.ok ? d.value.kind : "?",
          records: d.ok && d.value.kind === "repl" ? d.value.records.map((r) => r.record.type) : [],
          bytes: out.bytes,
        });
        return;
      }
      case "submit-done":
        assert(!this.answers.has(out.requestId), `request ${out.requestId} answered twice`);
        this.answers.set(out.requestId, out.outcome);
        return;
      case "revive-done":
        this.reviveAnswers.set(
          out.requestId,
          out.outcome.ok ? { ok: true } : { ok: false, code: out.outcome.code },
        );
        return;
      case "endpoint-done":
        assert(!this.endpointAnswers.has(out.requestId), `endpoint write answered twice`);
        this.endpointAnswers.set(out.requestId, out.outcome);
        return;
      case "endpoint-read-done":
        assert(!this.lookupAnswers.has(out.requestId), `endpoint read answered twice`);
        this.lookupAnswers.set(
          out.requestId,
          out.outcome.ok ? { ok: true } : { ok: false, code: out.outcome.code },
        );
        return;
      case "event-done":
        assert(!this.eventAnswers.has(out.requestId), `event answered twice`);
        this.eventAnswers.set(out.requestId, out.outcome);
        return;
      case "schedule":
        this.scheduled[i]!.push(out.job.id);
        return;
      case "cancel":
        this.cancelled[i]!.push(out.jobId);
        return;
      case "log":
        this.logs.push({ core: i, event: out.event, fields: out.fields });
        return;
      default:
        return;
    }
  }

  /**
   * Lets the in-flight messages `pick` chooses through, again and again as they cause more,
   * until none is picked. Messages not picked stay in flight; messages to a down core are lost.
   */
  pass(pick: Pick = () => true): void {
    for (let round = 0; round < 100; round++) {
      this.collect();
      const go = this.inflight.filter(pick);
      if (go.length === 0) return;
      for (const m of go) this.inflight.splice(this.inflight.indexOf(m), 1);
      for (const m of go) {
        if (this.down.has(m.to) || this.down.has(m.from)) continue;
        this.cores[m.to]!.receive(this.nowMs, this.wallOf(m.to), this.cores[m.from]!.self, m.bytes);
      }
    }
    throw new Error("messages kept flowing for 100 rounds");
  }

  /** Delivers the in-flight messages `pick` chooses once (not what they cause). */
  step(pick: Pick = () => true): void {
    this.collect();
    const go = this.inflight.filter(pick);
    for (const m of go) this.inflight.splice(this.inflight.indexOf(m), 1);
    for (const m of go) {
      if (this.down.has(m.to) || this.down.has(m.from)) continue;
      this.cores[m.to]!.receive(this.nowMs, this.wallOf(m.to), this.cores[m.from]!.self, m.bytes);
    }
    this.collect();
  }

  /** Drops the in-flight messages `pick` chooses (lost by the network). */
  drop(pick: Pick = () => true): void {
    this.collect();
    for (const m of this.inflight.filter(pick)) this.inflight.splice(this.inflight.indexOf(m), 1);
  }

  /** Makes core i's pending appends durable, in order. */
  persist(...which: number[]): void {
    for (const i of which) {
      if (this.down.has(i)) continue;
      this.collect();
      for (const a of this.pending[i]!.splice(0)) {
        this.disk[i]!.push(a.payload);
        this.cores[i]!.persisted(this.nowMs, a.token);
      }
    }
    this.collect();
  }

  persistAll(): void {
    this.persist(...this.cores.map((_, i) => i));
  }

  /**
   * One exchange among the messages `pick` chooses: lets them through, makes the appends of
   * cores `persisted` durable, and lets through what that causes (the votes).
   */
  exchange(pick: Pick, ...persisted: number[]): void {
    this.pass(pick);
    this.persist(...persisted);
    this.pass(pick);
  }

  /** Delivers everything and persists everything until nothing moves. */
  settle(pick: Pick = () => true): void {
    for (let round = 0; round < 20; round++) {
      this.pass(pick);
      this.persistAll();
      this.collect();
      if (
        !this.inflight.some(pick) &&
        this.pending.every((p, i) => this.down.has(i) || p.length === 0)
      ) {
        return;
      }
    }
  }

  tick(ms: number): void {
    this.nowMs += ms;
    for (const [i, core] of this.cores.entries()) {
      if (!this.down.has(i)) core.tick(this.nowMs, this.wallOf(i));
    }
    this.collect();
  }

  /** Core i's process dies: unpersisted appends are lost, its messages in flight too. */
  crash(i: number): void {
    this.collect();
    this.down.add(i);
    this.pending[i] = [];
    for (const m of this.inflight.filter((m) => m.from === i || m.to === i)) {
      this.inflight.splice(this.inflight.indexOf(m), 1);
    }
  }

  /** Core i starts again on its disk: a fresh core replays what was persisted. */
  restart(i: number, seed = 100 + i): ReplicationCore {
    const old = this.cores[i]!;
    const core = this.#newCore(old.self, old.voters, seed);
    for (const payload of this.disk[i]!) core.replay("data", payload, this.wallOf(i));
    this.cores[i] = core;
    this.down.delete(i);
    this.pending[i] = [];
    core.recovered(this.nowMs, this.wallOf(i));
    this.collect();
    return core;
  }

  /** Every core recovers with an empty log and catches up with the others. */
  startAll(): void {
    for (const [i, core] of this.cores.entries()) core.recovered(this.nowMs, this.wallOf(i));
    for (let i = 0; i < 5; i++) {
      this.settle();
      this.tick(1);
    }
    for (const core of this.cores) assert(core.phase === "ready", `ready, not ${core.phase}`);
  }

  /** Tells core i how it sees the others (every voter not named is alive). */
  view(i: number, states: Record<number, VoterState>): void {
    const view = new Map<string, VoterState>();
    for (const [j, core] of this.cores.entries()) view.set(core.self, states[j] ?? "alive");
    this.cores[i]!.viewChanged(this.nowMs, view);
    this.collect();
  }

  /** An endpoint write taken by core i; its answer lands in `endpointAnswers`. */
  writeEndpoint(i: number, write: EndpointWrite): number {
    const requestId = this.#nextRequestId++;
    this.cores[i]!.writeEndpoint(this.nowMs, this.wallOf(i), requestId, write);
    this.collect();
    return requestId;
  }

  /** A client's read of an endpoint through core i; its answer lands in `lookupAnswers`. */
  lookupEndpoint(i: number, id: string): number {
    const requestId = this.#nextRequestId++;
    this.cores[i]!.lookupEndpoint(this.nowMs, this.wallOf(i), requestId, id);
    this.collect();
    return requestId;
  }

  /** An event taken by core i; its answer lands in `eventAnswers`. */
  submitEvent(i: number, request: EventRequest): number {
    const requestId = this.#nextRequestId++;
    this.cores[i]!.submitEvent(this.nowMs, this.wallOf(i), requestId, request);
    this.collect();
    return requestId;
  }

  submit(i: number, request: SubmitRequest): number {
    const requestId = this.#nextRequestId++;
    this.cores[i]!.submit(this.nowMs, this.wallOf(i), requestId, request);
    this.collect();
    return requestId;
  }

  /** Core `i` reports job `jobId` delivered by a first attempt answered 204. */
  delivered(i: number, jobId: string): void {
    this.cores[i]!.reportDelivered(this.nowMs, this.wallOf(i), {
      kind: "delivered",
      jobId,
      attempt: {
        attempt: 1,
        startedAtMs: this.wallOf(i),
        latencyMs: 2,
        outcome: "success",
        status: 204,
        detail: "",
      },
    });
    this.collect();
  }

  /** Core `i` reports job `jobId` dead: its retry policy gave up after `attemptsMade`. */
  dead(i: number, jobId: string, attemptsMade = 1): void {
    this.cores[i]!.reportDead(this.nowMs, this.wallOf(i), {
      kind: "dead",
      jobId,
      attemptsMade,
      reason: "attempts exhausted",
    });
    this.collect();
  }

  /** Core `to` receives a handoff of `state` from core `from`, outside `inflight`. */
  handOff(to: number, from: number, state: JobStateSnapshot): void {
    this.cores[to]!.receive(
      this.nowMs,
      this.wallMs,
      VOTERS[from]!,
      encodeMessage({
        kind: "handoff",
        from: VOTERS[from]!,
        records: [encodeRecord({ type: "state", state })],
      }),
    );
    this.collect();
  }

  /**
   * Stamps that name two different records on the disks (a seq used twice): every persisted
   * append of every core, compared by what each record says.
   */
  stampConflicts(): string[] {
    const seen = new Map<string, string>();
    const out: string[] = [];
    for (const [i, payloads] of this.disk.entries()) {
      for (const p of payloads) {
        const d = decodeWalBatch(p);
        if (!d.ok) continue;
        for (const { record } of d.value) {
          if (!("stamp" in record)) continue;
          const key = `${record.stamp.origin}/${record.stamp.seq}`;
          const identity = recordIdentity(record) ?? record.type;
          const earlier = seen.get(key);
          if (earlier === undefined) seen.set(key, identity);
          else if (earlier !== identity) out.push(`${key}: ${earlier} | core ${i}: ${identity}`);
        }
      }
    }
    return out;
  }

  /** The cores whose persisted appends hold job `jobId` (with `bodyHash`, when keyed). */
  durableHolders(jobId: string, bodyHash?: string): number[] {
    const out: number[] = [];
    for (const [i, payloads] of this.disk.entries()) {
      const holds = payloads.some((p) => {
        const d = decodeWalBatch(p);
        return d.ok && d.value.some(({ record }) => holdsJob(record, jobId, bodyHash));
      });
      if (holds) out.push(i);
    }
    return out;
  }
}

/** Whether `record` proves job `jobId` is held (with `bodyHash`, when given). */
function holdsJob(record: JobRecord, jobId: string, bodyHash: string | undefined): boolean {
  return heldKeysOf(record).some((k) =>
    bodyHash === undefined ? k.startsWith(heldKey(jobId, "")) : k === heldKey(jobId, bodyHash)
  );
}

/** Picks messages by sender, receiver and kind (undefined: any). */
export function between(
  from: number | readonly number[] | undefined,
  to: number | readonly number[] | undefined,
  kind?: string,
): Pick {
  const has = (set: number | readonly number[] | undefined, x: number) =>
    set === undefined || (typeof set === "number" ? set === x : set.includes(x));
  return (m) => has(from, m.from) && has(to, m.to) && (kind === undefined || m.kind === kind);
}

/** Messages between two of `nodes`, either way. */
export function among(...nodes: number[]): Pick {
  return (m) => nodes.includes(m.from) && nodes.includes(m.to);
}

/** Messages that touch none of `nodes`. */
export function avoiding(...nodes: number[]): Pick {
  return (m) => !nodes.includes(m.from) && !nodes.includes(m.to);
}

/** Creates an endpoint through core 0 (settled); `fields` over a plain unordered one. */
export function endpoint(c: ReviewCluster, fields: Partial<EndpointFields>): EndpointState {
  const requestId = c.writeEndpoint(0, {
    kind: "create",
    fields: { ...SAMPLE_ENDPOINT, ordered: false, rateLimitPerS: 0, ...fields },
  });
  c.settle();
  const answer = c.endpointAnswers.get(requestId);
  assert(answer !== undefined && answer.ok, "the endpoint is created");
  return answer.endpoint;
}
