/**
 * The node's HTTP API: `serveApi` to listen (HTTP or HTTPS), `createApiHandler` for the bare
 * `Request → Response` function, the OpenAPI document and the route table.
 */

export {
  type ApiHandler,
  type ApiJobLimits,
  type ApiOptions,
  createApiHandler,
} from "./handler.ts";
export {
  type ApiServer,
  type ApiTls,
  loadTlsFiles,
  serveApi,
  type ServeApiOptions,
} from "./server.ts";
export { buildOpenApi } from "./openapi.ts";
export { API_ERROR_CODES, type ApiError, type ApiErrorCode, statusOf } from "./errors.ts";
export { type Route, type RouteId, ROUTES } from "./routes.ts";
export { API_TOKEN_CHARS_MIN, apiTokenProblem } from "./auth.ts";
