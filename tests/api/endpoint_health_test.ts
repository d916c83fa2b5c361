/**
 * `GET /v1/endpoint-health`, the dashboard's endpoints: every endpoint's settings and health,
 * paged, and never its secret nor its headers' values (only their names), however the client
 * set them; the token like every /v1/ route.
 */

import { assert, assertEquals } from "../assert.ts";
import { BASE, call, get, makeApi, post, SECRET, TOKEN } from "./harness.ts";

const HEADER_VALUE = "Bearer receiver-credential-3141";

Deno.test("GET /v1/endpoint-health shows settings, health and an ordered backlog, never a secret or a header value", async () => {
  const api = makeApi();
  const created = await call(
    api,
    post("/v1/endpoints", {
      url: "https://receiver.example/hook",
      secret: SECRET,
      description: "billing",
      event_types: ["invoice.paid"],
      headers: { authorization: HEADER_VALUE, "x-tenant": "t-42" },
      ordered: true,
      rate_limit_per_s: 5,
    }),
  );
  assertEquals(created.status, 201);
  const id = (created.body as { id: string }).id;
  const disabled = await call(
    api,
    post("/v1/endpoints", { url: "https://gone.example/hook", disabled: true }),
  );
  api.service.health.set(id, {
    attempts: 4,
    failures: 1,
    lastSuccessAtMs: 1_800_000_000_000,
    lastFailure: { atMs: 1_800_000_001_000, outcome: "http_error", status: 503, detail: "busy" },
  });
  api.service.backlogs.set(id, 7);
  const response = await api.handler(get("/v1/endpoint-health"));
  assertEquals(response.status, 200);
  const text = await response.text();
  for (const secret of [SECRET, HEADER_VALUE, "t-42"]) {
    assert(!text.includes(secret), `the answer holds ${secret}`);
  }
  const body = JSON.parse(text) as { windowMs: number; items: Array<Record<string, unknown>> };
  assertEquals(body.windowMs, 900_000);
  const item = body.items.find((e) => e.id === id)!;
  assertEquals(item, {
    id,
    url: "https://receiver.example/hook",
    description: "billing",
    eventTypes: ["invoice.paid"],
    headerNames: ["authorization", "x-tenant"],
    rateLimitPerS: 5,
    ordered: true,
    disabled: false,
    disabledReason: null,
    createdAtMs: item.createdAtMs,
    updatedAtMs: item.updatedAtMs,
    health: {
      attempts: 4,
      failures: 1,
      lastSuccessAtMs: 1_800_000_000_000,
      lastFailure: { atMs: 1_800_000_001_000, outcome: "http_error", status: 503, detail: "busy" },
    },
    backlog: 7,
  });
  const other = body.items.find((e) => e.id === (disabled.body as { id: string }).id)!;
  assertEquals([other.disabled, other.disabledReason, other.backlog], [true, "manual", undefined]);
  assertEquals(other.health, { attempts: 0, failures: 0 });
});

Deno.test("GET /v1/endpoint-health pages like the endpoint list and wants the token", async () => {
  const api = makeApi();
  for (let i = 0; i < 3; i++) {
    await call(api, post("/v1/endpoints", { url: `https://r${i}.example/hook` }));
  }
  const first = await call(api, get("/v1/endpoint-health?limit=2"));
  const page = first.body as { items: unknown[]; nextCursor?: string };
  assertEquals(page.items.length, 2);
  assert(page.nextCursor !== undefined, "a next page");
  const second = await call(
    api,
    get(`/v1/endpoint-health?limit=2&cursor=${encodeURIComponent(page.nextCursor)}`),
  );
  assertEquals((second.body as { items: unknown[] }).items.length, 1);
  assertEquals((await call(api, get("/v1/endpoint-health?limit=0"))).status, 400);
  const locked = makeApi({ apiToken: TOKEN });
  assertEquals((await call(locked, get("/v1/endpoint-health"))).status, 401);
  const open = await call(
    locked,
    new Request(`${BASE}/v1/endpoint-health`, { headers: { authorization: `Bearer ${TOKEN}` } }),
  );
  assertEquals(open.status, 200);
});
