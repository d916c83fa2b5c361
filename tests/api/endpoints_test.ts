import { assert, assertEquals } from "../assert.ts";
import { BASE, call, errorOf, get, JSON_HEADERS, makeApi, post, SECRET } from "./harness.ts";

const ENDPOINT = Object.freeze({ url: "https://receiver.example/hook" });

function patch(id: string, body: unknown): Request {
  return new Request(`${BASE}/v1/endpoints/${id}`, {
    method: "PATCH",
    headers: JSON_HEADERS,
    body: JSON.stringify(body),
  });
}

Deno.test("POST /v1/endpoints answers 201 with the endpoint and a generated whsec_ secret", async () => {
  const api = makeApi({ randomBytes: (n: number) => new Uint8Array(n).fill(7) });
  const answer = await call(api, post("/v1/endpoints", ENDPOINT));
  assertEquals(answer.status, 201);
  const body = answer.body as Record<string, unknown>;
  assertEquals(answer.headers.get("location"), `/v1/endpoints/${body.id}`);
  assertEquals(body.secret, "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(7))));
  assertEquals(
    { ...body, id: undefined, created_at: undefined, updated_at: undefined, secret: undefined },
    {
      id: undefined,
      url: ENDPOINT.url,
      event_types: [],
      secret: undefined,
      description: "",
      headers: {},
      rate_limit_per_s: 0,
      ordered: false,
      disabled: false,
      disabled_reason: null,
      created_at: undefined,
      updated_at: undefined,
      previous_secret: null,
      previous_secret_until: null,
      last_success_at: null,
    },
  );
  assert(!Number.isNaN(Date.parse(body.created_at as string)));
});

Deno.test("POST /v1/endpoints keeps every field given, a given secret included", async () => {
  const api = makeApi();
  const full = {
    url: "https://receiver.example/a",
    event_types: ["invoice.paid", "user.created", "invoice.paid"],
    secret: SECRET,
    description: "billing",
    headers: { "x-tenant": "7" },
    rate_limit_per_s: 20,
    ordered: true,
    disabled: true,
  };
  const answer = await call(api, post("/v1/endpoints", full));
  assertEquals(answer.status, 201);
  const body = answer.body as Record<string, unknown>;
  assertEquals(body.event_types, ["invoice.paid", "user.created"]);
  assertEquals([body.secret, body.ordered, body.rate_limit_per_s], [SECRET, true, 20]);
  assertEquals([body.disabled, body.disabled_reason], [true, "manual"]);
});

Deno.test("POST /v1/endpoints refuses bad fields with 400 naming the field", async () => {
  const api = makeApi({ jobLimits: { ...defaultsWithPrivate(false) } });
  const cases: Array<[unknown, string | undefined]> = [
    [{}, "url"],
    [{ url: "not a url" }, "url"],
    [{ url: "ftp://a.example/" }, "url"],
    [{ url: "http://127.0.0.1/hook" }, "url"],
    [{ url: 5 }, "url"],
    [{ ...ENDPOINT, event_types: "invoice.paid" }, "event_types"],
    [{ ...ENDPOINT, event_types: ["has space"] }, "event_types"],
    [{ ...ENDPOINT, event_types: ["x".repeat(129)] }, "event_types"],
    [{ ...ENDPOINT, event_types: Array.from({ length: 257 }, (_, i) => `t${i}`) }, "event_types"],
    [{ ...ENDPOINT, secret: "plain" }, "secret"],
    [{ ...ENDPOINT, secret: "whsec_" + btoa("short") }, "secret"],
    [{ ...ENDPOINT, description: "é".repeat(2049) }, "description"],
    [{ ...ENDPOINT, description: "billing \ud800" }, "description"],
    [{ ...ENDPOINT, url: "https://a.example/\udc00" }, "url"],
    [{ ...ENDPOINT, headers: { "x-a": 1 } }, "headers"],
    [{ ...ENDPOINT, headers: { "webhook-id": "x" } }, "headers"],
    [{ ...ENDPOINT, rate_limit_per_s: 1.5 }, "rate_limit_per_s"],
    [{ ...ENDPOINT, rate_limit_per_s: 100_001 }, "rate_limit_per_s"],
    [{ ...ENDPOINT, ordered: "yes" }, "ordered"],
    [{ ...ENDPOINT, disabled: null }, "disabled"],
    [{ ...ENDPOINT, colour: "red" }, "colour"],
    [[ENDPOINT], undefined],
  ];
  for (const [body, field] of cases) {
    const answer = await call(api, post("/v1/endpoints", body));
    assertEquals(answer.status, 400, JSON.stringify(body).slice(0, 80));
    const error = errorOf(answer);
    assertEquals([error.code, error.field], ["invalid", field], error.message);
  }
  assertEquals(api.service.endpoints.held, 0, "nothing invalid reached the store");
});

function defaultsWithPrivate(allow: boolean) {
  return {
    payloadBytesMax: 1 << 20,
    jobHeadersBytesMax: 8192,
    attemptTimeoutMaxMs: 60_000,
    allowPrivateTargets: allow,
  };
}

Deno.test("endpoints are listed in pages, read, patched, disabled, enabled and deleted", async () => {
  const api = makeApi();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const made = await call(api, post("/v1/endpoints", { url: `https://r.example/${i}` }));
    ids.push((made.body as { id: string }).id);
  }
  const seen: string[] = [];
  let path = "/v1/endpoints?limit=2";
  for (let page = 0; page < 5; page++) {
    const answer = await call(api, get(path));
    assertEquals(answer.status, 200);
    const body = answer.body as { items: { id: string }[]; nextCursor?: string };
    seen.push(...body.items.map((e) => e.id));
    if (body.nextCursor === undefined) break;
    path = `/v1/endpoints?limit=2&cursor=${encodeURIComponent(body.nextCursor)}`;
  }
  assertEquals(seen, [...ids].sort());

  const id = ids[0]!;
  const disabled = await call(api, patch(id, { disabled: true }));
  assertEquals(disabled.status, 200);
  assertEquals((disabled.body as Record<string, unknown>).disabled_reason, "manual");
  const enabled = await call(api, patch(id, { disabled: false, event_types: ["a.b"] }));
  const body = enabled.body as Record<string, unknown>;
  assertEquals([body.disabled, body.disabled_reason, body.event_types], [false, null, ["a.b"]]);
  assertEquals(body.url, "https://r.example/0", "fields not given are kept");
  assertEquals((await call(api, patch(id, {}))).status, 400);
  assertEquals((await call(api, patch(id, { url: "nope" }))).status, 400);

  const removed = await call(api, new Request(`${BASE}/v1/endpoints/${id}`, { method: "DELETE" }));
  assertEquals([removed.status, removed.body], [200, { id, deleted: true }]);
  assertEquals((await call(api, get(`/v1/endpoints/${id}`))).status, 404);
  assertEquals((await call(api, patch(id, { ordered: true }))).status, 404);
  const list = await call(api, get("/v1/endpoints"));
  assertEquals((list.body as { items: unknown[] }).items.length, 4);
});

