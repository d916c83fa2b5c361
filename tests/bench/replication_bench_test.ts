/**
 * `hookd bench replication` end to end (five real node processes and a generator), briefly:
 * its last stdout line is the result object, and every acknowledged job is on a majority of
 * the disks after the run. Figures are not asserted as targets (a test never times a speed).
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { closedLoopCommitsPerS } from "../../src/bench/replication_bench.ts";

Deno.test("closedLoopCommitsPerS counts only acknowledgements inside the window, from the first", () => {
  // 5 s window, first answer after 0.25 s, 17,100 answers inside it (and, say, 1,000 after:
  // not an input at all).
  assertEquals(
    closedLoopCommitsPerS({
      accepted_by_send_end: 17_100,
      send_seconds: 5,
      first_ack_seconds: 0.25,
    }),
    3_600,
  );
  assertEquals(
    closedLoopCommitsPerS({ accepted_by_send_end: 0, send_seconds: 5, first_ack_seconds: null }),
    null,
  );
});

Deno.test("hookd bench replication --json prints the result object, and nothing acknowledged is lost", async () => {
  const output = await hookdCommand([
    "bench",
    "replication",
    "--seconds",
    "1",
    "--rate",
    "200",
    "--outstanding",
    "200",
    "--json",
  ]).output();
  const stderr = new TextDecoder().decode(output.stderr);
  const last = new TextDecoder().decode(output.stdout).trim().split("\n").pop()!;
  const result = JSON.parse(last);
  assertEquals(output.code, 0, `${stderr}\n${last}`);
  for (
    const key of ["commits_per_s", "p50_ms", "p99_ms", "fsyncs_per_commit", "datagrams_per_commit"]
  ) {
    assert(typeof result[key] === "number" && result[key] > 0, `${key}: ${result[key]}`);
  }
  assertEquals(result.lost, 0);
  assertEquals(result.loss, 0);
  assertEquals(result.seconds, 1);
  assertEquals(result.problems, []);
  // Every acknowledged job was found on the disks, and on at least three of five.
  const holders: number[] = result.acknowledged_by_disks_holding;
  assertEquals(holders.length, 6);
  assertEquals(holders.reduce((a, b) => a + b, 0), result.acknowledged_total);
  assertEquals(holders[0]! + holders[1]! + holders[2]!, 0);
  assert(
    result.acknowledged_total >= result.fixed_rate.acknowledged + result.max_rate.acknowledged,
  );
  // commits_per_s leaves out the answers that came after the window.
  const inWindow = result.max_rate.acknowledged - result.max_rate.acknowledged_after_window;
  assertEquals(
    result.commits_per_s,
    Math.round((inWindow / (result.max_rate.window_s - result.max_rate.first_ack_s)) * 10) / 10,
  );
  assertEquals(result.fixed_rate.offered, 200);
  assertEquals(result.fixed_rate.acknowledged, 200);
  for (const name of ["generator", "n1", "n2", "n3", "n4", "n5"]) {
    assert(typeof result.max_rate.cpu_cores_by_process[name] === "number", `cpu of ${name}`);
  }
});
