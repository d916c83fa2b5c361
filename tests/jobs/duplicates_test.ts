/**
 * Duplicates no ownership change explains (issue 17, section 6), removed: hand-driven cores.
 *
 * The simulator's checker (`deno task sim`) found one cause of duplicate deliveries with no
 * ownership change in any node's view: a receiver slower than the attempt's timeout handles
 * the request, the node counts a timeout and retries, and the retry delivers the job again
 * (`retry_after_timeout`, 1,260 of 2,388 duplicates over seeds 1..30). The fix keeps the
 * timed-out request open for `lateAnswerWaitMs`, holds the job's next attempt until that answer
 * (or the end of the wait), and ends the job on a late 2xx. These tests drive `DeliveryCore`
 * by hand, as the engine does: a `listening` timeout, then `lateAnswer`.
 */

import { assert, assertEquals } from "../assert.ts";
import { avoiding, type InFlight, ReviewCluster } from "./review_harness.ts";
import { job, makeCore, split, status } from "../delivery/core_harness.ts";
import { deliveryDefaults } from "../../src/config/delivery.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { DeliveryEngine } from "../../src/delivery/engine.ts";
import { MemoryDeliveryStore } from "../../src/delivery/memory_store.ts";
import type { AttemptResult, DeliveryReport } from "../../src/delivery/types.ts";
import { HttpTransport } from "../../src/delivery/http_transport.ts";

const WAIT_MS = 2_000;

/** A job whose first attempt timed out with its request still open: the core after it. */
function timedOutListening() {
  const { core, registry } = makeCore({ lateAnswerWaitMs: WAIT_MS });
  core.schedule(0, job("j1"));
  const first = split(core.takeOutputs());
  assertEquals(first.attempts.map((a) => a.attempt), [1]);
  core.attemptDone(1_000, "j1", { kind: "timeout", latencyMs: 1_000, listening: true });
  const retry = split(core.takeOutputs()).reports;
  assertEquals(retry.map((r) => r.kind), ["retry"]);
  // The retry record is durable; its delay (100 ms) has passed.
  core.persisted(1_001, "j1", true);
  core.tick(1_200);
  return { core, registry };
}

Deno.test("a retry waits for the answer of a timed-out request still open, and a late 2xx ends the job", () => {
  const { core, registry } = timedOutListening();
  // Without the wait the retry would reach a receiver still handling the first request.
  assertEquals(split(core.takeOutputs()).attempts, []);
  core.lateAnswer(1_500, job("j1"), 1, { ...status(200), latencyMs: 1_500 });
  const after = split(core.takeOutputs());
  assertEquals(after.attempts, []);
  assertEquals(after.reports.map((r) => r.kind), ["delivered"]);
  assertEquals(core.jobCount, 0);
  core.tick(10_000);
  assertEquals(split(core.takeOutputs()).attempts, [], "no attempt after the late 2xx");
  assertEquals(
    registry.renderPrometheus().includes("hookd_delivery_late_answers_total 1"),
    true,
    "the late answer is counted",
  );
});

Deno.test("a late failure, or no late answer at all, lets the retry go ahead (at-least-once kept)", () => {
  const failed = timedOutListening().core;
  assertEquals(split(failed.takeOutputs()).attempts, []);
  failed.lateAnswer(1_500, job("j1"), 1, status(500));
  assertEquals(split(failed.takeOutputs()).attempts.map((a) => a.attempt), [2]);

  const silent = timedOutListening().core;
  assertEquals(split(silent.takeOutputs()).attempts, []);
  // The transport never calls back: the retry starts once the wait is over.
  silent.tick(1_000 + WAIT_MS);
  assertEquals(split(silent.takeOutputs()).attempts.map((a) => a.attempt), [2]);
});

Deno.test("a late 2xx after the job left the engine, or with another attempt in flight, still ends it", () => {
  // Ownership moved away (cancel) while the request was open: the 2xx is still news the store
  // needs, or the next owner (or this node, when ownership returns) delivers the job again.
  const gone = timedOutListening().core;
  gone.cancel(1_300, "j1");
  gone.takeOutputs();
  gone.lateAnswer(1_500, job("j1"), 1, status(200));
  assertEquals(split(gone.takeOutputs()).reports.map((r) => r.kind), ["delivered"]);

  // Scheduled afresh meanwhile: it waits for the open request (no second request while the
  // first may be handled, seed 504), and the late 2xx ends it with no attempt at all.
  const again = timedOutListening().core;
  again.cancel(1_300, "j1");
  again.schedule(1_400, job("j1"), { attemptsMade: 1, nextAttemptAtMs: 1_400 });
  assertEquals(split(again.takeOutputs()).attempts, []);
  again.lateAnswer(1_500, job("j1"), 1, status(200));
  assertEquals(split(again.takeOutputs()).reports.map((r) => r.kind), ["delivered"]);
  again.tick(20_000);
  assertEquals(split(again.takeOutputs()).attempts, [], "nothing after the late 2xx");
  assertEquals(again.jobCount, 0);
});

