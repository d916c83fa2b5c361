/**
 * The node's HTTP API as one `Request → Response` function: routing, auth, admission control,
 * body bounds, validation, and the mapping between HTTP and the job store's `JobService`.
 * `serveApi` (server.ts) puts it on `Deno.serve`; tests call it directly.
 *
 * Owns the HTTP edge's policy. Must not reach past `JobService` into the store, and must not
 * arm timers except through the injected `Runtime` (the body-read deadline).
 *
 * Order of checks for a submit, cheapest first, so a node under load refuses cheaply:
 * route → auth → Content-Type and Idempotency-Key headers → every slot taken? (503, body
 * unread) → body (bounded, with a deadline, holding only its bytes from the shared budget) →
 * JSON → admission slot → fields → the store. The slot is taken only once the body is in: a
 * client trickling its body must not hold one (256 of them locked every submitter out for
 * the body deadline's 10 s). /healthz, /readyz and /metrics touch none of
 * the submit machinery, so they answer however many submits are parked. Neither do `/` and
 * `/dashboard/*` (the dashboard page, open like /healthz: it holds no data, and asks for the
 * token before it reads any) nor `/v1/series` and `/v1/receivers`, which read the dashboard
 * recorder's memory.
 */

import { type ApiConfig, apiDefaults, validateApiConfig } from "../config/api.ts";
import { type DeliveryConfig, deliveryDefaults } from "../config/delivery.ts";
import { type JobsConfig, jobsDefaults } from "../config/jobs.ts";
import {
  DASHBOARD_HEADERS,
  DASHBOARD_PAGE,
  type DashboardAsset,
  dashboardAsset,
} from "../dashboard/assets.ts";
import type { DashboardSource, ReceiversView, SeriesView } from "../dashboard/view.ts";
import type {
  ClusterView,
  EndpointHealthPage,
  EndpointOutcome,
  EndpointView,
  EventView,
  JobService,
  JobView,
  SubmitRequest,
} from "../jobs/service.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";
import {
  decodeEndpointCreate,
  decodeEndpointPatch,
  decodeEndpointRotate,
  decodeRecover,
} from "./endpoint_validate.ts";
import { decodeEvent } from "./event_validate.ts";
import { assert, fail } from "../lib/assert.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import type { MetricsRegistry } from "../metrics/registry.ts";
import { AdmissionGate, ByteBudget } from "./admission.ts";
import { bearerChecker } from "./auth.ts";
import { readBoundedBody } from "./body.ts";
import { type ApiError, errorBody, errorResponse, jsonResponse, refusalError } from "./errors.ts";
import { type AdmissionRoute, ApiMetrics } from "./metrics.ts";
import { buildOpenApi } from "./openapi.ts";
import { type ParsedJson, parseJson } from "./json_text.ts";
import { matchRoute, type Route } from "./routes.ts";
import {
  checkIdempotencyKey,
  decodeBatch,
  decodeBatchJob,
  decodeCursor,
  decodeLimit,
  decodeSubmit,
  type SubmitLimits,
} from "./validate.ts";

/** The delivery limits a submit is checked against, so the API refuses what the engine would. */
export type ApiJobLimits =
  & Pick<DeliveryConfig, "payloadBytesMax" | "jobHeadersBytesMax" | "attemptTimeoutMaxMs">
  & Partial<Pick<DeliveryConfig, "allowPrivateTargets">>
  & Partial<Pick<JobsConfig, "maxAttemptsMax">>;

export interface ApiOptions {
  readonly service: JobService;
  /** The node's metrics as Prometheus text, for `GET /metrics`. */
  readonly metrics: () => string;
  /** Where the API registers its own metrics (usually the registry `metrics` renders). */
  readonly registry: MetricsRegistry;
  /** @default realRuntime */
  readonly runtime?: Runtime;
  /** @default apiDefaults */
  readonly config?: ApiConfig;
  /** @default deliveryDefaults' values */
  readonly jobLimits?: ApiJobLimits;
  /**
   * The node's series and receivers for `GET /v1/series` and `GET /v1/receivers` (the
   * dashboard's); absent: both answer empty.
   */
  readonly dashboard?: DashboardSource;
  /**
   * When set, every `/v1/` route and `/metrics` need `Authorization: Bearer <apiToken>`
   * (>= 16 chars).
   */
  readonly apiToken?: string;
  /** Where 500s' causes go. @default console.error */
  readonly log?: (line: string) => void;
  /**
   * Random bytes for the secrets of endpoints created without one (24 bytes each).
   * @default crypto.getRandomValues
   */
  readonly randomBytes?: (bytes: number) => Uint8Array;
}

export type ApiHandler = (request: Request) => Promise<Response>;

