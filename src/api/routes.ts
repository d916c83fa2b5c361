/**
 * The route table: every method and path the API answers, in the OpenAPI document's path
 * syntax (`/v1/jobs/{id}`), and the matcher that turns a request line into a route, a 404 or
 * a 405 with the methods the path does take.
 *
 * Owns routing only; what each route does is the handler's. The OpenAPI test walks this
 * table, so a route added here and not documented fails it.
 */

export type RouteId =
  | "submitJob"
  | "submitBatch"
  | "listJobs"
  | "getJob"
  | "retryJob"
  | "listDeadLetters"
  | "createEndpoint"
  | "listEndpoints"
  | "getEndpoint"
  | "updateEndpoint"
  | "deleteEndpoint"
  | "rotateEndpointSecret"
  | "getEndpointSecret"
  | "recoverEndpoint"
  | "submitEvent"
  | "getEvent"
  | "cluster"
  | "openapi"
  | "metrics"
  | "healthz"
  | "readyz"
  | "series"
  | "receivers"
  | "endpointHealth"
  | "dashboard"
  | "dashboardAsset";

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

export interface Route {
  readonly id: RouteId;
  readonly method: Method;
  /** OpenAPI path template; `{name}` matches one non-empty segment. */
  readonly path: string;
}

export const ROUTES: readonly Route[] = Object.freeze(
  [
    { id: "submitJob", method: "POST", path: "/v1/jobs" },
    { id: "listJobs", method: "GET", path: "/v1/jobs" },
    // Before `/v1/jobs/{id}`: a literal segment wins over a parameter.
    { id: "submitBatch", method: "POST", path: "/v1/jobs/batch" },
    { id: "getJob", method: "GET", path: "/v1/jobs/{id}" },
    { id: "retryJob", method: "POST", path: "/v1/jobs/{id}/retry" },
    { id: "listDeadLetters", method: "GET", path: "/v1/dead-letters" },
    { id: "createEndpoint", method: "POST", path: "/v1/endpoints" },
    { id: "listEndpoints", method: "GET", path: "/v1/endpoints" },
    { id: "getEndpoint", method: "GET", path: "/v1/endpoints/{id}" },
    { id: "updateEndpoint", method: "PATCH", path: "/v1/endpoints/{id}" },
    { id: "deleteEndpoint", method: "DELETE", path: "/v1/endpoints/{id}" },
    { id: "rotateEndpointSecret", method: "POST", path: "/v1/endpoints/{id}/secret/rotate" },
    { id: "getEndpointSecret", method: "GET", path: "/v1/endpoints/{id}/secret" },
    { id: "recoverEndpoint", method: "POST", path: "/v1/endpoints/{id}/recover" },
    { id: "submitEvent", method: "POST", path: "/v1/events" },
    { id: "getEvent", method: "GET", path: "/v1/events/{id}" },
    { id: "cluster", method: "GET", path: "/v1/cluster" },
    { id: "openapi", method: "GET", path: "/v1/openapi.json" },
    { id: "metrics", method: "GET", path: "/metrics" },
    { id: "healthz", method: "GET", path: "/healthz" },
    { id: "readyz", method: "GET", path: "/readyz" },
    { id: "series", method: "GET", path: "/v1/series" },
    { id: "receivers", method: "GET", path: "/v1/receivers" },
    { id: "endpointHealth", method: "GET", path: "/v1/endpoint-health" },
    { id: "dashboard", method: "GET", path: "/" },
    { id: "dashboardAsset", method: "GET", path: "/dashboard/{file}" },
  ] as const satisfies readonly Route[],
);

export type RouteMatch =
  | {
    readonly kind: "route";
    readonly route: Route;
    readonly params: Readonly<Record<string, string>>;
  }
  | { readonly kind: "method_not_allowed"; readonly allow: readonly Method[] }
  | { readonly kind: "not_found" };

/** Most path segments looked at; no route has more, so a longer path is a 404 unsplit. */
const SEGMENTS_MAX = 8;

export function matchRoute(method: string, pathname: string): RouteMatch {
  const segments = pathname.split("/", SEGMENTS_MAX + 2);
  if (segments.length > SEGMENTS_MAX + 1) return { kind: "not_found" };
  const allow: Method[] = [];
  for (const route of ROUTES) {
    const params = matchPath(route.path, segments);
    if (params === undefined) continue;
    if (route.method === method) return { kind: "route", route, params };
    if (!allow.includes(route.method)) allow.push(route.method);
  }
  if (allow.length === 0) return { kind: "not_found" };
  return { kind: "method_not_allowed", allow: allow.sort() };
}

/** Raw (still percent-encoded) parameter values, or undefined when the path does not match. */
function matchPath(
  template: string,
  segments: readonly string[],
): Record<string, string> | undefined {
  const parts = template.split("/");
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const segment = segments[i]!;
    if (part.startsWith("{") && part.endsWith("}")) {
      if (segment === "") return undefined;
      params[part.slice(1, -1)] = segment;
    } else if (part !== segment) {
      return undefined;
    }
  }
  return params;
}
