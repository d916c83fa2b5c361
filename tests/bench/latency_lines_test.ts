/**
 * `--latencies-out`'s lines: one a job in the header's columns, with the generator's real send
 * time and the node that took the submit, so a tail can be told apart from the generator's own
 * lateness and laid at a node. Pure: no cluster runs here.
 */

import { assertEquals, assertThrows } from "../assert.ts";
import type { AcceptedSubmit } from "../../src/process/generator_protocol.ts";
import { LATENCY_TSV_HEADER, latencyLines } from "../../src/bench/sweep.ts";

Deno.test("latencyLines: one TSV line per job, in the header's columns, received empty when never", () => {
  const step = {
    step: "s1-r200",
    rate: 200,
    ids: [
      ["job_a", 1000.5, 1004, 1000.75, 0],
      ["job_b", 1005.5, 1011, 1007.5, 2],
    ] as AcceptedSubmit[],
    generatorClock: { offsetMs: 0, roundTripMs: 0.2 },
  };
  const lines = latencyLines(step, [{ at: 1003.25, duplicates: 0 }, null], 1, 0.1, [
    "n1",
    "n2",
    "n3",
  ]);
  assertEquals(lines, [
    "s1-r200\t200\t0.1\tjob_a\t1000.5\t1004\t1003.25\t1000.75\tn1\n",
    "s1-r200\t200\t0.1\tjob_b\t1005.5\t1011\t\t1007.5\tn3\n",
  ]);
  assertEquals(LATENCY_TSV_HEADER.split("\t").length, lines[0]!.split("\t").length);
  // A target the sweep did not name is a broken ids file, not a blank column.
  assertThrows(() => latencyLines(step, [null, null], 1, 0, ["n1", "n2"]), Error);
  // An event's jobs (fanout 2) get a line each, in receipt order.
  const events = latencyLines(
    { ...step, ids: [step.ids[0]!] },
    [{ at: 1002, duplicates: 0 }, { at: 1009, duplicates: 1 }],
    2,
    0,
    ["n1"],
  );
  assertEquals(events.map((l) => l.split("\t")[6]), ["1002", "1009"]);
});

Deno.test("latencyLines: the generator's times are moved onto the sweep's clock, as the receipts are", () => {
  // The generator's clock is 4 ms behind the sweep's; the receipt is on the sweep's already.
  const step = {
    step: "s1-r200",
    rate: 200,
    ids: [["job_a", 996.5, 1000, 996.75, 0]] as AcceptedSubmit[],
    generatorClock: { offsetMs: -4, roundTripMs: 0.2 },
  };
  const [line] = latencyLines(step, [{ at: 1003.25, duplicates: 0 }], 1, 0, ["n1"]);
  assertEquals(line, "s1-r200\t200\t0\tjob_a\t1000.5\t1004\t1003.25\t1000.75\tn1\n");
});
