/**
 * `POST /v1/events` and `GET /v1/events/{id}` (docs/endpoints.md): the fan-out by type over the
 * endpoints the store holds, 202 with the count, the idempotency key, and the 400s that name
 * the field a client must fix.
 */

import { assert, assertEquals } from "../assert.ts";
import { BASE, call, errorOf, get, makeApi, post } from "./harness.ts";

async function endpoint(api: ReturnType<typeof makeApi>, fields: object): Promise<string> {
  const created = await call(api, post("/v1/endpoints", fields));
  assertEquals(created.status, 201);
  return (created.body as { id: string }).id;
}

Deno.test("POST /v1/events fans out to the endpoints that take the type, and GET shows its jobs", async () => {
  const api = makeApi();
  const a = await endpoint(api, { url: "https://a.example/", event_types: ["invoice.paid"] });
  const b = await endpoint(api, { url: "https://b.example/" });
  await endpoint(api, { url: "https://c.example/", event_types: ["user.created"] });
  const off = await endpoint(api, { url: "https://d.example/", disabled: true });
  assert(off.length > 0);
  const sent = await call(
    api,
    post("/v1/events", { type: "invoice.paid", payload: { n: [1, "x"] } }),
  );
  assertEquals(sent.status, 202);
  const body = sent.body as { id: string; type: string; jobs: number; existing: boolean };
  assertEquals({ ...body, id: "" }, { id: "", type: "invoice.paid", jobs: 2, existing: false });
  assertEquals(sent.headers.get("location"), `/v1/events/${body.id}`);
  const shown = await call(api, get(`/v1/events/${body.id}`));
  assertEquals(shown.status, 200);
  const event = shown.body as Record<string, unknown>;
  assertEquals(event.payload, JSON.stringify({ n: [1, "x"] }), "the payload as compact JSON");
  assertEquals(event.type, "invoice.paid");
  assert(!Number.isNaN(Date.parse(event.created_at as string)));
  assertEquals(
    (event.jobs as { endpoint_id: string; job_id: string; state: string; attempts: number }[])
      .map((j) => [j.endpoint_id, j.job_id, j.state, j.attempts]),
    [a, b].sort().map((id) => [id, `${body.id}.${id}`, "pending", 0]),
  );
  // b takes every type; after its delete, nobody takes this one: the event is still taken.
  const other = await call(api, post("/v1/events", { type: "nobody.listens", payload: null }));
  assertEquals((other.body as { jobs: number }).jobs, 1);
  const removed = await api.handler(
    new Request(`${BASE}/v1/endpoints/${b}`, { method: "DELETE" }),
  );
  assertEquals(removed.status, 200);
  const none = await call(api, post("/v1/events", { type: "nobody.listens", payload: null }));
  assertEquals(none.status, 202);
  assertEquals((none.body as { jobs: number }).jobs, 0);
});

Deno.test("POST /v1/events with an Idempotency-Key: the same body names the same event, another is 409", async () => {
  const api = makeApi();
  const headers = { "idempotency-key": "order-7" };
  const first = await call(api, post("/v1/events", { type: "t", payload: 1 }, headers));
  const again = await call(api, post("/v1/events", { type: "t", payload: 1 }, headers));
  assertEquals(again.status, 202);
  assertEquals((again.body as { id: string }).id, (first.body as { id: string }).id);
  assertEquals((again.body as { existing: boolean }).existing, true);
  const other = await call(api, post("/v1/events", { type: "t", payload: 2 }, headers));
  assertEquals(other.status, 409);
});

Deno.test("POST /v1/events refuses a bad type or payload with a 400 naming the field", async () => {
  const api = makeApi();
  const cases: [unknown, string | undefined][] = [
    [{ payload: 1 }, "type"],
    [{ type: "", payload: 1 }, "type"],
    [{ type: "has space", payload: 1 }, "type"],
    [{ type: "x".repeat(129), payload: 1 }, "type"],
    [{ type: 7, payload: 1 }, "type"],
    [{ type: "t" }, "payload"],
    [{ type: "t", payload: 1, url: "https://x/" }, "url"],
    [[1], undefined],
  ];
  for (const [body, field] of cases) {
    const answer = await call(api, post("/v1/events", body));
    assertEquals(answer.status, 400, JSON.stringify(body));
    assertEquals(errorOf(answer).field, field, JSON.stringify(body));
  }
  const missing = await call(api, get("/v1/events/evt_nope"));
  assertEquals(missing.status, 404);
});
