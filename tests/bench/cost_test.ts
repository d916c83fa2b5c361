/**
 * The cost model's pure parts: a V8 profile split per component (a sample is charged to the
 * first frame from the leaf up that a rule names), and a sweep row turned into a cost row.
 * The floors themselves are measurements, run by `hookd bench cost`, not asserted here.
 */

import { assertEquals } from "../assert.ts";
import { componentTimes, parseCpuProfile } from "../../src/bench/cpu_profile.ts";
import { emptySums } from "../../src/bench/alloc_profile.ts";
import {
  costRow,
  idleCost,
  idlePerfText,
  LONE_JOB_OPERATIONS,
  necessaryUs,
} from "../../src/bench/cost_bench.ts";
import type { Floor } from "../../src/bench/cost_floors.ts";
import type { SweepRow } from "../../src/bench/sweep_row.ts";

const SRC = "file:///x/src";

function frame(id: number, functionName: string, url: string, children: number[] = []) {
  return { id, callFrame: { functionName, url }, children };
}

Deno.test("componentTimes charges each sample to the nearest frame a rule names", () => {
  const profile = parseCpuProfile(JSON.stringify({
    nodes: [
      frame(1, "(root)", "", [2, 6, 7, 8]),
      frame(2, "onMessage", `${SRC}/jobs/replication_core.ts`, [3, 5]),
      frame(3, "sealDatagram", `${SRC}/transport/datagram_crypto.ts`, [4]),
      frame(4, "update", "ext:deno_node/internal/crypto/cipher.ts"),
      // A lib helper is charged to its caller (the job store).
      frame(5, "round", `${SRC}/lib/round.ts`),
      frame(6, "(garbage collector)", ""),
      frame(7, "(idle)", ""),
      frame(8, "(program)", ""),
    ],
    samples: [4, 5, 6, 7, 8, 2],
    timeDeltas: [10, 20, 30, 1000, 5, 7],
    startTime: 0,
    endTime: 1072,
  }));
  const t = componentTimes(profile);
  assertEquals(t.aead, 10);
  assertEquals(t.job_store, 27);
  assertEquals(t.gc, 30);
  assertEquals(t.runtime_other, 5);
  const total = Object.values(t).reduce((a, b) => a + b, 0);
  assertEquals(total, 72, "idle is left out");
});

Deno.test("componentTimes leaves out a thread asleep in a synchronous fsync: wall time, not CPU", () => {
  const profile = parseCpuProfile(JSON.stringify({
    nodes: [
      frame(1, "(root)", "", [2]),
      frame(2, "#writeAndSync", `${SRC}/wal/wal.ts`, [3, 4]),
      frame(3, "op_fs_file_sync_data_sync", ""),
      frame(4, "crc32cUpdate", `${SRC}/wal/crc32c.ts`),
    ],
    samples: [3, 4, 3],
    timeDeltas: [500, 40, 700],
    startTime: 0,
    endTime: 1240,
  }));
  const t = componentTimes(profile);
  assertEquals(t.wal, 40, "only the WAL's own code is CPU");
  assertEquals(Object.values(t).reduce((a, b) => a + b, 0), 40);
});

const FLOORS: Floor[] = [
  ["udp_send", 3],
  ["udp_receive", 3],
  ["aead_seal", 11],
  ["aead_open", 10],
  ["fsync", 20],
  ["http_request", 100],
  ["timer_wakeup", 5],
].map(([name, cpuUs]) => ({
  name: name as string,
  what: "",
  ops: 1,
  cpuUs: cpuUs as number,
  wallUs: 1,
}));

Deno.test("the necessary cost is the floors times the operations", () => {
  // 8 × (3 + 11 + 3 + 10) + 5 × 20 + 2 × 100
  assertEquals(necessaryUs(FLOORS, LONE_JOB_OPERATIONS), 8 * 27 + 100 + 200);
});

