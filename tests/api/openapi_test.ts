/**
 * Holds the OpenAPI document to the server: every path and method it lists is a route and
 * every route is listed; every status it lists for an operation is produced by a scenario
 * that makes that situation, with a body that validates against the listed schema and the
 * listed headers present; and no scenario produces a status the document does not list.
 */

import { assert, assertEquals } from "../assert.ts";
import { ROUTES } from "../../src/api/routes.ts";
import { buildOpenApi } from "../../src/api/openapi.ts";
import { apiDefaults } from "../../src/config/api.ts";
import { jobsDefaults } from "../../src/config/jobs.ts";
import { BATCH_JOB_FIELDS, SUBMIT_FIELDS } from "../../src/api/validate.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { deadJob } from "./fake_service.ts";
import { sampleDashboard, throwingDashboard } from "./fake_dashboard.ts";
import {
  BASE,
  call,
  get,
  JSON_HEADERS,
  makeApi,
  post,
  SECRET,
  TOKEN,
  VALID_JOB,
} from "./harness.ts";
import { ENDPOINT_FIELDS } from "../../src/api/endpoint_validate.ts";
import { EVENT_FIELDS } from "../../src/api/event_validate.ts";
import { resolve, type Schema, validate } from "./json_schema.ts";

type Scenario = () => Promise<Response>;

const retry = (id: string) => new Request(`${BASE}/v1/jobs/${id}/retry`, { method: "POST" });

/** A request whose body never completes, answered once the body deadline passes. */
async function bodyTimeout(path: string, method = "POST"): Promise<Response> {
  const scheduler = new SimScheduler();
  const api = makeApi({ config: { bodyReadTimeoutMs: 100 }, runtime: new SimRuntime(scheduler) });
  const request = new Request(BASE + path, {
    method,
    headers: { "content-type": "application/json" },
    body: new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(new Uint8Array([0x7b])) }),
  });
  const pending = api.handler(request);
  await new Promise((r) => setTimeout(r, 5));
  scheduler.runUntil(100);
  return await pending;
}

/** `request` sent while the only admission slot is held by a submit the store never answers. */
async function whileFull(request: Request): Promise<Response> {
  const api = makeApi({ config: { submitsInFlightMax: 1 } });
  api.service.mode = { kind: "hang" };
  const parked = api.handler(post("/v1/jobs", VALID_JOB));
  for (let i = 0; i < 100 && api.service.parked === 0; i++) {
    await new Promise((r) => setTimeout(r, 0));
  }
  const response = await api.handler(request);
  api.service.release();
  await parked;
  return response;
}

function unauthorized(request: Request): Scenario {
  return () => makeApi({ apiToken: TOKEN }).handler(request);
}

function throwing(request: Request): Scenario {
  return () => {
    const api = makeApi();
    api.service.mode = { kind: "throw" };
    return api.handler(request);
  };
}

const ENDPOINT = Object.freeze({ url: "https://receiver.example/hook" });

/** An API whose fake store holds one endpoint, and that endpoint's id. */
async function withEndpoint(): Promise<{ api: ReturnType<typeof makeApi>; id: string }> {
  const api = makeApi();
  const created = await call(api, post("/v1/endpoints", ENDPOINT));
  assertEquals(created.status, 201);
  return { api, id: (created.body as { id: string }).id };
}

const patch = (id: string, body: unknown, headers: Record<string, string> = JSON_HEADERS) =>
  new Request(`${BASE}/v1/endpoints/${id}`, {
    method: "PATCH",
    headers,
    body: JSON.stringify(body),
  });
const remove = (id: string) => new Request(`${BASE}/v1/endpoints/${id}`, { method: "DELETE" });

const EVENT = Object.freeze({ type: "invoice.paid", payload: { invoice: 42 } });

