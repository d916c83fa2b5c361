/**
 * The OpenAPI 3.1 document served at `GET /v1/openapi.json`, built from the node's own limits
 * so the bounds it states are the ones enforced.
 *
 * Owns the description of the API, nothing else. tests/api/openapi_test.ts holds it to the
 * server: every path, method and status listed here is exercised and every response body is
 * checked against its schema; every route in routes.ts must be listed. Change both together.
 */

import type { ApiConfig } from "../config/api.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";
import { ENDPOINT_LIMITS, endpointHealthDefaults } from "../config/endpoints.ts";
import { jobsDefaults } from "../config/jobs.ts";
import { ATTEMPT_OUTCOMES } from "../delivery/types.ts";
import { API_ERROR_CODES } from "./errors.ts";
import { ENDPOINT_FIELDS, RECOVER_FIELDS, ROTATE_FIELDS } from "./endpoint_validate.ts";
import type { SubmitLimits } from "./validate.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string): JsonObject => ({ $ref: `#/components/responses/${name}` });
const jsonContent = (schema: JsonObject): JsonObject => ({
  "application/json": { schema },
});

function errorResponse(description: string, headers?: JsonObject): JsonObject {
  const out: JsonObject = { description, content: jsonContent(ref("Error")) };
  if (headers !== undefined) out.headers = headers;
  return out;
}

/** A window in the largest whole unit that fits it: "24 h", "10 min", "4 s", "250 ms". */
function formatWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

