/**
 * Records nobody waits for (an unkeyed job's COMMIT, delivery reports) do not cost a message
 * of their own: they ride in the next replication message to the same peer, and leave on
 * their own `lazySendMs` after they were made when none comes. A keyed COMMIT goes at once.
 */

import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { ReplicationCore } from "../../src/jobs/replication_core.ts";
import { decodeMessage } from "../../src/jobs/job_messages.ts";
import type { SubmitOutcome } from "../../src/jobs/service.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { ReviewCluster } from "./review_harness.ts";

const VOTERS = [1, 2, 3].map((i) => `10.0.0.${i}:7000`);
const WALL = 1_800_000_000_000;

interface Sent {
  from: number;
  to: number;
  bytes: Uint8Array;
  /** The peer's transport may hold its acknowledgement (transport.lazyAckMs). */
  ackMayWait: boolean;
}

class Net {
  readonly cores = VOTERS.map((self, i) =>
    new ReplicationCore({
      self,
      voters: VOTERS,
      rng: new Sfc32(i + 1),
      metrics: new MetricsRegistry(),
      walRecordBytesMax: 1 << 20,
      payloadBytesMax: 1 << 20,
    })
  );
  readonly appends = VOTERS.map(() => [] as number[]);
  readonly answers = new Map<number, SubmitOutcome>();
  sent: Sent[] = [];
  /** Every message sent, delivered or not. */
  readonly history: Sent[] = [];
  nowMs = 0;

  collect(): void {
    for (const [i, core] of this.cores.entries()) {
      core.flush(this.nowMs);
      for (const out of core.takeOutputs()) {
        if (out.type === "append") this.appends[i]!.push(out.token);
        else if (out.type === "submit-done") this.answers.set(out.requestId, out.outcome);
        else if (out.type === "send") {
          const sent = {
            from: i,
            to: VOTERS.indexOf(out.to),
            bytes: out.bytes,
            ackMayWait: out.ackMayWait === true,
          };
          this.sent.push(sent);
          this.history.push(sent);
        }
      }
    }
  }

  /** Delivers everything sent (and what that causes), persisting every append, until quiet. */
  settle(): void {
    for (let round = 0; round < 50; round++) {
      this.collect();
      for (const [i, tokens] of this.appends.entries()) {
        for (const t of tokens.splice(0)) this.cores[i]!.persisted(this.nowMs, t);
      }
      this.collect();
      const batch = this.sent.splice(0);
      if (batch.length === 0) return;
      for (const m of batch) {
        this.cores[m.to]!.receive(this.nowMs, WALL + this.nowMs, VOTERS[m.from]!, m.bytes);
      }
    }
    throw new Error("messages kept flowing");
  }

  tick(ms: number): void {
    this.nowMs += ms;
    for (const core of this.cores) core.tick(this.nowMs, WALL + this.nowMs);
    this.collect();
  }

  /** Record types in the replication messages `from` sent to `to` (not yet delivered). */
  replRecordTypes(from: number, to: number): string[][] {
    return this.sent.filter((m) => m.from === from && m.to === to).flatMap((m) => {
      const d = decodeMessage(m.bytes);
      return d.ok && d.value.kind === "repl" ? [d.value.records.map((r) => r.record.type)] : [];
    });
  }
}

function started(): Net {
  const net = new Net();
  for (const core of net.cores) core.recovered(0, WALL);
  for (let i = 0; i < 5; i++) {
    net.settle();
    net.tick(1);
  }
  for (const core of net.cores) assertEquals(core.phase, "ready");
  return net;
}

/** Submits on core 0 and delivers until the submit is answered; the COMMIT is then made. */
function commitOne(net: Net, requestId: number, key?: string): void {
  net.cores[0]!.submit(net.nowMs, WALL + net.nowMs, requestId, {
    url: "http://h/x",
    payload: `{"n":${requestId}}`,
    ...(key !== undefined ? { idempotencyKey: key } : {}),
  });
  for (let round = 0; round < 10 && !net.answers.has(requestId); round++) {
    net.collect();
    for (const [i, tokens] of net.appends.entries()) {
      for (const t of tokens.splice(0)) net.cores[i]!.persisted(net.nowMs, t);
    }
    net.collect();
    for (const m of net.sent.splice(0)) {
      net.cores[m.to]!.receive(net.nowMs, WALL + net.nowMs, VOTERS[m.from]!, m.bytes);
    }
  }
  net.collect();
  assertEquals(net.answers.get(requestId)?.ok, true);
}