Deno.test("a late 2xx while the retry record is still being written ends the job once it is durable", () => {
  const { core } = makeCore({ lateAnswerWaitMs: WAIT_MS });
  core.schedule(0, job("j1"));
  core.takeOutputs();
  core.attemptDone(1_000, "j1", { kind: "timeout", latencyMs: 1_000, listening: true });
  core.takeOutputs();
  core.lateAnswer(1_050, job("j1"), 1, status(204));
  assertEquals(split(core.takeOutputs()).reports.map((r) => r.kind), ["delivered"]);
  core.persisted(1_060, "j1", true);
  core.tick(5_000);
  assertEquals(split(core.takeOutputs()).attempts, []);
  assertEquals(core.jobCount, 0);
});

Deno.test("over real HTTP, a receiver slower than the timeout gets the job once, and it is delivered", async () => {
  const requests: number[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.text();
    requests.push(performance.now());
    await new Promise((r) => setTimeout(r, 400));
    return new Response("late", { status: 200 });
  });
  const store = new MemoryDeliveryStore();
  const reports: DeliveryReport[] = [];
  let done: () => void = () => {};
  const delivered = new Promise<void>((resolve) => done = resolve);
  const engine = new DeliveryEngine({
    config: {
      ...deliveryDefaults,
      retryScheduleMs: [20, 20, 20],
      maxAttemptsDefault: 4,
      attemptTimeoutMs: 150,
      lateAnswerWaitMs: 2_000,
      allowPrivateTargets: true,
    },
    store,
    rng: new Sfc32(1),
    onReport: (report) => {
      reports.push(report);
      if (report.kind === "delivered") done();
    },
  });
  try {
    engine.schedule({
      id: "job_late",
      url: `http://127.0.0.1:${server.addr.port}/hook`,
      payload: "{}",
      secrets: [],
    });
    const limit = new Promise((r) => setTimeout(r, 5_000));
    await Promise.race([delivered, limit]);
    assertEquals(reports.map((r) => r.kind), ["retry", "delivered"]);
    assertEquals(requests.length, 1, "the retry did not reach the receiver again");
  } finally {
    await engine.close();
    await server.shutdown();
  }
});

/** A job submitted at node 0, acknowledged and committed everywhere: node 0 owns it. */
function node0Delivers(c: ReviewCluster): string {
  const requestId = c.submit(0, { url: "http://a.test/", payload: "{}" });
  c.settle();
  const answer = c.answers.get(requestId);
  assert(answer?.ok === true, "acknowledged");
  // The lazy COMMIT reaches every disk: node 0 holds the job committed, its to deliver.
  c.tick(100);
  c.settle();
  assertEquals(c.scheduled[0]!.includes(answer.id), true);
  return answer.id;
}

/**
 * The others hold node 0 dead; its replacement takes job `id` over and delivers it (the DONE
 * goes only to the members held alive). Returns the replacement.
 */
function replacementDelivers(c: ReviewCluster, id: string): number {
  for (const i of [1, 2, 3, 4]) c.view(i, { 0: "dead" });
  const owner = c.cores.findIndex((core) => core.self === c.cores[1]!.ownerOf(id));
  assert(owner > 0, "a replacement owns the job");
  c.delivered(owner, id);
  return owner;
}

Deno.test("a node frozen while it catches up starts over: it never turns ready on answers from before the freeze", () => {
  const c = new ReviewCluster();
  c.startAll();
  const id = node0Delivers(c);
  // Node 0 restarts and asks the others what it missed; they answer at once, but it is frozen
  // (SIGSTOP) before it reads their answers.
  c.crash(0);
  c.restart(0);
  c.scheduled[0]!.length = 0;
  const sync = (m: InFlight) => m.kind === "sync-req" || m.kind === "sync-reply";
  c.step((m) => m.kind === "sync-req" && m.from === 0);
  assert(c.inflight.some((m) => m.kind === "sync-reply" && m.to === 0), "answers on their way");
  // Meanwhile its replacement delivers the job.
  replacementDelivers(c, id);
  // The DONE is written lazily (`lazyAppendMs`): let it reach the others' disks. Node 0 is
  // frozen: its clock does not tick (its catch-up does not ask again meanwhile).
  for (let round = 0; round < 3; round++) {
    c.nowMs += 100;
    for (const i of [1, 2, 3, 4]) c.cores[i]!.tick(c.nowMs, c.wallMs);
    c.settle(avoiding(0));
  }
  // SIGCONT: the freeze monitor's beat fires first and tells node 0 (once), then the answers
  // from before the freeze are read; the catch-up asked afresh runs its course after them.
  c.cores[0]!.stalled(c.nowMs, c.wallMs, 14_000);
  c.collect();
  c.step((m) => m.kind === "sync-reply" && m.to === 0);
  for (let i = 0; i < 5; i++) {
    c.settle(sync);
    c.tick(1_000);
  }
  assertEquals(c.cores[0]!.phase, "ready");
  assertEquals(c.cores[0]!.table.get(id)?.phase, "delivered");
  assertEquals(c.scheduled[0]!.filter((j) => j === id), [], "not attempted again by node 0");
});

