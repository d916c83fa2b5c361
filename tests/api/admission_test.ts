import { assert, assertEquals } from "../assert.ts";
import {
  type Answer,
  BASE,
  call,
  errorOf,
  get,
  makeApi,
  post,
  TOKEN,
  VALID_JOB,
} from "./harness.ts";
import type { FakeJobService } from "./fake_service.ts";

/** Yields to the event loop until `done` or 200 turns pass. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 0));
  assert(done(), `timed out waiting for ${what}`);
}

async function parkSubmits(
  api: { handler: (r: Request) => Promise<Response>; service: FakeJobService },
  n: number,
) {
  const pending: Promise<Answer>[] = [];
  for (let i = 0; i < n; i++) {
    pending.push(call(api.handler, post("/v1/jobs", { ...VALID_JOB, payload: i })));
  }
  await until(() => api.service.parked === n, `${n} parked submits`);
  return pending;
}

Deno.test("past submitsInFlightMax a submit gets 503 + Retry-After at once while health, readiness and metrics answer", async () => {
  const cap = 3;
  const api = makeApi({ config: { submitsInFlightMax: cap, retryAfterS: 2 } });
  api.service.mode = { kind: "hang" };
  const pending = await parkSubmits(api, cap);

  // The store never answers these; the gate must not wait on it.
  const refused = await call(api, post("/v1/jobs", VALID_JOB));
  assertEquals(refused.status, 503);
  assertEquals(refused.headers.get("retry-after"), "2");
  assertEquals(errorOf(refused).code, "overloaded");
  const batch = await call(api, post("/v1/jobs/batch", { jobs: [VALID_JOB] }));
  assertEquals(batch.status, 503);
  const retry = await call(api, new Request(`${BASE}/v1/jobs/x/retry`, { method: "POST" }));
  assertEquals(retry.status, 503);
  assertEquals(api.service.submitted.length, cap, "a refused submit reached the store");

  for (const path of ["/healthz", "/readyz", "/metrics", "/v1/cluster", "/v1/jobs"]) {
    assertEquals((await call(api, get(path))).status, 200, path);
  }
  const snap = api.registry.snapshot();
  assertEquals(snap["hookd_api_submits_in_flight"], cap);
  assertEquals(snap['hookd_api_admission_rejected_total{route="submit"}'], 1);
  assertEquals(snap['hookd_api_admission_rejected_total{route="batch"}'], 1);
  assertEquals(snap['hookd_api_admission_rejected_total{route="retry"}'], 1);

  api.service.release();
  for (const answer of await Promise.all(pending)) assertEquals(answer.status, 202);
  assertEquals(api.registry.snapshot()["hookd_api_submits_in_flight"], 0);
  api.service.mode = { kind: "accept" };
  assertEquals((await call(api, post("/v1/jobs", VALID_JOB))).status, 202, "slots came back");
});

Deno.test("every way a submit can fail gives its admission slot back", async () => {
  const api = makeApi({ config: { submitsInFlightMax: 1, bodyBytesMax: 4096 } });
  const failures: [string, () => Promise<Answer>][] = [
    ["malformed", () => call(api, post("/v1/jobs", "{"))],
    ["invalid", () => call(api, post("/v1/jobs", { payload: 1 }))],
    ["too large", () => call(api, post("/v1/jobs", "x".repeat(5000)))],
    ["batch invalid", () => call(api, post("/v1/jobs/batch", { jobs: 1 }))],
    [
      "retry not found",
      () => call(api, new Request(`${BASE}/v1/jobs/x/retry`, { method: "POST" })),
    ],
    ["refused", async () => {
      api.service.mode = { kind: "refuse", code: "no_quorum" };
      return await call(api, post("/v1/jobs", VALID_JOB));
    }],
    ["thrown", async () => {
      api.service.mode = { kind: "throw" };
      return await call(api, post("/v1/jobs", VALID_JOB));
    }],
    ["batch thrown", () => call(api, post("/v1/jobs/batch", { jobs: [VALID_JOB] }))],
  ];
  for (const [name, fail] of failures) {
    const answer = await fail();
    assert(answer.status >= 400, `${name}: ${answer.status}`);
    assertEquals(api.registry.snapshot()["hookd_api_submits_in_flight"], 0, name);
  }
  api.service.mode = { kind: "accept" };
  assertEquals((await call(api, post("/v1/jobs", VALID_JOB))).status, 202);
  assertEquals(api.registry.snapshot()['hookd_api_admission_rejected_total{route="submit"}'], 0);
});

Deno.test("cheap header checks refuse before the gate: a bad request never takes a slot", async () => {
  const api = makeApi({ config: { submitsInFlightMax: 1 } });
  api.service.mode = { kind: "hang" };
  const pending = await parkSubmits(api, 1);
  const plain = await call(api, post("/v1/jobs", VALID_JOB, { "content-type": "text/plain" }));
  assertEquals(plain.status, 415);
  const key = await call(api, post("/v1/jobs", VALID_JOB, { "idempotency-key": "x".repeat(300) }));
  assertEquals(key.status, 400);
  api.service.release();
  await Promise.all(pending);
});

/** A POST whose body sends `first` at once and then nothing until `close()` (or never). */
function tricklingPost(path: string, first: string, headers: Record<string, string> = {}) {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(new TextEncoder().encode(first));
    },
  });
  const request = new Request(BASE + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return {
    request,
    close() {
      try {
        controller.close();
      } catch {
        // Already closed or cancelled by the handler.
      }
    },
  };
}

