// Idle CPU of a five-node cluster (issue 19): `deno run -A --config deno.json bench/results/cost/idle_cpu.ts 30`.
// Starts five nodes, waits 5 s, then reads each node's /proc CPU and timer count over the window.
import { startBenchNodes } from "../../../src/bench/bench_cluster.ts";
const secs = Number(Deno.args[0] ?? 20);
const dataRoot = await Deno.makeTempDir();
const nodes = await startBenchNodes({ nodes: 5, clusterKey: "idle-profile-cluster-key-0123456789abc", dataRoot, extraArgs: [], log: () => {} });
await new Promise((r) => setTimeout(r, 5000));
const pids = nodes.ids.map((id) => nodes.cluster.pid(id)!);
const cpu = () => pids.map((p) => Deno.readTextFileSync(`/proc/${p}/stat`).split(") ")[1]!.split(" ")).map((f) => Number(f[11]) + Number(f[12]));
const scrape = async () => { let t = 0; for (const u of nodes.httpUrls) { const m = await (await fetch(`${u}/metrics`)).text(); t += Number(/hookd_runtime_timers_total\{event="fired"\} (\d+)/.exec(m)?.[1] ?? 0); } return t; };
const t0 = await scrape(); const c0 = cpu();
await new Promise((r) => setTimeout(r, secs * 1000));
const c1 = cpu(); const t1 = await scrape();
const pct = c1.map((b, i) => (b - c0[i]!) / secs);
console.log(`idle over ${secs} s: CPU % of a core per node ${pct.map((x) => x.toFixed(2)).join(" ")} (mean ${(pct.reduce((a, b) => a + b) / pct.length).toFixed(2)}); timers fired per node per s ${((t1 - t0) / secs / pids.length).toFixed(1)}`);
await nodes.cluster.stopAll();
await Deno.remove(dataRoot, { recursive: true });
