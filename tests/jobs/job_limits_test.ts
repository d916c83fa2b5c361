/**
 * Issue 17 §1: the API accepted jobs the cluster could not store. One set of job limits
 * (config.ts JOB_LIMITS) is now enforced by the API and the UDP client path and asserted by
 * the encoders; these tests hold each of them to it, and the property test holds the whole
 * chain: any request the API accepts encodes, decodes, replicates and replays.
 */

import fc from "fast-check";
import { assert, assertEquals, assertThrows } from "../assert.ts";
import { deliveryDefaults } from "../../src/config/delivery.ts";
import { JOB_LIMITS } from "../../src/config/job_limits.ts";
import { walDefaults } from "../../src/config/wal.ts";
import { AssertionError } from "../../src/lib/assert.ts";
import {
  decodeRecord,
  decodeWalBatch,
  encodeRecord,
  encodeWalBatch,
} from "../../src/jobs/job_codec.ts";
import { decodeMessage, encodeMessage } from "../../src/jobs/job_messages.ts";
import type { JobSpec } from "../../src/jobs/job_model.ts";
import type { SubmitRequest } from "../../src/jobs/service.ts";
import { checkJobLimits, utf8Bytes } from "../../src/delivery/job_limits.ts";
import { call, errorOf, makeApi, post } from "../api/harness.ts";
import { ReviewCluster, WALL } from "./review_harness.ts";

const E_ACUTE = "\u00e9"; // 2 bytes of UTF-8, 1 UTF-16 unit

const SPEC: JobSpec = {
  id: "job_1",
  url: "https://h.test/",
  payload: "{}",
  headers: {},
  secrets: [],
  timeoutMs: 0,
  maxAttempts: 3,
  submittedAtMs: WALL,
  bodyHash: "",
};

function manyHeaders(n: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, "v"]));
}

Deno.test("the API refuses a URL of more than urlBytesMax UTF-8 bytes with 400 naming url and the limit in bytes", async () => {
  const api = makeApi();
  const url = "https://host/?q=" + E_ACUTE.repeat(5000);
  assert(url.length <= JOB_LIMITS.urlBytesMax, "short enough in characters");
  const answer = await call(api, post("/v1/jobs", { url, payload: 1 }));
  assertEquals(answer.status, 400, answer.text);
  const error = errorOf(answer);
  assertEquals(error.field, "url");
  assert(error.message.includes(`${JOB_LIMITS.urlBytesMax} bytes`), error.message);
  assertEquals(api.service.submitted.length, 0);

  // The same URL at exactly the limit is a job.
  const fits = "https://host/?q=" + E_ACUTE.repeat((JOB_LIMITS.urlBytesMax - 16) / 2);
  assertEquals(utf8Bytes(fits), JOB_LIMITS.urlBytesMax);
  assertEquals((await call(api, post("/v1/jobs", { url: fits, payload: 1 }))).status, 202);
});

Deno.test("the API refuses more than headersMax headers with 400 naming headers and the limit", async () => {
  const api = makeApi();
  const answer = await call(
    api,
    post("/v1/jobs", { url: "https://h.test/", payload: 1, headers: manyHeaders(300) }),
  );
  assertEquals(answer.status, 400, answer.text);
  const error = errorOf(answer);
  assertEquals(error.field, "headers");
  assert(error.message.includes(`${JOB_LIMITS.headersMax} headers`), error.message);
  const at = await call(
    api,
    post("/v1/jobs", {
      url: "https://h.test/",
      payload: 1,
      headers: manyHeaders(JOB_LIMITS.headersMax),
    }),
  );
  assertEquals(at.status, 202, at.text);
});

Deno.test("checkJobLimits names the field past each limit, counting UTF-8 bytes", () => {
  const ok: SubmitRequest = { url: "https://h.test/", payload: "{}" };
  assertEquals(checkJobLimits(ok), undefined);
  const cases: Array<[SubmitRequest, string]> = [
    [{ ...ok, url: "https://h.test/" + "\u20ac".repeat(3000) }, "url"],
    [{ ...ok, headers: manyHeaders(JOB_LIMITS.headersMax + 1) }, "headers"],
    [{ ...ok, headers: { "x-a": E_ACUTE.repeat(JOB_LIMITS.headerBytesMax / 2 + 1) } }, "headers"],
    [{ ...ok, secret: "whsec_" + "a".repeat(JOB_LIMITS.secretBytesMax) }, "secret"],
    [
      { ...ok, idempotencyKey: "k".repeat(JOB_LIMITS.idempotencyKeyBytesMax + 1) },
      "idempotencyKey",
    ],
  ];
  for (const [request, field] of cases) assertEquals(checkJobLimits(request)?.field, field);
});

