/**
 * `hookd bench replication` end to end (five real node processes and a generator), briefly:
 * its last stdout line is the result object, and every acknowledged job is on a majority of
 * the disks after the run. Figures are not asserted as targets (a test never times a speed).
 */

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import {
  closedLoopCommitsPerS,
  profiledSplit,
  runReplicationBench,
} from "../../src/bench/replication_bench.ts";
import { COMPONENTS, type ComponentTimes } from "../../src/bench/cpu_profile.ts";

Deno.test("profiledSplit spreads the nodes' main-thread CPU over the profiles' shares, per commit", () => {
  const times = Object.fromEntries(COMPONENTS.map((c) => [c, 0])) as ComponentTimes;
  // Sampled: 3 s job store, 1 s transport (the shares); measured: 2,000 ms over two nodes, of
  // which by thread 3/4 main, 1/5 V8's workers and 1/20 the rest.
  times.job_store = 3_000_000;
  times.transport = 1_000_000;
  const profiled = {
    phase: {
      report: {
        accepted: 1_000,
        accepted_by_send_end: 900,
        send_seconds: 1,
        first_ack_seconds: 0.1,
      },
      // The generator's CPU is not the nodes'.
      cpuMs: { generator: 5_000, n1: 1_200, n2: 800 },
      nodeThreadCpuMs: { main: 1_500, v8Workers: 400, other: 100 },
    },
    times,
    files: 2,
  };
  const split = profiledSplit(profiled, ["n1", "n2"]);
  assertEquals(split.profiles, 2);
  assertEquals(split.node_cpu_us_per_commit, 2_000);
  assertEquals(split.commits_per_s, 1_000);
  const byComponent = split.node_cpu_us_per_commit_by_component as Record<string, number>;
  // Only the main threads' 1,500 µs a commit is the profile's to split: no worker time in it.
  assertEquals(byComponent.job_store, 1_125);
  assertEquals(byComponent.transport, 375);
  assertEquals(byComponent.gc, 0);
  assertEquals(split.node_cpu_us_per_commit_by_thread, {
    main: 1_500,
    v8_workers: 400,
    other: 100,
  });
  // Without samples there is no split, not a split of zeros.
  const empty = Object.fromEntries(COMPONENTS.map((c) => [c, 0])) as ComponentTimes;
  const none = profiledSplit({ ...profiled, times: empty }, ["n1", "n2"]);
  assertEquals((none.node_cpu_us_per_commit_by_component as Record<string, null>).job_store, null);
});

Deno.test("bench replication --profiles-out refuses a directory that already holds profiles", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hookd-repl-prof-" });
  try {
    await Deno.writeTextFile(`${dir}/old.cpuprofile`, "{}");
    await assertRejects(
      () =>
        runReplicationBench({
          seconds: 1,
          loss: 0,
          rate: 10,
          outstanding: 10,
          nodeCount: 5,
          payloadBytes: 128,
          walSync: "batched",
          profileDir: dir,
        }),
      Error,
      "already holds profiles",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

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
    // Correctness, not figures: runs where /tmp is a tmpfs too (the JSON then says so).
    "--allow-tmpfs",
  ]).output();
  const stderr = new TextDecoder().decode(output.stderr);
  const last = new TextDecoder().decode(output.stdout).trim().split("\n").pop()!;
  const result = JSON.parse(last);
  assertEquals(output.code, 0, `${stderr}\n${last}`);
  for (
    const key of [
      "commits_per_s",
      "p50_ms",
      "p99_ms",
      "fsyncs_per_commit",
      "datagrams_per_commit",
    ]
  ) {
    assert(typeof result[key] === "number" && result[key] > 0, `${key}: ${result[key]}`);
  }
  assert(typeof result.wal_filesystem === "string", `wal_filesystem: ${result.wal_filesystem}`);
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
  // The nodes' CPU by thread: the JavaScript threads ran, and the split is of the nodes' CPU.
  const byThread = result.max_rate.node_cpu_cores_by_thread;
  assert(byThread.main > 0, `main threads: ${JSON.stringify(byThread)}`);
  assert(byThread.v8_workers >= 0 && byThread.other >= 0, JSON.stringify(byThread));
  const nodeCores = ["n1", "n2", "n3", "n4", "n5"].reduce(
    (sum, n) => sum + result.max_rate.cpu_cores_by_process[n],
    0,
  );
  // Read a moment apart, in 10-ms ticks: equal within a tick a process over the window.
  assert(
    Math.abs(byThread.main + byThread.v8_workers + byThread.other - nodeCores) < 0.1,
    `${JSON.stringify(byThread)} against ${nodeCores}`,
  );
});
