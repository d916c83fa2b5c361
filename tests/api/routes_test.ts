import { assert, assertEquals, assertThrows } from "../assert.ts";
import { deadJob } from "./fake_service.ts";
import { BASE, call, errorOf, get, makeApi, post, TOKEN, VALID_JOB } from "./harness.ts";
import { matchRoute } from "../../src/api/routes.ts";
import { API_ERROR_CODES, statusOf } from "../../src/api/errors.ts";

Deno.test("GET /v1/jobs/:id answers the job with its attempts and payload, and 404 for an unknown or malformed id", async () => {
  const api = makeApi();
  api.service.put(deadJob("d-1"));
  const answer = await call(api, get("/v1/jobs/d-1"));
  assertEquals(answer.status, 200);
  const job = answer.body as Record<string, unknown>;
  assertEquals(job.state, "dead");
  assertEquals(job.payload, '{"n":1}');
  assertEquals((job.attempts as { status: number }[])[0]!.status, 500);
  assertEquals(job.owner, "n2");

  for (const path of ["/v1/jobs/nope", "/v1/jobs/%E0%A4%A", "/v1/jobs/" + "a".repeat(300)]) {
    const missing = await call(api, get(path));
    assertEquals(missing.status, 404, path);
    assertEquals(errorOf(missing).code, "not_found");
  }
  // Percent-encoded ids are decoded before the lookup.
  api.service.put(deadJob("a:b"));
  assertEquals((await call(api, get("/v1/jobs/a%3Ab"))).status, 200);
});

Deno.test("GET /v1/jobs lists the newest jobs first without payloads; limit is bounded", async () => {
  const api = makeApi({ config: { listLimitDefault: 2, listLimitMax: 10 } });
  for (let i = 0; i < 4; i++) await call(api, post("/v1/jobs", { ...VALID_JOB, payload: i }));
  const answer = await call(api, get("/v1/jobs"));
  assertEquals(answer.status, 200);
  const items = (answer.body as { items: Record<string, unknown>[] }).items;
  assertEquals(items.map((j) => j.id), ["job-4", "job-3"]);
  assert(items.every((j) => !("payload" in j)), "a list carried payloads");
  const three = await call(api, get("/v1/jobs?limit=3&unknown=ignored"));
  assertEquals((three.body as { items: unknown[] }).items.length, 3);
  for (const limit of ["0", "11", "abc", "-1", "1.5", ""]) {
    const bad = await call(api, get(`/v1/jobs?limit=${limit}`));
    assertEquals(bad.status, 400, limit);
    assertEquals(errorOf(bad).field, "limit");
  }
});

Deno.test("GET /v1/dead-letters pages with limit and cursor; a bad cursor or limit is a 400", async () => {
  const api = makeApi();
  for (let i = 0; i < 5; i++) api.service.put(deadJob(`d-${i}`));
  const first = await call(api, get("/v1/dead-letters?limit=2"));
  assertEquals(first.status, 200);
  const page = first.body as { items: { id: string }[]; nextCursor?: string };
  assertEquals(page.items.map((j) => j.id), ["d-0", "d-1"]);
  assert(page.items.every((j) => !("payload" in j)));
  const ids = [...page.items.map((j) => j.id)];
  let cursor = page.nextCursor;
  for (let guard = 0; cursor !== undefined && guard < 10; guard++) {
    const next = await call(api, get(`/v1/dead-letters?limit=2&cursor=${cursor}`));
    const body = next.body as { items: { id: string }[]; nextCursor?: string };
    ids.push(...body.items.map((j) => j.id));
    cursor = body.nextCursor;
  }
  assertEquals(ids, ["d-0", "d-1", "d-2", "d-3", "d-4"]);
  assertEquals(errorOf(await call(api, get("/v1/dead-letters?cursor="))).field, "cursor");
  assertEquals(errorOf(await call(api, get("/v1/dead-letters?limit=x"))).field, "limit");
});

Deno.test("POST /v1/jobs/:id/retry answers 202 for a dead letter, 409 for another job, 404 for none, 503 with Retry-After when refused", async () => {
  const api = makeApi();
  api.service.put(deadJob("d-1"));
  const answer = await call(api, new Request(`${BASE}/v1/jobs/d-1/retry`, { method: "POST" }));
  assertEquals(answer.status, 202);
  assertEquals(answer.body, { id: "d-1" });
  assertEquals(api.service.retried, ["d-1"]);
  const again = await call(api, new Request(`${BASE}/v1/jobs/d-1/retry`, { method: "POST" }));
  assertEquals(again.status, 409, "no longer a dead letter");
  assertEquals(errorOf(again).code, "not_dead_letter");
  const none = await call(api, new Request(`${BASE}/v1/jobs/d-9/retry`, { method: "POST" }));
  assertEquals(none.status, 404);
  api.service.mode = { kind: "refuse", code: "no_quorum" };
  const refused = await call(api, new Request(`${BASE}/v1/jobs/d-1/retry`, { method: "POST" }));
  assertEquals(refused.status, 503);
  assertEquals(refused.headers.get("retry-after"), "1");
});