Deno.test("encoders assert the job limits instead of writing bytes every decoder refuses", () => {
  const badSpecs: JobSpec[] = [
    { ...SPEC, url: "https://host/?q=" + E_ACUTE.repeat(5000) },
    { ...SPEC, headers: manyHeaders(300) },
    { ...SPEC, headers: { "x-a": E_ACUTE.repeat(JOB_LIMITS.headerBytesMax / 2 + 1) } },
    { ...SPEC, idempotencyKey: "k".repeat(JOB_LIMITS.idempotencyKeyBytesMax + 1) },
    { ...SPEC, secrets: ["s".repeat(JOB_LIMITS.secretBytesMax + 1)] },
    { ...SPEC, id: "i".repeat(JOB_LIMITS.idBytesMax + 1) },
  ];
  for (const spec of badSpecs) {
    assertThrows(
      () => encodeRecord({ type: "submit", stamp: { origin: "10.0.0.1:7000", seq: 1 }, spec }),
      AssertionError,
    );
  }
  assertThrows(
    () =>
      encodeMessage({
        kind: "client-submit",
        requestId: 1,
        submits: [{ request: { url: "https://h.test/", payload: "", headers: manyHeaders(300) } }],
      }),
    AssertionError,
  );
});

// ---------------------------------------------------------------------------------------------
// The property: any request the API accepts encodes, decodes, replicates and replays.
// ---------------------------------------------------------------------------------------------

/** A string of about `bytes` UTF-8 bytes made of `char` (never over by more than one char). */
function ofBytes(char: string, bytes: number): string {
  const each = utf8Bytes(char);
  return char.repeat(Math.max(0, Math.floor(bytes / each)));
}

/** Sizes at and around `limit` (and some far below it). */
function around(limit: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.integer({ min: Math.max(0, limit - 8), max: limit + 8 }),
    fc.integer({ min: 0, max: Math.min(limit, 64) }),
  );
}

const charArb = fc.constantFrom("a", E_ACUTE, "\u20ac", "\u{1f600}");
/** Latin-1 only: what a header value may hold (job_check.ts). */
const latinArb = fc.constantFrom("a", E_ACUTE, "\u00ff", " ");

const URL_PREFIX = "https://h.test/?q=";

const urlArb = fc.tuple(charArb, around(JOB_LIMITS.urlBytesMax - URL_PREFIX.length)).map((
  [c, n],
) => URL_PREFIX + ofBytes(c, n));

/** JSON text overhead of a string payload: its two quotes. */
const payloadArb = fc.oneof(
  fc.tuple(charArb, around(deliveryDefaults.payloadBytesMax - 2)).map(([c, n]) => ofBytes(c, n)),
  fc.string({ maxLength: 50, unit: "binary" }),
);

const headersArb: fc.Arbitrary<Record<string, string>> = fc.oneof(
  // Many small headers, around the count limit.
  around(JOB_LIMITS.headersMax).map((n) => manyHeaders(n)),
  // One large value, around the byte limits (names and values).
  fc.tuple(latinArb, around(deliveryDefaults.jobHeadersBytesMax - 3)).map(([c, n]) => ({
    "x-a": c.repeat(n),
  })),
  fc.dictionary(fc.constantFrom("x-a", "x-b", "X-C"), fc.string({ maxLength: 30 }), {
    noNullPrototype: true,
  }),
);

const secretArb = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: 20, max: 70 }).map((n) => "whsec_" + btoa("k".repeat(n))),
  fc.integer({ min: 0, max: JOB_LIMITS.secretBytesMax + 10 }).map((n) => "whsec_" + "A".repeat(n)),
);

const keyArb = fc.oneof(
  fc.constant(undefined),
  around(256).map((n) => "k".repeat(Math.max(1, n))),
  fc.string({ minLength: 1, maxLength: 20 }),
);

