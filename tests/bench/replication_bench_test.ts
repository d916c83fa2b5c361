/**
 * `hookd bench replication` end to end (five real node processes and a generator), briefly:
 * its last stdout line is the result object, and every acknowledged job is on a majority of
 * the disks after the run. Figures are not asserted as targets (a test never times a speed).
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/cli/self_command.ts";

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
  assertEquals(result.fixed_rate.offered, 200);
  assertEquals(result.fixed_rate.acknowledged, 200);
  for (const name of ["generator", "n1", "n2", "n3", "n4", "n5"]) {
    assert(typeof result.max_rate.cpu_cores_by_process[name] === "number", `cpu of ${name}`);
  }
});
