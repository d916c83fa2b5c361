/**
 * The generator's ids file, as the sweeps, chaos and `bench replication` read it: every line the
 * generator writes reads back as written, and a line that is not one (a field missing or extra,
 * a time or target that is not a number) is refused rather than read as zeros.
 */

import fc from "fast-check";
import { assertEquals, assertRejects } from "../assert.ts";
import {
  type AcceptedSubmit,
  formatIdsLine,
  parseIdsLine,
  readIdsFile,
} from "../../src/process/generator_protocol.ts";

const wallMs = fc.integer({ min: 0, max: 4_000_000_000_000_000 }).map((n) => n / 1000);

Deno.test("an ids line reads back as the generator wrote it (times to the µs)", () => {
  fc.assert(
    fc.property(
      fc.stringMatching(/^job_[0-9a-f]{1,32}$/),
      wallMs,
      wallMs,
      wallMs,
      fc.nat(14),
      (id, scheduledMs, ackedMs, sentMs, target) => {
        const entry: AcceptedSubmit = [id, scheduledMs, ackedMs, sentMs, target];
        assertEquals(parseIdsLine(formatIdsLine(entry)), entry);
      },
    ),
  );
});

Deno.test("a line that is not an ids line is refused, not read as zeros", () => {
  const good = "job_a\t1000.500\t1004.000\t1000.750\t2";
  assertEquals(parseIdsLine(good), ["job_a", 1000.5, 1004, 1000.75, 2]);
  for (
    const bad of [
      "job_a\t1000.500\t1004.000",
      "job_a\t1000.500\t1004.000\t1000.750",
      "job_a\t1000.500\t1004.000\t1000.750\t2\textra",
      "job_a\t1000.500\t1004.000\t1000.750\t",
      "job_a\t1000.500\t1004.000\t1000.750\t-1",
      "job_a\t1000.500\t1004.000\t1000.750\t1.5",
      "job_a\t\t1004.000\t1000.750\t2",
      "job_a\tsoon\t1004.000\t1000.750\t2",
      "\t1000.500\t1004.000\t1000.750\t2",
    ]
  ) assertEquals(parseIdsLine(bad), undefined, JSON.stringify(bad));
});

Deno.test("readIdsFile reads every line and names the file and line it cannot read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hookd-ids-file-test-" });
  try {
    const path = `${dir}/step.tsv`;
    const entries: AcceptedSubmit[] = [["job_a", 1, 2, 1.5, 0], ["job_b", 3, 4, 3.25, 4]];
    await Deno.writeTextFile(path, entries.map((e) => formatIdsLine(e) + "\n").join(""));
    assertEquals(await readIdsFile(path), entries);
    await Deno.writeTextFile(path, "job_a\t1.000\t2.000\n");
    await assertRejects(() => readIdsFile(path), Error, "step.tsv: not an ids line");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