const SCENARIOS: Readonly<Record<string, Scenario>> = {
  "POST /v1/events 202": async () => {
    const { api } = await withEndpoint();
    return await api.handler(post("/v1/events", EVENT));
  },
  "POST /v1/events 400": () => makeApi().handler(post("/v1/events", { ...EVENT, type: "" })),
  "POST /v1/events 401": unauthorized(post("/v1/events", EVENT)),
  "POST /v1/events 408": () => bodyTimeout("/v1/events"),
  "POST /v1/events 409": async () => {
    const api = makeApi();
    await call(api, post("/v1/events", EVENT, { "idempotency-key": "k" }));
    return await api.handler(
      post("/v1/events", { ...EVENT, payload: 9 }, { "idempotency-key": "k" }),
    );
  },
  "POST /v1/events 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      post("/v1/events", { ...EVENT, payload: "x".repeat(200) }),
    ),
  "POST /v1/events 415": () =>
    makeApi().handler(post("/v1/events", EVENT, { "content-type": "text/plain" })),
  "POST /v1/events 500": throwing(post("/v1/events", EVENT)),
  "POST /v1/events 503": () => whileFull(post("/v1/events", EVENT)),
  "GET /v1/events/{id} 200": async () => {
    const { api } = await withEndpoint();
    const sent = await call(api, post("/v1/events", EVENT));
    return await api.handler(get(`/v1/events/${(sent.body as { id: string }).id}`));
  },
  "GET /v1/events/{id} 401": unauthorized(get("/v1/events/evt_1")),
  "GET /v1/events/{id} 404": () => makeApi().handler(get("/v1/events/evt_nope")),
  "GET /v1/events/{id} 500": throwing(get("/v1/events/evt_1")),

  "POST /v1/endpoints 201": () => makeApi().handler(post("/v1/endpoints", ENDPOINT)),
  "POST /v1/endpoints 400": () => makeApi().handler(post("/v1/endpoints", { url: 5 })),
  "POST /v1/endpoints 401": unauthorized(post("/v1/endpoints", ENDPOINT)),
  "POST /v1/endpoints 408": () => bodyTimeout("/v1/endpoints"),
  "POST /v1/endpoints 409": async () => {
    const api = makeApi();
    await call(api, post("/v1/endpoints", ENDPOINT, { "idempotency-key": "k" }));
    return await api.handler(
      post("/v1/endpoints", { ...ENDPOINT, description: "other" }, { "idempotency-key": "k" }),
    );
  },
  "POST /v1/endpoints 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      post("/v1/endpoints", { ...ENDPOINT, description: "x".repeat(200) }),
    ),
  "POST /v1/endpoints 415": () =>
    makeApi().handler(post("/v1/endpoints", ENDPOINT, { "content-type": "text/plain" })),
  "POST /v1/endpoints 500": throwing(post("/v1/endpoints", ENDPOINT)),
  "POST /v1/endpoints 503": () => {
    const api = makeApi();
    api.service.mode = { kind: "refuse", code: "no_quorum" };
    return api.handler(post("/v1/endpoints", ENDPOINT));
  },
  "GET /v1/endpoints 200": async () => {
    const { api } = await withEndpoint();
    await call(api, post("/v1/endpoints", ENDPOINT));
    return await api.handler(get("/v1/endpoints?limit=1"));
  },
  "GET /v1/endpoints 400": () => makeApi().handler(get("/v1/endpoints?limit=0")),
  "GET /v1/endpoints 401": unauthorized(get("/v1/endpoints")),
  "GET /v1/endpoints 500": throwing(get("/v1/endpoints")),
  "GET /v1/endpoints/{id} 200": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(get(`/v1/endpoints/${id}`));
  },
  "GET /v1/endpoints/{id} 401": unauthorized(get("/v1/endpoints/ep_1")),
  "GET /v1/endpoints/{id} 404": () => makeApi().handler(get("/v1/endpoints/ep_nope")),
  "GET /v1/endpoints/{id} 500": throwing(get("/v1/endpoints/ep_1")),
  "GET /v1/endpoints/{id} 503": async () => {
    // No majority answered the read in time.
    const { api, id } = await withEndpoint();
    api.service.mode = { kind: "refuse", code: "no_quorum" };
    return await api.handler(get(`/v1/endpoints/${id}`));
  },
  "GET /v1/endpoints/{id}/secret 200": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(get(`/v1/endpoints/${id}/secret`));
  },
  "GET /v1/endpoints/{id}/secret 401": unauthorized(get("/v1/endpoints/ep_1/secret")),
  "GET /v1/endpoints/{id}/secret 404": () => makeApi().handler(get("/v1/endpoints/ep_nope/secret")),
  "GET /v1/endpoints/{id}/secret 500": throwing(get("/v1/endpoints/ep_1/secret")),
  "GET /v1/endpoints/{id}/secret 503": async () => {
    const { api, id } = await withEndpoint();
    api.service.mode = { kind: "refuse", code: "no_quorum" };
    return await api.handler(get(`/v1/endpoints/${id}/secret`));
  },
  "PATCH /v1/endpoints/{id} 200": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(patch(id, { disabled: true, event_types: ["invoice.paid"] }));
  },
  "PATCH /v1/endpoints/{id} 400": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(patch(id, { rate_limit_per_s: -1 }));
  },
  "PATCH /v1/endpoints/{id} 401": unauthorized(patch("ep_1", { ordered: true })),
  "PATCH /v1/endpoints/{id} 404": () => makeApi().handler(patch("ep_nope", { ordered: true })),
  "PATCH /v1/endpoints/{id} 408": () => bodyTimeout("/v1/endpoints/ep_1", "PATCH"),
  "PATCH /v1/endpoints/{id} 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      patch("ep_1", { description: "x".repeat(200) }),
    ),
  "PATCH /v1/endpoints/{id} 415": () =>
    makeApi().handler(patch("ep_1", { ordered: true }, { "content-type": "text/plain" })),
  "PATCH /v1/endpoints/{id} 500": throwing(patch("ep_1", { ordered: true })),
  "PATCH /v1/endpoints/{id} 503": () => whileFull(patch("ep_1", { ordered: true })),
  "DELETE /v1/endpoints/{id} 200": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(remove(id));
  },
  "DELETE /v1/endpoints/{id} 401": unauthorized(remove("ep_1")),
  "DELETE /v1/endpoints/{id} 404": () => makeApi().handler(remove("ep_nope")),
  "DELETE /v1/endpoints/{id} 500": throwing(remove("ep_1")),
  "DELETE /v1/endpoints/{id} 503": () => whileFull(remove("ep_1")),

  "POST /v1/endpoints/{id}/secret/rotate 200": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(post(`/v1/endpoints/${id}/secret/rotate`, { secret: SECRET }));
  },
  "POST /v1/endpoints/{id}/secret/rotate 400": () =>
    makeApi().handler(post("/v1/endpoints/ep_1/secret/rotate", { secret: "nope" })),
  "POST /v1/endpoints/{id}/secret/rotate 401": unauthorized(
    post("/v1/endpoints/ep_1/secret/rotate", {}),
  ),
  "POST /v1/endpoints/{id}/secret/rotate 404": () =>
    makeApi().handler(post("/v1/endpoints/ep_nope/secret/rotate", {})),
  "POST /v1/endpoints/{id}/secret/rotate 408": () =>
    bodyTimeout("/v1/endpoints/ep_1/secret/rotate"),
  "POST /v1/endpoints/{id}/secret/rotate 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      post("/v1/endpoints/ep_1/secret/rotate", { secret: "x".repeat(200) }),
    ),
  "POST /v1/endpoints/{id}/secret/rotate 415": () =>
    makeApi().handler(
      post("/v1/endpoints/ep_1/secret/rotate", {}, { "content-type": "text/plain" }),
    ),
  "POST /v1/endpoints/{id}/secret/rotate 500": throwing(
    post("/v1/endpoints/ep_1/secret/rotate", {}),
  ),
  "POST /v1/endpoints/{id}/secret/rotate 503": () =>
    whileFull(post("/v1/endpoints/ep_1/secret/rotate", {})),
  "POST /v1/endpoints/{id}/recover 202": async () => {
    const { api, id } = await withEndpoint();
    return await api.handler(post(`/v1/endpoints/${id}/recover`, { since: 0 }));
  },
  "POST /v1/endpoints/{id}/recover 400": () =>
    makeApi().handler(post("/v1/endpoints/ep_1/recover", { since: "yesterday" })),
  "POST /v1/endpoints/{id}/recover 401": unauthorized(
    post("/v1/endpoints/ep_1/recover", { since: 0 }),
  ),
  "POST /v1/endpoints/{id}/recover 404": () =>
    makeApi().handler(post("/v1/endpoints/ep_nope/recover", { since: 0 })),
  "POST /v1/endpoints/{id}/recover 408": () => bodyTimeout("/v1/endpoints/ep_1/recover"),
  "POST /v1/endpoints/{id}/recover 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      post("/v1/endpoints/ep_1/recover", { since: "x".repeat(200) }),
    ),
  "POST /v1/endpoints/{id}/recover 415": () =>
    makeApi().handler(
      post("/v1/endpoints/ep_1/recover", { since: 0 }, { "content-type": "text/plain" }),
    ),
  "POST /v1/endpoints/{id}/recover 500": throwing(
    post("/v1/endpoints/ep_1/recover", { since: 0 }),
  ),
  "POST /v1/endpoints/{id}/recover 503": () =>
    whileFull(post("/v1/endpoints/ep_1/recover", { since: 0 })),

  "POST /v1/jobs 202": () => makeApi().handler(post("/v1/jobs", VALID_JOB)),
  "POST /v1/jobs 400": () => makeApi().handler(post("/v1/jobs", { ...VALID_JOB, x: 1 })),
  "POST /v1/jobs 401": unauthorized(post("/v1/jobs", VALID_JOB)),
  "POST /v1/jobs 408": () => bodyTimeout("/v1/jobs"),
  "POST /v1/jobs 409": async () => {
    const api = makeApi();
    await call(api, post("/v1/jobs", VALID_JOB, { "idempotency-key": "k" }));
    return await api.handler(
      post("/v1/jobs", { ...VALID_JOB, payload: 9 }, { "idempotency-key": "k" }),
    );
  },
  "POST /v1/jobs 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      post("/v1/jobs", { ...VALID_JOB, payload: "x".repeat(200) }),
    ),
  "POST /v1/jobs 415": () =>
    makeApi().handler(post("/v1/jobs", VALID_JOB, { "content-type": "text/plain" })),
  "POST /v1/jobs 500": throwing(post("/v1/jobs", VALID_JOB)),
  "POST /v1/jobs 503": () => {
    const api = makeApi();
    api.service.mode = { kind: "refuse", code: "no_quorum" };
    return api.handler(post("/v1/jobs", VALID_JOB));
  },

  "GET /v1/jobs 200": async () => {
    const api = makeApi();
    await call(api, post("/v1/jobs", VALID_JOB));
    api.service.put(deadJob("d-1"));
    return await api.handler(get("/v1/jobs"));
  },
  "GET /v1/jobs 400": () => makeApi().handler(get("/v1/jobs?limit=0")),
  "GET /v1/jobs 401": unauthorized(get("/v1/jobs")),
  "GET /v1/jobs 500": throwing(get("/v1/jobs")),

  "POST /v1/jobs/batch 200": () =>
    makeApi().handler(
      post("/v1/jobs/batch", {
        jobs: [VALID_JOB, { url: 1, payload: 1 }, { ...VALID_JOB, idempotencyKey: "k" }],
      }),
    ),
  "POST /v1/jobs/batch 400": () => makeApi().handler(post("/v1/jobs/batch", { jobs: 5 })),
  "POST /v1/jobs/batch 401": unauthorized(post("/v1/jobs/batch", { jobs: [] })),
  "POST /v1/jobs/batch 408": () => bodyTimeout("/v1/jobs/batch"),
  "POST /v1/jobs/batch 413": () =>
    makeApi({ config: { bodyBytesMax: 100 } }).handler(
      post("/v1/jobs/batch", { jobs: [VALID_JOB, VALID_JOB] }),
    ),
  "POST /v1/jobs/batch 415": () =>
    makeApi().handler(post("/v1/jobs/batch", { jobs: [] }, { "content-type": "text/plain" })),
  "POST /v1/jobs/batch 500": throwing(post("/v1/jobs/batch", { jobs: [VALID_JOB] })),
  "POST /v1/jobs/batch 503": () => whileFull(post("/v1/jobs/batch", { jobs: [VALID_JOB] })),

  "GET /v1/jobs/{id} 200": () => {
    const api = makeApi();
    api.service.put(deadJob("d-1"));
    return api.handler(get("/v1/jobs/d-1"));
  },
  "GET /v1/jobs/{id} 401": unauthorized(get("/v1/jobs/d-1")),
  "GET /v1/jobs/{id} 404": () => makeApi().handler(get("/v1/jobs/nope")),
  "GET /v1/jobs/{id} 500": throwing(get("/v1/jobs/d-1")),

  "POST /v1/jobs/{id}/retry 202": () => {
    const api = makeApi();
    api.service.put(deadJob("d-1"));
    return api.handler(retry("d-1"));
  },
  "POST /v1/jobs/{id}/retry 401": unauthorized(retry("d-1")),
  "POST /v1/jobs/{id}/retry 404": () => makeApi().handler(retry("nope")),
  "POST /v1/jobs/{id}/retry 409": () => {
    const api = makeApi();
    api.service.put({ ...deadJob("d-1"), state: "delivered" });
    return api.handler(retry("d-1"));
  },
  "POST /v1/jobs/{id}/retry 500": throwing(retry("d-1")),
  "POST /v1/jobs/{id}/retry 503": () => whileFull(retry("d-1")),

  "GET /v1/dead-letters 200": () => {
    const api = makeApi();
    for (let i = 0; i < 3; i++) api.service.put(deadJob(`d-${i}`));
    return api.handler(get("/v1/dead-letters?limit=2"));
  },
  "GET /v1/dead-letters 400": () => makeApi().handler(get("/v1/dead-letters?limit=-1")),
  "GET /v1/dead-letters 401": unauthorized(get("/v1/dead-letters")),
  "GET /v1/dead-letters 500": throwing(get("/v1/dead-letters")),

  "GET /v1/cluster 200": () => makeApi().handler(get("/v1/cluster")),
  "GET /v1/cluster 401": unauthorized(get("/v1/cluster")),
  "GET /v1/cluster 500": throwing(get("/v1/cluster")),

  "GET /v1/openapi.json 200": () => makeApi().handler(get("/v1/openapi.json")),
  "GET /v1/openapi.json 401": unauthorized(get("/v1/openapi.json")),

  "GET /metrics 200": () => makeApi().handler(get("/metrics")),
  "GET /metrics 401": unauthorized(get("/metrics")),
  "GET /metrics 500": () =>
    makeApi({
      metrics: () => {
        throw new Error("renderer bug");
      },
    }).handler(get("/metrics")),

  "GET /healthz 200": () => makeApi().handler(get("/healthz")),

  "GET /v1/series 200": () => makeApi({ dashboard: sampleDashboard() }).handler(get("/v1/series")),
  "GET /v1/series 401": unauthorized(get("/v1/series")),
  "GET /v1/series 500": () => makeApi({ dashboard: throwingDashboard }).handler(get("/v1/series")),
  "GET /v1/receivers 200": () =>
    makeApi({ dashboard: sampleDashboard() }).handler(get("/v1/receivers")),
  "GET /v1/receivers 401": unauthorized(get("/v1/receivers")),
  "GET /v1/receivers 500": () =>
    makeApi({ dashboard: throwingDashboard }).handler(get("/v1/receivers")),
  "GET /v1/endpoint-health 200": async () => {
    const { api, id } = await withEndpoint();
    const ordered = await call(
      api,
      post("/v1/endpoints", { ...ENDPOINT, ordered: true, headers: { "x-key": "v" } }),
    );
    api.service.health.set(id, {
      attempts: 3,
      failures: 1,
      lastSuccessAtMs: 1_700_000_000_000,
      lastFailure: { atMs: 1_700_000_000_500, outcome: "http_error", status: 500, detail: "no" },
    });
    api.service.backlogs.set((ordered.body as { id: string }).id, 2);
    return await api.handler(get("/v1/endpoint-health?limit=5"));
  },
  "GET /v1/endpoint-health 400": () => makeApi().handler(get("/v1/endpoint-health?limit=0")),
  "GET /v1/endpoint-health 401": unauthorized(get("/v1/endpoint-health")),
  "GET /v1/endpoint-health 500": throwing(get("/v1/endpoint-health")),
  "GET / 200": () => makeApi({ apiToken: TOKEN }).handler(get("/")),
  "GET /dashboard/{file} 200": () => makeApi().handler(get("/dashboard/app.js")),
  "GET /dashboard/{file} 404": () => makeApi().handler(get("/dashboard/nope.js")),

  "GET /readyz 200": () => makeApi().handler(get("/readyz")),
  "GET /readyz 500": throwing(get("/readyz")),
  "GET /readyz 503": () => {
    const api = makeApi();
    api.service.readiness_ = {
      ready: false,
      checks: [{ name: "wal", ok: false, detail: "fsync failed" }],
    };
    return api.handler(get("/readyz"));
  },
};

