import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import {
  benchProblems,
  type PhaseCounts,
  type SinkCounts,
  undelivered,
} from "../../src/bench/delivery_bench.ts";

Deno.test("hookd bench delivery --json prints the result object as its last stdout line", async () => {
  const output = await hookdCommand([
    "bench",
    "delivery",
    "--seconds",
    "0.5",
    "--rate",
    "200",
    "--verify",
    "--json",
  ]).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assertEquals(output.code, 0, stderr);
  const last = new TextDecoder().decode(output.stdout).trim().split("\n").pop()!;
  const result = JSON.parse(last);
  for (const key of ["deliveries_per_s", "p50_ms", "p99_ms", "cpu_ms_per_delivery"]) {
    assert(typeof result[key] === "number" && result[key] > 0, `${key}: ${result[key]}`);
  }
  assertEquals(result.problems, []);
  // Every job the fixed-rate phase offered was delivered, none refused or left behind.
  assertEquals(result.fixed_rate_offered, 100);
  assertEquals(result.fixed_rate_delivered, 100);
  assertEquals(result.fixed_rate_rejected, 0);
  assertEquals(result.fixed_rate_undelivered, 0);
  assertEquals(result.max_rate_undelivered, 0);
  assert(result.warmup_jobs_excluded > 0, `warm-up jobs: ${result.warmup_jobs_excluded}`);
  // The sink saw each measured delivery once and nothing from the warm-up, signed so that
  // standardwebhooks verifies it.
  assertEquals(result.sink_received, result.fixed_rate_delivered + result.max_rate_delivered);
  assertEquals(result.sink_signature_failures, 0);
  assertEquals(result.sink_duplicates, 0);
  assertEquals(result.fixed_rate_failed_attempts + result.max_rate_failed_attempts, 0);
});

const clean = (offered: number): PhaseCounts => ({
  offered,
  rejected: 0,
  delivered: offered,
  failedAttempts: 0,
  dead: 0,
});
const cleanSink: SinkCounts = {
  received: 200,
  duplicates: 0,
  signature_failures: 0,
  missing_id: 0,
  too_large: 0,
};

Deno.test("benchProblems is empty for a clean run and ignores the warm-up's failed attempts", () => {
  const warmup = { ...clean(64), failedAttempts: 3 };
  assertEquals(
    benchProblems({ warmup, fixed: clean(100), maxRate: clean(100), sink: cleanSink }),
    [],
  );
});

Deno.test("benchProblems names every rejection, undelivered job, failed attempt and sink fault", () => {
  const cases: [string, Parameters<typeof benchProblems>[0]][] = [
    ["warm-up", {
      warmup: { ...clean(64), delivered: 60 },
      fixed: clean(100),
      maxRate: clean(100),
      sink: cleanSink,
    }],
    ["rejected", {
      warmup: clean(64),
      fixed: { ...clean(100), rejected: 1, delivered: 99 },
      maxRate: clean(100),
      sink: cleanSink,
    }],
    ["not delivered", {
      warmup: clean(64),
      fixed: { ...clean(100), delivered: 98, dead: 1 },
      maxRate: clean(100),
      sink: cleanSink,
    }],
    ["attempts failed", {
      warmup: clean(64),
      fixed: clean(100),
      maxRate: { ...clean(100), failedAttempts: 1 },
      sink: cleanSink,
    }],
    ["duplicate", {
      warmup: clean(64),
      fixed: clean(100),
      maxRate: clean(100),
      sink: { ...cleanSink, duplicates: 1 },
    }],
    ["signatures", {
      warmup: clean(64),
      fixed: clean(100),
      maxRate: clean(100),
      sink: { ...cleanSink, signature_failures: 1 },
    }],
    ["webhook-id", {
      warmup: clean(64),
      fixed: clean(100),
      maxRate: clean(100),
      sink: { ...cleanSink, missing_id: 1 },
    }],
    ["too large", {
      warmup: clean(64),
      fixed: clean(100),
      maxRate: clean(100),
      sink: { ...cleanSink, too_large: 1 },
    }],
  ];
  for (const [expected, run] of cases) {
    const problems = benchProblems(run);
    assertEquals(problems.length, 1, `${expected}: ${problems.join("; ")}`);
    assert(problems[0]!.includes(expected), `${expected}: ${problems[0]}`);
  }
  assertEquals(undelivered({ ...clean(100), rejected: 2, delivered: 95 }), 3);
});
