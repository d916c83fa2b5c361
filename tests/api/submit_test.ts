import { deliveryDefaults } from "../../src/config/delivery.ts";
import { assert, assertEquals } from "../assert.ts";
import type { RefusalCode } from "../../src/jobs/service.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { call, errorOf, makeApi, post, SECRET, VALID_JOB } from "./harness.ts";

Deno.test("POST /v1/jobs accepts a job with 202, its id and a Location, and stores the payload as JSON text", async () => {
  const api = makeApi();
  const answer = await call(
    api,
    post("/v1/jobs", {
      ...VALID_JOB,
      headers: { "X-Tenant": "t1" },
      secret: SECRET,
      maxAttempts: 3,
      timeoutMs: 5000,
    }),
  );
  assertEquals(answer.status, 202);
  assertEquals(answer.body, { id: "job-1", existing: false });
  assertEquals(answer.headers.get("location"), "/v1/jobs/job-1");
  assertEquals(api.service.submitted, [{
    url: VALID_JOB.url,
    payload: '{"event":"order.created","n":1}',
    headers: { "X-Tenant": "t1" },
    secret: SECRET,
    maxAttempts: 3,
    timeoutMs: 5000,
  }]);
});

Deno.test("POST /v1/jobs takes any JSON as payload, null and scalars included", async () => {
  const api = makeApi();
  for (const payload of [null, 0, "text", [1, 2], { a: { b: [true] } }]) {
    const answer = await call(api, post("/v1/jobs", { url: VALID_JOB.url, payload }));
    assertEquals(answer.status, 202, JSON.stringify(payload));
  }
  assertEquals(api.service.submitted.map((r) => r.payload), [
    "null",
    "0",
    '"text"',
    "[1,2]",
    '{"a":{"b":[true]}}',
  ]);
});

Deno.test("POST /v1/jobs with an Idempotency-Key returns the same id, and 409 for another body", async () => {
  const api = makeApi();
  const key = { "idempotency-key": "order-42" };
  const first = await call(api, post("/v1/jobs", VALID_JOB, key));
  const again = await call(api, post("/v1/jobs", VALID_JOB, key));
  assertEquals(first.status, 202);
  assertEquals(again.status, 202);
  assertEquals(again.body, { id: (first.body as { id: string }).id, existing: true });
  assertEquals(api.service.submitted[0]!.idempotencyKey, "order-42");

  const other = await call(api, post("/v1/jobs", { ...VALID_JOB, payload: 2 }, key));
  assertEquals(other.status, 409);
  assertEquals(errorOf(other).code, "idempotency_conflict");
});

Deno.test("POST /v1/jobs refuses an empty, overlong or non-printable Idempotency-Key with 400", async () => {
  const api = makeApi({ config: { idempotencyKeyCharsMax: 8 } });
  for (const key of ["", "123456789", "tab\there", "é"]) {
    // Headers cannot carry every byte through the Request constructor; build what it allows.
    let request: Request;
    try {
      request = post("/v1/jobs", VALID_JOB, { "idempotency-key": key });
    } catch {
      continue;
    }
    const answer = await call(api, request);
    assertEquals(answer.status, 400, JSON.stringify(key));
    assertEquals(errorOf(answer).field, "Idempotency-Key");
  }
  assertEquals(api.service.submitted.length, 0);
});