async function servedDocument(): Promise<Schema> {
  const answer = await call(makeApi(), get("/v1/openapi.json"));
  assertEquals(answer.status, 200);
  return answer.body as Schema;
}

type Operation = { operationId: string; responses: Record<string, Schema>; security: unknown[] };

function operations(doc: Schema): [string, string, Operation][] {
  const out: [string, string, Operation][] = [];
  for (
    const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)
  ) {
    for (const [method, op] of Object.entries(item)) out.push([method.toUpperCase(), path, op]);
  }
  return out;
}

Deno.test("openapi: the document lists exactly the server's routes, with matching operation ids", async () => {
  const doc = await servedDocument();
  assertEquals(doc.openapi, "3.1.0");
  const documented = operations(doc).map(([m, p, op]) => `${m} ${p} ${op.operationId}`).sort();
  const served = ROUTES.map((r) => `${r.method} ${r.path} ${r.id}`).sort();
  assertEquals(documented, served);
});

Deno.test("openapi: every listed status is produced in its situation, with the listed schema and headers", async () => {
  const doc = await servedDocument();
  const listed = new Set<string>();
  for (const [method, path, op] of operations(doc)) {
    for (const [status, raw] of Object.entries(op.responses)) {
      const key = `${method} ${path} ${status}`;
      listed.add(key);
      const scenario = SCENARIOS[key];
      assert(scenario !== undefined, `no scenario produces ${key}`);
      const response = await scenario();
      const text = await response.text();
      assertEquals(response.status, Number(status), `${key}: ${text}`);
      const spec = typeof raw.$ref === "string" ? resolve(doc, raw.$ref) : raw;
      for (const header of Object.keys((spec.headers ?? {}) as Record<string, unknown>)) {
        assert(response.headers.get(header) !== null, `${key}: no ${header} header`);
      }
      const content = spec.content as Record<string, { schema: Schema }>;
      const [mediaType, { schema }] = Object.entries(content)[0]!;
      const contentType = response.headers.get("content-type") ?? "";
      assert(
        contentType.startsWith(mediaType),
        `${key}: content-type ${contentType}, listed ${mediaType}`,
      );
      const body = mediaType === "application/json" ? JSON.parse(text) : text;
      const errors = validate(schema, body, doc);
      assertEquals(errors, [], `${key}: body does not match the document: ${text.slice(0, 300)}`);
    }
  }
  const stale = Object.keys(SCENARIOS).filter((key) => !listed.has(key));
  assertEquals(stale, [], "scenarios produce statuses the document does not list");
});