/** What a job id in a path may be: visible ASCII (ids are minted by hookd; this stops junk). */
const JOB_ID = /^[\x21-\x7e]+$/;
const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export function createApiHandler(options: ApiOptions): ApiHandler {
  const config = validateApiConfig({ ...(options.config ?? apiDefaults) });
  const jobLimits: ApiJobLimits = options.jobLimits ?? deliveryDefaults;
  const limits: SubmitLimits = {
    payloadBytesMax: jobLimits.payloadBytesMax,
    jobHeadersBytesMax: jobLimits.jobHeadersBytesMax,
    maxAttemptsMax: jobLimits.maxAttemptsMax ?? jobsDefaults.maxAttemptsMax,
    attemptTimeoutMaxMs: jobLimits.attemptTimeoutMaxMs,
    idempotencyKeyCharsMax: config.idempotencyKeyCharsMax,
    // Only a node's own setting: without jobLimits nothing says private targets are refused.
    ...(options.jobLimits?.allowPrivateTargets !== undefined
      ? { allowPrivateTargets: options.jobLimits.allowPrivateTargets }
      : {}),
  };
  const service = options.service;
  const runtime = options.runtime ?? realRuntime;
  const log = options.log ?? ((line: string) => console.error(line));
  const authorized = options.apiToken !== undefined ? bearerChecker(options.apiToken) : undefined;
  const gate = new AdmissionGate(config.submitsInFlightMax);
  const bodyBudget = new ByteBudget(config.bodyBytesHeldMax);
  const metrics = new ApiMetrics(options.registry);
  // Built once: it depends on the config only, and a scrape of it should cost nothing.
  const openApiText = JSON.stringify(buildOpenApi(config, limits));
  const bodyLimits = {
    bytesMax: config.bodyBytesMax,
    timeoutMs: config.bodyReadTimeoutMs,
    runtime,
  };
  const listLimits = { defaultLimit: config.listLimitDefault, max: config.listLimitMax };
  const endpointListLimits = {
    defaultLimit: ENDPOINT_LIMITS.listLimitDefault,
    max: ENDPOINT_LIMITS.listLimitMax,
  };
  const randomBytes = options.randomBytes ??
    ((bytes: number) => crypto.getRandomValues(new Uint8Array(bytes)));

  function overloaded(route: AdmissionRoute, message: string): Response {
    metrics.admissionRejected(route);
    return errorResponse({ code: "overloaded", message, retryAfterS: config.retryAfterS });
  }

  function slotsTaken(route: AdmissionRoute): Response {
    return overloaded(
      route,
      `this node has ${gate.limit} submits in flight; try again shortly or another node`,
    );
  }

  /** Runs `work` holding an admission slot, or answers 503 at once when none is free. */
  async function admitted(
    route: AdmissionRoute,
    work: () => Promise<Response>,
  ): Promise<Response> {
    if (!gate.tryAcquire()) return slotsTaken(route);
    metrics.inFlight.set(gate.inFlight);
    try {
      return await work();
    } finally {
      gate.release();
      metrics.inFlight.set(gate.inFlight);
    }
  }

  /**
   * A submit that carries a body: refused at once when every slot is taken; else its body is
   * read and parsed holding only its bytes (from the shared budget, given back when answered)
   * and no slot, then `work` runs on the parsed body holding a slot.
   */
  async function admittedWithBody(
    route: AdmissionRoute,
    request: Request,
    work: (body: ParsedJson) => Promise<Response>,
  ): Promise<Response> {
    if (gate.full) return slotsTaken(route);
    let heldBytes = 0;
    const take = (bytes: number): boolean => {
      if (!bodyBudget.tryTake(bytes)) return false;
      heldBytes += bytes;
      metrics.bodyBytesHeld.set(bodyBudget.held);
      return true;
    };
    try {
      const body = await readJson(request, take);
      if (!body.ok) {
        if (body.reason === OVER_BUDGET) {
          return overloaded(
            route,
            `this node holds ${config.bodyBytesHeldMax} bytes of request bodies; ` +
              "try again shortly or another node",
          );
        }
        return reject(body.reason);
      }
      return await admitted(route, () => work(body.value));
    } finally {
      bodyBudget.give(heldBytes);
      metrics.bodyBytesHeld.set(bodyBudget.held);
    }
  }

  async function readJson(
    request: Request,
    take: (bytes: number) => boolean,
  ): Promise<Result<ParsedJson, ApiError | typeof OVER_BUDGET>> {
    const body = await readBoundedBody(request, { ...bodyLimits, take });
    if (!body.ok) {
      switch (body.reason) {
        case "over_budget":
          return err(OVER_BUDGET);
        case "too_large":
          return err({
            code: "payload_too_large",
            message: `the request body is larger than ${config.bodyBytesMax} bytes`,
          });
        case "timeout":
          return err({
            code: "body_timeout",
            message: `the request body did not arrive within ${config.bodyReadTimeoutMs} ms`,
          });
        case "aborted":
          return err({ code: "malformed_json", message: "the request body ended early" });
      }
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(body.value);
    } catch {
      return err({ code: "malformed_json", message: "the request body is not UTF-8" });
    }
    try {
      return ok(parseJson(text));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return err({ code: "malformed_json", message: `the request body is not JSON: ${why}` });
    }
  }

  /** Header checks every body-carrying submit shares; undefined when they pass. */
  function checkJsonContentType(request: Request): ApiError | undefined {
    const type = request.headers.get("content-type");
    const media = type === null ? undefined : type.split(";", 1)[0]!.trim().toLowerCase();
    if (media === "application/json") return undefined;
    // Also what keeps a web page from submitting through a visitor's browser: a JSON
    // content type needs a CORS preflight, which this API never grants.
    return {
      code: "unsupported_media_type",
      message: `the body must be sent as Content-Type: application/json, not ${type ?? "none"}`,
    };
  }

  /** The request's `Idempotency-Key` header, checked (undefined when absent). */
  function idempotencyKeyOf(request: Request): Result<string | undefined, ApiError> {
    const header = request.headers.get("idempotency-key");
    if (header === null) return ok(undefined);
    return checkIdempotencyKey(header, {
      field: "Idempotency-Key",
      charsMax: limits.idempotencyKeyCharsMax,
    });
  }

  function reject(error: ApiError): Response {
    metrics.jobRejected(error.code);
    return errorResponse(error);
  }

  async function submitJob(request: Request): Promise<Response> {
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return reject(contentError);
    const key = idempotencyKeyOf(request);
    if (!key.ok) return reject(key.reason);
    const idempotencyKey = key.value;
    return await admittedWithBody("submit", request, async (body) => {
      const decoded = decodeSubmit(body.value, limits, body);
      if (!decoded.ok) return reject(decoded.reason);
      const submit: SubmitRequest = idempotencyKey === undefined
        ? decoded.value
        : { ...decoded.value, idempotencyKey };
      const startMs = runtime.nowMs();
      const outcome = await storeCall(() => service.submit(submit));
      metrics.submitMs.record(runtime.nowMs() - startMs);
      if (!outcome.ok) return reject(refusalError(outcome, config.retryAfterS));
      metrics.jobAccepted(outcome.existing);
      return jsonResponse(202, { id: outcome.id, existing: outcome.existing }, {
        location: `/v1/jobs/${encodeURIComponent(outcome.id)}`,
      });
    });
  }

  async function submitBatch(request: Request): Promise<Response> {
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return reject(contentError);
    if (request.headers.get("idempotency-key") !== null) {
      return reject({
        code: "invalid",
        field: "Idempotency-Key",
        message: "a batch takes no Idempotency-Key header; give each job its idempotencyKey",
      });
    }
    return await admittedWithBody("batch", request, async (body) => {
      const jobs = decodeBatch(body.value, config.batchJobsMax);
      if (!jobs.ok) return reject(jobs.reason);

      const results: Record<string, unknown>[] = new Array(jobs.value.length);
      const valid: SubmitRequest[] = [];
      const positions: number[] = [];
      jobs.value.forEach((job, i) => {
        const decoded = decodeBatchJob(job, limits, body);
        if (decoded.ok) {
          valid.push(decoded.value);
          positions.push(i);
        } else {
          metrics.jobRejected(decoded.reason.code);
          results[i] = { error: errorBody(decoded.reason) };
        }
      });
      if (valid.length > 0) {
        const outcomes = await storeCall(() => service.submitBatch(valid));
        if (outcomes.length !== valid.length) {
          fail(`submitBatch answered ${outcomes.length} outcomes for ${valid.length} jobs`);
        }
        outcomes.forEach((outcome, j) => {
          const i = positions[j]!;
          if (outcome.ok) {
            metrics.jobAccepted(outcome.existing);
            results[i] = { id: outcome.id, existing: outcome.existing };
          } else {
            metrics.jobRejected(outcome.code);
            results[i] = { error: errorBody(refusalError(outcome, config.retryAfterS)) };
          }
        });
      }
      return jsonResponse(200, { results });
    });
  }

  /** A store call that threw instead of refusing: counted as `internal`, answered 500. */
  async function storeCall<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      metrics.jobRejected("internal");
      throw error;
    }
  }

  async function retryJob(rawId: string): Promise<Response> {
    const id = decodeId(rawId, JOB_LIMITS.idBytesMax);
    if (id === undefined) return errorResponse(noSuchJob(rawId));
    return await admitted("retry", async () => {
      const outcome = await service.retryDeadLetter(id);
      if (!outcome.ok) return errorResponse(refusalError(outcome, config.retryAfterS));
      return jsonResponse(202, { id });
    });
  }

  async function getJob(rawId: string): Promise<Response> {
    const id = decodeId(rawId, JOB_LIMITS.idBytesMax);
    if (id === undefined) return errorResponse(noSuchJob(rawId));
    const view = await service.getJob(id);
    if (view === undefined) return errorResponse(noSuchJob(id));
    return jsonResponse(200, jobJson(view, true));
  }

  function listJobs(url: URL): Response {
    const limit = decodeLimit(url.searchParams.get("limit"), listLimits);
    if (!limit.ok) return errorResponse(limit.reason);
    const items = service.recentJobs(limit.value).map((view) => jobJson(view, false));
    return jsonResponse(200, { items });
  }

  function listDeadLetters(url: URL): Response {
    const limit = decodeLimit(url.searchParams.get("limit"), listLimits);
    if (!limit.ok) return errorResponse(limit.reason);
    const cursor = decodeCursor(url.searchParams.get("cursor"));
    if (!cursor.ok) return errorResponse(cursor.reason);
    const page = service.listDeadLetters(limit.value, cursor.value);
    const body: Record<string, unknown> = { items: page.items.map((view) => jobJson(view, false)) };
    if (page.nextCursor !== undefined) body.nextCursor = page.nextCursor;
    return jsonResponse(200, body);
  }

  /**
   * `POST /v1/events`: fanned out to every endpoint that takes its type, 202 only once the
   * event and all its jobs are durable on a majority (docs/endpoints.md).
   */
  async function submitEvent(request: Request): Promise<Response> {
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return errorResponse(contentError);
    const key = idempotencyKeyOf(request);
    if (!key.ok) return errorResponse(key.reason);
    const idempotencyKey = key.value;
    return await admittedWithBody("event", request, async (body) => {
      const decoded = decodeEvent(body.value, limits, body.numberTexts);
      if (!decoded.ok) return errorResponse(decoded.reason);
      const outcome = await service.submitEvent(
        idempotencyKey === undefined ? decoded.value : { ...decoded.value, idempotencyKey },
      );
      if (!outcome.ok) return errorResponse(refusalError(outcome, config.retryAfterS));
      return jsonResponse(
        202,
        { id: outcome.id, type: outcome.type, jobs: outcome.jobs, existing: outcome.existing },
        { location: `/v1/events/${encodeURIComponent(outcome.id)}` },
      );
    });
  }

  function getEvent(rawId: string): Response {
    const id = decodeId(rawId, JOB_LIMITS.idBytesMax);
    const view = id === undefined ? undefined : service.getEvent(id);
    if (view === undefined) {
      const shown = JSON.stringify(rawId.length > 64 ? `${rawId.slice(0, 64)}…` : rawId);
      return errorResponse({ code: "not_found", message: `no event ${shown} on this node` });
    }
    return jsonResponse(200, eventJson(view));
  }

  /** A generated Standard Webhooks secret: `whsec_` and the base64 of 24 random bytes. */
  function generatedSecret(): string {
    const bytes = randomBytes(ENDPOINT_SECRET_BYTES);
    assert(bytes.length === ENDPOINT_SECRET_BYTES, "randomBytes gave the bytes asked for");
    return "whsec_" + btoa(String.fromCharCode(...bytes));
  }

  /** An endpoint write's answer: `status` with the endpoint once durable, else the refusal. */
  function endpointAnswer(
    outcome: EndpointOutcome,
    status: 200 | 201,
    secrets: "with-secrets" | "without-secrets",
  ): Response {
    if (!outcome.ok) return errorResponse(refusalError(outcome, config.retryAfterS));
    const headers: Record<string, string> = status === 201
      ? { location: `/v1/endpoints/${encodeURIComponent(outcome.endpoint.id)}` }
      : {};
    return jsonResponse(
      status,
      endpointJson(outcome.endpoint, secrets === "with-secrets"),
      headers,
    );
  }

  async function createEndpoint(request: Request): Promise<Response> {
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return errorResponse(contentError);
    const key = idempotencyKeyOf(request);
    if (!key.ok) return errorResponse(key.reason);
    const idempotencyKey = key.value;
    return await admittedWithBody("endpoint", request, async (body) => {
      const generated = generatedSecret();
      const decoded = decodeEndpointCreate(body.value, limits, generated);
      if (!decoded.ok) return errorResponse(decoded.reason);
      const outcome = idempotencyKey === undefined
        ? await service.createEndpoint(decoded.value)
        : await service.createEndpoint(decoded.value, {
          idempotencyKey,
          secretGiven: decoded.value.secret !== generated,
        });
      return endpointAnswer(outcome, 201, "with-secrets");
    });
  }

  async function updateEndpoint(rawId: string, request: Request): Promise<Response> {
    const id = decodeId(rawId, ENDPOINT_LIMITS.idBytesMax);
    if (id === undefined) return errorResponse(noSuchEndpoint(rawId));
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return errorResponse(contentError);
    return await admittedWithBody("endpoint", request, async (body) => {
      const decoded = decodeEndpointPatch(body.value, limits);
      if (!decoded.ok) return errorResponse(decoded.reason);
      return endpointAnswer(
        await service.updateEndpoint(id, decoded.value),
        200,
        "without-secrets",
      );
    });
  }

  async function deleteEndpoint(rawId: string): Promise<Response> {
    const id = decodeId(rawId, ENDPOINT_LIMITS.idBytesMax);
    if (id === undefined) return errorResponse(noSuchEndpoint(rawId));
    return await admitted("endpoint", async () => {
      const outcome = await service.deleteEndpoint(id);
      if (!outcome.ok) return errorResponse(refusalError(outcome, config.retryAfterS));
      return jsonResponse(200, { id, deleted: true });
    });
  }

  /**
   * `POST /v1/endpoints/{id}/secret/rotate`: a write like a PATCH; the body (`{secret?}`) is
   * optional, and without a secret one is generated as for a create.
   */
  async function rotateEndpointSecret(rawId: string, request: Request): Promise<Response> {
    const id = decodeId(rawId, ENDPOINT_LIMITS.idBytesMax);
    if (id === undefined) return errorResponse(noSuchEndpoint(rawId));
    if (!hasBody(request)) {
      return await admitted(
        "endpoint",
        async () =>
          endpointAnswer(
            await service.rotateEndpointSecret(id, generatedSecret()),
            200,
            "with-secrets",
          ),
      );
    }
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return errorResponse(contentError);
    return await admittedWithBody("endpoint", request, async (body) => {
      const decoded = decodeEndpointRotate(body.value, limits, generatedSecret());
      if (!decoded.ok) return errorResponse(decoded.reason);
      return endpointAnswer(
        await service.rotateEndpointSecret(id, decoded.value),
        200,
        "with-secrets",
      );
    });
  }

  /**
   * `POST /v1/endpoints/{id}/recover {since}`: revives the endpoint's dead jobs of events
   * submitted since `since`, in event order; 202 `{recovered, failed}`.
   */
  async function recoverEndpoint(rawId: string, request: Request): Promise<Response> {
    const id = decodeId(rawId, ENDPOINT_LIMITS.idBytesMax);
    if (id === undefined) return errorResponse(noSuchEndpoint(rawId));
    const contentError = checkJsonContentType(request);
    if (contentError !== undefined) return errorResponse(contentError);
    return await admittedWithBody("endpoint", request, async (body) => {
      const decoded = decodeRecover(body.value);
      if (!decoded.ok) return errorResponse(decoded.reason);
      const outcome = await service.recoverEndpoint(id, decoded.value);
      if (!outcome.ok) return errorResponse(refusalError(outcome, config.retryAfterS));
      return jsonResponse(202, { recovered: outcome.recovered, failed: outcome.failed });
    });
  }

  /**
   * An endpoint read from a majority (`readEndpoint`), so a GET through any node sees a write
   * acknowledged through another; else the answer to send (404, or 503 without a majority).
   */
  async function readEndpoint(
    rawId: string,
  ): Promise<{ ok: true; view: EndpointView } | { ok: false; response: Response }> {
    const id = decodeId(rawId, ENDPOINT_LIMITS.idBytesMax);
    if (id === undefined) return { ok: false, response: errorResponse(noSuchEndpoint(rawId)) };
    const read = await storeCall(() => service.readEndpoint(id));
    if (read === undefined) return { ok: false, response: errorResponse(noSuchEndpoint(id)) };
    if ("ok" in read) {
      return { ok: false, response: errorResponse(refusalError(read, config.retryAfterS)) };
    }
    return { ok: true, view: read };
  }

  async function getEndpoint(rawId: string): Promise<Response> {
    const read = await readEndpoint(rawId);
    return read.ok ? jsonResponse(200, endpointJson(read.view, false)) : read.response;
  }

  /**
   * `GET /v1/endpoints/{id}/secret`: the signing secrets, on a route of their own (as Svix
   * does), so that reading or listing endpoints does not hand them out.
   */
  async function getEndpointSecret(rawId: string): Promise<Response> {
    const read = await readEndpoint(rawId);
    return read.ok ? jsonResponse(200, endpointSecretsJson(read.view)) : read.response;
  }

  function listEndpoints(url: URL): Response {
    const limit = decodeLimit(url.searchParams.get("limit"), endpointListLimits);
    if (!limit.ok) return errorResponse(limit.reason);
    const cursor = decodeCursor(url.searchParams.get("cursor"));
    if (!cursor.ok) return errorResponse(cursor.reason);
    const page = service.listEndpoints(limit.value, cursor.value);
    const body: Record<string, unknown> = {
      items: page.items.map((view) => endpointJson(view, false)),
    };
    if (page.nextCursor !== undefined) body.nextCursor = page.nextCursor;
    return jsonResponse(200, body);
  }

  /** The dashboard's endpoints: no secret, no header value (`endpointHealthItem`). */
  function endpointHealth(url: URL): Response {
    const limit = decodeLimit(url.searchParams.get("limit"), endpointListLimits);
    if (!limit.ok) return errorResponse(limit.reason);
    const cursor = decodeCursor(url.searchParams.get("cursor"));
    if (!cursor.ok) return errorResponse(cursor.reason);
    return jsonResponse(200, endpointHealthJson(service.endpointHealth(limit.value, cursor.value)));
  }

  function readyz(): Response {
    const readiness = service.readiness();
    const checks = readiness.checks.map((c) => ({ name: c.name, ok: c.ok, detail: c.detail }));
    return jsonResponse(readiness.ready ? 200 : 503, { ready: readiness.ready, checks });
  }

  async function dispatch(
    route: Route,
    params: Readonly<Record<string, string>>,
    request: Request,
    url: URL,
  ): Promise<Response> {
    switch (route.id) {
      case "submitJob":
        return await submitJob(request);
      case "submitBatch":
        return await submitBatch(request);
      case "listJobs":
        return listJobs(url);
      case "getJob":
        return await getJob(params.id!);
      case "retryJob":
        return await retryJob(params.id!);
      case "listDeadLetters":
        return listDeadLetters(url);
      case "createEndpoint":
        return await createEndpoint(request);
      case "listEndpoints":
        return listEndpoints(url);
      case "getEndpoint":
        return await getEndpoint(params.id!);
      case "updateEndpoint":
        return await updateEndpoint(params.id!, request);
      case "deleteEndpoint":
        return await deleteEndpoint(params.id!);
      case "getEndpointSecret":
        return await getEndpointSecret(params.id!);
      case "rotateEndpointSecret":
        return await rotateEndpointSecret(params.id!, request);
      case "recoverEndpoint":
        return await recoverEndpoint(params.id!, request);
      case "submitEvent":
        return await submitEvent(request);
      case "getEvent":
        return getEvent(params.id!);
      case "cluster":
        return jsonResponse(200, clusterJson(service.cluster()));
      case "openapi":
        return new Response(openApiText, {
          headers: { "content-type": "application/json; charset=utf-8" },
        });
      case "metrics":
        return new Response(options.metrics(), {
          headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
        });
      case "healthz":
        return jsonResponse(200, { status: "ok" });
      case "readyz":
        return readyz();
      case "series":
        return jsonResponse(200, seriesJson(options.dashboard?.series() ?? EMPTY_SERIES));
      case "receivers":
        return jsonResponse(
          200,
          receiversJson(options.dashboard?.receivers() ?? EMPTY_RECEIVERS),
        );
      case "endpointHealth":
        return endpointHealth(url);
      case "dashboard":
        return assetResponse(DASHBOARD_PAGE);
      case "dashboardAsset": {
        const asset = dashboardAsset(params.file!);
        if (asset === undefined) {
          return errorResponse({
            code: "route_not_found",
            message: `the dashboard has no file ${JSON.stringify(params.file!.slice(0, 100))}`,
          });
        }
        return assetResponse(asset);
      }
    }
  }

  async function answer(
    request: Request,
    url: URL,
  ): Promise<{ label: string; response: Response }> {
    const match = matchRoute(request.method, url.pathname);
    const label = match.kind === "route" ? match.route.id : match.kind;
    // /metrics names every receiver origin whose breaker opened: with a token configured it
    // needs the token like /v1/ (a Prometheus scrape config sends one as
    // `authorization: {credentials_file: …}`). /healthz and /readyz name nothing and stay
    // open for probes that cannot carry a secret.
    const guarded = url.pathname === "/v1" || url.pathname.startsWith("/v1/") ||
      url.pathname === "/metrics";
    // Before routing's verdict: without the token, /v1/ does not even say which paths exist.
    if (
      guarded && authorized !== undefined && !authorized(request.headers.get("authorization"))
    ) {
      return {
        label,
        response: errorResponse(
          { code: "unauthorized", message: "this node requires Authorization: Bearer <api token>" },
          { "www-authenticate": "Bearer" },
        ),
      };
    }
    switch (match.kind) {
      case "not_found":
        return {
          label,
          response: errorResponse({
            code: "route_not_found",
            message: `no route ${url.pathname.slice(0, 200)}`,
          }),
        };
      case "method_not_allowed":
        return {
          label,
          response: errorResponse({
            code: "method_not_allowed",
            message: `${url.pathname.slice(0, 200)} takes ${
              match.allow.join(", ")
            }, not ${request.method}`,
          }, { allow: match.allow.join(", ") }),
        };
      case "route":
        return { label, response: await dispatch(match.route, match.params, request, url) };
    }
  }

  return async function handle(request: Request): Promise<Response> {
    let label = "unparsed";
    let response: Response;
    try {
      const answered = await answer(request, new URL(request.url));
      label = answered.label;
      response = answered.response;
    } catch (error) {
      const cause = error instanceof Error ? (error.stack ?? error.message) : String(error);
      log(`api: ${request.method} ${request.url.slice(0, 200)} failed: ${cause}`);
      response = errorResponse({
        code: "internal",
        message: "internal error; the node logged the cause",
      });
    }
    metrics.response(label, response.status);
    return response;
  };
}

