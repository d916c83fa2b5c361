/**
 * One validator for every way a job comes in (issue 18): `validateSubmit` on its own, and one
 * table of requests run through the HTTP API handler and through the UDP client path (a
 * replication core's `client-submit`), which must give the same verdict with the same message.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { apiDefaults, deliveryDefaults, jobsDefaults } from "../../src/config.ts";
import { type SubmitLimits, validateSubmit } from "../../src/delivery/submit_validation.ts";
import type { SubmitRequest } from "../../src/jobs/service.ts";
import { ReplicationCore } from "../../src/jobs/replication_core.ts";
import {
  type ClientOutcome,
  decodeMessage,
  encodeMessage,
  JOBS_CHANNEL,
} from "../../src/jobs/job_messages.ts";
import { JobStore } from "../../src/jobs/job_store.ts";
import { SimDisk } from "../../src/sim/disk.ts";
import type { DeliveredMessage } from "../../src/transport/types.ts";
import { call, errorOf, makeApi, post, SECRET } from "../api/harness.ts";

const LIMITS: SubmitLimits = {
  payloadBytesMax: deliveryDefaults.payloadBytesMax,
  jobHeadersBytesMax: deliveryDefaults.jobHeadersBytesMax,
  maxAttemptsMax: jobsDefaults.maxAttemptsMax,
  attemptTimeoutMaxMs: deliveryDefaults.attemptTimeoutMaxMs,
  idempotencyKeyCharsMax: apiDefaults.idempotencyKeyCharsMax,
};

const URL = "https://example.com/hook";
const OK: SubmitRequest = { url: URL, payload: '{"a":1}' };

/** One request per rule, and valid ones; `field` is the field refused, undefined: accepted. */
const TABLE: ReadonlyArray<readonly [string, SubmitRequest, string | undefined]> = [
  ["minimal", OK, undefined],
  ["everything", {
    ...OK,
    headers: { "X-Tenant": "t1" },
    secret: SECRET,
    maxAttempts: jobsDefaults.maxAttemptsMax,
    timeoutMs: deliveryDefaults.attemptTimeoutMaxMs,
  }, undefined],
  ["url not a URL", { ...OK, url: "not a url" }, "url"],
  ["url ftp", { ...OK, url: "ftp://example.com/x" }, "url"],
  ["url credentials", { ...OK, url: "https://user:pw@example.com/" }, "url"],
  ["url with a space", { ...OK, url: "https://example.com/a b" }, "url"],
  [
    "payload too large",
    { ...OK, payload: `"${"a".repeat(deliveryDefaults.payloadBytesMax)}"` },
    "payload",
  ],
  ["header bad name", { ...OK, headers: { "X A": "1" } }, "headers"],
  ["header reserved", { ...OK, headers: { "webhook-id": "x" } }, "headers"],
  ["header twice", { ...OK, headers: { "X-A": "1", "x-a": "2" } }, "headers"],
  ["header CRLF value", { ...OK, headers: { "X-A": "a\r\nX-B: b" } }, "headers"],
  ["headers too large", { ...OK, headers: { "X-A": "a".repeat(9000) } }, "headers"],
  ["secret no prefix", { ...OK, secret: btoa("0123456789abcdef01234567") }, "secret"],
  ["secret not base64", { ...OK, secret: "whsec_!!!" }, "secret"],
  ["secret too short", { ...OK, secret: "whsec_" + btoa("short") }, "secret"],
  [
    "maxAttempts over the max",
    { ...OK, maxAttempts: jobsDefaults.maxAttemptsMax + 1 },
    "maxAttempts",
  ],
  [
    "timeoutMs over the max",
    { ...OK, timeoutMs: deliveryDefaults.attemptTimeoutMaxMs + 1 },
    "timeoutMs",
  ],
];

/** The API's verdict: undefined (202) or the refusal's field and message. */
async function viaApi(
  request: SubmitRequest,
): Promise<{ field?: string; message: string } | undefined> {
  const { payload, ...rest } = request;
  const answer = await call(makeApi(), post("/v1/jobs", { ...rest, payload: JSON.parse(payload) }));
  if (answer.status === 202) return undefined;
  assert(answer.status === 400 || answer.status === 413, `status ${answer.status}`);
  const error = errorOf(answer);
  return { ...(error.field !== undefined ? { field: error.field } : {}), message: error.message };
}

