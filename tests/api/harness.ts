/**
 * Builds an API handler over the fake store for tests, and small request helpers. Requests go
 * straight to the handler (no socket) unless a test starts a server itself.
 */

import { type ApiConfig, apiDefaults } from "../../src/config/api.ts";
import { type ApiHandler, type ApiJobLimits, createApiHandler } from "../../src/api/handler.ts";
import type { Runtime } from "../../src/lib/runtime.ts";
import type { DashboardSource } from "../../src/dashboard/view.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { FakeJobService } from "./fake_service.ts";

export const TOKEN = "test-token-0123456789abcdef";
export const BASE = "http://hookd.test";

export interface Api {
  readonly handler: ApiHandler;
  readonly service: FakeJobService;
  readonly registry: MetricsRegistry;
  readonly logged: string[];
}

export function makeApi(
  options: {
    config?: Partial<ApiConfig>;
    apiToken?: string;
    runtime?: Runtime;
    metrics?: () => string;
    dashboard?: DashboardSource;
    randomBytes?: (bytes: number) => Uint8Array;
    jobLimits?: ApiJobLimits;
  } = {},
): Api {
  const service = new FakeJobService();
  const registry = new MetricsRegistry();
  const logged: string[] = [];
  const handler = createApiHandler({
    service,
    registry,
    metrics: options.metrics ?? (() => registry.renderPrometheus()),
    config: { ...apiDefaults, ...options.config },
    log: (line) => logged.push(line),
    ...(options.apiToken !== undefined ? { apiToken: options.apiToken } : {}),
    ...(options.runtime !== undefined ? { runtime: options.runtime } : {}),
    ...(options.dashboard !== undefined ? { dashboard: options.dashboard } : {}),
    ...(options.randomBytes !== undefined ? { randomBytes: options.randomBytes } : {}),
    ...(options.jobLimits !== undefined ? { jobLimits: options.jobLimits } : {}),
  });
  return { handler, service, registry, logged };
}

export const JSON_HEADERS = { "content-type": "application/json" };

/** A POST with a JSON body (a string is sent as is, anything else stringified). */
export function post(path: string, body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(BASE + path, {
    method: "POST",
    headers: { ...JSON_HEADERS, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export function get(path: string, headers: Record<string, string> = {}): Request {
  return new Request(BASE + path, { headers });
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
  readonly text: string;
}

export async function call(api: Api | ApiHandler, request: Request): Promise<Answer> {
  const handler = typeof api === "function" ? api : api.handler;
  const response = await handler(request);
  const text = await response.text();
  let body: unknown = undefined;
  if ((response.headers.get("content-type") ?? "").startsWith("application/json")) {
    body = JSON.parse(text);
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** The `error` object of an error answer. */
export function errorOf(answer: Answer): { code: string; message: string; field?: string } {
  const body = answer.body as { error?: { code: string; message: string; field?: string } };
  if (body?.error === undefined) {
    throw new Error(`not an error answer: ${answer.status} ${answer.text}`);
  }
  return body.error;
}

export const VALID_JOB = Object.freeze({
  url: "https://receiver.example/hook",
  payload: { event: "order.created", n: 1 },
});

export const SECRET = "whsec_" + btoa("0123456789abcdef01234567");