Deno.test("POST /v1/endpoints with an Idempotency-Key: a retry gets the same endpoint, another body 409", async () => {
  let n = 0;
  const api = makeApi({ randomBytes: (size: number) => new Uint8Array(size).fill(++n) });
  const keyed = (body: unknown, key = "create-42") =>
    post("/v1/endpoints", body, { "idempotency-key": key });
  const first = await call(api, keyed(ENDPOINT));
  assertEquals(first.status, 201);
  const body = first.body as Record<string, unknown>;
  assertEquals(api.service.lastEndpointKey, { idempotencyKey: "create-42", secretGiven: false });
  // The retry's secret is generated anew (other random bytes); it still gets the first.
  const retry = await call(api, keyed(ENDPOINT));
  assertEquals(retry.status, 201);
  assertEquals((retry.body as Record<string, unknown>).id, body.id);
  assertEquals((retry.body as Record<string, unknown>).secret, body.secret);
  assertEquals(api.service.endpoints.size, 1);
  // Another body under the key: 409, as for jobs.
  const other = await call(api, keyed({ url: "https://receiver.example/other" }));
  assertEquals(other.status, 409);
  assertEquals(errorOf(other).code, "idempotency_conflict");
  // A secret given is compared.
  const secret = await call(api, keyed({ ...ENDPOINT, secret: SECRET }));
  assertEquals(secret.status, 409);
  assertEquals(api.service.lastEndpointKey?.secretGiven, true);
  // Another key: another endpoint.
  assertEquals((await call(api, keyed(ENDPOINT, "create-43"))).status, 201);
  assertEquals(api.service.endpoints.size, 2);
  // A bad key is refused before anything is written.
  const bad = await call(api, keyed(ENDPOINT, "x".repeat(10_000)));
  assertEquals(bad.status, 400);
  assertEquals(api.service.endpoints.size, 2);
});