/** Each bad body and the field its 400 must name. */
const BAD_BODIES: readonly [string, unknown, string | undefined][] = [
  ["array body", [VALID_JOB], undefined],
  ["string body", '"job"', undefined],
  ["missing url", { payload: 1 }, "url"],
  ["url number", { url: 5, payload: 1 }, "url"],
  ["url null", { url: null, payload: 1 }, "url"],
  ["url not a URL", { url: "not a url", payload: 1 }, "url"],
  ["url ftp", { url: "ftp://example.com/x", payload: 1 }, "url"],
  ["url javascript", { url: "javascript:alert(1)", payload: 1 }, "url"],
  ["url credentials", { url: "https://user:pw@example.com/", payload: 1 }, "url"],
  ["url too long", { url: "https://example.com/" + "a".repeat(9000), payload: 1 }, "url"],
  // A URL parser tolerates these and percent-encodes them, but the raw text is what the node
  // stores and shows (hookd status, the dashboard): an ESC would drive a reader's terminal.
  ["url with ESC", { url: "https://example.com/\x1b[2J\x1b]0;pwned\x07", payload: 1 }, "url"],
  ["url with a C1 CSI", { url: "https://example.com/\u009b31m", payload: 1 }, "url"],
  ["url with a newline", { url: "https://example.com/a\nb", payload: 1 }, "url"],
  ["url with a space", { url: "https://example.com/a b", payload: 1 }, "url"],
  ["missing payload", { url: VALID_JOB.url }, "payload"],
  ["unknown field", { ...VALID_JOB, priority: 1 }, "priority"],
  ["idempotencyKey in a single body", { ...VALID_JOB, idempotencyKey: "k" }, "idempotencyKey"],
  [
    "__proto__ field",
    JSON.parse('{"url":"https://a.example/","payload":1,"__proto__":{}}'),
    "__proto__",
  ],
  ["headers array", { ...VALID_JOB, headers: ["a"] }, "headers"],
  ["headers null", { ...VALID_JOB, headers: null }, "headers"],
  ["header value number", { ...VALID_JOB, headers: { "X-A": 1 } }, "headers"],
  ["header bad name", { ...VALID_JOB, headers: { "X A": "1" } }, "headers"],
  ["header CRLF value", { ...VALID_JOB, headers: { "X-A": "a\r\nX-B: b" } }, "headers"],
  ["header reserved", { ...VALID_JOB, headers: { "webhook-id": "x" } }, "headers"],
  ["headers too large", { ...VALID_JOB, headers: { "X-A": "a".repeat(9000) } }, "headers"],
  ["secret number", { ...VALID_JOB, secret: 1 }, "secret"],
  ["secret no prefix", { ...VALID_JOB, secret: btoa("0123456789abcdef01234567") }, "secret"],
  ["secret not base64", { ...VALID_JOB, secret: "whsec_!!!" }, "secret"],
  ["secret too short", { ...VALID_JOB, secret: "whsec_" + btoa("short") }, "secret"],
  ["maxAttempts 0", { ...VALID_JOB, maxAttempts: 0 }, "maxAttempts"],
  ["maxAttempts 101", { ...VALID_JOB, maxAttempts: 101 }, "maxAttempts"],
  ["maxAttempts 1.5", { ...VALID_JOB, maxAttempts: 1.5 }, "maxAttempts"],
  ["maxAttempts string", { ...VALID_JOB, maxAttempts: "3" }, "maxAttempts"],
  ["timeoutMs 0", { ...VALID_JOB, timeoutMs: 0 }, "timeoutMs"],
  ["timeoutMs over the max", { ...VALID_JOB, timeoutMs: 60_001 }, "timeoutMs"],
  ["timeoutMs negative", { ...VALID_JOB, timeoutMs: -5 }, "timeoutMs"],
];

Deno.test("POST /v1/jobs answers 400 naming the field for each wrong type, bad value or unknown field", async () => {
  const api = makeApi();
  for (const [name, body, field] of BAD_BODIES) {
    const answer = await call(api, post("/v1/jobs", body));
    assertEquals(answer.status, 400, `${name}: ${answer.text}`);
    const error = errorOf(answer);
    assertEquals(error.code, "invalid", name);
    assertEquals(error.field, field, `${name}: ${error.message}`);
    assert(error.message.length > 0, name);
  }
  assertEquals(api.service.submitted.length, 0);
});

Deno.test("POST /v1/jobs answers 400 malformed_json for bad JSON, bad UTF-8 and an empty body", async () => {
  const api = makeApi();
  const bodies: BodyInit[] = ['{"url": ', "", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])];
  for (const body of bodies) {
    const request = new Request("http://hookd.test/v1/jobs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const answer = await call(api, request);
    assertEquals(answer.status, 400);
    assertEquals(errorOf(answer).code, "malformed_json");
  }
});