/** The UDP path's outcome: a replication core answering one `client-submit`. */
function viaUdp(request: SubmitRequest): ClientOutcome | undefined {
  const core = new ReplicationCore({
    self: "10.0.0.1:7000",
    voters: ["10.0.0.1:7000"],
    rng: new Sfc32(1),
    metrics: new MetricsRegistry(),
    walRecordBytesMax: 1 << 26,
    payloadBytesMax: deliveryDefaults.payloadBytesMax,
  });
  core.receive(
    0,
    0,
    "10.0.0.9:9000",
    encodeMessage({ kind: "client-submit", requestId: 1, submits: [{ request }] }),
  );
  for (const output of core.takeOutputs()) {
    if (output.type !== "send") continue;
    const decoded = decodeMessage(output.bytes);
    if (decoded.ok && decoded.value.kind === "client-result") return decoded.value.outcomes[0];
  }
  return undefined;
}

Deno.test("the API and the UDP client path refuse the same requests with the same message", async () => {
  for (const [name, request, field] of TABLE) {
    const api = await viaApi(request);
    const udp = viaUdp(request);
    if (field === undefined) {
      assertEquals(api, undefined, name);
      assert(
        udp === undefined || udp.ok || udp.code !== "invalid",
        `${name}: ${JSON.stringify(udp)}`,
      );
      continue;
    }
    assertEquals(api?.field, field, name);
    assert(udp !== undefined && !udp.ok, `${name}: the UDP path accepted it`);
    assertEquals(udp.code, "invalid", name);
    assertEquals(udp.message, api!.message, name);
  }
});

Deno.test("validateSubmit returns the request when it meets every rule, else the first field at fault", () => {
  for (const [name, request, field] of TABLE) {
    const verdict = validateSubmit(request, LIMITS);
    if (field === undefined) assertEquals(verdict, { ok: true, value: request }, name);
    else assertEquals(verdict.ok ? undefined : verdict.reason.field, field, name);
  }
  const key = (idempotencyKey: string) => validateSubmit({ ...OK, idempotencyKey }, LIMITS);
  assert(key("order-1").ok);
  for (const bad of ["", "tab\there", "é", "k".repeat(apiDefaults.idempotencyKeyCharsMax + 1)]) {
    const verdict = key(bad);
    assertEquals(verdict.ok ? undefined : verdict.reason.field, "idempotencyKey", bad);
  }
  // The header count is only bounded by what the codec carries.
  const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`x-${i}`, ""]));
  const verdict = validateSubmit({ ...OK, headers: many }, { ...LIMITS, jobHeadersBytesMax: 1e6 });
  assertEquals(
    verdict.ok ? undefined : verdict.reason.message,
    "a job carries at most 256 headers, got 300",
  );
  // Private targets: refused by their literal only when the node says so.
  const local = { ...OK, url: "http://127.0.0.1:8080/" };
  assert(validateSubmit(local, LIMITS).ok);
  const refused = validateSubmit(local, { ...LIMITS, allowPrivateTargets: false });
  assertEquals(refused.ok ? undefined : refused.reason.field, "url");
  // Never throws on values outside the type (the UDP decoder and the engine pass what they got).
  const hostile = validateSubmit({ ...OK, maxAttempts: NaN, timeoutMs: Infinity }, LIMITS);
  assertEquals(hostile.ok ? undefined : hostile.reason.field, "maxAttempts");
});