Deno.test("clients trickling their bodies hold no submit slot: with the token, more of them than slots do not lock a submitter out", async () => {
  const cap = 2;
  const api = makeApi({
    apiToken: TOKEN,
    config: { submitsInFlightMax: cap, bodyReadTimeoutMs: 300 },
  });
  const auth = { authorization: `Bearer ${TOKEN}` };
  // Four times the slots, each with one byte sent and the rest never coming.
  const slow = Array.from({ length: cap * 4 }, () => tricklingPost("/v1/jobs", "{", auth));
  const pending = slow.map((s) => call(api, s.request));
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));

  const legit = await call(api, post("/v1/jobs", VALID_JOB, auth));
  assertEquals(legit.status, 202, `a legitimate submit behind trickling bodies: ${legit.text}`);
  const batch = await call(api, post("/v1/jobs/batch", { jobs: [VALID_JOB] }, auth));
  assertEquals(batch.status, 200, batch.text);

  // The trickling ones end with 408 once their deadline passes, and give back what they held.
  for (const answer of await Promise.all(pending)) {
    assertEquals(answer.status, 408);
    assertEquals(errorOf(answer).code, "body_timeout");
  }
  for (const s of slow) s.close();
  const snap = api.registry.snapshot();
  assertEquals(snap["hookd_api_submits_in_flight"], 0);
  assertEquals(snap["hookd_api_body_bytes_held"], 0);
});

Deno.test("bodies held while they arrive are bounded in bytes: past bodyBytesHeldMax a submit gets 503 + Retry-After, and the bytes come back", async () => {
  const api = makeApi({
    config: { bodyBytesHeldMax: 10_000, bodyBytesMax: 8_000, bodyReadTimeoutMs: 300 },
  });
  // 6,000 bytes arrive and the rest never does: that much is held.
  const first = tricklingPost("/v1/jobs", " ".repeat(6_000));
  const firstAnswer = call(api, first.request);
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
  assertEquals(api.registry.snapshot()["hookd_api_body_bytes_held"], 6_000);

  // A second 6,000 would pass the bound: refused at once, not read on.
  const second = tricklingPost("/v1/jobs", " ".repeat(6_000));
  const refused = await call(api, second.request);
  second.close();
  assertEquals(refused.status, 503);
  assertEquals(errorOf(refused).code, "overloaded");
  assertEquals(refused.headers.get("retry-after"), "1");
  assertEquals(api.registry.snapshot()["hookd_api_body_bytes_held"], 6_000);
  assertEquals(
    api.registry.snapshot()['hookd_api_admission_rejected_total{route="submit"}'],
    1,
  );

  // A small one still fits beside it.
  assertEquals((await call(api, post("/v1/jobs", VALID_JOB))).status, 202);

  assertEquals((await firstAnswer).status, 408);
  first.close();
  assertEquals(api.registry.snapshot()["hookd_api_body_bytes_held"], 0);
  assertEquals((await call(api, post("/v1/jobs", VALID_JOB))).status, 202);
});

Deno.test("with every slot taken a submit is refused 503 before its body is read: a body that never comes does not wait for its deadline", async () => {
  const cap = 2;
  const api = makeApi({ config: { submitsInFlightMax: cap, bodyReadTimeoutMs: 5_000 } });
  api.service.mode = { kind: "hang" };
  const pending = await parkSubmits(api, cap);
  // The parked submits still hold their bodies until they are answered.
  const heldByParked = api.registry.snapshot()["hookd_api_body_bytes_held"];
  const never = tricklingPost("/v1/jobs", "{");
  const started = performance.now();
  const answer = await call(api, never.request);
  never.close();
  assertEquals(answer.status, 503, answer.text);
  assertEquals(errorOf(answer).code, "overloaded");
  // Not a timing assertion on speed: 408 would come only after the 5 s deadline.
  assert(performance.now() - started < 4_000, "the refusal waited for the body");
  assertEquals(api.registry.snapshot()["hookd_api_body_bytes_held"], heldByParked);
  api.service.release();
  await Promise.all(pending);
  assertEquals(api.registry.snapshot()["hookd_api_body_bytes_held"], 0);
});