Deno.test("GET /v1/cluster answers members with state and incarnation, quorum and role", async () => {
  const api = makeApi();
  const answer = await call(api, get("/v1/cluster"));
  assertEquals(answer.status, 200);
  const view = answer.body as Record<string, unknown>;
  assertEquals(view.role, "ready");
  assertEquals(view.quorum, 2);
  assertEquals((view.members as { state: string }[]).map((m) => m.state), [
    "alive",
    "suspect",
    "alive",
  ]);
});

Deno.test("GET /metrics answers Prometheus text including the API's own counters", async () => {
  const api = makeApi();
  await call(api, post("/v1/jobs", VALID_JOB));
  const answer = await call(api, get("/metrics"));
  assertEquals(answer.status, 200);
  assert(answer.headers.get("content-type")!.startsWith("text/plain; version=0.0.4"));
  assert(answer.text.includes('hookd_api_jobs_total{outcome="accepted"} 1'), answer.text);
  assert(answer.text.includes("# TYPE hookd_api_submit_ms summary"));
  assert(answer.text.includes('hookd_api_admission_rejected_total{route="submit"} 0'));
});

Deno.test("GET /healthz answers 200; GET /readyz answers 200 or 503 with every check", async () => {
  const api = makeApi();
  assertEquals((await call(api, get("/healthz"))).body, { status: "ok" });
  const ready = await call(api, get("/readyz"));
  assertEquals(ready.status, 200);
  assertEquals((ready.body as { checks: unknown[] }).checks.length, 4);
  api.service.readiness_ = {
    ready: false,
    checks: [
      { name: "recovered", ok: true, detail: "wal replayed" },
      { name: "quorum", ok: false, detail: "1 of 3 voters reachable, 2 needed" },
    ],
  };
  const notReady = await call(api, get("/readyz"));
  assertEquals(notReady.status, 503);
  assertEquals(notReady.body, {
    ready: false,
    checks: [
      { name: "recovered", ok: true, detail: "wal replayed" },
      { name: "quorum", ok: false, detail: "1 of 3 voters reachable, 2 needed" },
    ],
  });
});

Deno.test("an unknown path answers 404 route_not_found; a known path with another method 405 with Allow", async () => {
  const api = makeApi();
  for (
    const path of ["//", "/v1", "/v1/", "/v1/jobs/", "/v2/jobs", "/v1/jobs/a/b/c", "/x/".repeat(50)]
  ) {
    const answer = await call(api, get(path));
    assertEquals(answer.status, 404, path);
    assertEquals(errorOf(answer).code, "route_not_found");
  }
  const cases: [string, string, string][] = [
    ["DELETE", "/v1/jobs", "GET, POST"],
    ["PUT", "/v1/jobs/batch", "GET, POST"],
    ["DELETE", "/v1/jobs/x", "GET"],
    ["GET", "/v1/jobs/x/retry", "POST"],
    ["POST", "/healthz", "GET"],
    ["POST", "/metrics", "GET"],
    ["PATCH", "/v1/cluster", "GET"],
    // "/" is the dashboard page.
    ["POST", "/", "GET"],
  ];
  for (const [method, path, allow] of cases) {
    const answer = await call(api, new Request(BASE + path, { method }));
    assertEquals(answer.status, 405, `${method} ${path}`);
    assertEquals(answer.headers.get("allow"), allow, `${method} ${path}`);
    assertEquals(errorOf(answer).code, "method_not_allowed");
  }
});

Deno.test("matchRoute prefers the literal /v1/jobs/batch for POST and the {id} route for GET", () => {
  const post = matchRoute("POST", "/v1/jobs/batch");
  assertEquals(post.kind === "route" && post.route.id, "submitBatch");
  const get = matchRoute("GET", "/v1/jobs/batch");
  assertEquals(get.kind === "route" && get.route.id, "getJob");
});