/** readJson's "a chunk did not fit the body budget": a 503, not the client's fault. */
const OVER_BUDGET = Symbol("over budget");

const EMPTY_SERIES: SeriesView = { intervalMs: 1000, pointsMax: 0, points: [] };
const EMPTY_RECEIVERS: ReceiversView = { windowMs: 60_000, items: [] };

function assetResponse(asset: DashboardAsset): Response {
  return new Response(asset.body, {
    headers: { ...DASHBOARD_HEADERS, "content-type": asset.contentType },
  });
}

/**
 * A job or event id from a path (`charsMax` JOB_LIMITS.idBytesMax), or an endpoint's
 * (ENDPOINT_LIMITS.idBytesMax); undefined: no such thing can exist (404). The bound is the
 * codec's: a longer id the node does not hold would be asked of the peers in a message that
 * cannot carry it (an assertion, answered 500).
 */
function decodeId(raw: string, charsMax: number): string | undefined {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  // Printable ASCII only (JOB_ID), so characters are bytes.
  if (id.length === 0 || id.length > charsMax || !JOB_ID.test(id)) return undefined;
  return id;
}

function noSuchJob(id: string): ApiError {
  const shown = JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id);
  return { code: "not_found", message: `no job ${shown}` };
}

/** Whether a request carries a body (a rotation's is optional). */
function hasBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  if (length !== null) return length.trim() !== "0";
  return request.body !== null;
}