Deno.test("openapi: /v1/ operations and /metrics require the bearer scheme and the open ones say so", async () => {
  const doc = await servedDocument();
  const api = makeApi({ apiToken: TOKEN });
  for (const [method, path, op] of operations(doc)) {
    // /metrics names receiver origins (breaker gauges): it is guarded like /v1/.
    const guarded = path.startsWith("/v1/") || path === "/metrics";
    assertEquals(op.security, guarded ? [{ bearer: [] }] : [], `${method} ${path}`);
    assertEquals("401" in op.responses, guarded, `${method} ${path} lists 401`);
    // And the node does what the document says: without the token, 401 exactly there.
    const concrete = path.replace("{id}", "some-id").replace("{file}", "app.js");
    const answer = await api.handler(
      new Request(`${BASE}${concrete}`, { method: method.toUpperCase() }),
    );
    await answer.body?.cancel();
    assertEquals(answer.status === 401, guarded, `${method} ${path} answered ${answer.status}`);
  }
});

Deno.test("openapi: a method no documented path takes answers 405 with an Allow of those it does", async () => {
  const doc = await servedDocument();
  const paths = Object.entries(doc.paths as Record<string, Record<string, unknown>>);
  const templateMatches = (template: string, concrete: string) =>
    new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(concrete);
  const api = makeApi();
  for (const [path] of paths) {
    const concrete = path.replace("{id}", "some-id");
    // Templates overlap (/v1/jobs/batch is also /v1/jobs/{id}): a path takes what any takes.
    const listed = [
      ...new Set(
        paths.filter(([t]) => templateMatches(t, concrete)).flatMap(([, item]) =>
          Object.keys(item).map((m) => m.toUpperCase())
        ),
      ),
    ].sort();
    for (const method of ["GET", "POST", "PUT", "DELETE", "PATCH"]) {
      if (listed.includes(method)) continue;
      const answer = await call(api, new Request(BASE + concrete, { method }));
      assertEquals(answer.status, 405, `${method} ${concrete}`);
      assertEquals(answer.headers.get("allow"), listed.join(", "), `${method} ${concrete}`);
    }
  }
});

