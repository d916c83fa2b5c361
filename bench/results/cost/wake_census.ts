// Wake-up census (issue 19): five real nodes on loopback, jobs POSTed round-robin at RATE/s for SECONDS to a
// receiver in this process; per node, CPU (user+system from /proc, and system alone), voluntary context
// switches of the main thread ("mainWakes": each is a block and a wake-up) and of all threads, and
// involuntary ones, per second idle and per job under load; then the cluster's /metrics deltas per job.
// `deno run -A --config deno.json bench/results/cost/wake_census.ts [RATE=200] [SECONDS=10]` (WALs in the
// current directory, removed after). Results: wake_census_output.txt beside it.
import { startBenchNodes, scrapeAll } from "../../../src/bench/bench_cluster.ts";
const rate = Number(Deno.args[0] ?? 200), seconds = Number(Deno.args[1] ?? 10);
const extra = (Deno.args[2] ?? "").split(" ").filter(Boolean);
const dataRoot = await Deno.makeTempDir({ dir: "." });
let received = 0;
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => { await r.arrayBuffer(); received++; return new Response(null, { status: 204 }); });
const nodes = await startBenchNodes({ nodes: 5, clusterKey: "wake-probe-cluster-key-0123456789abcdef", dataRoot, extraArgs: ["--allow-private-targets", ...extra], log: () => {} });
const pids = nodes.ids.map((id) => nodes.cluster.pid(id)!);
function census(pid: number) {
  let vol = 0, nonvol = 0, mainVol = 0, cpu = 0, sys = 0;
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    const s = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/status`);
    const v = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(s)![1]); const nv = Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(s)![1]);
    vol += v; nonvol += nv; if (Number(t.name) === pid) mainVol = v;
  }
  const st = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1]!.split(" ");
  cpu = (Number(st[11]) + Number(st[12])) * 10; sys = Number(st[12]) * 10;
  return { vol, nonvol, mainVol, cpu, sys };
}
const snap = () => pids.map(census);
const diff = (a: ReturnType<typeof snap>, b: ReturnType<typeof snap>, n: number, label: string) => {
  const rows = a.map((x, i) => { const y = b[i]!; return `${nodes.ids[i]} cpu ${((y.cpu - x.cpu) * 1000 / n).toFixed(0)}µs sys ${((y.sys - x.sys) * 1000 / n).toFixed(0)}µs mainWakes ${((y.mainVol - x.mainVol) / n).toFixed(2)} allVol ${((y.vol - x.vol) / n).toFixed(2)} nonvol ${((y.nonvol - x.nonvol) / n).toFixed(2)}`; });
  console.log(`${label} (per ${n === seconds ? "second" : "job"}):\n  ` + rows.join("\n  "));
};
await new Promise((r) => setTimeout(r, 3000));
// warm up
const post = (i: number) => fetch(`${nodes.httpUrls[i % 5]}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url: `http://127.0.0.1:${server.addr.port}/hook`, payload: { i, pad: "x".repeat(200) } }) }).then((r) => r.arrayBuffer());
async function drive(r: number, s: number) {
  const t0 = performance.now(); const inflight: Promise<unknown>[] = []; let i = 0;
  while (i < r * s) { const due = Math.floor((performance.now() - t0) * r / 1000); while (i < due && i < r * s) inflight.push(post(i++)); await new Promise((res) => setTimeout(res, 1)); }
  await Promise.all(inflight);
  for (let k = 0; k < 500 && received < i; k++) await new Promise((res) => setTimeout(res, 10));
  return i;
}
received = 0; await drive(100, 3); await new Promise((r) => setTimeout(r, 1000));
let a = snap(); await new Promise((r) => setTimeout(r, seconds * 1000)); let b = snap();
diff(a, b, seconds, "idle");
received = 0; const m0 = await scrapeAll(nodes.httpUrls); a = snap(); const n = await drive(rate, seconds); b = snap(); const m1 = await scrapeAll(nodes.httpUrls);
const keys = new Set<string>(); for (const m of m1) for (const k of m.keys()) if (/transport_(datagrams|messages_sent|messages_delivered|retransmits)|jobs_.*_total|wal_.*(fsync|sync|append|batch).*_total/.test(k)) keys.add(k);
for (const k of [...keys].sort()) { let d = 0; for (let i = 0; i < 5; i++) d += (m1[i]!.get(k) ?? 0) - (m0[i]!.get(k) ?? 0); if (d) console.log(`${(d / n).toFixed(2)} per job  ${k}`); }
console.log(`received ${received} of ${n}`);
diff(a, b, n, `rate ${rate}`);
await nodes.cluster.stopAll(); await server.shutdown(); await Deno.remove(dataRoot, { recursive: true });
