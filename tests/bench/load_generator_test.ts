/**
 * The load generator, as the sweeps and chaos rely on it: open loop on the clock with latency
 * from each submit's scheduled time (so a submit the in-flight bound held shows its wait),
 * `offered` as what was really sent, every accepted id written with its times, refusals and
 * errors counted apart, acknowledgements inside the send window told from later ones, and an
 * HTTP submitter that counts only a 202 with an id as accepted and a 503 as a refusal.
 * Steps run on a virtual clock (tests/bench/virtual_runtime.ts): every figure is exact.
 */

import { assert, assertEquals } from "../assert.ts";
import {
  HttpSubmitter,
  runStep,
  type SubmitResult,
  type Submitter,
} from "../../src/bench/load_generator.ts";
import {
  type AcceptedSubmit,
  type GeneratorCommand,
  readIdsFile,
  type StepReport,
} from "../../src/process/generator_protocol.ts";
import type { Runtime } from "../../src/lib/runtime.ts";
import { VirtualRuntime } from "./virtual_runtime.ts";

/** Answers submit number `n` (in sending order) with `outcome(n)` after `latencyMs(n)`. */
function fakeSubmitter(
  runtime: Runtime,
  latencyMs: (n: number) => number,
  outcome: (n: number) => SubmitResult = (n) => ({ kind: "accepted", id: `job-${n}` }),
): Submitter & { sentAtMs: number[]; sentTo: number[] } {
  const sentAtMs: number[] = [];
  const sentTo: number[] = [];
  return {
    targets: 3,
    sentAtMs,
    sentTo,
    submit(index) {
      const n = sentAtMs.length;
      sentAtMs.push(runtime.nowMs());
      sentTo.push(index);
      return new Promise((resolve) => runtime.setTimer(latencyMs(n), () => resolve(outcome(n))));
    },
    close: () => Promise.resolve(),
  };
}

async function step(
  runtime: VirtualRuntime,
  submitter: Submitter,
  command: Exclude<GeneratorCommand, { op: "exit" | "clock" }>,
  inFlightMax: number,
): Promise<{ report: StepReport; ids: AcceptedSubmit[] }> {
  const idsDir = await Deno.makeTempDir({ prefix: "hookd-generator-test-" });
  try {
    const report = await runtime.run(
      runStep(submitter, { url: "http://127.0.0.1:9/hook", payload: "{}" }, command, {
        inFlightMax,
        idsDir,
        emit: () => {},
        runtime,
      }),
    );
    return { report, ids: await readIdsFile(report.ids_file) };
  } finally {
    await Deno.remove(idsDir, { recursive: true });
  }
}

/** Within the histogram's three significant digits. */
function near(actual: number | null, expected: number): boolean {
  return actual !== null && Math.abs(actual - expected) <= expected * 0.002 + 0.001;
}

Deno.test("runStep measures latency from each submit's scheduled time, also while the in-flight bound holds it", async () => {
  const runtime = new VirtualRuntime();
  const startMs = runtime.nowMs();
  // 100/s asked for 1 s, but one submit at a time and 25 ms per answer: every submit after
  // the first waits its turn, and what is still held at the end was never offered.
  const submitter = fakeSubmitter(runtime, () => 25);
  const { report, ids } = await step(
    runtime,
    submitter,
    { op: "open", step: "held", rate: 100, seconds: 1 },
    1,
  );
  assertEquals(report.asked, 100);
  assert(report.offered < report.asked, `offered ${report.offered} of ${report.asked}`);
  assertEquals(report.offered, submitter.sentAtMs.length);
  assertEquals(report.accepted + report.rejected + report.errors, report.offered);
  assertEquals(ids.length, report.accepted);
  assertEquals(report.sent_late, report.offered - 1);
  let latencyMaxMs = 0;
  ids.forEach(([id, scheduledMs, ackMs, sentMs, target], i) => {
    assertEquals(id, `job-${i}`);
    // Scheduled on the clock's grid, whatever the bound did to the real send.
    assertEquals(scheduledMs, startMs + i * 10, `submit ${i} scheduled`);
    assertEquals(ackMs, submitter.sentAtMs[i]! + 25, `submit ${i} acknowledged`);
    // The real send is logged beside it, and the target it went to (round robin).
    assertEquals(sentMs, submitter.sentAtMs[i]!, `submit ${i} sent`);
    assertEquals([target, submitter.sentTo[i]], [i % 3, i % 3], `submit ${i} target`);
    latencyMaxMs = Math.max(latencyMaxMs, ackMs - scheduledMs);
  });
  // The last submit waited far longer than its 25 ms answer: that wait is latency.
  assert(latencyMaxMs > 300, `latency max ${latencyMaxMs}`);
  assert(near(report.ack_max_ms, latencyMaxMs), `ack_max_ms ${report.ack_max_ms}`);
  const sorted = ids.map(([, scheduledMs, ackMs]) => ackMs - scheduledMs).sort((a, b) => a - b);
  const median = sorted[Math.ceil(sorted.length / 2) - 1]!;
  assert(near(report.ack_p50_ms, median), `ack_p50_ms ${report.ack_p50_ms}, median ${median}`);
});