/**
 * A ready node frozen (SIGSTOP) while its replacement delivers its job: the DONE is made a
 * moment before the node resumes, so it is still lazy on the replacement (not sent, not on its
 * disk) and no majority holds it. Node 0 holds the job it owns, committed and pending.
 */
function frozenWhileReplacementDelivers(config: { catchupStragglerWaitMs?: number } = {}) {
  const c = new ReviewCluster(config);
  c.startAll();
  const id = node0Delivers(c);
  c.scheduled[0]!.length = 0;
  const owner = replacementDelivers(c, id);
  const others = [1, 2, 3, 4].filter((i) => i !== owner);
  // SIGCONT: node 0 asks every voter; the three that did not deliver answer first.
  c.cores[0]!.stalled(c.nowMs, c.wallMs, 5_000);
  c.collect();
  const fromOthers = (m: InFlight) =>
    (m.kind === "sync-req" && m.from === 0 && others.includes(m.to)) ||
    (m.kind === "sync-reply" && m.to === 0 && others.includes(m.from));
  c.pass(fromOthers);
  return { c, id, owner };
}

Deno.test("a node back from a freeze waits for the replacement's answer: a DONE made a moment ago is not attempted again", () => {
  const { c, id, owner } = frozenWhileReplacementDelivers();
  // A majority answered, none with the DONE: node 0 waits for the voter it holds alive.
  assertEquals(c.cores[0]!.phase, "catching_up");
  assertEquals(c.cores[0]!.table.get(id)?.phase, "pending");
  // The replacement answers from its log, its DONE not yet on its own disk.
  c.pass((m) =>
    (m.kind === "sync-req" && m.from === 0 && m.to === owner) ||
    (m.kind === "sync-reply" && m.to === 0 && m.from === owner)
  );
  const replacement = c.cores[owner]!;
  assert(
    replacement.tracker.max(replacement.self) < replacement.log.max(replacement.self),
    "the DONE is not yet durable where it was made",
  );
  c.tick(1);
  assertEquals(c.cores[0]!.phase, "ready");
  assertEquals(c.cores[0]!.table.get(id)?.phase, "delivered");
  assertEquals(c.scheduled[0]!.filter((j) => j === id), [], "not attempted again by node 0");
});

Deno.test("a voter that never answers holds a catch-up back catchupStragglerWaitMs at most", () => {
  const { c, id } = frozenWhileReplacementDelivers({ catchupStragglerWaitMs: 300 });
  c.tick(299);
  assertEquals(c.cores[0]!.phase, "catching_up");
  c.tick(1);
  assertEquals(c.cores[0]!.phase, "ready");
  // Without the replacement's answer the job is attempted again: at-least-once, bounded wait.
  assertEquals(c.scheduled[0]!.filter((j) => j === id), [id]);
});

Deno.test("the HTTP transport holds at most listeningMax timed-out requests open", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.text();
    await new Promise((r) => setTimeout(r, 300));
    return new Response("late", { status: 200 });
  });
  const url = `http://127.0.0.1:${server.addr.port}/hook`;
  const late: AttemptResult[] = [];
  const request = (id: string) => ({
    job: { id, url, payload: "{}", secrets: [] },
    attempt: 1,
    timeoutMs: 100,
    lateAnswerMs: 2_000,
    onLateAnswer: (r: AttemptResult) => late.push(r),
  });
  const transport = new HttpTransport({
    allowPrivateTargets: true,
    responseBodyBytesMax: 100,
    listeningMax: 1,
  });
  try {
    const [a, b] = await Promise.all([
      transport.send(request("j1")),
      transport.send(request("j2")),
    ]);
    // One listens; the other, past the bound, is aborted at its timeout as before.
    assertEquals([a, b].map((r) => r.kind === "timeout" && r.listening === true).sort(), [
      false,
      true,
    ]);
    await new Promise((r) => setTimeout(r, 500));
    assertEquals(late.map((r) => r.kind === "response" ? r.status : r.kind), [200]);
  } finally {
    transport.close();
    await server.shutdown();
  }
});

Deno.test("a job that leaves the engine and comes back still waits for its open request's answer", () => {
  // Simulator seed 504: a node's attempt timed out with its request still open, the job left
  // the engine (ownership moved while it waited for the late answer), and came back when the
  // new owner was held dead; the engine forgot the open request with the job and attempted at
  // once, so two requests of one job were at the receiver together.
  const { core } = timedOutListening();
  assertEquals(split(core.takeOutputs()).attempts, []);
  assert(core.cancel(1_300, "j1"), "held");
  core.schedule(1_400, job("j1"), { attemptsMade: 1, nextAttemptAtMs: 1_400 });
  core.tick(1_500);
  assertEquals(split(core.takeOutputs()).attempts, [], "no second request while the first is open");
  core.lateAnswer(1_600, job("j1"), 1, { ...status(500), latencyMs: 1_600 });
  core.tick(1_700);
  assertEquals(split(core.takeOutputs()).attempts.map((a) => a.attempt), [2], "then the retry");
});