Deno.test("openapi: the request schemas name exactly the fields the validator takes", async () => {
  const doc = await servedDocument();
  const schemas = (doc.components as { schemas: Record<string, Schema> }).schemas;
  const fields = (name: string) => Object.keys(schemas[name]!.properties as object).sort();
  assertEquals(fields("SubmitJob"), [...SUBMIT_FIELDS].sort());
  assertEquals(fields("BatchJob"), [...BATCH_JOB_FIELDS].sort());
  assertEquals(schemas.SubmitJob!.required, ["url", "payload"]);
  assertEquals(fields("EndpointCreate"), [...ENDPOINT_FIELDS].sort());
  assertEquals(fields("EndpointPatch"), [...ENDPOINT_FIELDS].sort());
  assertEquals(fields("SubmitEvent"), [...EVENT_FIELDS].sort());
  assertEquals(schemas.SubmitEvent!.required, ["type", "payload"]);
  assertEquals(schemas.EndpointCreate!.required, ["url"]);
  // A body using every documented field validates and is accepted.
  const full = {
    ...VALID_JOB,
    headers: { "X-A": "1" },
    secret: "whsec_" + btoa("0123456789abcdef01234567"),
    maxAttempts: 2,
    timeoutMs: 1000,
  };
  assertEquals(validate(schemas.SubmitJob!, full, doc), []);
  assertEquals((await call(makeApi(), post("/v1/jobs", full))).status, 202);
});

Deno.test("the Idempotency-Key header states the key's window and what a reuse after it does", () => {
  // Issue 17 §2: a key reused after its window makes a new job with a new id; the document
  // says so, with the window the nodes use.
  const doc = buildOpenApi(apiDefaults, {
    payloadBytesMax: 1,
    jobHeadersBytesMax: 1,
    maxAttemptsMax: 1,
    attemptTimeoutMaxMs: 1,
    idempotencyKeyCharsMax: 1,
  });
  const text = JSON.stringify(doc);
  assertEquals(jobsDefaults.idempotencyWindowMs, 24 * 3_600_000);
  assert(text.includes("A key names one job for 24 h after the first submit"), "the window");
  assert(text.includes("a new id and so a new webhook-id"), "what a reuse after it does");
});
