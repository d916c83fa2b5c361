/**
 * The replication core driven by hand: messages are carried and WAL appends persisted only
 * when a test says so, so the durability order is checked step by step.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import {
  ReplicationCore,
  type ReplicationOutput,
  type VoterState,
} from "../../src/jobs/replication_core.ts";
import type { SubmitOutcome } from "../../src/jobs/service.ts";
import type { JobsConfig } from "../../src/config/jobs.ts";
import { decodeMessage } from "../../src/jobs/job_messages.ts";

const VOTERS = [1, 2, 3, 4, 5].map((i) => `10.0.0.${i}:7000`);
const WALL = 1_800_000_000_000;

class Harness {
  readonly cores: ReplicationCore[];
  readonly config: Partial<JobsConfig>;
  /** Appends issued and not yet persisted, per core. */
  readonly pending = new Map<number, number[]>();
  /** Each core's WAL: the payloads of its appends, in order (persisted or not). */
  readonly wal = new Map<number, Uint8Array[]>();
  readonly inbox: Array<{ from: string; to: string; bytes: Uint8Array }> = [];
  readonly answers = new Map<number, SubmitOutcome>();
  readonly scheduled = new Map<number, string[]>();
  nowMs = 0;

  constructor(voters = VOTERS, config: Partial<JobsConfig> = {}) {
    this.config = config;
    this.cores = voters.map((self, i) => this.newCore(self, voters, i + 1));
    this.cores.forEach((_, i) => {
      this.pending.set(i, []);
      this.scheduled.set(i, []);
      this.wal.set(i, []);
    });
  }

  newCore(self: string, voters: readonly string[], seed: number): ReplicationCore {
    return new ReplicationCore({
      self,
      voters,
      config: this.config,
      rng: new Sfc32(seed),
      metrics: new MetricsRegistry(),
      walRecordBytesMax: 1 << 20,
      payloadBytesMax: 1 << 20,
    });
  }

  /** Core i crashes and restarts: a fresh core replays the appends that were persisted. */
  restart(i: number, seed: number): ReplicationCore {
    const unpersisted = this.pending.get(i)!.length;
    const log = this.wal.get(i)!;
    const durable = log.slice(0, log.length - unpersisted);
    const core = this.newCore(this.cores[i]!.self, this.cores[i]!.voters, seed);
    for (const payload of durable) core.replay("data", payload, WALL + this.nowMs);
    this.cores[i] = core;
    this.pending.set(i, []);
    this.wal.set(i, durable);
    core.recovered(this.nowMs, WALL + this.nowMs);
    return core;
  }

  index(address: string): number {
    return this.cores.findIndex((c) => c.self === address);
  }

  /** Collects every core's outputs: sends to the inbox, appends to the pending list. */
  collect(): void {
    for (const [i, core] of this.cores.entries()) {
      core.flush(this.nowMs);
      for (const out of core.takeOutputs()) this.#take(i, out);
    }
  }

  #take(i: number, out: ReplicationOutput): void {
    switch (out.type) {
      case "append":
        this.pending.get(i)!.push(out.token);
        this.wal.get(i)!.push(out.payload);
        return;
      case "send":
        this.inbox.push({ from: this.cores[i]!.self, to: out.to, bytes: out.bytes });
        return;
      case "submit-done":
        assert(!this.answers.has(out.requestId), `request ${out.requestId} answered twice`);
        this.answers.set(out.requestId, out.outcome);
        return;
      case "schedule":
        this.scheduled.get(i)!.push(out.job.id);
        return;
      default:
        return;
    }
  }

  /** Delivers every queued message (to live cores only) and collects again, until quiet. */
  deliverAll(drop: (to: string) => boolean = () => false): void {
    for (let round = 0; round < 50; round++) {
      this.collect();
      if (this.inbox.length === 0) return;
      const batch = this.inbox.splice(0);
      for (const m of batch) {
        if (drop(m.to)) continue;
        const to = this.index(m.to);
        this.cores[to]!.receive(this.nowMs, WALL + this.nowMs, m.from, m.bytes);
      }
    }
    throw new Error("messages kept flowing for 50 rounds");
  }

  /** Makes core i's pending appends durable (in order). */
  persist(i: number): void {
    for (const token of this.pending.get(i)!.splice(0)) this.cores[i]!.persisted(this.nowMs, token);
    this.collect();
  }

  tick(ms: number): void {
    this.nowMs += ms;
    for (const core of this.cores) core.tick(this.nowMs, WALL + this.nowMs);
    this.collect();
  }

  /** Recovers every core with an empty log and catches them up with each other. */
  startAll(): void {
    for (const core of this.cores) core.recovered(this.nowMs, WALL);
    for (let i = 0; i < 5; i++) {
      this.deliverAll();
      for (let j = 0; j < this.cores.length; j++) this.persist(j);
      this.tick(1);
    }
    for (const core of this.cores) assertEquals(core.phase, "ready");
  }
}