function noSuchEndpoint(id: string): ApiError {
  const shown = JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id);
  return { code: "not_found", message: `no endpoint ${shown}` };
}

/** Random bytes in a generated endpoint secret (Standard Webhooks' minimum, as Svix uses). */
const ENDPOINT_SECRET_BYTES = 24;

/** An endpoint in the API's (Svix-style, snake_case) field names; times as ISO 8601. */
/** An event and, per endpoint, its job (docs/endpoints.md; the issue's snake_case names). */
function eventJson(view: EventView): Record<string, unknown> {
  return {
    id: view.id,
    type: view.type,
    payload: view.payload,
    created_at: new Date(view.createdAtMs).toISOString(),
    jobs: view.jobs.map((j) => ({
      endpoint_id: j.endpointId,
      job_id: j.jobId,
      state: j.state ?? null,
      attempts: j.attemptsTotal,
    })),
  };
}

/**
 * An endpoint's documented fields. Its secrets (`secret`, `previous_secret`) only with
 * `withSecrets`: in the answers to a create and a rotation, which hand a new secret to the
 * client that asked for it; every other read leaves them to `GET /v1/endpoints/{id}/secret`.
 */
function endpointJson(view: EndpointView, withSecrets: boolean): Record<string, unknown> {
  return {
    id: view.id,
    url: view.url,
    event_types: view.eventTypes,
    ...(withSecrets ? { secret: view.secret } : {}),
    description: view.description,
    headers: view.headers,
    rate_limit_per_s: view.rateLimitPerS,
    ordered: view.ordered,
    disabled: view.disabled,
    disabled_reason: view.disabledReason === "" ? null : view.disabledReason,
    created_at: new Date(view.createdAtMs).toISOString(),
    updated_at: new Date(view.updatedAtMs).toISOString(),
    ...(withSecrets ? { previous_secret: view.previousSecret ?? null } : {}),
    previous_secret_until: view.previousSecretUntilMs !== undefined
      ? new Date(view.previousSecretUntilMs).toISOString()
      : null,
    last_success_at: view.lastSuccessAtMs !== undefined
      ? new Date(view.lastSuccessAtMs).toISOString()
      : null,
  };
}