Deno.test("POST /v1/endpoints/{id}/secret/rotate: no body generates the secret, the old one stays previous", async () => {
  const api = makeApi({ randomBytes: (n: number) => new Uint8Array(n).fill(9) });
  const made = await call(api, post("/v1/endpoints", { ...ENDPOINT, secret: SECRET }));
  const id = (made.body as Record<string, unknown>).id as string;
  const bare = await call(
    api,
    new Request(`${BASE}/v1/endpoints/${id}/secret/rotate`, { method: "POST" }),
  );
  assertEquals(bare.status, 200);
  const rotated = bare.body as Record<string, unknown>;
  assertEquals(rotated.secret, "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(9))));
  assertEquals(rotated.previous_secret, SECRET);
  assert(
    Date.parse(rotated.previous_secret_until as string) > Date.parse(rotated.updated_at as string),
  );
  const given = "whsec_" + btoa("abcdefghijklmnopqrstuvwx");
  const second = await call(api, post(`/v1/endpoints/${id}/secret/rotate`, { secret: given }));
  assertEquals(second.status, 200);
  const body = second.body as Record<string, unknown>;
  // A second rotation within the overlap: the previous one is the secret just replaced.
  assertEquals([body.secret, body.previous_secret], [given, rotated.secret]);
  const bad = await call(api, post(`/v1/endpoints/${id}/secret/rotate`, { secret: "whsec_!" }));
  assertEquals([bad.status, errorOf(bad).field], [400, "secret"]);
  const unknown = await call(api, post(`/v1/endpoints/${id}/secret/rotate`, { key: 1 }));
  assertEquals([unknown.status, errorOf(unknown).field], [400, "key"]);
});

Deno.test("POST /v1/endpoints/{id}/recover takes since as ISO 8601 or epoch ms, refuses anything else", async () => {
  const api = makeApi();
  const made = await call(api, post("/v1/endpoints", ENDPOINT));
  const id = (made.body as Record<string, unknown>).id as string;
  for (
    const [since, ms] of [
      ["2025-01-31T12:00:00Z", Date.parse("2025-01-31T12:00:00Z")],
      ["2025-01-31T12:00:00.250+02:00", Date.parse("2025-01-31T12:00:00.250+02:00")],
      [1_700_000_000_000, 1_700_000_000_000],
      ["1700000000000", 1_700_000_000_000],
    ] as const
  ) {
    const answer = await call(api, post(`/v1/endpoints/${id}/recover`, { since }));
    assertEquals([answer.status, answer.body], [202, { recovered: 2, failed: 0 }]);
    assertEquals(api.service.recovers.at(-1), { id, sinceMs: ms });
  }
  for (const since of ["yesterday", "2025-13-45T99:00:00Z", -1, 1.5, null, true, {}]) {
    const answer = await call(api, post(`/v1/endpoints/${id}/recover`, { since }));
    assertEquals([answer.status, errorOf(answer).field], [400, "since"], JSON.stringify(since));
  }
  const none = await call(api, post(`/v1/endpoints/${id}/recover`, {}));
  assertEquals([none.status, errorOf(none).field], [400, "since"]);
  const missing = await call(api, post("/v1/endpoints/ep_nope/recover", { since: 0 }));
  assertEquals(missing.status, 404);
  assertEquals(api.service.recovers.length, 4);
});

Deno.test("reads and lists of endpoints leave the secrets out; GET /v1/endpoints/{id}/secret shows them", async () => {
  const api = makeApi();
  const made = await call(api, post("/v1/endpoints", { ...ENDPOINT, secret: SECRET }));
  const id = (made.body as Record<string, unknown>).id as string;
  const rotated = await call(api, post(`/v1/endpoints/${id}/secret/rotate`, {}));
  const newSecret = (rotated.body as Record<string, unknown>).secret as string;
  assert(newSecret.startsWith("whsec_") && newSecret !== SECRET, newSecret);
  const patched = await call(
    api,
    new Request(`${BASE}/v1/endpoints/${id}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ description: "billing" }),
    }),
  );
  const one = await call(api, new Request(`${BASE}/v1/endpoints/${id}`));
  const list = await call(api, new Request(`${BASE}/v1/endpoints`));
  const listed = (list.body as { items: Record<string, unknown>[] }).items[0]!;
  for (const [what, body] of [["PATCH", patched.body], ["GET", one.body], ["list", listed]]) {
    const text = JSON.stringify(body);
    assert(!text.includes(SECRET) && !text.includes(newSecret), `${what} shows a secret: ${text}`);
    const view = body as Record<string, unknown>;
    assert(!("secret" in view) && !("previous_secret" in view), `${what}: ${text}`);
    assert(typeof view.previous_secret_until === "string", `${what}: the overlap's end stays`);
  }
  const secrets = await call(api, new Request(`${BASE}/v1/endpoints/${id}/secret`));
  assertEquals(secrets.status, 200);
  const body = secrets.body as Record<string, unknown>;
  assertEquals([body.secret, body.previous_secret], [newSecret, SECRET]);
  assert(typeof body.previous_secret_until === "string");
  const missing = await call(api, new Request(`${BASE}/v1/endpoints/ep_nope/secret`));
  assertEquals(missing.status, 404);
});

Deno.test("GET /v1/endpoints/{id} and its /secret answer 503 when no majority answered the read, not 404", async () => {
  const api = makeApi();
  const made = await call(api, post("/v1/endpoints", ENDPOINT));
  const id = (made.body as Record<string, unknown>).id as string;
  api.service.mode = { kind: "refuse", code: "no_quorum", retryAfterS: 1 };
  for (const path of [`/v1/endpoints/${id}`, `/v1/endpoints/${id}/secret`]) {
    const answer = await call(api, new Request(`${BASE}${path}`));
    assertEquals([answer.status, errorOf(answer).code], [503, "no_quorum"], path);
  }
  api.service.mode = { kind: "accept" };
  assertEquals((await call(api, new Request(`${BASE}/v1/endpoints/${id}`))).status, 200);
});