Deno.test("a store checks a UDP client's idempotency key against the node's api.idempotencyKeyCharsMax, as its API does", async () => {
  const charsMax = 16;
  // Longer than this node allows, shorter than the default: refused only if the store was
  // given the node's bound.
  const key = "k".repeat(charsMax + 1);
  assert(key.length < apiDefaults.idempotencyKeyCharsMax);
  const request: SubmitRequest = { ...OK, idempotencyKey: key };

  const api = makeApi({ config: { idempotencyKeyCharsMax: charsMax } });
  const { payload, ...rest } = request;
  const answer = await call(
    api,
    post("/v1/jobs", { ...rest, payload: JSON.parse(payload) }, { "idempotency-key": key }),
  );
  assertEquals(answer.status, 400);
  assertEquals(errorOf(answer).field, "Idempotency-Key");

  const self = "10.0.0.1:7000";
  const client = "10.0.0.9:9000";
  let receive: ((message: DeliveredMessage) => void) | undefined;
  const replies: Uint8Array[] = [];
  const store = await JobStore.open({
    self,
    nodeId: "n1",
    voters: [self],
    dataDir: "/data",
    fs: new SimDisk().mount(),
    api: { idempotencyKeyCharsMax: charsMax },
    transport: {
      send: (to, _channel, bytes) => {
        if (to === client) replies.push(bytes);
        return { accepted: true };
      },
      onMessage: (handler) => {
        receive = handler;
        return () => {};
      },
      onEvent: () => () => {},
    },
    members: () => [],
    rng: new Sfc32(1),
    metrics: new MetricsRegistry(),
    deliver: false,
  });
  try {
    assert(receive !== undefined, "the store listens to the transport");
    receive({
      fromAddress: client,
      fromNodeId: "client",
      channel: JOBS_CHANNEL,
      reliable: true,
      bytes: encodeMessage({ kind: "client-submit", requestId: 1, submits: [{ request }] }),
    });
    // The store carries the core's outputs out in a microtask; the refusal needs no WAL append.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const outcomes = replies.flatMap((bytes) => {
      const decoded = decodeMessage(bytes);
      return decoded.ok && decoded.value.kind === "client-result" ? decoded.value.outcomes : [];
    });
    assertEquals(outcomes.length, 1, JSON.stringify(outcomes));
    const outcome = outcomes[0]!;
    assert(!outcome.ok, "the UDP path accepted a key the node's API refuses");
    assertEquals(outcome.code, "invalid");
    assertEquals(
      outcome.message,
      `idempotencyKey must be 1-${charsMax} printable ASCII characters`,
    );
  } finally {
    await store.close();
  }
});

Deno.test("a URL with an unpaired surrogate is refused, as no codec could keep it; a pair is text", async () => {
  // JSON's "\ud800" parses to a string UTF-8 has no form for: kept, every replica would have
  // held U+FFFD in its place while the node that took it held the surrogate.
  for (
    const url of [
      "https://a.example/\ud800",
      "https://a.example/\udc00x",
      "https://a.example/\udc00\ud800",
    ]
  ) {
    const verdict = validateSubmit({ ...OK, url }, LIMITS);
    assertEquals(verdict.ok ? undefined : verdict.reason.field, "url", JSON.stringify(url));
    const api = await viaApi({ ...OK, url });
    assertEquals(api?.field, "url");
    assert(api.message.includes("unpaired UTF-16 surrogate"), api.message);
  }
  assert(validateSubmit({ ...OK, url: "https://a.example/\u{1F600}" }, LIMITS).ok);
});

Deno.test("what validateSubmit accepts, the job codec carries unchanged (property)", () => {
  // Any UTF-16 code units after a valid prefix, lone surrogates included: whatever is
  // accepted must come back from the wire bytes as the same string.
  fc.assert(
    fc.property(
      fc.string({ unit: "binary", maxLength: 12 }),
      fc.string({ unit: "binary", maxLength: 12 }),
      (path, key) => {
        const request: SubmitRequest = { ...OK, url: `https://a.example/${path}`, payload: "1" };
        const keyed = /^[\x20-\x7e]+$/.test(key) ? { ...request, idempotencyKey: key } : request;
        const verdict = validateSubmit(keyed, LIMITS);
        if (!verdict.ok) return;
        const decoded = decodeMessage(
          encodeMessage({ kind: "client-submit", requestId: 1, submits: [{ request: keyed }] }),
        );
        assert(decoded.ok && decoded.value.kind === "client-submit");
        assertEquals(decoded.value.submits[0]!.request, keyed);
      },
    ),
    { numRuns: 2000 },
  );
});
