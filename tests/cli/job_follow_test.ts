import { assert, assertEquals } from "../assert.ts";
import { decodeJobJson, followJob, type JobJson, type JobRead } from "../../src/cli/job_follow.ts";
import type { Runtime } from "../../src/lib/runtime.ts";

/** Virtual time: a timer fires at once (on a microtask) and moves the clock to its deadline. */
function steppingRuntime(): Runtime & { readonly pauses: number[] } {
  let nowMs = 0;
  const pauses: number[] = [];
  return {
    pauses,
    nowMs: () => nowMs,
    wallMs: () => 1_800_000_000_000 + nowMs,
    setTimer(delayMs, fn) {
      pauses.push(delayMs);
      nowMs += delayMs;
      queueMicrotask(fn);
      return () => {};
    },
    defer: (fn) => queueMicrotask(fn),
  };
}

function job(state: string, attemptsMade: number): JobJson {
  return decodeJobJson({
    id: "job_1",
    state,
    url: "http://x.test/",
    owner: "n1",
    submittedAtMs: 1,
    attemptsMade,
    maxAttempts: 3,
    attempts: Array.from({ length: attemptsMade }, (_, i) => ({
      attempt: i + 1,
      startedAtMs: 2,
      latencyMs: 3,
      outcome: "http_error",
      status: 500,
      detail: "no",
      node: "n1",
    })),
  })!;
}

Deno.test("followJob reads until the job is finished, pausing twice as long each time up to the bound", async () => {
  const runtime = steppingRuntime();
  const states: JobRead[] = [
    { ok: false, reason: "404 not yet" },
    { ok: true, job: job("pending", 0) },
    { ok: true, job: job("pending", 1) },
    { ok: true, job: job("pending", 1) },
    { ok: true, job: job("pending", 2) },
    { ok: true, job: job("dead", 3) },
  ];
  const changes: number[] = [];
  const outcome = await followJob({
    read: () => Promise.resolve(states.shift()!),
    runtime,
    timeoutMs: 60_000,
    pollFirstMs: 100,
    pollMaxMs: 500,
    onChange: (j) => changes.push(j.attemptsMade),
  });
  assertEquals(outcome.kind, "finished");
  assert(outcome.kind === "finished" && outcome.job.state === "dead");
  assertEquals(runtime.pauses, [100, 200, 400, 500, 500]);
  // The unchanged read is not reported again.
  assertEquals(changes, [0, 1, 2, 3]);
});

Deno.test("followJob gives up at its deadline with the last state and the last failed read", async () => {
  const runtime = steppingRuntime();
  let reads = 0;
  const outcome = await followJob({
    read: () => {
      reads++;
      return Promise.resolve(
        reads === 1
          ? { ok: true, job: job("pending", 1) }
          : { ok: false, reason: "connection refused" },
      );
    },
    runtime,
    timeoutMs: 1000,
    pollFirstMs: 100,
    pollMaxMs: 300,
  });
  assertEquals(outcome.kind, "timed_out");
  assert(outcome.kind === "timed_out");
  assertEquals(outcome.last?.attemptsMade, 1);
  assertEquals(outcome.problem, "connection refused");
  // 100 + 200 + 300 + 300 = 900, then the 100 ms left, then one last read at the deadline.
  assertEquals(runtime.pauses, [100, 200, 300, 300, 100]);
  assertEquals(runtime.nowMs(), 1000);
  assertEquals(reads, 6);
});

Deno.test("decodeJobJson refuses what is not a job and tolerates missing details", () => {
  assertEquals(decodeJobJson(null), undefined);
  assertEquals(decodeJobJson({ id: 1, state: "pending" }), undefined);
  const minimal = decodeJobJson({
    id: "job_x",
    state: "delivering",
    attempts: [null, { outcome: 5 }],
  });
  assertEquals(minimal?.state, "delivering");
  assertEquals(minimal?.attempts.length, 1);
  assertEquals(minimal?.attempts[0]?.outcome, "?");
});