Deno.test("runStep counts refusals and errors by code apart from what it accepted", async () => {
  const runtime = new VirtualRuntime();
  const outcome = (n: number): SubmitResult =>
    n % 3 === 0
      ? { kind: "accepted", id: `job-${n}` }
      : n % 3 === 1
      ? { kind: "rejected", code: "http_503_overloaded" }
      : { kind: "error", code: "timeout" };
  const { report, ids } = await step(
    runtime,
    fakeSubmitter(runtime, () => 5, outcome),
    { op: "open", step: "mixed", rate: 100, seconds: 0.3 },
    100,
  );
  assertEquals(
    [report.asked, report.offered, report.accepted, report.rejected, report.errors],
    [30, 30, 10, 10, 10],
  );
  assertEquals(report.codes, { http_503_overloaded: 10, timeout: 10 });
  assertEquals(ids.map(([id]) => id), Array.from({ length: 10 }, (_, i) => `job-${i * 3}`));
  // Nothing was held: every submit left on time.
  assertEquals(report.sent_late, 0);
  assert(near(report.ack_max_ms, 5), `ack_max_ms ${report.ack_max_ms}`);
});

Deno.test("runStep tells acknowledgements inside the send window from the ones after it", async () => {
  const runtime = new VirtualRuntime();
  // Ten submits at 0, 10, …, 90 ms, each answered 50 ms later: the window ends with the last
  // send at 90 ms, when only the first five (at 50…90 ms) are acknowledged.
  const { report } = await step(
    runtime,
    fakeSubmitter(runtime, () => 50),
    { op: "open", step: "window", rate: 100, seconds: 0.1 },
    100,
  );
  assertEquals([report.accepted, report.accepted_by_send_end], [10, 5]);
  assertEquals([report.send_seconds, report.first_ack_seconds], [0.09, 0.05]);
});

Deno.test("HttpSubmitter: only a 202 with an id is accepted, a 503 is a refusal with its reason", async () => {
  const answered = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    await r.body?.cancel();
    const path = new URL(r.url).pathname;
    if (path.startsWith("/ok/")) return Response.json({ id: "j1" }, { status: 202 });
    if (path.startsWith("/busy/")) {
      return Response.json({ error: { code: "overloaded" } }, { status: 503 });
    }
    if (path.startsWith("/bare503/")) return new Response("busy", { status: 503 });
    if (path.startsWith("/boom/")) return new Response("boom", { status: 500 });
    if (path.startsWith("/noid/")) return Response.json({}, { status: 202 });
    // /slow/: answers only when the test ends, long after the submitter gave up.
    await new Promise((resolve) => answered.signal.addEventListener("abort", resolve));
    return new Response(null, { status: 202 });
  });
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const base = `http://127.0.0.1:${server.addr.port}`;
  const paths = ["ok", "busy", "bare503", "boom", "noid", "slow"];
  const submitter = new HttpSubmitter(
    [...paths.map((p) => `${base}/${p}/`), `http://127.0.0.1:${closedPort}`],
    300,
  );
  try {
    const results = await Promise.all(
      [...paths, "closed"].map((_, i) =>
        submitter.submit(i, { url: "http://x.test/", payload: "{}" })
      ),
    );
    assertEquals(results, [
      { kind: "accepted", id: "j1" },
      { kind: "rejected", code: "http_503_overloaded" },
      { kind: "rejected", code: "http_503" },
      { kind: "error", code: "http_500" },
      { kind: "error", code: "no_id_in_202" },
      { kind: "error", code: "timeout" },
      { kind: "error", code: "connection" },
    ]);
  } finally {
    answered.abort();
    await submitter.close();
    await server.shutdown();
  }
});

