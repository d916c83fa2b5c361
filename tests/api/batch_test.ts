import { assert, assertEquals } from "../assert.ts";
import { call, errorOf, makeApi, post, VALID_JOB } from "./harness.ts";

Deno.test("POST /v1/jobs/batch answers one result per job in order; invalid jobs do not stop valid ones", async () => {
  const api = makeApi();
  const answer = await call(
    api,
    post("/v1/jobs/batch", {
      jobs: [
        VALID_JOB,
        { url: "ftp://x.example/", payload: 1 },
        { ...VALID_JOB, idempotencyKey: "k1" },
        "not a job",
        { ...VALID_JOB, color: "red" },
        { ...VALID_JOB, payload: 3 },
      ],
    }),
  );
  assertEquals(answer.status, 200);
  const results = (answer.body as { results: Record<string, unknown>[] }).results;
  assertEquals(results.length, 6);
  assertEquals(results[0], { id: "job-1", existing: false });
  assertEquals((results[1]!.error as { field: string }).field, "url");
  assertEquals(results[2], { id: "job-2", existing: false });
  assertEquals((results[3]!.error as { code: string }).code, "invalid");
  assertEquals((results[4]!.error as { field: string }).field, "color");
  assertEquals(results[5], { id: "job-3", existing: false });
  // One store call with the three valid jobs, in order.
  assertEquals(api.service.batches.length, 1);
  assertEquals(api.service.batches[0]!.map((r) => r.payload), [
    '{"event":"order.created","n":1}',
    '{"event":"order.created","n":1}',
    "3",
  ]);
  assertEquals(api.service.batches[0]![1]!.idempotencyKey, "k1");
  const snap = api.registry.snapshot();
  assertEquals(snap['hookd_api_jobs_total{outcome="accepted"}'], 3);
  assertEquals(snap['hookd_api_jobs_total{outcome="rejected",reason="invalid"}'], 3);
});

Deno.test("POST /v1/jobs/batch carries the store's refusals per job, with retryAfterS for 503 codes", async () => {
  const api = makeApi();
  api.service.mode = { kind: "refuse", code: "overloaded", retryAfterS: 2 };
  const answer = await call(api, post("/v1/jobs/batch", { jobs: [VALID_JOB, VALID_JOB] }));
  assertEquals(answer.status, 200);
  assertEquals(answer.body, {
    results: [
      { error: { code: "overloaded", message: "fake refuses: overloaded", retryAfterS: 2 } },
      { error: { code: "overloaded", message: "fake refuses: overloaded", retryAfterS: 2 } },
    ],
  });
});

Deno.test("POST /v1/jobs/batch with no jobs answers an empty result list without calling the store", async () => {
  const api = makeApi();
  const answer = await call(api, post("/v1/jobs/batch", { jobs: [] }));
  assertEquals(answer.status, 200);
  assertEquals(answer.body, { results: [] });
  assertEquals(api.service.batches.length, 0);
});

Deno.test("POST /v1/jobs/batch refuses a malformed batch whole with 400 naming the field", async () => {
  const api = makeApi({ config: { batchJobsMax: 3 } });
  const cases: [unknown, string | undefined, string][] = [
    [{}, "jobs", "invalid"],
    [{ jobs: {} }, "jobs", "invalid"],
    [{ jobs: [VALID_JOB, VALID_JOB, VALID_JOB, VALID_JOB] }, "jobs", "invalid"],
    [{ jobs: [], extra: 1 }, "extra", "invalid"],
    [[VALID_JOB], undefined, "invalid"],
    ["{", undefined, "malformed_json"],
  ];
  for (const [body, field, code] of cases) {
    const answer = await call(api, post("/v1/jobs/batch", body));
    assertEquals(answer.status, 400, JSON.stringify(body));
    assertEquals(errorOf(answer).code, code);
    assertEquals(errorOf(answer).field, field);
  }
  const keyed = await call(api, post("/v1/jobs/batch", { jobs: [] }, { "idempotency-key": "k" }));
  assertEquals(keyed.status, 400);
  assertEquals(errorOf(keyed).field, "Idempotency-Key");
  assertEquals(api.service.batches.length, 0);
});

Deno.test("POST /v1/jobs/batch answers 413 past bodyBytesMax and 415 without a JSON content type", async () => {
  const api = makeApi({ config: { bodyBytesMax: 2000 } });
  const jobs = Array.from({ length: 50 }, () => VALID_JOB);
  const big = await call(api, post("/v1/jobs/batch", { jobs }));
  assertEquals(big.status, 413);
  const plain = await call(
    api,
    post("/v1/jobs/batch", { jobs: [] }, { "content-type": "text/plain" }),
  );
  assertEquals(plain.status, 415);
});

Deno.test("POST /v1/jobs/batch answers 500 when the store throws, and logs the cause", async () => {
  const api = makeApi();
  api.service.mode = { kind: "throw" };
  const answer = await call(api, post("/v1/jobs/batch", { jobs: [VALID_JOB] }));
  assertEquals(answer.status, 500);
  assert(api.logged.some((line) => line.includes("fake store bug")));
});
