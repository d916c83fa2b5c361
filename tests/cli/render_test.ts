import { assert, assertEquals } from "../assert.ts";
import { describeAnswer } from "../../src/cli/api_client.ts";
import type { JobJson } from "../../src/cli/job_follow.ts";
import {
  describeAttempt,
  describeFinal,
  describeProgress,
  oneLine,
  renderJob,
  renderTable,
} from "../../src/cli/render.ts";

/** C0 controls (ESC among them), DEL and C1 controls (CSI among them). */
// deno-lint-ignore no-control-regex
const TERMINAL_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

const HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u009b31m";

Deno.test("what a node says about a job reaches the terminal without control characters", () => {
  // A node is trusted for its own fields, but the URL and the attempt details come from
  // submitters and receivers, and an older node may have stored a URL with controls in it.
  const job: JobJson = {
    id: `job_1${HOSTILE}`,
    state: `dead${HOSTILE}`,
    url: `https://receiver.example/${HOSTILE}`,
    owner: `n1${HOSTILE}`,
    submittedAtMs: 1_700_000_000_000,
    finishedAtMs: 1_700_000_001_000,
    attemptsMade: 1,
    maxAttempts: 1,
    deadReason: `gave up${HOSTILE}`,
    idempotencyKey: `k${HOSTILE}`,
    attempts: [{
      attempt: 1,
      retry: 0,
      startedAtMs: 1_700_000_000_100,
      latencyMs: 12,
      outcome: `http_error${HOSTILE}`,
      status: 500,
      detail: `body: ${HOSTILE}`,
      node: `127.0.0.1:7101${HOSTILE}`,
    }],
  };
  const texts = [
    renderJob(job, 1_700_000_002_000),
    describeFinal(job),
    describeFinal({ ...job, state: "delivered" }),
    describeProgress(job, 1_700_000_002_000),
    describeAttempt(job.attempts[0]!),
    renderTable(["A", "B"], [[HOSTILE, `x${HOSTILE}`]]),
    oneLine(`a${HOSTILE}b`, 100),
    describeAnswer({
      kind: "answered",
      node: "http://n1",
      status: 400,
      headers: new Headers(),
      text: "",
      json: { error: { code: `invalid${HOSTILE}`, message: HOSTILE, field: HOSTILE } },
    }),
    describeAnswer({
      kind: "answered",
      node: "http://n1",
      status: 502,
      headers: new Headers(),
      text: `<html>${HOSTILE}</html>`,
      json: undefined,
    }),
  ];
  for (const text of texts) {
    assert(
      !TERMINAL_CONTROL.test(text),
      `a control character reached the terminal: ${JSON.stringify(text)}`,
    );
  }
  // What is left says where the controls were, and the table keeps its lines.
  assert(renderJob(job, 1_700_000_002_000).includes("https://receiver.example/"));
  assertEquals(renderTable(["A"], [["x\ny"]]).split("\n").length, 2);
});