Deno.test("HttpSubmitter with an event type: POST /v1/events {type, payload}, the 202's jobs counted", async () => {
  const bodies: Array<{ path: string; body: unknown }> = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    const path = new URL(r.url).pathname;
    bodies.push({ path, body: await r.json() });
    if (path.startsWith("/three/")) {
      return Response.json({ id: "evt_1", type: "bench.fanout", jobs: 3 }, { status: 202 });
    }
    if (path.startsWith("/none/")) {
      return Response.json({ id: "evt_2", type: "bench.fanout", jobs: 0 }, { status: 202 });
    }
    return Response.json({ id: "evt_3" }, { status: 202 });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const submitter = new HttpSubmitter(
    ["three", "none", "nojobs"].map((p) => `${base}/${p}/`),
    5_000,
    "bench.fanout",
  );
  try {
    const results = [];
    for (let i = 0; i < 3; i++) {
      // The url and limits of a job request are not an event's: they are left out.
      results.push(
        await submitter.submit(i, { url: "http://x.test/", payload: '{"n":1}', maxAttempts: 2 }),
      );
    }
    assertEquals(results, [
      { kind: "accepted", id: "evt_1", jobs: 3 },
      { kind: "accepted", id: "evt_2", jobs: 0 },
      { kind: "error", code: "no_jobs_in_202" },
    ]);
    assertEquals(bodies[0], {
      path: "/three/v1/events",
      body: { type: "bench.fanout", payload: { n: 1 } },
    });
  } finally {
    await submitter.close();
    await server.shutdown();
  }
});

Deno.test("runStep sums the jobs each accepted event made (a job makes one)", async () => {
  const runtime = new VirtualRuntime();
  const events = await step(
    runtime,
    fakeSubmitter(runtime, () => 5, (n) => ({ kind: "accepted", id: `evt-${n}`, jobs: n % 4 })),
    { op: "open", step: "events", rate: 100, seconds: 0.1 },
    100,
  );
  // Ten events: jobs 0,1,2,3,0,1,2,3,0,1.
  assertEquals([events.report.accepted, events.report.jobs_made], [10, 13]);
  const jobs = await step(
    runtime,
    fakeSubmitter(runtime, () => 5),
    { op: "open", step: "jobs", rate: 100, seconds: 0.1 },
    100,
  );
  assertEquals([jobs.report.accepted, jobs.report.jobs_made], [10, 10]);
});

Deno.test("runStep times refusals from each submit's real send, not its schedule: how fast the excess is shed", async () => {
  const runtime = new VirtualRuntime();
  // One at a time: every submit after the first is sent late, yet a refusal answered 2 ms
  // after it was sent is a 2-ms refusal, while the accepted ones carry their wait.
  const outcome = (n: number): SubmitResult =>
    n % 2 === 0 ? { kind: "accepted", id: `job-${n}` } : { kind: "rejected", code: "http_503" };
  const { report } = await step(
    runtime,
    fakeSubmitter(runtime, (n) => (n % 2 === 0 ? 30 : 2), outcome),
    { op: "open", step: "shed", rate: 100, seconds: 1 },
    1,
  );
  assert(report.rejected > 5, `rejected ${report.rejected}`);
  assert(near(report.refusal_p50_ms, 2), `refusal_p50_ms ${report.refusal_p50_ms}`);
  assert(near(report.refusal_p99_ms, 2), `refusal_p99_ms ${report.refusal_p99_ms}`);
  assert(report.ack_p99_ms !== null && report.ack_p99_ms > 100, `ack_p99_ms ${report.ack_p99_ms}`);
  // Nothing refused: no refusal figure.
  const none = await step(
    runtime,
    fakeSubmitter(runtime, () => 5),
    { op: "open", step: "clean", rate: 100, seconds: 0.1 },
    100,
  );
  assertEquals([none.report.refusal_p50_ms, none.report.refusal_p99_ms], [null, null]);
});
