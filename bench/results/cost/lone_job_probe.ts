// Lone jobs on an idle five-node cluster (issue 19): `deno run -A --config deno.json bench/results/cost/lone_job_probe.ts 60`.
// Submits one job at a time (50 ms apart, round-robin over the nodes) to a receiver in this process;
// prints submit-to-202 and submit-to-receipt percentiles over all but the first ten, then a few of n1's /metrics lines.
import { startBenchNodes } from "../../../src/bench/bench_cluster.ts";
const dataRoot = await Deno.makeTempDir();
const recv = new Map<string, number>();
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
  await r.arrayBuffer();
  recv.set(r.headers.get("webhook-id") ?? "", performance.now());
  return new Response(null, { status: 204 });
});
const nodes = await startBenchNodes({ nodes: 5, clusterKey: "lone-job-cluster-key-0123456789abcdef", dataRoot, extraArgs: ["--allow-private-targets"], log: () => {} });
const acks: number[] = [], ends: number[] = [];
const n = Number(Deno.args[0] ?? 60);
for (let i = 0; i < n; i++) {
  const url = nodes.httpUrls[i % 5]!;
  const t0 = performance.now();

  const res = await fetch(`${url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url: `http://127.0.0.1:${server.addr.port}/hook`, payload: { i } }) });
  const body = await res.json();
  const t1 = performance.now();

  for (let k = 0; k < 200 && !recv.has(body.id); k++) await new Promise((r) => setTimeout(r, 1));
  const t2 = recv.get(body.id)!;

  if (i >= 10) { acks.push(t1 - t0); ends.push(t2 - t0); }
  await new Promise((r) => setTimeout(r, 50));
}
const q = (a: number[], p: number) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))]!.toFixed(2);
console.log(`ack p50 ${q(acks, 0.5)} p90 ${q(acks, 0.9)} max ${q(acks, 1)} | received p50 ${q(ends, 0.5)} p90 ${q(ends, 0.9)} max ${q(ends, 1)} ms`);
const m = await (await fetch(`${nodes.httpUrls[0]}/metrics`)).text();
console.log(m.split("\n").filter((l) => /_ms_(sum|count)|_ms{.*quantile|fsync|lazy/.test(l) && !l.startsWith("#")).join("\n"));

await nodes.cluster.stopAll();
await server.shutdown();
await Deno.remove(dataRoot, { recursive: true });