Deno.test("a submit is answered only once a majority of voters have it on disk", () => {
  const h = new Harness();
  h.startAll();
  h.cores[0]!.submit(h.nowMs, WALL, 1, { url: "http://a.test/", payload: "{}" });
  h.deliverAll();
  // The coordinator and one replica persist: two of five, no answer yet.
  h.persist(0);
  h.persist(1);
  h.deliverAll();
  assertEquals(h.answers.has(1), false);
  // A third copy on disk makes the majority.
  h.persist(2);
  h.deliverAll();
  const answer = h.answers.get(1);
  assert(answer?.ok === true, JSON.stringify(answer));
  assertEquals(h.scheduled.get(0), [answer.id], "the coordinator owns and delivers it");
});

Deno.test("a replica acknowledges only after its own append is durable", () => {
  const h = new Harness();
  h.startAll();
  h.cores[0]!.submit(h.nowMs, WALL, 1, { url: "http://a.test/", payload: "{}" });
  h.collect();
  for (const m of h.inbox.splice(0)) h.cores[h.index(m.to)]!.receive(0, WALL, m.from, m.bytes);
  h.collect();
  const acksBefore = h.inbox.filter((m) => {
    const d = decodeMessage(m.bytes);
    return d.ok && d.value.kind === "ack";
  });
  assertEquals(acksBefore.length, 0, "no ACK before the replica's fsync");
  h.persist(3);
  const acksAfter = h.inbox.filter((m) => {
    const d = decodeMessage(m.bytes);
    return d.ok && d.value.kind === "ack";
  });
  assertEquals(acksAfter.length, 1);
  assertEquals(acksAfter[0]!.from, VOTERS[3]);
});

Deno.test("without a majority a submit fails after the timeout, and late copies never answer it again", () => {
  const h = new Harness();
  h.startAll();
  h.cores[0]!.submit(h.nowMs, WALL, 1, { url: "http://a.test/", payload: "{}" });
  h.deliverAll();
  h.persist(0);
  h.persist(1);
  h.deliverAll();
  h.tick(1_001);
  const answer = h.answers.get(1);
  assert(answer !== undefined && !answer.ok && answer.code === "no_quorum", JSON.stringify(answer));
  // The missing replicas wake up: their ACKs find no proposal; the harness would throw on a
  // second answer.
  for (const i of [2, 3, 4]) h.persist(i);
  h.deliverAll();
  assertEquals(h.answers.size, 1);
});

Deno.test("with fewer than a quorum of voters reachable, a submit is refused at once", () => {
  const h = new Harness();
  h.startAll();
  const view = new Map<string, VoterState>(VOTERS.map((v, i) => [v, i < 2 ? "alive" : "dead"]));
  h.cores[0]!.viewChanged(h.nowMs, view);
  h.cores[0]!.submit(h.nowMs, WALL, 1, { url: "http://a.test/", payload: "{}" });
  h.collect();
  const answer = h.answers.get(1);
  assert(answer !== undefined && !answer.ok && answer.code === "no_quorum");
});

Deno.test("an idempotency key returns the same id from another node, and 409 with another body", () => {
  const h = new Harness();
  h.startAll();
  const request = { url: "http://a.test/", payload: '{"a":1}', idempotencyKey: "order-17" };
  h.cores[0]!.submit(h.nowMs, WALL, 1, request);
  h.deliverAll();
  for (let i = 0; i < 5; i++) h.persist(i);
  h.deliverAll();
  const first = h.answers.get(1);
  assert(first?.ok === true);
  h.cores[3]!.submit(h.nowMs, WALL, 2, request);
  h.deliverAll();
  for (let i = 0; i < 5; i++) h.persist(i);
  h.deliverAll();
  assertEquals(h.answers.get(2), { ok: true, id: first.id, existing: true });
  h.cores[4]!.submit(h.nowMs, WALL, 3, { ...request, payload: '{"a":2}' });
  h.deliverAll();
  for (let i = 0; i < 5; i++) h.persist(i);
  h.deliverAll();
  const third = h.answers.get(3);
  assert(third !== undefined && !third.ok && third.code === "idempotency_conflict");
});