Deno.test("an unkeyed COMMIT rides with the next message to a peer, or leaves after lazySendMs", () => {
  const net = started();
  commitOne(net, 1);
  // Drop what is in flight except what core 0 sends now: the COMMIT must not be there yet.
  net.sent = [];
  net.collect();
  assertEquals(net.replRecordTypes(0, 1), [], "no message of its own for the COMMIT");
  // The next submit's message to each peer carries it.
  net.cores[0]!.submit(net.nowMs, WALL + net.nowMs, 2, { url: "http://h/x", payload: "{}" });
  net.collect();
  for (const peer of [1, 2]) {
    const messages = net.replRecordTypes(0, peer);
    assertEquals(messages.length, 1, "one message");
    assert(
      messages[0]!.includes("commit") && messages[0]!.includes("submit"),
      JSON.stringify(messages),
    );
  }
  net.settle();
  // With nothing else to ride on, it leaves on its own once lazySendMs passed.
  commitOne(net, 3);
  net.sent = [];
  net.tick(jobsDefaults.lazySendMs - 1);
  assertEquals(net.replRecordTypes(0, 1), [], "still waiting");
  net.tick(1);
  for (const peer of [1, 2]) assertEquals(net.replRecordTypes(0, peer), [["commit"]]);
});

Deno.test("a keyed COMMIT goes at once: it may carry the body that settles a conflict", () => {
  const net = started();
  // commitOne delivers every message sent until the submit is answered: an eager COMMIT is
  // among them, a lazy one would still be waiting.
  commitOne(net, 1, "order-1");
  const answer = net.answers.get(1);
  assert(answer?.ok === true);
  for (const replica of [1, 2]) {
    assertEquals(net.cores[replica]!.table.get(answer.id)?.committed, true, `replica ${replica}`);
  }
  // An unkeyed one is not there yet.
  commitOne(net, 2);
  const unkeyed = net.answers.get(2);
  assert(unkeyed?.ok === true);
  assertEquals(net.cores[1]!.table.get(unkeyed.id)?.committed, false);
});

Deno.test("a decided submit's deadline does not wake its proposer", () => {
  // Every submit pushes a deadline `submitTimeoutMs` ahead; nearly all are decided within
  // milliseconds. Left on the timer heap, each woke the proposer at that deadline to do
  // nothing: a wake-up per job (bench/results/session36/).
  const c = new ReviewCluster({ expireIntervalMs: 60_000, antiEntropyIntervalMs: 60_000 });
  c.startAll();
  c.tick(10);
  c.settle();
  const startedAtMs = c.nowMs;
  const requestId = c.submit(0, { url: "http://h/x", payload: "{}" });
  c.settle();
  assertEquals(c.answers.get(requestId)?.ok, true);
  c.tick(jobsDefaults.lazySendMs + jobsDefaults.lazyAppendMs);
  c.settle();
  const wakeMs = c.cores[0]!.nextWakeMs();
  assert(
    wakeMs > startedAtMs + jobsDefaults.submitTimeoutMs,
    `woken at ${
      wakeMs - startedAtMs
    } ms, the decided submit's deadline is ${jobsDefaults.submitTimeoutMs}`,
  );
});

Deno.test("votes and messages of lazy records only let the peer hold their transport ack; a SUBMIT does not", () => {
  const net = started();
  const from = net.history.length;
  commitOne(net, 1);
  net.tick(jobsDefaults.lazySendMs); // the COMMIT leaves alone
  net.settle();
  const kinds = net.history.slice(from).map((m) => {
    const d = decodeMessage(m.bytes);
    assert(d.ok);
    const types = d.value.kind === "repl" ? d.value.records.map((r) => r.record.type) : [];
    return { kind: d.value.kind, types, ackMayWait: m.ackMayWait };
  });
  const votes = kinds.filter((k) => k.kind === "ack");
  const submits = kinds.filter((k) => k.types.includes("submit"));
  const commitsAlone = kinds.filter((k) =>
    k.kind === "repl" && k.types.every((t) => t === "commit")
  );
  assert(
    votes.length >= 2 && submits.length >= 2 && commitsAlone.length >= 2,
    JSON.stringify(kinds),
  );
  // The proposer owes each voter a COMMIT, which carries the ack of its vote.
  assert(votes.every((k) => k.ackMayWait), "votes");
  // A SUBMIT's ack must come at once: its retransmission is what a lost SUBMIT waits for.
  assert(submits.every((k) => !k.ackMayWait), "submits");
  assert(commitsAlone.every((k) => k.ackMayWait), "COMMITs alone");
});
