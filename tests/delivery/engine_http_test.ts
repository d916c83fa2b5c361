/**
 * The engine end to end over real HTTP on loopback: each test starts its own receiver on
 * 127.0.0.1 (port 0) and an engine with an in-memory store, and closes both.
 */

import { assert, assertEquals } from "../assert.ts";
import { Webhook } from "standardwebhooks";
import { deliveryDefaults } from "../../src/config/delivery.ts";
import type { EngineConfig } from "../../src/delivery/engine.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { DeliveryEngine } from "../../src/delivery/engine.ts";
import { MemoryDeliveryStore } from "../../src/delivery/memory_store.ts";
import type { DeliveryJob, DeliveryReport } from "../../src/delivery/types.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** Longest any test waits for a report; the test fails past it instead of hanging. */
const WAIT_LIMIT_MS = 10_000;

const config: EngineConfig = {
  ...deliveryDefaults,
  retryScheduleMs: [10, 20, 40],
  maxAttemptsDefault: 4,
  retryAfterMinMs: 300,
  retryAfterMaxMs: 400,
  attemptTimeoutMs: 2_000,
  breakerFailureThreshold: 100,
  allowPrivateTargets: true,
};

interface Receiver {
  url: string;
  requests: Array<{ headers: Record<string, string>; body: string; atMs: number }>;
  close(): Promise<void>;
}

function startReceiver(
  respond: (index: number, request: Request) => Response | Promise<Response>,
): Receiver {
  const requests: Receiver["requests"] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    const index = requests.length;
    requests.push({ headers: Object.fromEntries(req.headers), body, atMs: performance.now() });
    return await respond(index, req);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    requests,
    close: () => server.shutdown(),
  };
}

/** An engine plus a way to await reports. */
function harness(
  overrides: Partial<EngineConfig> = {},
  secretsFor?: (job: DeliveryJob) => readonly string[] | undefined,
) {
  const store = new MemoryDeliveryStore();
  const reports: DeliveryReport[] = [];
  const waiters: Array<
    { pred: (r: DeliveryReport) => boolean; resolve: (r: DeliveryReport) => void }
  > = [];
  const engine = new DeliveryEngine({
    config: { ...config, ...overrides },
    store,
    rng: new Sfc32(42),
    ...(secretsFor !== undefined ? { secretsFor } : {}),
    onReport: (report) => {
      reports.push(report);
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.pred(report)) waiters.splice(i, 1)[0]!.resolve(report);
      }
    },
  });
  const waitFor = async (pred: (r: DeliveryReport) => boolean): Promise<DeliveryReport> => {
    const seen = reports.find(pred);
    if (seen !== undefined) return seen;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await new Promise<DeliveryReport>((resolve, reject) => {
        waiters.push({ pred, resolve });
        timer = setTimeout(() => reject(new Error("no matching report in time")), WAIT_LIMIT_MS);
      });
    } finally {
      clearTimeout(timer);
    }
  };
  const submit = (j: DeliveryJob) => {
    store.add(j);
    const result = engine.schedule(j);
    assert(result.ok, "schedule refused");
  };
  return { engine, store, reports, waitFor, submit };
}

const job = (id: string, url: string, extra: Partial<DeliveryJob> = {}): DeliveryJob => ({
  id,
  url,
  payload: JSON.stringify({ type: "test.event", id }),
  secrets: [SECRET],
  ...extra,
});