Deno.test("a restarted node catches up on what it missed before it is ready", () => {
  const h = new Harness();
  h.startAll();
  // Node 5 is away: five submits land on the others.
  const away = (to: string) => to === VOTERS[4];
  for (let r = 1; r <= 5; r++) {
    h.cores[r % 4]!.submit(h.nowMs, WALL, r, { url: "http://a.test/", payload: `${r}` });
  }
  h.deliverAll(away);
  for (let i = 0; i < 4; i++) h.persist(i);
  h.deliverAll(away);
  assertEquals([...h.answers.values()].filter((a) => a.ok).length, 5);
  // Node 5 restarts with an empty disk (a fresh core).
  const fresh = new ReplicationCore({
    self: VOTERS[4]!,
    voters: VOTERS,
    rng: new Sfc32(99),
    metrics: new MetricsRegistry(),
    walRecordBytesMax: 1 << 20,
    payloadBytesMax: 1 << 20,
  });
  h.cores[4] = fresh;
  fresh.recovered(h.nowMs, WALL);
  assertEquals(fresh.phase, "catching_up");
  h.deliverAll();
  h.persist(4);
  h.deliverAll();
  assertEquals(fresh.phase, "ready");
  assertEquals(fresh.table.size, 5, "it holds every job it missed");
});

Deno.test("a node caught up by snapshot ends the pending jobs its peers finished and compacted meanwhile", () => {
  // A tiny catch-up log forces the snapshot path; a short retention compacts finished jobs.
  const h = new Harness(VOTERS, { catchupLogBytesMax: 1, finishedRetentionMs: 1_000 });
  h.startAll();
  h.cores[0]!.submit(h.nowMs, WALL + h.nowMs, 1, { url: "http://a.test/", payload: "{}" });
  h.deliverAll();
  for (let i = 0; i < 5; i++) h.persist(i);
  h.deliverAll();
  for (let i = 0; i < 5; i++) h.persist(i);
  const answer = h.answers.get(1);
  assert(answer?.ok === true);
  assertEquals(h.cores[4]!.table.get(answer.id)?.phase, "pending", "node 5 holds it pending");
  // Node 5 is away while the owner delivers the job and everyone compacts it.
  const away = (to: string) => to === VOTERS[4];
  h.cores[0]!.reportDelivered(h.nowMs, WALL + h.nowMs, {
    kind: "delivered",
    jobId: answer.id,
    attempt: {
      attempt: 1,
      startedAtMs: WALL,
      latencyMs: 3,
      outcome: "success",
      status: 204,
      detail: "",
    },
  });
  // DONE rides lazily (the next message to each peer, or a short timer): let it leave.
  for (let round = 0; round < 3; round++) {
    h.tick(50);
    h.deliverAll(away);
    for (let i = 0; i < 4; i++) h.persist(i);
  }
  h.tick(120_000);
  for (let i = 0; i < 4; i++) {
    const phase: string | undefined = h.cores[i]!.table.get(answer.id)?.phase;
    assertEquals(phase, undefined, `core ${i} compacted it`);
  }
  // Node 5 restarts from its own log, where the job is still pending, and catches up.
  const fresh = h.restart(4, 77);
  for (let round = 0; round < 5; round++) {
    h.deliverAll();
    for (let i = 0; i < 5; i++) h.persist(i);
    h.tick(1);
  }
  assertEquals(fresh.phase, "ready");
  const entry = fresh.table.get(answer.id);
  assert(entry === undefined || entry.phase !== "pending", `a zombie: ${entry?.phase}`);
});

Deno.test("messages the transport gave up on start an exchange with that peer at once", () => {
  const h = new Harness();
  h.startAll();
  h.deliverAll();
  h.inbox.splice(0);
  h.cores[0]!.peerMissedMessages(h.nowMs, VOTERS[2]!);
  h.collect();
  const requests = h.inbox.filter((m) => {
    const d = decodeMessage(m.bytes);
    return d.ok && d.value.kind === "sync-req" && m.to === VOTERS[2];
  });
  assertEquals(requests.length, 1, "one sync request to the peer that missed messages");
  // A peer held down gets none: it catches up when it comes back.
  h.inbox.splice(0);
  h.cores[0]!.viewChanged(h.nowMs, new Map([[VOTERS[3]!, "dead"]]));
  h.collect();
  h.inbox.splice(0);
  h.cores[0]!.peerMissedMessages(h.nowMs, VOTERS[3]!);
  h.collect();
  assertEquals(h.inbox.filter((m) => m.to === VOTERS[3]).length, 0);
});