Deno.test("costRow splits the CPU per process and the nodes' share per component", () => {
  const row = {
    rate: 200,
    accepted: 2000,
    p99_ms: 9,
    cpu_ms_per_job: 2,
    cpu_cores: { n1: 0.3, n2: 0.1, generator: 0.1 },
    datagrams_per_job: 4,
    fsyncs_per_job: 1,
    timer_wakeups_per_job: 3,
    wakeups_per_job: 12,
    note: "",
  } as unknown as SweepRow;
  const times = Object.fromEntries(
    ["http_api", "validation", "job_store", "codecs", "transport", "aead", "udp_syscalls", "wal"]
      .concat(["delivery", "membership", "metrics", "timers", "gc", "runtime_other"])
      .map((c) => [c, c === "aead" ? 3 : c === "job_store" ? 1 : 0]),
  ) as ReturnType<typeof componentTimes>;
  const cost = costRow(row, FLOORS, { times, files: 2 });
  assertEquals(cost.cpu_us_per_job, { n1: 1200, n2: 400, generator: 400 });
  assertEquals(cost.nodes_cpu_us_per_job, 1600);
  assertEquals(cost.components_us_per_job?.aead, 1200);
  assertEquals(cost.components_us_per_job?.job_store, 400);
  assertEquals(cost.necessary_us_as_run, 4 * 27 + 20 + 200);
  // 12 wake-ups at the 5-µs timer floor; a lone job's fewest is 21.
  assertEquals(cost.wakeups_per_job, 12);
  assertEquals(cost.wakeup_floor_us_as_run, 60);
  assertEquals(cost.wakeup_floor_us_lone_job, 21 * 5);
  assertEquals(cost.alloc_kb_per_job_node, null, "not profiled: no allocations");
  assertEquals(cost.threads_us_per_job, null, "no split by thread in the row");

  // With the nodes' CPU by thread: the profile's shares split the main threads' part (3/4),
  // and V8's workers and the rest are given as they are.
  const byThread = costRow(
    { ...row, node_cpu_cores_by_thread: { main: 0.3, v8_workers: 0.08, other: 0.02 } },
    FLOORS,
    { times, files: 2 },
  );
  assertEquals(byThread.nodes_cpu_us_per_job, 1600);
  assertEquals(byThread.components_us_per_job?.aead, 900);
  assertEquals(byThread.components_us_per_job?.job_store, 300);
  assertEquals(byThread.threads_us_per_job, { v8_workers: 320, other: 80 });

  // Allocations: 2 nodes' samples over the profiled run's 1,000 jobs.
  const sums = emptySums();
  sums.bytes = 180_000_000;
  sums.components.transport = 120_000_000;
  sums.components.codecs = 60_000_000;
  sums.sites.set("receive (transport/endpoint.ts:180)", 100_000_000);
  sums.sites.set("decodeMessage (jobs/job_messages.ts:206)", 60_000_000);
  const withAllocations = costRow(row, FLOORS, { times, files: 2 }, {
    sums,
    nodes: 2,
    jobs: 1000,
  });
  assertEquals(withAllocations.alloc_kb_per_job_node, 90);
  assertEquals(withAllocations.alloc_kb_per_job_node_by_component?.transport, 60);
  assertEquals(withAllocations.alloc_kb_per_job_node_by_component?.codecs, 30);
  assertEquals(withAllocations.alloc_top_sites?.[0], {
    site: "receive (transport/endpoint.ts:180)",
    kb_per_job_node: 50,
  });
});

Deno.test("idleCost: CPU % of a core per node, and wake-ups and datagrams per second per node", () => {
  // n1 used 400 ms and n2 200 ms of CPU over 20 s; n3's process was gone at the end.
  const cpu0 = new Map([[11, 1_000], [12, 5_000], [13, 0]]);
  const cpu1 = new Map([[11, 1_400], [12, 5_200]]);
  const idle = idleCost(["n1", "n2", "n3"], [11, 12, 13], { cpu0, cpu1 }, 20, {
    timersFired: 1_800,
    datagramsOut: 600,
    mainThreadWakeups: 2_700,
  }, 60);
  assertEquals(idle.cpu_pct_per_node, { n1: 2, n2: 1 });
  assertEquals(idle.cpu_pct_mean, 1.5);
  assertEquals(idle.timer_wakeups_per_s_per_node, 30);
  assertEquals(idle.datagrams_out_per_s_per_node, 10);
  assertEquals(idle.main_thread_wakeups_per_s_per_node, 45);
  assertEquals(idle.settle_s, 60);
  // Without a perf reading the exact figure is absent, not a guess.
  assertEquals(idle.cpu_pct_mean_perf, null);
  assertEquals(idlePerfText(idle), "no perf reading (perf missing or not allowed)");
});

Deno.test("idleCost: perf's task clock of all the nodes gives the exact mean per node", () => {
  const cpu0 = new Map([[11, 0], [12, 0]]);
  const cpu1 = new Map([[11, 300], [12, 300]]);
  // 450 ms of task clock over 20 s for two nodes: 1.125 % of a core each (/proc said 1.5).
  const idle = idleCost(["n1", "n2"], [11, 12], { cpu0, cpu1, perfMs: 450 }, 20, {
    timersFired: 0,
    datagramsOut: 0,
    mainThreadWakeups: 0,
  }, 60);
  assertEquals(idle.cpu_pct_mean, 1.5);
  assertEquals(idle.cpu_pct_mean_perf, 1.13);
  assertEquals(idlePerfText(idle), "1.13 % by perf's task clock");
});