Deno.test("POST /v1/jobs takes a deeply nested payload within the bounds without a crash", async () => {
  const api = makeApi();
  const depth = 100_000;
  const body = `{"url":"https://a.example/","payload":${"[".repeat(depth)}${"]".repeat(depth)}}`;
  const answer = await call(api, post("/v1/jobs", body));
  // V8 parses and serialises this iteratively; were it to overflow, the answer is a 400.
  assertEquals(answer.status, 202, answer.text);
  assertEquals(api.logged, []);
});

Deno.test("POST /v1/jobs answers 413 for a payload over payloadBytesMax, naming payload", async () => {
  const api = makeApi();
  const payload = "x".repeat(deliveryDefaults.payloadBytesMax + 1);
  const answer = await call(api, post("/v1/jobs", { ...VALID_JOB, payload }));
  assertEquals(answer.status, 413);
  assertEquals(errorOf(answer).code, "payload_too_large");
  assertEquals(errorOf(answer).field, "payload");
});

Deno.test("POST /v1/jobs answers 413 for a body over bodyBytesMax, declared or streamed", async () => {
  const api = makeApi({ config: { bodyBytesMax: 1000 } });
  const big = JSON.stringify({ ...VALID_JOB, payload: "x".repeat(2000) });
  const declared = await call(api, post("/v1/jobs", big));
  assertEquals(declared.status, 413);
  assertEquals(errorOf(declared).code, "payload_too_large");

  // No Content-Length: the bound must hold while streaming, after reading at most one chunk
  // past it.
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      if (pulled > 100) controller.close();
      else controller.enqueue(new TextEncoder().encode("x".repeat(300)));
    },
  });
  const request = new Request("http://hookd.test/v1/jobs", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: stream,
  });
  assertEquals(request.headers.get("content-length"), null);
  const streamed = await call(api, request);
  assertEquals(streamed.status, 413);
  assert(pulled <= 6, `read ${pulled} chunks of 300 bytes for a 1000-byte bound`);
});

Deno.test("POST /v1/jobs answers 408 when the body does not arrive within bodyReadTimeoutMs", async () => {
  const scheduler = new SimScheduler();
  const runtime = new SimRuntime(scheduler);
  const api = makeApi({ config: { bodyReadTimeoutMs: 500 }, runtime });
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"url":'));
      // ...and nothing more, ever.
    },
  });
  const request = new Request("http://hookd.test/v1/jobs", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: stream,
  });
  let settled = false;
  const pending = call(api, request).finally(() => settled = true);
  await new Promise((r) => setTimeout(r, 10));
  scheduler.runUntil(499);
  await new Promise((r) => setTimeout(r, 10));
  assertEquals(settled, false, "answered before the deadline");
  scheduler.runUntil(500);
  const answer = await pending;
  assertEquals(answer.status, 408);
  assertEquals(errorOf(answer).code, "body_timeout");
  assertEquals(scheduler.pending, 0);
});

Deno.test("POST /v1/jobs answers 415 unless the body is declared application/json", async () => {
  const api = makeApi();
  for (const type of [undefined, "text/plain", "application/x-www-form-urlencoded"]) {
    const headers: Record<string, string> = type === undefined ? {} : { "content-type": type };
    const request = new Request("http://hookd.test/v1/jobs", {
      method: "POST",
      headers,
      body: new TextEncoder().encode(JSON.stringify(VALID_JOB)),
    });
    if (type === undefined) request.headers.delete("content-type");
    const answer = await call(api, request);
    assertEquals(answer.status, 415, String(type));
    assertEquals(errorOf(answer).code, "unsupported_media_type");
  }
  const charset = await call(
    api,
    post("/v1/jobs", VALID_JOB, { "content-type": "Application/JSON; charset=utf-8" }),
  );
  assertEquals(charset.status, 202);
});

const UNAVAILABLE: readonly RefusalCode[] = [
  "no_quorum",
  "overloaded",
  "not_ready",
  "shutting_down",
  "storage_failed",
];