Deno.test("with an API token every /v1/ route and /metrics need the bearer token; health and readiness stay open", async () => {
  const api = makeApi({ apiToken: TOKEN });
  const v1: Request[] = [
    post("/v1/jobs", VALID_JOB),
    post("/v1/jobs/batch", { jobs: [] }),
    get("/v1/jobs"),
    get("/v1/jobs/x"),
    new Request(`${BASE}/v1/jobs/x/retry`, { method: "POST" }),
    get("/v1/dead-letters"),
    get("/v1/cluster"),
    get("/v1/openapi.json"),
    get("/v1/nonexistent"),
    get("/metrics"),
  ];
  const wrong = [
    undefined,
    "Bearer wrong-token-0123456789",
    `Basic ${btoa("u:" + TOKEN)}`,
    TOKEN,
    `Bearer ${TOKEN}x`,
    "Bearer",
  ];
  for (const request of v1) {
    for (const authorization of wrong) {
      const r = request.clone();
      if (authorization !== undefined) r.headers.set("authorization", authorization);
      const answer = await call(api, r);
      assertEquals(answer.status, 401, `${request.method} ${request.url} with ${authorization}`);
      assertEquals(answer.headers.get("www-authenticate"), "Bearer");
      assertEquals(errorOf(answer).code, "unauthorized");
    }
  }
  assertEquals(api.service.submitted.length, 0);
  for (const path of ["/healthz", "/readyz"]) {
    assertEquals((await call(api, get(path))).status, 200, path);
  }
  const scraped = await call(api, get("/metrics", { authorization: `Bearer ${TOKEN}` }));
  assertEquals(scraped.status, 200);
  assert(scraped.text.includes("hookd_api_jobs_total"), scraped.text);
  const ok = await call(api, post("/v1/jobs", VALID_JOB, { authorization: `Bearer ${TOKEN}` }));
  assertEquals(ok.status, 202);
  const lower = await call(api, get("/v1/cluster", { authorization: `bearer  ${TOKEN}` }));
  assertEquals(lower.status, 200);
});

Deno.test("without an API token /v1/ routes and /metrics need no Authorization header", async () => {
  const api = makeApi();
  assertEquals((await call(api, post("/v1/jobs", VALID_JOB))).status, 202);
  assertEquals((await call(api, get("/v1/cluster"))).status, 200);
  assertEquals((await call(api, get("/metrics"))).status, 200);
});

Deno.test("createApiHandler refuses a short or non-ASCII API token at start-up", () => {
  assertThrows(() => makeApi({ apiToken: "short" }), RangeError);
  assertThrows(() => makeApi({ apiToken: "has spaces in it, which is bad" }), RangeError);
});

Deno.test("a store that throws on a read answers 500 with the cause logged, not sent", async () => {
  const api = makeApi();
  api.service.mode = { kind: "throw" };
  for (const path of ["/v1/jobs", "/v1/jobs/x", "/v1/dead-letters", "/v1/cluster", "/readyz"]) {
    const answer = await call(api, get(path));
    assertEquals(answer.status, 500, path);
    assert(!answer.text.includes("fake store bug"));
  }
  assertEquals(api.logged.length, 5);
  assertEquals((await call(api, get("/healthz"))).status, 200);
});

Deno.test("every documented error code has a status; exactly the five unavailable codes are 503", () => {
  assertEquals(new Set(API_ERROR_CODES).size, API_ERROR_CODES.length);
  const unavailable = API_ERROR_CODES.filter((code) => statusOf(code) === 503).sort();
  assertEquals(unavailable, [
    "no_quorum",
    "not_ready",
    "overloaded",
    "shutting_down",
    "storage_failed",
  ]);
  for (const code of API_ERROR_CODES) {
    const status = statusOf(code);
    assert(status >= 400 && status < 600, `${code}: ${status}`);
  }
});

Deno.test("lists carry each job's newest attempt only: 1,000 dead letters of 100 failed 1 KiB attempts make a small answer, not 100 MB", async () => {
  const api = makeApi();
  const attempts = Array.from({ length: 100 }, (_, i) => ({
    attempt: i + 1,
    retry: 0,
    startedAtMs: 1_700_000_000_000 + i,
    latencyMs: 5,
    outcome: "http_error",
    status: 500,
    // What a receiver answered, kept up to delivery.responseBodyBytesMax (1 KiB).
    detail: "e".repeat(1024),
    node: "n2",
  }));
  for (let i = 0; i < 1000; i++) {
    api.service.put({ ...deadJob(`job-${i}`), attemptsMade: 100, maxAttempts: 100, attempts });
  }
  for (const path of ["/v1/dead-letters?limit=1000", "/v1/jobs?limit=1000"]) {
    const answer = await call(api, get(path));
    assertEquals(answer.status, 200);
    const items = (answer.body as { items: { attempts: { attempt: number }[] }[] }).items;
    assertEquals(items.length, 1000, path);
    assert(items.every((j) => j.attempts.length === 1 && j.attempts[0]!.attempt === 100), path);
    // A page polled every second by the dashboard: bytes per job, not per attempt.
    assert(answer.text.length < 2 * 1024 * 1024, `${path}: ${answer.text.length} bytes`);
  }
  // The job itself still has them all.
  const one = await call(api, get("/v1/jobs/job-7"));
  assertEquals((one.body as { attempts: unknown[] }).attempts.length, 100);
});
