/**
 * Ids in paths past what the codec carries: an unknown id is a 404 on every route, even where
 * the node would ask its peers for one it does not hold (a 129-character job id once reached
 * `encodeMessage`'s bound assertion and was answered 500; found by session 45's review).
 */

import { assertEquals } from "../assert.ts";
import { cluster, settle } from "../jobs/store_cluster.ts";
import { createApiHandler } from "../../src/api/handler.ts";
import { ENDPOINT_LIMITS } from "../../src/config/endpoints.ts";
import { JOB_LIMITS } from "../../src/config/job_limits.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { BASE, call, get } from "./harness.ts";

Deno.test("an id in a path past the codec's bound is a 404 on every route, never a 500", async () => {
  const { scheduler, stores } = await cluster();
  const logged: string[] = [];
  const handler = createApiHandler({
    service: stores[0]!,
    registry: new MetricsRegistry(),
    metrics: () => "",
    log: (line) => logged.push(line),
  });
  const json = { "content-type": "application/json" };
  const requests = (jobId: string, endpointId: string): Array<[string, Request]> => [
    ["GET job", get(`/v1/jobs/${jobId}`)],
    ["retry job", new Request(`${BASE}/v1/jobs/${jobId}/retry`, { method: "POST" })],
    ["GET event", get(`/v1/events/${jobId}`)],
    ["GET endpoint", get(`/v1/endpoints/${endpointId}`)],
    ["GET endpoint secret", get(`/v1/endpoints/${endpointId}/secret`)],
    [
      "PATCH endpoint",
      new Request(`${BASE}/v1/endpoints/${endpointId}`, {
        method: "PATCH",
        headers: json,
        body: '{"description":"x"}',
      }),
    ],
    ["DELETE endpoint", new Request(`${BASE}/v1/endpoints/${endpointId}`, { method: "DELETE" })],
    [
      "rotate endpoint secret",
      new Request(`${BASE}/v1/endpoints/${endpointId}/secret/rotate`, {
        method: "POST",
      }),
    ],
    [
      "recover endpoint",
      new Request(`${BASE}/v1/endpoints/${endpointId}/recover`, {
        method: "POST",
        headers: json,
        body: '{"since":0}',
      }),
    ],
  ];
  try {
    for (const extra of [0, 1, 100]) {
      const jobId = "a".repeat(JOB_LIMITS.idBytesMax + extra);
      const endpointId = "e".repeat(ENDPOINT_LIMITS.idBytesMax + extra);
      for (const [route, request] of requests(jobId, endpointId)) {
        const answer = await settle(scheduler, call(handler, request));
        assertEquals(answer.status, 404, `${route}, ${extra} past the bound: ${answer.text}`);
      }
    }
    assertEquals(logged.filter((line) => /error|assert/i.test(line)), []);
  } finally {
    for (const store of stores) await store.close();
  }
});
