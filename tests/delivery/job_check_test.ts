import { assert, assertEquals } from "../assert.ts";
import fc from "fast-check";
import { checkJob, type JobLimits } from "../../src/delivery/job_check.ts";
import type { DeliveryJob } from "../../src/delivery/types.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const limits: JobLimits = { payloadBytesMax: 1_000, jobHeadersBytesMax: 100 };
const base: DeliveryJob = {
  id: "msg_1",
  url: "https://example.com/hook",
  payload: "{}",
  secrets: [SECRET],
};

function reason(extra: Partial<DeliveryJob>): string | undefined {
  const verdict = checkJob({ ...base, ...extra }, limits);
  return verdict.ok ? undefined : verdict.reason;
}

Deno.test("checkJob accepts an ordinary job with its own headers and rotated secrets", () => {
  assertEquals(
    reason({ headers: { "Content-Type": "text/plain", "x-tenant": "t é" }, secrets: [] }),
    undefined,
  );
  assertEquals(reason({ secrets: [SECRET, SECRET], timeoutMs: 250 }), undefined);
});

Deno.test("checkJob refuses URLs with credentials and non-http schemes", () => {
  assert(/credentials/.test(reason({ url: "https://user:pw@example.com/" })!));
  assert(/credentials/.test(reason({ url: "https://user@example.com/" })!));
  assert(/scheme/.test(reason({ url: "javascript:alert(1)" })!));
});

Deno.test("checkJob refuses headers fetch would reject or merge into hookd's own", () => {
  const cases: Array<Record<string, string>> = [
    { "bad name": "x" },
    { "": "x" },
    { "x-a": "a\r\nx-b: injected" },
    { "x-a": "nul\u0000" },
    { "x-a": "€ is not Latin-1" },
    { "Webhook-Signature": "v1,forged" },
    { "webhook-id": "other" },
    { Host: "internal.example" },
    { "Transfer-Encoding": "chunked" },
    { "x-a": "1", "X-A": "2" },
    { "x-big": "y".repeat(200) },
  ];
  for (const headers of cases) {
    assert(reason({ headers }) !== undefined, JSON.stringify(headers));
  }
});

Deno.test("checkJob refuses ids that are empty, too long or contain the signature separator", () => {
  for (const id of ["", "a.b", "has space", "x".repeat(257), "é"]) {
    assert(reason({ id }) !== undefined, id);
  }
});

Deno.test("checkJob refuses secrets that are not whsec_ base64 of 24 to 64 bytes", () => {
  assert(/not whsec_/.test(reason({ secrets: ["whsec_!!!"] })!));
  assert(/3 bytes/.test(reason({ secrets: ["whsec_AQID"] })!));
  assert(/at most/.test(reason({ secrets: Array(9).fill(SECRET) })!));
});

Deno.test("checkJob refuses oversized payloads and non-positive timeouts", () => {
  assert(/larger than 1000 bytes/.test(reason({ payload: "é".repeat(501) })!));
  assertEquals(reason({ payload: "é".repeat(500) }), undefined);
  for (const timeoutMs of [0, -1, NaN, Infinity]) {
    assert(/timeoutMs/.test(reason({ timeoutMs })!), String(timeoutMs));
  }
});

Deno.test("checkJob never throws on arbitrary jobs", () => {
  fc.assert(
    fc.property(
      fc.string(),
      fc.string(),
      fc.dictionary(fc.string(), fc.string({ unit: "binary" })),
      fc.array(fc.string(), { maxLength: 3 }),
      (id, url, headers, secrets) => {
        checkJob({ id, url, payload: "{}", headers, secrets }, limits);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("checkJob refuses special IP literals and localhost only when private targets are refused", () => {
  const limits = { payloadBytesMax: 1024, jobHeadersBytesMax: 1024 };
  const job = (url: string) => ({ id: "j1", url, payload: "{}", secrets: [] });
  for (
    const url of [
      "http://127.0.0.1:8080/h",
      "http://169.254.169.254/latest/meta-data",
      "http://10.1.2.3/",
      "http://[::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://0x7f000001/",
      "http://2130706433/",
      "http://localhost:9/",
      "http://api.localhost/",
    ]
  ) {
    const refused = checkJob(job(url), { ...limits, allowPrivateTargets: false });
    assert(!refused.ok && refused.reason.includes("--allow-private-targets"), url);
    assert(checkJob(job(url), { ...limits, allowPrivateTargets: true }).ok, url);
    assert(checkJob(job(url), limits).ok, url);
  }
  for (const url of ["https://example.com/h", "http://93.184.216.34/", "https://[2606:4700::1]/"]) {
    assert(checkJob(job(url), { ...limits, allowPrivateTargets: false }).ok, url);
  }
});
