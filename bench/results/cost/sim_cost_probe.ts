// What five nodes' cores cost per job with no syscalls in the figure (issue 19): the simulator runs
// the real transport (sealing included), job store, WAL and delivery engine of five nodes on a
// lossless, fault-free network, one submit every INTERVAL ms of virtual time for CHAOS_MS, and this
// prints the process's CPU per acknowledged job (the simulator's own bookkeeping included).
// `deno run -A --config deno.json bench/results/cost/sim_cost_probe.ts [INTERVAL=5] [CHAOS_MS=30000]`
import process from "node:process";
import { ClusterSim } from "../../../src/sim/cluster_sim.ts";
import { profileFor } from "../../../src/sim/sim_profile.ts";
const intervalMs = Number(Deno.args[0] ?? 5);
const chaosMs = Number(Deno.args[1] ?? 30_000);
const profile = {
  ...profileFor(1),
  lossProbability: 0,
  duplicateProbability: 0,
  delayMsMax: 0.2,
  skewMsMax: 0,
  faultIntervalMs: 1e12,
  submitIntervalMs: intervalMs,
  tornCrashes: false,
  downAfterHeal: 0,
  jobs: {},
  wal: {},
  transport: {},
};
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const sim = new ClusterSim({ seed: 1, chaosMs, profile });
const report = await sim.run();
const cpu = process.cpuUsage(cpu0);
const jobs = report.stats.jobsAcked;
const cpuUs = cpu.user + cpu.system;
console.log(
  `jobs ${jobs} delivered ${report.stats.delivered} violations ${sim.violations.length}; ` +
    `wall ${(performance.now() - t0).toFixed(0)} ms; CPU ${(cpuUs / 1000).toFixed(0)} ms = ` +
    `${(cpuUs / jobs).toFixed(0)} µs/job (5 nodes + simulator)`,
);