Deno.test("property: a request the API accepts encodes, decodes, replicates to every peer and replays", async () => {
  const cluster = new ReviewCluster({}, undefined, walDefaults.recordBytesMax);
  cluster.startAll();
  let accepted = 0;
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      urlArb,
      payloadArb,
      headersArb,
      secretArb,
      keyArb,
      async (url, payload, headers, secret, key) => {
        const api = makeApi();
        // One cluster serves every run: a key must not meet an earlier run's job.
        run++;
        if (key !== undefined) key = (`${run}.` + key).slice(0, Math.max(key.length, 8));
        const body = {
          url,
          payload,
          headers,
          ...(secret !== undefined ? { secret } : {}),
        };
        let request: Request;
        try {
          request = post("/v1/jobs", body, key !== undefined ? { "idempotency-key": key } : {});
        } catch {
          return; // a header value the Request constructor refuses never reaches the API
        }
        const answer = await call(api, request);
        if (answer.status !== 202) {
          // Refused: for the client to fix, never "retry later".
          assert(
            answer.status === 400 || answer.status === 413,
            `${answer.status} ${answer.text}`,
          );
          assert(errorOf(answer).field !== undefined, answer.text);
          return;
        }
        accepted++;
        const submitted = api.service.submitted[0]!;
        // The records a node makes of it fit one WAL append and decode to themselves.
        const spec: JobSpec = {
          ...SPEC,
          id: "f".repeat(64),
          url: submitted.url,
          payload: submitted.payload,
          headers: submitted.headers ?? {},
          secrets: submitted.secret !== undefined ? [submitted.secret] : [],
          ...(submitted.idempotencyKey !== undefined
            ? { idempotencyKey: submitted.idempotencyKey }
            : {}),
          bodyHash: "a".repeat(64),
        };
        const stamp = { origin: "10.0.0.1:7000", seq: 1 };
        for (
          const record of [
            { type: "submit", stamp, spec },
            { type: "commit", stamp, jobId: spec.id, bodyHash: spec.bodyHash, spec },
          ] as const
        ) {
          const bytes = encodeRecord(record);
          assert(decodeRecord(bytes).ok, "the record decodes");
          const batch = encodeWalBatch([bytes]);
          assert(batch.length <= walDefaults.recordBytesMax, `${batch.length} bytes`);
          assert(decodeWalBatch(batch).ok, "the WAL batch decodes");
        }
        // A real cluster takes it: replicated to every peer, acknowledged, and replayed.
        const requestId = cluster.submit(0, submitted);
        cluster.settle();
        const outcome = cluster.answers.get(requestId);
        assert(outcome?.ok === true, JSON.stringify(outcome));
        const jobId = outcome.id;
        assertEquals(cluster.durableHolders(jobId).length, 5, "on every disk");
        const restarted = cluster.restart(1);
        assert(restarted.table.get(jobId)?.spec !== undefined, "replayed after a restart");
        cluster.settle();
      },
    ),
    { numRuns: 60 },
  );
  assert(accepted > 5, `the generators reach accepted requests too (${accepted})`);
});

Deno.test("a replication message carrying a job at every limit decodes", () => {
  const spec: JobSpec = {
    ...SPEC,
    url: URL_PREFIX + ofBytes(E_ACUTE, JOB_LIMITS.urlBytesMax - URL_PREFIX.length),
    headers: manyHeaders(JOB_LIMITS.headersMax),
    idempotencyKey: "k".repeat(JOB_LIMITS.idempotencyKeyBytesMax),
  };
  const bytes = encodeRecord({ type: "submit", stamp: { origin: "10.0.0.1:7000", seq: 1 }, spec });
  const decoded = decodeMessage(
    encodeMessage({ kind: "repl", from: "10.0.0.1:7000", records: [bytes] }),
  );
  assert(decoded.ok, decoded.ok ? "" : decoded.reason);
});

Deno.test("a submit too large for one WAL record is refused for good (invalid), not left to time out", () => {
  const cluster = new ReviewCluster({}, undefined, 8192);
  cluster.startAll();
  const requestId = cluster.submit(0, { url: "https://h.test/", payload: "x".repeat(9000) });
  const outcome = cluster.answers.get(requestId);
  assert(outcome !== undefined && !outcome.ok, JSON.stringify(outcome));
  assertEquals(outcome.code, "invalid");
  assert(outcome.message.includes("wal.recordBytesMax"), outcome.message);
  assertEquals(cluster.inflight.filter((m) => m.kind === "repl").length, 0, "nothing sent");
  assertEquals(cluster.pending[0]!.length, 0, "nothing written");
  // A job that fits still goes through.
  const fits = cluster.submit(0, { url: "https://h.test/", payload: "x".repeat(4000) });
  cluster.settle();
  assertEquals(cluster.answers.get(fits)?.ok, true);
});