Deno.test("POST /v1/jobs maps each 503 refusal to 503 with Retry-After (the store's, rounded up, else the default)", async () => {
  const api = makeApi({ config: { retryAfterS: 3 } });
  for (const code of UNAVAILABLE) {
    api.service.mode = { kind: "refuse", code };
    const plain = await call(api, post("/v1/jobs", VALID_JOB));
    assertEquals(plain.status, 503, code);
    assertEquals(plain.headers.get("retry-after"), "3", code);
    assertEquals(errorOf(plain).code, code);

    api.service.mode = { kind: "refuse", code, retryAfterS: 0.2 };
    const asked = await call(api, post("/v1/jobs", VALID_JOB));
    assertEquals(asked.headers.get("retry-after"), "1", `${code}: never 0`);
  }
});

Deno.test("POST /v1/jobs maps invalid to 400 with the store's field, and a store that throws to 500 without its cause", async () => {
  const api = makeApi();
  api.service.mode = { kind: "refuse", code: "invalid" };
  const invalid = await call(api, post("/v1/jobs", VALID_JOB));
  assertEquals(invalid.status, 400);
  assertEquals(errorOf(invalid).field, "url");

  api.service.mode = { kind: "throw" };
  const thrown = await call(api, post("/v1/jobs", VALID_JOB));
  assertEquals(thrown.status, 500);
  assertEquals(errorOf(thrown).code, "internal");
  assert(!thrown.text.includes("fake store bug"), "the cause leaked into the answer");
  assertEquals(api.logged.length, 1);
  assert(api.logged[0]!.includes("fake store bug"));
});

Deno.test("POST /v1/jobs counts accepted and rejected jobs by reason in the registry", async () => {
  const api = makeApi();
  await call(api, post("/v1/jobs", VALID_JOB, { "idempotency-key": "k" }));
  await call(api, post("/v1/jobs", VALID_JOB, { "idempotency-key": "k" }));
  await call(api, post("/v1/jobs", { payload: 1 }));
  await call(api, post("/v1/jobs", "{"));
  api.service.mode = { kind: "refuse", code: "no_quorum" };
  await call(api, post("/v1/jobs", VALID_JOB));
  const snap = api.registry.snapshot();
  assertEquals(snap['hookd_api_jobs_total{outcome="accepted"}'], 1);
  assertEquals(snap['hookd_api_jobs_total{outcome="existing"}'], 1);
  assertEquals(snap['hookd_api_jobs_total{outcome="rejected",reason="invalid"}'], 1);
  assertEquals(snap['hookd_api_jobs_total{outcome="rejected",reason="malformed_json"}'], 1);
  assertEquals(snap['hookd_api_jobs_total{outcome="rejected",reason="no_quorum"}'], 1);
  assertEquals(snap['hookd_api_responses_total{route="submitJob",status="202"}'], 2);
});

Deno.test("POST /v1/jobs keeps the payload's numbers as the client wrote them: 64-bit ids, huge exponents, decimals", async () => {
  const api = makeApi();
  // Raw text: a JSON.parse → JSON.stringify round trip would send the receiver
  // 12345678901234567000, null for 1e400, 0 for -0 and 1.1 for 1.10.
  const payload = '{"id":12345678901234567890,"big":1e400,"neg":-0,"price":1.10,' +
    '"list":[9007199254740993,2.5E-3],"small":42}';
  const answer = await call(
    api,
    post("/v1/jobs", `{"url": "${VALID_JOB.url}", "maxAttempts": 3, "payload": ${payload}}`),
  );
  assertEquals(answer.status, 202, answer.text);
  assertEquals(api.service.submitted[0]!.payload, payload);
  assertEquals(api.service.submitted[0]!.maxAttempts, 3);

  // The same in a batch item, and a lone number as the whole payload.
  const batch = await call(
    api,
    post(
      "/v1/jobs/batch",
      `{"jobs": [{"url": "${VALID_JOB.url}", "payload": ${payload}},` +
        `{"url": "${VALID_JOB.url}", "payload": 18446744073709551615}]}`,
    ),
  );
  assertEquals(batch.status, 200, batch.text);
  assertEquals(api.service.batches[0]!.map((r) => r.payload), [payload, "18446744073709551615"]);
  // Numbers that are not the payload's are still numbers to check.
  const huge = await call(
    api,
    post("/v1/jobs", `{"url": "${VALID_JOB.url}", "maxAttempts": 1e400, "payload": 1}`),
  );
  assertEquals(huge.status, 400);
  assertEquals(errorOf(huge).field, "maxAttempts");
});