Deno.test("DeliveryEngine delivers a signed POST that standardwebhooks verifies", async () => {
  const receiver = startReceiver(() => new Response(null, { status: 204 }));
  const { engine, waitFor, submit, store } = harness();
  try {
    submit(job("msg_ok", receiver.url, { headers: { "x-tenant": "t1" } }));
    const report = await waitFor((r) => r.jobId === "msg_ok");
    assertEquals(report.kind, "delivered");
    assertEquals(receiver.requests.length, 1);
    const { headers, body } = receiver.requests[0]!;
    assertEquals(headers["webhook-id"], "msg_ok");
    assertEquals(headers["x-tenant"], "t1");
    assertEquals(headers["content-type"], "application/json");
    new Webhook(SECRET).verify(body, headers);
    assertEquals(store.delivered, 1);
    const snapshot = engine.metrics.snapshot();
    assertEquals(snapshot['hookd_delivery_attempts_total{outcome="success"}'], 1);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("an event's job carries and signs its event's id as webhook-id, on every attempt", async () => {
  const receiver = startReceiver((i) =>
    i === 0 ? new Response("boom", { status: 500 }) : new Response(null, { status: 204 })
  );
  const { engine, waitFor, submit } = harness();
  try {
    submit(job("evt_1.ep_a", receiver.url, { webhookId: "evt_1" }));
    const report = await waitFor((r) => r.jobId === "evt_1.ep_a" && r.kind === "delivered");
    assertEquals(report.kind, "delivered");
    assertEquals(receiver.requests.map((r) => r.headers["webhook-id"]), ["evt_1", "evt_1"]);
    // Signed over "evt_1.<timestamp>.<body>": the verifier takes it.
    for (const r of receiver.requests) new Webhook(SECRET).verify(r.body, r.headers);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine retries a 500 with the same webhook-id, then delivers", async () => {
  const receiver = startReceiver((i) =>
    i === 0 ? new Response("boom", { status: 500 }) : new Response("ok")
  );
  const { engine, waitFor, submit, reports } = harness();
  try {
    submit(job("msg_retry", receiver.url));
    const done = await waitFor((r) => r.kind === "delivered");
    assert(done.kind === "delivered" && done.attempt.attempt === 2);
    assertEquals(reports.map((r) => r.kind), ["retry", "delivered"]);
    const first = reports[0]!;
    assert(
      first.kind === "retry" && first.attempt.status === 500 && first.attempt.detail === "boom",
    );
    const ids = receiver.requests.map((r) => r.headers["webhook-id"]);
    assertEquals(ids, ["msg_retry", "msg_retry"]);
    // Each attempt is signed afresh and verifies.
    for (const r of receiver.requests) new Webhook(SECRET).verify(r.body, r.headers);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine times an attempt out and retries it", async () => {
  const receiver = startReceiver(async (i) => {
    if (i === 0) await new Promise((resolve) => setTimeout(resolve, 400));
    return new Response(null, { status: 200 });
  });
  const { engine, waitFor, submit, reports } = harness();
  try {
    submit(job("msg_slow", receiver.url, { timeoutMs: 100 }));
    await waitFor((r) => r.kind === "delivered");
    const first = reports[0]!;
    assert(first.kind === "retry" && first.attempt.outcome === "timeout", JSON.stringify(first));
    assertEquals(engine.metrics.snapshot()['hookd_delivery_attempts_total{outcome="timeout"}'], 1);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine ends a job at 410 Gone and can retry the dead letter by hand", async () => {
  let gone = true;
  const receiver = startReceiver(() => new Response(null, { status: gone ? 410 : 200 }));
  const { engine, waitFor, submit, reports } = harness();
  try {
    submit(job("msg_gone", receiver.url));
    const dead = await waitFor((r) => r.kind === "dead");
    assert(dead.kind === "dead" && dead.attemptsMade === 1 && /410/.test(dead.reason));
    assertEquals(receiver.requests.length, 1);
    const letters = engine.listDeadLetters();
    assertEquals(letters.map((l) => [l.job.id, l.history.length]), [["msg_gone", 1]]);
    gone = false;
    assert((await engine.retryDeadLetter("msg_gone")).ok);
    assert(!(await engine.retryDeadLetter("msg_unknown")).ok);
    await waitFor((r) => r.kind === "delivered");
    assertEquals(engine.listDeadLetters().length, 0);
    assertEquals(reports.map((r) => r.kind), ["dead", "delivered"]);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine honours Retry-After within its bounds", async () => {
  const receiver = startReceiver((i) =>
    i === 0
      ? new Response(null, { status: 503, headers: { "retry-after": "60" } })
      : new Response(null, { status: 200 })
  );
  const { engine, waitFor, submit, reports } = harness();
  try {
    submit(job("msg_later", receiver.url));
    await waitFor((r) => r.kind === "delivered");
    const retry = reports[0]!;
    assert(retry.kind === "retry");
    // 60 s asked, clamped to retryAfterMaxMs (400 ms); the schedule alone would say 10 ms.
    // (The upper bound leaves room for event-loop stalls between the response and the report.)
    const delayMs = retry.nextAttemptAtMs - retry.attempt.startedAtMs - retry.attempt.latencyMs;
    assert(delayMs > 390 && delayMs < 1_000, `delay ${delayMs}`);
    const [a, b] = receiver.requests;
    assert(b!.atMs - a!.atMs >= 390, "the second attempt came before Retry-After allowed");
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine keeps delivering to a fast endpoint while a slow one hangs", async () => {
  const { promise: release, resolve: releaseSlow } = Promise.withResolvers<void>();
  const slow = startReceiver(async () => {
    await release;
    return new Response(null, { status: 200 });
  });
  const fast = startReceiver(() => new Response(null, { status: 200 }));
  const { engine, waitFor, submit, reports } = harness({
    originConcurrencyMax: 2,
    concurrentDeliveriesMax: 4,
  });
  try {
    for (let i = 0; i < 10; i++) submit(job(`slow${i}`, slow.url));
    for (let i = 0; i < 30; i++) submit(job(`fast${i}`, fast.url));
    for (let i = 0; i < 30; i++) await waitFor((r) => r.jobId === `fast${i}`);
    assertEquals(reports.filter((r) => r.kind === "delivered").length, 30);
    assertEquals(slow.requests.length, 2, "the slow origin holds only its own 2 slots");
  } finally {
    releaseSlow();
    await engine.close();
    await slow.close();
    await fast.close();
  }
});

Deno.test("DeliveryEngine SSRF guard refuses loopback targets unless allowed", async () => {
  const receiver = startReceiver(() => new Response(null, { status: 200 }));
  const guarded = harness({ allowPrivateTargets: false });
  const open = harness({ allowPrivateTargets: true });
  try {
    guarded.submit(job("msg_ssrf", receiver.url));
    const dead = await guarded.waitFor((r) => r.jobId === "msg_ssrf");
    assert(dead.kind === "dead", JSON.stringify(dead));
    assert(
      /loopback/.test(dead.reason) && /--allow-private-targets/.test(dead.reason),
      dead.reason,
    );
    assertEquals(receiver.requests.length, 0, "nothing may reach the private target");
    guarded.submit(job("msg_scheme", "ftp://127.0.0.1/x"));
    const scheme = await guarded.waitFor((r) => r.jobId === "msg_scheme");
    assert(scheme.kind === "dead" && /scheme/.test(scheme.reason));

    open.submit(job("msg_allowed", receiver.url));
    assertEquals((await open.waitFor((r) => r.jobId === "msg_allowed")).kind, "delivered");
    assertEquals(receiver.requests.length, 1);
  } finally {
    await guarded.engine.close();
    await open.engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine keeps only a truncated response body and retries connection errors", async () => {
  const receiver = startReceiver(() => new Response("x".repeat(10_000), { status: 500 }));
  const { engine, waitFor, submit, reports } = harness({
    responseBodyBytesMax: 16,
    maxAttemptsDefault: 2,
  });
  // A port nobody listens on: connection refused.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadPort = (listener.addr as Deno.NetAddr).port;
  listener.close();
  try {
    submit(job("msg_big", receiver.url));
    submit(job("msg_refused", `http://127.0.0.1:${deadPort}/`));
    const big = await waitFor((r) => r.jobId === "msg_big" && r.kind === "dead");
    assert(big.kind === "dead" && big.attempt!.detail === "x".repeat(16));
    const refused = await waitFor((r) => r.jobId === "msg_refused" && r.kind === "dead");
    assert(refused.kind === "dead" && refused.attempt!.outcome === "network_error");
    assertEquals(reports.filter((r) => r.kind === "retry").length, 2);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine sends a job's Content-Type in place of the default, never joined to it", async () => {
  const receiver = startReceiver(() => new Response(null, { status: 204 }));
  const { engine, waitFor, submit } = harness();
  try {
    submit(job("msg_text", receiver.url, { headers: { "Content-Type": "text/plain" } }));
    assertEquals((await waitFor((r) => r.jobId === "msg_text")).kind, "delivered");
    const { headers, body } = receiver.requests[0]!;
    assertEquals(headers["content-type"], "text/plain");
    assertEquals(headers["webhook-id"], "msg_text");
    new Webhook(SECRET).verify(body, headers);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine dead-letters a job with invalid headers at once, sparing the origin", async () => {
  const receiver = startReceiver(() => new Response(null, { status: 204 }));
  const { engine, waitFor, submit } = harness({ breakerFailureThreshold: 1 });
  try {
    submit(job("msg_badheader", receiver.url, { headers: { "x-a": "a\r\nx-b: c" } }));
    const dead = await waitFor((r) => r.jobId === "msg_badheader");
    assert(dead.kind === "dead" && dead.attempt === undefined, JSON.stringify(dead));
    assert(/CR, LF/.test(dead.reason), dead.reason);
    // The origin's breaker (threshold 1) saw no failure: the next job goes through.
    submit(job("msg_after", receiver.url));
    assertEquals((await waitFor((r) => r.jobId === "msg_after")).kind, "delivered");
    assertEquals(receiver.requests.length, 1);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine close aborts attempts in flight without spending them", async () => {
  const { promise: release, resolve: releaseHang } = Promise.withResolvers<void>();
  const { promise: arrived, resolve: requestArrived } = Promise.withResolvers<void>();
  const receiver = startReceiver(async () => {
    requestArrived();
    await release;
    return new Response(null, { status: 200 });
  });
  // One attempt allowed: had the aborted attempt counted, the job would be a dead letter.
  const { engine, submit, reports, store } = harness({ maxAttemptsDefault: 1 });
  try {
    submit(job("msg_shutdown", receiver.url));
    await arrived;
    await engine.close();
    assertEquals(reports, [], "an attempt aborted by close is not reported");
    assertEquals(store.held("msg_shutdown")?.attemptsMade, 0);
    assertEquals(engine.listDeadLetters().length, 0);
  } finally {
    releaseHang();
    await engine.close();
    await receiver.close();
  }
});

Deno.test("DeliveryEngine counts a DNS lookup that hangs as a timeout of the attempt", async () => {
  const store = new MemoryDeliveryStore();
  const { promise: retried, resolve: onRetry } = Promise.withResolvers<DeliveryReport>();
  const engine = new DeliveryEngine({
    config: { ...config, allowPrivateTargets: false },
    store,
    rng: new Sfc32(1),
    // A resolver that never answers and ignores the abort signal.
    resolve: () => new Promise<string[]>(() => {}),
    onReport: (report) => onRetry(report),
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    assert(engine.schedule(job("msg_dns", "https://hang.example/hook", { timeoutMs: 50 })).ok);
    const report = await Promise.race([
      retried,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("no report in time")), WAIT_LIMIT_MS);
      }),
    ]);
    assert(report.kind === "retry" && report.attempt.outcome === "timeout", JSON.stringify(report));
  } finally {
    clearTimeout(timer);
    await engine.close();
  }
});

Deno.test("DeliveryEngine stamps webhook-timestamp from the wall clock, not its scheduling clock", async () => {
  const receiver = startReceiver(() => new Response(null, { status: 204 }));
  const store = new MemoryDeliveryStore();
  const { promise: delivered, resolve: onReport } = Promise.withResolvers<DeliveryReport>();
  // A scheduling clock an hour off wall time: what a process keeps when the host clock is
  // stepped after it started.
  const engine = new DeliveryEngine({
    config,
    store,
    rng: new Sfc32(1),
    clock: () => performance.timeOrigin + performance.now() + 3_600_000,
    onReport: (report) => onReport(report),
  });
  try {
    assert(engine.schedule(job("msg_wall", receiver.url)).ok);
    assertEquals((await delivered).kind, "delivered");
    const { headers, body } = receiver.requests[0]!;
    // verify() also checks the timestamp is within 5 minutes of now.
    new Webhook(SECRET).verify(body, headers);
  } finally {
    await engine.close();
    await receiver.close();
  }
});

Deno.test("a rotation between two attempts: the next is signed under the new and the old secret, and standardwebhooks verifies it under either", async () => {
  const NEW = "whsec_" + btoa("the new secret, 24 bytes!");
  const receiver = startReceiver((i) =>
    i === 0 ? new Response("boom", { status: 500 }) : new Response(null, { status: 204 })
  );
  // The endpoint table as the job store holds it: rotated once the first attempt failed.
  let rotated = false;
  const { engine, waitFor, submit } = harness(
    {},
    (j) => j.id.startsWith("evt_") ? (rotated ? [NEW, SECRET] : [SECRET]) : undefined,
  );
  try {
    submit(job("evt_1.ep_a", receiver.url, { webhookId: "evt_1" }));
    await waitFor((r) => r.jobId === "evt_1.ep_a" && r.kind === "retry");
    rotated = true;
    const report = await waitFor((r) => r.jobId === "evt_1.ep_a" && r.kind === "delivered");
    assertEquals(report.kind, "delivered");
    const [first, second] = receiver.requests;
    new Webhook(SECRET).verify(first!.body, first!.headers);
    let refused = false;
    try {
      new Webhook(NEW).verify(first!.body, first!.headers);
    } catch {
      refused = true;
    }
    assert(refused, "before the rotation, nothing is signed under the new secret");
    // After it, a receiver holding either secret verifies the delivery.
    assertEquals(second!.headers["webhook-signature"]!.split(" ").length, 2);
    new Webhook(NEW).verify(second!.body, second!.headers);
    new Webhook(SECRET).verify(second!.body, second!.headers);
  } finally {
    await engine.close();
    await receiver.close();
  }
});