/** An endpoint's signing secrets (`GET /v1/endpoints/{id}/secret`). */
function endpointSecretsJson(view: EndpointView): Record<string, unknown> {
  return {
    secret: view.secret,
    previous_secret: view.previousSecret ?? null,
    previous_secret_until: view.previousSecretUntilMs !== undefined
      ? new Date(view.previousSecretUntilMs).toISOString()
      : null,
  };
}

/**
 * The documented fields of a job, nothing else (the store's objects may carry more). `full`:
 * the payload and every attempt (GET /v1/jobs/{id}); lists carry the newest attempt only and
 * no payload, so a page costs bytes per job: 1,000 dead letters of 100 attempts, each with the
 * receiver's 1 KiB answer, made a 114 MB answer that took 0.9 s of the node's event loop.
 */
function jobJson(view: JobView, full: boolean): Record<string, unknown> {
  const attempts = full ? view.attempts : view.attempts.slice(-1);
  const out: Record<string, unknown> = {
    id: view.id,
    state: view.state,
    url: view.url,
    submittedAtMs: view.submittedAtMs,
    attemptsMade: view.attemptsMade,
    maxAttempts: view.maxAttempts,
    retry: view.retry,
    attemptsTotal: view.attemptsTotal,
    owner: view.owner,
    attempts: attempts.map((a) => {
      const attempt: Record<string, unknown> = {
        attempt: a.attempt,
        retry: a.retry,
        startedAtMs: a.startedAtMs,
        latencyMs: a.latencyMs,
        outcome: a.outcome,
        detail: a.detail,
        node: a.node,
      };
      if (a.status !== undefined) attempt.status = a.status;
      return attempt;
    }),
  };
  if (view.finishedAtMs !== undefined) out.finishedAtMs = view.finishedAtMs;
  if (view.nextAttemptAtMs !== undefined) out.nextAttemptAtMs = view.nextAttemptAtMs;
  if (view.deadReason !== undefined) out.deadReason = view.deadReason;
  if (view.idempotencyKey !== undefined) out.idempotencyKey = view.idempotencyKey;
  // Lists leave payloads out: 1,000 jobs of 256 KiB would be a 256 MB response.
  if (full && view.payload !== undefined) out.payload = view.payload;
  return out;
}

