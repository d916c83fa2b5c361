import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/cli/self_command.ts";

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
  // Every delivery reached the sink once, signed so that standardwebhooks verifies it.
  assertEquals(result.sink_signature_failures, 0);
  assertEquals(result.sink_duplicates, 0);
  assertEquals(result.failed_attempts, 0);
  assert(result.sink_received > 100, `sink received ${result.sink_received}`);
});
