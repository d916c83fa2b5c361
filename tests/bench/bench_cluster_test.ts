/**
 * The benches' shared measurement: Prometheus text into samples, sums by name and labels, and
 * a window's counters taken only over the nodes that answered at both ends.
 */

import { assert, assertEquals } from "../assert.ts";
import {
  cpuMsOf,
  membershipLogLine,
  parsePrometheus,
  threadCpuMsOf,
  total,
  windowCounters,
} from "../../src/bench/bench_cluster.ts";

Deno.test("threadCpuMsOf splits a process's CPU into its main thread, V8's workers and the rest", async () => {
  // Work on this process's main thread, and garbage for V8's workers to help collect.
  let keep = 0;
  const started = performance.now();
  while (performance.now() - started < 300) keep += new Array(64).fill(keep).length;
  assert(keep > 0);
  const [split, totals] = await Promise.all([threadCpuMsOf([Deno.pid]), cpuMsOf([Deno.pid])]);
  const mine = split.get(Deno.pid);
  assert(mine !== undefined, "this process is read");
  assert(mine.main >= 200, `the busy main thread: ${JSON.stringify(mine)}`);
  // One reading's "other" may be a tick or two below 0 (10-ms ticks, threads read one by one).
  assert(mine.v8Workers >= 0 && mine.other >= -20, JSON.stringify(mine));
  // The parts add up to the process's CPU, read a moment apart in 10-ms ticks.
  const sum = mine.main + mine.v8Workers + mine.other;
  assert(Math.abs(sum - totals.get(Deno.pid)!) <= 50, `${sum} against ${totals.get(Deno.pid)}`);
  // A pid that is no process is left out.
  assertEquals((await threadCpuMsOf([2 ** 22 + 1])).size, 0);
});

const scrape = (fsyncs: number, out: number) =>
  parsePrometheus(
    `# HELP hookd_wal_fsyncs_total x\nhookd_wal_fsyncs_total ${fsyncs}\n` +
      `hookd_transport_datagrams_total{direction="out"} ${out}\n` +
      `hookd_transport_datagrams_total{direction="in"} 1\n`,
  );

Deno.test("total sums a metric over nodes, by labels", () => {
  const nodes = [scrape(3, 10), scrape(4, 20)];
  assertEquals(total(nodes, "hookd_wal_fsyncs_total"), 7);
  assertEquals(total(nodes, "hookd_transport_datagrams_total", { direction: "out" }), 30);
});

Deno.test("windowCounters leaves out a node that did not answer at either end, and names it", () => {
  const empty = new Map<string, number>();
  // n2 did not answer the first scrape: its 1,000,000 lifetime fsyncs are not this window's.
  const before = [scrape(100, 1_000), empty, scrape(100, 1_000)];
  const after = [scrape(150, 1_400), scrape(1_000_000, 9_000_000), scrape(130, 1_100)];
  const { counters, silent } = windowCounters(before, after, ["n1", "n2", "n3"]);
  assertEquals([counters.fsyncs, counters.datagramsOut], [80, 500]);
  assertEquals(silent, ["n2"]);
  // And one that stopped answering by the end.
  const gone = windowCounters(after, [scrape(200, 2_000), scrape(1, 1), empty], ["n1", "n2", "n3"]);
  assertEquals(gone.silent, ["n3"]);
});

Deno.test("membershipLogLine: a suspicion or a death is logged, a graceful leave and the rest are not", () => {
  assertEquals(
    membershipLogLine({ observer: "n1", event: "member-suspect", node: "n4" }),
    "[n1] member-suspect n4",
  );
  assertEquals(
    membershipLogLine({ observer: "n2", event: "member-dead", node: "n4" }),
    "[n2] member-dead n4",
  );
  assertEquals(membershipLogLine({ observer: "n1", event: "member-left", node: "n4" }), undefined);
  assertEquals(membershipLogLine({ observer: "n1", event: "member-alive", node: "n4" }), undefined);
  assertEquals(membershipLogLine({ observer: "n1", event: "checkpoint" }), undefined);
});