function clusterJson(view: ClusterView): Record<string, unknown> {
  return {
    nodeId: view.nodeId,
    address: view.address,
    voters: view.voters,
    quorum: view.quorum,
    votersReachable: view.votersReachable,
    role: view.role,
    members: view.members.map((m) => ({
      nodeId: m.nodeId,
      address: m.address,
      state: m.state,
      incarnation: m.incarnation,
      voter: m.voter,
    })),
    jobs: {
      pending: view.jobs.pending,
      delivering: view.jobs.delivering,
      delivered: view.jobs.delivered,
      dead: view.jobs.dead,
    },
  };
}

/** The documented fields of the series, nothing else. */
function seriesJson(view: SeriesView): Record<string, unknown> {
  return {
    intervalMs: view.intervalMs,
    pointsMax: view.pointsMax,
    points: view.points.map((p) => ({
      atMs: p.atMs,
      spanMs: p.spanMs,
      accepted: p.accepted,
      rejected: p.rejected,
      delivered: p.delivered,
      failedAttempts: p.failedAttempts,
      p50Ms: p.p50Ms,
      p99Ms: p.p99Ms,
    })),
  };
}

/** The documented fields only: an item is built field by field, so nothing else leaks. */
function endpointHealthJson(page: EndpointHealthPage): Record<string, unknown> {
  const body: Record<string, unknown> = {
    windowMs: page.windowMs,
    items: page.items.map((e) => {
      const health: Record<string, unknown> = {
        attempts: e.health.attempts,
        failures: e.health.failures,
      };
      if (e.health.lastSuccessAtMs !== undefined) {
        health.lastSuccessAtMs = e.health.lastSuccessAtMs;
      }
      const f = e.health.lastFailure;
      if (f !== undefined) {
        health.lastFailure = {
          atMs: f.atMs,
          outcome: f.outcome,
          ...(f.status !== undefined ? { status: f.status } : {}),
          detail: f.detail,
        };
      }
      const out: Record<string, unknown> = {
        id: e.id,
        url: e.url,
        description: e.description,
        eventTypes: e.eventTypes,
        headerNames: e.headerNames,
        rateLimitPerS: e.rateLimitPerS,
        ordered: e.ordered,
        disabled: e.disabled,
        disabledReason: e.disabledReason === "" ? null : e.disabledReason,
        createdAtMs: e.createdAtMs,
        updatedAtMs: e.updatedAtMs,
        health,
      };
      if (e.backlog !== undefined) out.backlog = e.backlog;
      return out;
    }),
  };
  if (page.nextCursor !== undefined) body.nextCursor = page.nextCursor;
  return body;
}

function receiversJson(view: ReceiversView): Record<string, unknown> {
  return {
    windowMs: view.windowMs,
    items: view.items.map((r) => {
      const out: Record<string, unknown> = {
        origin: r.origin,
        breaker: r.breaker,
        inflight: r.inflight,
        jobsHeld: r.jobsHeld,
        attempts: r.attempts,
        failures: r.failures,
        failureRate: r.failureRate,
      };
      if (r.reopenAtMs !== undefined) out.reopenAtMs = r.reopenAtMs;
      if (r.lastAttemptAtMs !== undefined) out.lastAttemptAtMs = r.lastAttemptAtMs;
      if (r.lastFailure !== undefined) {
        const f = r.lastFailure;
        const failure: Record<string, unknown> = {
          atMs: f.atMs,
          outcome: f.outcome,
          detail: f.detail,
        };
        if (f.status !== undefined) failure.status = f.status;
        out.lastFailure = failure;
      }
      return out;
    }),
  };
}