export function buildOpenApi(config: ApiConfig, limits: SubmitLimits): JsonObject {
  const jobFields: JsonObject = {
    url: {
      type: "string",
      format: "uri",
      maxLength: JOB_LIMITS.urlBytesMax,
      description: "http(s) URL the job is POSTed to; no user:password@ in it, and no spaces " +
        `or control characters (percent-encode them). At most ${JOB_LIMITS.urlBytesMax} ` +
        "bytes as UTF-8.",
    },
    payload: {
      description: `Any JSON value; sent as the request body, re-serialised without ` +
        `whitespace, its numbers as written (64-bit ids are not rounded). At most ` +
        `${limits.payloadBytesMax} bytes as JSON text, else 413.`,
    },
    headers: {
      type: "object",
      additionalProperties: { type: "string" },
      description: "Extra request headers: valid names, Latin-1 values without CR/LF, " +
        `${limits.jobHeadersBytesMax} bytes in all, at most ${JOB_LIMITS.headersMax} of ` +
        "them; not hookd's own webhook-* headers.",
    },
    secret: {
      type: "string",
      pattern: "^whsec_",
      description: "Standard Webhooks signing secret, whsec_<base64 of 24-64 bytes>.",
    },
    maxAttempts: { type: "integer", minimum: 1, maximum: limits.maxAttemptsMax },
    timeoutMs: { type: "integer", minimum: 1, maximum: limits.attemptTimeoutMaxMs },
  };
  const endpointFields: JsonObject = {
    url: {
      ...(jobFields.url as JsonObject),
      description: "http(s) URL events are POSTed to; " +
        "the rules of a job's url.",
    },
    event_types: {
      type: "array",
      maxItems: ENDPOINT_LIMITS.eventTypesMax,
      items: {
        type: "string",
        minLength: 1,
        maxLength: ENDPOINT_LIMITS.eventTypeCharsMax,
        pattern: "^[\\x21-\\x7e]+$",
      },
      description: "Event types it receives (e.g. invoice.paid); empty or absent: every type.",
    },
    secret: {
      ...(jobFields.secret as JsonObject),
      description: "Standard Webhooks signing secret, whsec_<base64 of 24-64 bytes>; " +
        "absent on a create: one is generated (24 random bytes).",
    },
    description: {
      type: "string",
      description: `At most ${ENDPOINT_LIMITS.descriptionBytesMax} ` +
        "bytes as UTF-8.",
    },
    headers: { ...(jobFields.headers as JsonObject) },
    rate_limit_per_s: {
      type: "integer",
      minimum: 0,
      maximum: ENDPOINT_LIMITS.rateLimitPerSMax,
      description: "Attempts per second to it across the cluster; 0: no limit. Each node " +
        "delivering its jobs takes an equal share (the rate over the nodes it holds up); " +
        "a change applies to jobs already pending. While nodes disagree on who is up " +
        "(a failure, a partition) the cluster may exceed it for a while (docs/endpoints.md).",
    },
    ordered: {
      type: "boolean",
      description: "Deliver its events one at a time, in the order they were taken: a failing " +
        "one holds the rest until it is delivered or dead. Taken per event when it is sent: " +
        "switching it leaves the jobs already made as they were.",
    },
    disabled: {
      type: "boolean",
      description: "A disabled endpoint gets no new events; false enables it again.",
    },
  };
  const endpointId: JsonObject = {
    name: "id",
    in: "path",
    required: true,
    schema: { type: "string", minLength: 1, maxLength: 256 },
  };
  const endpointWrite = "Every node holds every endpoint; a write is one replicated record, " +
    "answered once it is durable on a majority of the nodes (503 no_quorum otherwise, and the " +
    "write may still take effect). A PATCH or DELETE builds on the newest value a majority " +
    "of the nodes holds, so it never undoes a write acknowledged before it. Concurrent writes " +
    "to one endpoint: the last writer wins, whole, on every node. One endpoint holds at most " +
    `${ENDPOINT_LIMITS.endpointBytesMax} bytes encoded (400 invalid past it).`;
  const idempotencyKey: JsonObject = {
    type: "string",
    minLength: 1,
    maxLength: limits.idempotencyKeyCharsMax,
    pattern: "^[\\x20-\\x7e]+$",
  };
  const jsonBody = (schema: JsonObject): JsonObject => ({
    required: true,
    content: jsonContent(schema),
  });
  const bearer: Json = [{ bearer: [] }];
  const open: Json = [];
  const id: JsonObject = {
    name: "id",
    in: "path",
    required: true,
    schema: { type: "string", minLength: 1, maxLength: 256 },
  };
  const cursor: JsonObject = {
    name: "cursor",
    in: "query",
    required: false,
    schema: { type: "string", minLength: 1, maxLength: 1024 },
    description: "nextCursor from the previous page.",
  };
  /** What a request with a JSON body can be answered besides its success. */
  const bodyErrors: JsonObject = {
    "400": response("BadRequest"),
    "401": response("Unauthorized"),
    "408": response("BodyTimeout"),
    "413": response("TooLarge"),
    "415": response("UnsupportedMediaType"),
    "500": response("Internal"),
    "503": response("Unavailable"),
  };
  /** The optional `Idempotency-Key` header of a keyed submit, as `description` says it works. */
  const keyHeader = (description: string): JsonObject => ({
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description,
    schema: idempotencyKey,
  });
  /** A submit's answers: 202 with a Location and `answer`, the body errors, 409. */
  const acceptedResponses = (description: string, location: string, answer: string) => ({
    "202": {
      description,
      headers: { Location: { description: location, schema: { type: "string" } } },
      content: jsonContent(ref(answer)),
    },
    ...bodyErrors,
    "409": response("Conflict"),
  });
  /** A page of endpoints: the endpoint table's own bound (`ENDPOINT_LIMITS`). */
  const endpointLimit: JsonObject = {
    name: "limit",
    in: "query",
    required: false,
    schema: {
      type: "integer",
      minimum: 1,
      maximum: ENDPOINT_LIMITS.listLimitMax,
      default: ENDPOINT_LIMITS.listLimitDefault,
    },
  };
  const limit: JsonObject = {
    name: "limit",
    in: "query",
    required: false,
    schema: {
      type: "integer",
      minimum: 1,
      maximum: config.listLimitMax,
      default: config.listLimitDefault,
    },
  };

  return {
    openapi: "3.1.0",
    info: {
      title: "hookd node API",
      version: "1",
      description: "Submit webhook jobs to a hookd cluster and watch them. Any node takes any " +
        'request. Errors are JSON {"error": {code, message, field?, retryAfterS?}}. A path ' +
        "the API does not have answers 404 (route_not_found); a method a path does not take " +
        "answers 405 (method_not_allowed) with an Allow header. With an API token configured, " +
        "every /v1/ path and /metrics need `Authorization: Bearer <token>` (else 401 with " +
        "WWW-Authenticate: Bearer): /metrics names receivers. /healthz, /readyz and the " +
        "dashboard page stay open. Submits past " +
        `the node's in-flight bound (${config.submitsInFlightMax}) answer 503 at once with ` +
        "Retry-After. Request bodies must be `Content-Type: application/json`, at most " +
        `${config.bodyBytesMax} bytes (413) and complete within ${config.bodyReadTimeoutMs} ms ` +
        "(408). Unknown query parameters are ignored; unknown body fields are a 400.",
    },
    paths: {
      "/v1/jobs": {
        post: {
          operationId: "submitJob",
          summary: "Submit one job; 202 once it is durable on a majority of the nodes.",
          security: bearer,
          parameters: [keyHeader(
            `A key names one job for ${
              formatWindow(jobsDefaults.idempotencyWindowMs)
            } after the first submit that used it (the idempotencyWindowMs setting, read on ` +
              "the clock of the node that takes each submit). Within that window the same key " +
              "with the same body returns that job's id (existing: true), on any node, and " +
              "with another body it is a 409. After the window the key is free again: a " +
              "submit with it makes a new job, with a new id and so a new webhook-id, " +
              "whatever its body; the earlier job is not changed. Node clocks differ, so " +
              "close to the end of the window (within their skew) either answer may come.",
          )],
          requestBody: jsonBody(ref("SubmitJob")),
          responses: acceptedResponses(
            "Accepted: durable on a majority.",
            "The job's URL",
            "SubmitAccepted",
          ),
        },
        get: {
          operationId: "listJobs",
          summary: "The newest jobs this node holds, newest first (payloads omitted, " +
            "newest attempt only).",
          security: bearer,
          parameters: [limit],
          responses: {
            "200": { description: "Jobs", content: jsonContent(ref("JobList")) },
            "400": response("BadRequest"),
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/jobs/batch": {
        post: {
          operationId: "submitBatch",
          summary: "Submit many jobs; one result per job, in order. An invalid job does not " +
            "stop the others: the answer is 200 whenever the batch itself was readable, and " +
            "each result is {id, existing} or {error}.",
          security: bearer,
          requestBody: jsonBody(ref("BatchRequest")),
          responses: {
            "200": {
              description: "One result per job",
              content: jsonContent(ref("BatchResponse")),
            },
            ...bodyErrors,
          },
        },
      },
      "/v1/jobs/{id}": {
        get: {
          operationId: "getJob",
          summary: "One job: state, attempts, owner; from a peer when this node lacks it.",
          security: bearer,
          parameters: [id],
          responses: {
            "200": { description: "The job", content: jsonContent(ref("Job")) },
            "401": response("Unauthorized"),
            "404": response("NotFound"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/jobs/{id}/retry": {
        post: {
          operationId: "retryJob",
          summary: "Retry a dead letter by hand (attempts start again from 1). No body. 409 " +
            "not_dead_letter when the job held here is pending or delivered. 503 not_ready " +
            "when this node does not yet know the job was acknowledged or its dead letter is " +
            "not yet on its disk, or another node holds a newer state of it (retried again or " +
            "delivered since): retry shortly.",
          security: bearer,
          parameters: [id],
          responses: {
            "202": { description: "Scheduled again", content: jsonContent(ref("RetryAccepted")) },
            "401": response("Unauthorized"),
            "404": response("NotFound"),
            "409": response("NotDeadLetter"),
            "500": response("Internal"),
            "503": response("Unavailable"),
          },
        },
      },
      "/v1/dead-letters": {
        get: {
          operationId: "listDeadLetters",
          summary: "Dead letters, oldest first, paged (payloads omitted, newest attempt only).",
          security: bearer,
          parameters: [limit, cursor],
          responses: {
            "200": { description: "A page", content: jsonContent(ref("DeadLetterPage")) },
            "400": response("BadRequest"),
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/endpoints": {
        post: {
          operationId: "createEndpoint",
          summary: "Create an endpoint; 201 once it is durable on a majority. " + endpointWrite,
          security: bearer,
          parameters: [keyHeader(
            "A key names one endpoint (its id is derived from the key) for as long as the " +
              "cluster holds it, and its tombstone 30 days after a DELETE: a retry after a 503 " +
              "with the same body gets that endpoint (201, the same id and secret; a generated " +
              "secret is not compared), with another body, or once it was deleted, a 409. " +
              "The retry is compared with the endpoint as it is now (a PATCH since counts).",
          )],
          requestBody: jsonBody(ref("EndpointCreate")),
          responses: {
            "201": {
              description: "Created (or, for a keyed retry, the endpoint the key made): " +
                "durable on a majority.",
              headers: {
                Location: { description: "The endpoint's URL", schema: { type: "string" } },
              },
              content: jsonContent(ref("Endpoint")),
            },
            ...bodyErrors,
            "409": response("Conflict"),
          },
        },
        get: {
          operationId: "listEndpoints",
          summary: "Endpoints in id order, paged, from this node's table.",
          security: bearer,
          parameters: [endpointLimit, cursor],
          responses: {
            "200": { description: "A page", content: jsonContent(ref("EndpointPage")) },
            "400": response("BadRequest"),
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/endpoints/{id}": {
        get: {
          operationId: "getEndpoint",
          summary: "One endpoint, read from a majority of the voters: every write acknowledged " +
            "through any node is seen. 404 when a majority holds no such endpoint; 503 " +
            "(no_quorum) when no majority answered in time.",
          security: bearer,
          parameters: [endpointId],
          responses: {
            "200": { description: "The endpoint", content: jsonContent(ref("Endpoint")) },
            "401": response("Unauthorized"),
            "404": response("NotFound"),
            "500": response("Internal"),
            "503": response("Unavailable"),
          },
        },
        patch: {
          operationId: "updateEndpoint",
          summary: "Change the fields given; 200 once durable on a majority. " + endpointWrite,
          security: bearer,
          parameters: [endpointId],
          requestBody: jsonBody(ref("EndpointPatch")),
          responses: {
            "200": {
              description: "The endpoint as written",
              content: jsonContent(ref("Endpoint")),
            },
            ...bodyErrors,
            "404": response("NotFound"),
          },
        },
        delete: {
          operationId: "deleteEndpoint",
          summary: "Delete an endpoint; 200 once durable on a majority. No body.",
          security: bearer,
          parameters: [endpointId],
          responses: {
            "200": { description: "Deleted", content: jsonContent(ref("EndpointDeleted")) },
            "401": response("Unauthorized"),
            "404": response("NotFound"),
            "500": response("Internal"),
            "503": response("Unavailable"),
          },
        },
      },
      "/v1/endpoints/{id}/secret": {
        get: {
          operationId: "getEndpointSecret",
          summary: "The endpoint's signing secrets, read from a majority like GET of the " +
            "endpoint: the only read that shows them (reads and lists of endpoints leave them " +
            "out; a create's and a rotation's answers carry the secret they made).",
          security: bearer,
          parameters: [endpointId],
          responses: {
            "200": { description: "Its secrets", content: jsonContent(ref("EndpointSecret")) },
            "401": response("Unauthorized"),
            "404": response("NotFound"),
            "500": response("Internal"),
            "503": response("Unavailable"),
          },
        },
      },
      "/v1/endpoints/{id}/secret/rotate": {
        post: {
          operationId: "rotateEndpointSecret",
          summary: "Give the endpoint a new signing secret (the body's, or a generated one " +
            "when the body or its secret is absent); 200 with the endpoint once durable on a " +
            "majority. For " + formatWindow(endpointHealthDefaults.secretRotationOverlapMs) +
            " (secretRotationOverlapMs) after it, every delivery to it, of events submitted " +
            "before or after, is signed under the new and the old secret (two v1 signatures, " +
            "which Standard Webhooks verifiers accept under either). A second rotation within " +
            "the overlap drops the oldest: previous_secret is the one just replaced. " +
            endpointWrite,
          security: bearer,
          parameters: [endpointId],
          requestBody: { required: false, content: jsonContent(ref("EndpointRotate")) },
          responses: {
            "200": {
              description: "The endpoint as written",
              content: jsonContent(ref("Endpoint")),
            },
            ...bodyErrors,
            "404": response("NotFound"),
          },
        },
      },
      "/v1/endpoints/{id}/recover": {
        post: {
          operationId: "recoverEndpoint",
          summary: "Revive every dead job of the endpoint whose event was submitted at or " +
            "after since, in event order (submit time, then event id), each by a manual " +
            "retry durable on a majority; 202 once they are. failed counts revives refused " +
            "(no majority in time): those jobs stay dead. Recover a disabled endpoint after " +
            "enabling it (PATCH disabled false), or its revived jobs go dead again.",
          security: bearer,
          parameters: [endpointId],
          requestBody: jsonBody(ref("EndpointRecover")),
          responses: {
            "202": { description: "Revived", content: jsonContent(ref("EndpointRecovered")) },
            ...bodyErrors,
            "404": response("NotFound"),
          },
        },
      },
      "/v1/events": {
        post: {
          operationId: "submitEvent",
          summary: "Submit an event; it fans out to every endpoint that is not deleted, not " +
            "disabled and takes its type (event_types empty or holding it), as this node's " +
            "endpoint table holds them. 202 once the event and every one of its jobs are " +
            "durable on a majority of the nodes, all in one record: all of them or none " +
            "(503 no_quorum otherwise). jobs may be 0; the event is still recorded. Every " +
            "delivery of the event carries its id as webhook-id, the same for every endpoint, " +
            "the payload as the body, the endpoint's headers and Standard Webhooks signatures " +
            "under the endpoint's secret, all as they were when the event was submitted.",
          security: bearer,
          parameters: [keyHeader(
            `A key names one event for ${
              formatWindow(jobsDefaults.idempotencyWindowMs)
            } after the first submit that used it, as a job's key does: the same key with ` +
              "the same type and payload returns that event (existing: true), with another " +
              "body it is a 409; after the window it makes a new event.",
          )],
          requestBody: jsonBody(ref("SubmitEvent")),
          responses: acceptedResponses(
            "Accepted: the event and all its jobs durable on a majority.",
            "The event's URL",
            "EventAccepted",
          ),
        },
      },
      "/v1/events/{id}": {
        get: {
          operationId: "getEvent",
          summary: "One event and, per endpoint it fanned out to, its job's id, state and " +
            "attempts, from this node's table.",
          security: bearer,
          parameters: [id],
          responses: {
            "200": { description: "The event", content: jsonContent(ref("Event")) },
            "401": response("Unauthorized"),
            "404": response("NotFound"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/cluster": {
        get: {
          operationId: "cluster",
          summary: "This node's view of the cluster: members, quorum, role, jobs by state.",
          security: bearer,
          responses: {
            "200": { description: "The view", content: jsonContent(ref("Cluster")) },
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/openapi.json": {
        get: {
          operationId: "openapi",
          summary: "This document.",
          security: bearer,
          responses: {
            "200": { description: "OpenAPI 3.1", content: jsonContent({ type: "object" }) },
            "401": response("Unauthorized"),
          },
        },
      },
      "/v1/series": {
        get: {
          operationId: "series",
          summary: "This node's last few minutes, one point per interval: submits accepted and " +
            "rejected, deliveries, failed attempts, submit-to-delivery p50/p99 (the dashboard's " +
            "charts).",
          security: bearer,
          responses: {
            "200": { description: "The series", content: jsonContent(ref("Series")) },
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/receivers": {
        get: {
          operationId: "receivers",
          summary: "Receiver origins this node delivers to: attempts in flight, jobs held, " +
            "circuit-breaker state and recent failures; failing first.",
          security: bearer,
          responses: {
            "200": { description: "The receivers", content: jsonContent(ref("Receivers")) },
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/v1/endpoint-health": {
        get: {
          operationId: "endpointHealth",
          summary: "The dashboard's endpoints, in id order, paged: each one's settings " +
            "without its secret or its headers' values (their names only), its attempts " +
            "within windowMs as this node knows them (from the delivery records every node " +
            "applies), and an ordered endpoint's backlog (pending jobs held here in its queue).",
          security: bearer,
          parameters: [endpointLimit, cursor],
          responses: {
            "200": {
              description: "A page",
              content: jsonContent(ref("EndpointHealthPage")),
            },
            "400": response("BadRequest"),
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/": {
        get: {
          operationId: "dashboard",
          summary: "The node's dashboard page (HTML). It asks for the API token, when the " +
            "node has one, before it reads any /v1/ route.",
          security: open,
          responses: {
            "200": {
              description: "The page",
              content: { "text/html": { schema: { type: "string" } } },
            },
          },
        },
      },
      "/dashboard/{file}": {
        get: {
          operationId: "dashboardAsset",
          summary: "The dashboard page's JavaScript modules and stylesheet.",
          security: open,
          parameters: [{
            name: "file",
            in: "path",
            required: true,
            schema: { type: "string", minLength: 1, maxLength: 64 },
          }],
          responses: {
            "200": {
              description: "The file",
              content: {
                "text/javascript": { schema: { type: "string" } },
                "text/css": { schema: { type: "string" } },
              },
            },
            "404": errorResponse("The dashboard has no such file (route_not_found)."),
          },
        },
      },
      "/metrics": {
        get: {
          operationId: "metrics",
          summary: "Prometheus text exposition format. Needs the API token when the node " +
            "has one (its labels name receiver origins); a Prometheus scrape config sends it " +
            "with `authorization: {credentials_file: …}`.",
          security: bearer,
          responses: {
            "200": {
              description: "Metrics",
              content: { "text/plain": { schema: { type: "string" } } },
            },
            "401": response("Unauthorized"),
            "500": response("Internal"),
          },
        },
      },
      "/healthz": {
        get: {
          operationId: "healthz",
          summary: "200 whenever the process answers.",
          security: open,
          responses: {
            "200": { description: "Alive", content: jsonContent(ref("Health")) },
          },
        },
      },
      "/readyz": {
        get: {
          operationId: "readyz",
          summary: "200 when recovered, caught up, with a reachable majority and a healthy " +
            "WAL; else 503. The body lists each check.",
          security: open,
          responses: {
            "200": { description: "Ready", content: jsonContent(ref("Readiness")) },
            "500": response("Internal"),
            "503": {
              description: "Not ready",
              content: jsonContent(ref("Readiness")),
            },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer" },
      },
      responses: {
        BadRequest: errorResponse(
          "Malformed JSON (malformed_json), or a field, header or query parameter that is " +
            "missing, of the wrong type, out of bounds or unknown (invalid, names `field`).",
        ),
        Unauthorized: errorResponse("No or wrong bearer token.", {
          "WWW-Authenticate": { schema: { type: "string", const: "Bearer" } },
        }),
        NotFound: errorResponse("No such job (or no such dead letter, for a retry)."),
        NotDeadLetter: errorResponse(
          "A retry of a job that is not a dead letter: pending, already being delivered, or " +
            "delivered (not_dead_letter; the message says which).",
        ),
        BodyTimeout: errorResponse("The body did not arrive in time."),
        Conflict: errorResponse("The Idempotency-Key was used with another body."),
        TooLarge: errorResponse("The body, or the job's payload, is over its bound."),
        UnsupportedMediaType: errorResponse("The body is not declared application/json."),
        Internal: errorResponse("A bug, or a store failure; the cause is in the node's log."),
        Unavailable: errorResponse(
          "No majority (no_quorum), a full queue or too large a backlog of jobs pending " +
            "delivery (overloaded, the HTTP edge's own bound included), not ready, shutting " +
            "down, or a failed WAL. Try again after " +
            "Retry-After, here or on another node.",
          { "Retry-After": { schema: { type: "integer", minimum: 1 } } },
        ),
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          additionalProperties: false,
          properties: {
            error: {
              type: "object",
              required: ["code", "message"],
              additionalProperties: false,
              properties: {
                code: { type: "string", enum: [...API_ERROR_CODES] },
                message: { type: "string" },
                field: { type: "string" },
                retryAfterS: { type: "integer", minimum: 1 },
              },
            },
          },
        },
        SubmitJob: {
          type: "object",
          required: ["url", "payload"],
          additionalProperties: false,
          properties: jobFields,
        },
        BatchJob: {
          type: "object",
          required: ["url", "payload"],
          additionalProperties: false,
          properties: { ...jobFields, idempotencyKey },
        },
        BatchRequest: {
          type: "object",
          required: ["jobs"],
          additionalProperties: false,
          properties: {
            jobs: { type: "array", maxItems: config.batchJobsMax, items: ref("BatchJob") },
          },
        },
        SubmitAccepted: {
          type: "object",
          required: ["id", "existing"],
          additionalProperties: false,
          properties: {
            id: { type: "string" },
            existing: {
              type: "boolean",
              description:
                "True when an idempotency key matched an earlier submit within its window.",
            },
          },
        },
        BatchResponse: {
          type: "object",
          required: ["results"],
          additionalProperties: false,
          properties: {
            results: {
              type: "array",
              items: { oneOf: [ref("SubmitAccepted"), ref("Error")] },
            },
          },
        },
        RetryAccepted: {
          type: "object",
          required: ["id"],
          additionalProperties: false,
          properties: { id: { type: "string" } },
        },
        Attempt: {
          type: "object",
          required: ["attempt", "retry", "startedAtMs", "latencyMs", "outcome", "detail", "node"],
          additionalProperties: false,
          properties: {
            attempt: {
              type: "integer",
              minimum: 1,
              description: "Numbered across manual retries: a retry continues the count.",
            },
            retry: {
              type: "integer",
              minimum: 0,
              description: "The round it belongs to: 0 for the job's own attempts, n for the " +
                "n-th manual retry.",
            },
            startedAtMs: { type: "number", description: "Epoch ms" },
            latencyMs: { type: "number" },
            outcome: { type: "string", enum: [...ATTEMPT_OUTCOMES] },
            status: { type: "integer" },
            detail: { type: "string" },
            node: { type: "string" },
          },
        },
        Job: {
          type: "object",
          required: [
            "id",
            "state",
            "url",
            "submittedAtMs",
            "attemptsMade",
            "maxAttempts",
            "retry",
            "attemptsTotal",
            "owner",
            "attempts",
          ],
          additionalProperties: false,
          properties: {
            id: { type: "string" },
            state: { type: "string", enum: ["pending", "delivering", "delivered", "dead"] },
            url: { type: "string" },
            submittedAtMs: { type: "number" },
            finishedAtMs: { type: "number" },
            attemptsMade: {
              type: "integer",
              minimum: 0,
              description: "Attempts in the current round (since the latest manual retry), " +
                "out of maxAttempts.",
            },
            maxAttempts: {
              type: "integer",
              minimum: 1,
              description: "Attempt budget of each round: a manual retry gets a fresh one.",
            },
            retry: {
              type: "integer",
              minimum: 0,
              description: "Manual retries so far (0: never retried); the current round.",
            },
            attemptsTotal: {
              type: "integer",
              minimum: 0,
              description: "Attempts in all rounds: what the attempts' numbers count up to.",
            },
            nextAttemptAtMs: { type: "number" },
            owner: { type: "string" },
            deadReason: { type: "string" },
            attempts: {
              type: "array",
              items: ref("Attempt"),
              description: "Oldest first. In lists only the newest attempt; " +
                "GET /v1/jobs/{id} has them all.",
            },
            payload: {
              type: "string",
              description: "JSON text; only from GET /v1/jobs/{id}, while the node holds it.",
            },
            idempotencyKey: { type: "string" },
          },
        },
        JobList: {
          type: "object",
          required: ["items"],
          additionalProperties: false,
          properties: { items: { type: "array", items: ref("Job") } },
        },
        EndpointCreate: {
          type: "object",
          required: ["url"],
          additionalProperties: false,
          properties: endpointFields,
        },
        EndpointPatch: {
          type: "object",
          minProperties: 1,
          additionalProperties: false,
          properties: endpointFields,
        },
        Endpoint: {
          type: "object",
          description: "secret and previous_secret are only in the answers to a create and a " +
            "rotation; GET /v1/endpoints/{id}/secret reads them.",
          required: [
            "id",
            ...ENDPOINT_FIELDS.filter((f) => f !== "secret"),
            "disabled_reason",
            "created_at",
            "updated_at",
            "previous_secret_until",
            "last_success_at",
          ],
          additionalProperties: false,
          properties: {
            id: { type: "string" },
            ...endpointFields,
            disabled_reason: {
              type: ["string", "null"],
              enum: [null, "manual", "gone", "failing"],
              description: "Why it is disabled: manual (a PATCH), gone (it answered 410), " +
                "failing (every attempt failed for the failing window); null when enabled.",
            },
            created_at: { type: "string", format: "date-time" },
            updated_at: { type: "string", format: "date-time" },
            previous_secret: {
              type: ["string", "null"],
              description: "The secret the last rotation replaced; null before any.",
            },
            previous_secret_until: {
              type: ["string", "null"],
              format: "date-time",
              description: "Until when deliveries are signed under previous_secret too.",
            },
            last_success_at: {
              type: ["string", "null"],
              format: "date-time",
              description: "The latest delivery to it an owner recorded (at most once per " +
                "endpointHealthWriteMs per owner); null before the first. The failing window " +
                "starts at the latest of created_at, updated_at and this.",
            },
          },
        },
        EndpointSecret: {
          type: "object",
          required: ["secret", "previous_secret", "previous_secret_until"],
          additionalProperties: false,
          properties: {
            secret: { type: "string", description: "whsec_ and base64" },
            previous_secret: {
              type: ["string", "null"],
              description: "The secret the last rotation replaced, while deliveries are " +
                "still signed under it too; null before any rotation.",
            },
            previous_secret_until: {
              type: ["string", "null"],
              format: "date-time",
              description: "Until when deliveries are signed under previous_secret too.",
            },
          },
        },
        EndpointRotate: {
          type: "object",
          additionalProperties: false,
          properties: {
            [ROTATE_FIELDS[0]]: {
              ...(jobFields.secret as JsonObject),
              description: "The new secret, whsec_<base64 of 24-64 bytes>; absent: generated.",
            },
          },
        },
        EndpointRecover: {
          type: "object",
          required: [...RECOVER_FIELDS],
          additionalProperties: false,
          properties: {
            [RECOVER_FIELDS[0]]: {
              oneOf: [
                { type: "string", format: "date-time" },
                { type: "integer", minimum: 0, description: "Epoch milliseconds." },
              ],
              description: "Events submitted at or after this time (ISO 8601, or epoch ms).",
            },
          },
        },
        EndpointRecovered: {
          type: "object",
          required: ["recovered", "failed"],
          additionalProperties: false,
          properties: {
            recovered: { type: "integer", minimum: 0 },
            failed: { type: "integer", minimum: 0 },
          },
        },
        EndpointPage: {
          type: "object",
          required: ["items"],
          additionalProperties: false,
          properties: {
            items: { type: "array", items: ref("Endpoint") },
            nextCursor: { type: "string", description: "Absent on the last page." },
          },
        },
        SubmitEvent: {
          type: "object",
          required: ["type", "payload"],
          additionalProperties: false,
          properties: {
            type: {
              type: "string",
              minLength: 1,
              maxLength: ENDPOINT_LIMITS.eventTypeCharsMax,
              pattern: "^[\\x21-\\x7e]+$",
              description: 'The event type endpoints subscribe to, e.g. "invoice.paid".',
            },
            payload: {
              description: "Any JSON: the body of every delivery, sent compact (at most " +
                `${limits.payloadBytesMax} bytes as JSON text; 413 past it).`,
            },
          },
        },
        EventAccepted: {
          type: "object",
          required: ["id", "type", "jobs", "existing"],
          additionalProperties: false,
          properties: {
            id: { type: "string", description: "The event's id, every delivery's webhook-id." },
            type: { type: "string" },
            jobs: { type: "integer", minimum: 0, description: "Endpoints it fanned out to." },
            existing: {
              type: "boolean",
              description: "True when an Idempotency-Key matched an earlier event.",
            },
          },
        },
        Event: {
          type: "object",
          required: ["id", "type", "payload", "created_at", "jobs"],
          additionalProperties: false,
          properties: {
            id: { type: "string" },
            type: { type: "string" },
            payload: { type: "string", description: "The JSON text every job delivers." },
            created_at: { type: "string", format: "date-time" },
            jobs: {
              type: "array",
              items: {
                type: "object",
                required: ["endpoint_id", "job_id", "state", "attempts"],
                additionalProperties: false,
                properties: {
                  endpoint_id: { type: "string" },
                  job_id: {
                    type: "string",
                    description: "The job's id (GET /v1/jobs/{id}): the event's id, a dot, " +
                      "the endpoint's id.",
                  },
                  state: {
                    type: ["string", "null"],
                    enum: [null, "pending", "delivering", "delivered", "dead"],
                    description: "null once this node no longer holds the job (finished and " +
                      "compacted).",
                  },
                  attempts: { type: "integer", minimum: 0 },
                },
              },
            },
          },
        },
        EndpointDeleted: {
          type: "object",
          required: ["id", "deleted"],
          additionalProperties: false,
          properties: { id: { type: "string" }, deleted: { const: true } },
        },
        DeadLetterPage: {
          type: "object",
          required: ["items"],
          additionalProperties: false,
          properties: {
            items: { type: "array", items: ref("Job") },
            nextCursor: { type: "string", description: "Absent on the last page." },
          },
        },
        Member: {
          type: "object",
          required: ["nodeId", "address", "state", "incarnation", "voter"],
          additionalProperties: false,
          properties: {
            nodeId: { type: "string" },
            address: { type: "string" },
            state: { type: "string", enum: ["alive", "suspect", "dead", "left"] },
            incarnation: { type: "integer", minimum: 0 },
            voter: { type: "boolean" },
          },
        },
        Cluster: {
          type: "object",
          required: [
            "nodeId",
            "address",
            "voters",
            "quorum",
            "votersReachable",
            "role",
            "members",
            "jobs",
          ],
          additionalProperties: false,
          properties: {
            nodeId: { type: "string" },
            address: { type: "string" },
            voters: { type: "integer", minimum: 1 },
            quorum: { type: "integer", minimum: 1 },
            votersReachable: { type: "integer", minimum: 0 },
            role: {
              type: "string",
              description: "recovering, catching_up, ready, shutting_down or failed",
            },
            members: { type: "array", items: ref("Member") },
            jobs: {
              type: "object",
              required: ["pending", "delivering", "delivered", "dead"],
              additionalProperties: false,
              properties: {
                pending: { type: "integer", minimum: 0 },
                delivering: { type: "integer", minimum: 0 },
                delivered: { type: "integer", minimum: 0 },
                dead: { type: "integer", minimum: 0 },
              },
            },
          },
        },
        Readiness: {
          type: "object",
          required: ["ready", "checks"],
          additionalProperties: false,
          properties: {
            ready: { type: "boolean" },
            checks: {
              type: "array",
              items: {
                type: "object",
                required: ["name", "ok", "detail"],
                additionalProperties: false,
                properties: {
                  name: { type: "string", enum: ["recovered", "caught_up", "quorum", "wal"] },
                  ok: { type: "boolean" },
                  detail: { type: "string" },
                },
              },
            },
          },
        },
        SeriesPoint: {
          type: "object",
          required: [
            "atMs",
            "spanMs",
            "accepted",
            "rejected",
            "delivered",
            "failedAttempts",
            "p50Ms",
            "p99Ms",
          ],
          additionalProperties: false,
          properties: {
            atMs: { type: "number", description: "When the interval ended, epoch ms" },
            spanMs: {
              type: "number",
              exclusiveMinimum: 0,
              description: "The interval's length, ms (longer after a stalled event loop)",
            },
            accepted: {
              type: "integer",
              minimum: 0,
              description: "Submits the job store accepted in the interval (all clients)",
            },
            rejected: {
              type: "integer",
              minimum: 0,
              description: "Submits refused by the store, the API's validation or its " +
                "admission bound",
            },
            delivered: { type: "integer", minimum: 0 },
            failedAttempts: { type: "integer", minimum: 0 },
            p50Ms: {
              type: ["number", "null"],
              description: "Submit to delivery, ms, of the interval's deliveries; null: none",
            },
            p99Ms: { type: ["number", "null"] },
          },
        },
        Series: {
          type: "object",
          required: ["intervalMs", "pointsMax", "points"],
          additionalProperties: false,
          properties: {
            intervalMs: { type: "integer", minimum: 1 },
            pointsMax: { type: "integer", minimum: 0 },
            points: {
              type: "array",
              items: ref("SeriesPoint"),
              description: "Oldest first",
            },
          },
        },
        Receiver: {
          type: "object",
          required: [
            "origin",
            "breaker",
            "inflight",
            "jobsHeld",
            "attempts",
            "failures",
            "failureRate",
          ],
          additionalProperties: false,
          properties: {
            origin: { type: "string" },
            breaker: { type: "string", enum: ["closed", "half_open", "open"] },
            reopenAtMs: {
              type: "number",
              description: "When an open breaker lets its next trial through, epoch ms",
            },
            inflight: { type: "integer", minimum: 0 },
            jobsHeld: { type: "integer", minimum: 0 },
            attempts: {
              type: "integer",
              minimum: 0,
              description: "Attempts that ended within windowMs",
            },
            failures: { type: "integer", minimum: 0 },
            failureRate: { type: ["number", "null"], minimum: 0, maximum: 1 },
            lastAttemptAtMs: { type: "number" },
            lastFailure: ref("LastFailure"),
          },
        },
        LastFailure: {
          type: "object",
          required: ["atMs", "outcome", "detail"],
          additionalProperties: false,
          description: "The latest failed attempt: when, how, the status (when the receiver " +
            "answered) and the error or the first characters of its answer.",
          properties: {
            atMs: { type: "number" },
            outcome: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
          },
        },
        EndpointHealth: {
          type: "object",
          required: [
            "id",
            "url",
            "description",
            "eventTypes",
            "headerNames",
            "rateLimitPerS",
            "ordered",
            "disabled",
            "disabledReason",
            "createdAtMs",
            "updatedAtMs",
            "health",
          ],
          additionalProperties: false,
          properties: {
            id: { type: "string" },
            url: { type: "string" },
            description: { type: "string" },
            eventTypes: { type: "array", items: { type: "string" } },
            headerNames: {
              type: "array",
              items: { type: "string" },
              description: "Its headers' names; their values (often credentials) are not shown.",
            },
            rateLimitPerS: { type: "number", minimum: 0 },
            ordered: { type: "boolean" },
            disabled: { type: "boolean" },
            disabledReason: { type: ["string", "null"], enum: [null, "manual", "gone", "failing"] },
            createdAtMs: { type: "number" },
            updatedAtMs: { type: "number" },
            health: {
              type: "object",
              required: ["attempts", "failures"],
              additionalProperties: false,
              properties: {
                attempts: {
                  type: "integer",
                  minimum: 0,
                  description: "Attempts that started within windowMs, by any node",
                },
                failures: { type: "integer", minimum: 0 },
                lastSuccessAtMs: { type: "number" },
                lastFailure: ref("LastFailure"),
              },
            },
            backlog: {
              type: "integer",
              minimum: 0,
              description: "Ordered endpoints only: pending jobs this node holds in its queue",
            },
          },
        },
        EndpointHealthPage: {
          type: "object",
          required: ["windowMs", "items"],
          additionalProperties: false,
          properties: {
            windowMs: { type: "integer", minimum: 1 },
            items: { type: "array", items: ref("EndpointHealth") },
            nextCursor: { type: "string", description: "Absent on the last page." },
          },
        },
        Receivers: {
          type: "object",
          required: ["windowMs", "items"],
          additionalProperties: false,
          properties: {
            windowMs: { type: "integer", minimum: 1 },
            items: { type: "array", items: ref("Receiver") },
          },
        },
        Health: {
          type: "object",
          required: ["status"],
          additionalProperties: false,
          properties: { status: { type: "string", const: "ok" } },
        },
      },
    },
  };
}
