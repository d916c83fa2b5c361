// Idle CPU and wake-ups per thread of a five-node cluster (issue 19, session 20):
// `deno run -A --config deno.json bench/results/cost/idle_threads.ts TREE SECONDS SETTLE_S`, TREE a checkout whose
// src/bench/bench_cluster.ts starts the nodes. Per thread name: CPU % of a core per node and voluntary/involuntary switches per s.
const tree = Deno.args[0] ?? "/work/main";
const secs = Number(Deno.args[1] ?? 20);
const { startBenchNodes } = await import(`${tree}/src/bench/bench_cluster.ts`);
const dataRoot = await Deno.makeTempDir();
const nodes = await startBenchNodes({ nodes: 5, clusterKey: "idle-profile-cluster-key-0123456789abc", dataRoot, extraArgs: [], log: () => {} });
await new Promise((r) => setTimeout(r, Number(Deno.args[2] ?? 5) * 1000));
const pids: number[] = nodes.ids.map((id: string) => nodes.cluster.pid(id)!);
function snap(pid: number) {
  const out = new Map<string, [number, number, number]>();
  for (const e of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const st = Deno.readTextFileSync(`/proc/${pid}/task/${e.name}/stat`);
      const name = st.slice(st.indexOf("(") + 1, st.lastIndexOf(")"));
      const f = st.split(") ")[1]!.split(" ");
      const s = Deno.readTextFileSync(`/proc/${pid}/task/${e.name}/status`);
      out.set(`${e.name}:${name}`, [Number(f[11]) + Number(f[12]), Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(s)![1]), Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(s)![1])]);
    } catch { /* gone */ }
  }
  return out;
}
const b = pids.map(snap);
await new Promise((r) => setTimeout(r, secs * 1000));
const a = pids.map(snap);
const byName = new Map<string, number[]>();
for (let i = 0; i < pids.length; i++) {
  for (const [k, v] of a[i]!) {
    const o = b[i]!.get(k) ?? [0, 0, 0];
    const name = k.split(":")[1]!;
    const acc = byName.get(name) ?? [0, 0, 0, 0];
    acc[0]! += v[0] - o[0]; acc[1]! += v[1] - o[1]; acc[2]! += v[2] - o[2]; acc[3]! += 1;
    byName.set(name, acc);
  }
}
for (const [n, [t, vol, inv, cnt]] of [...byName].sort((x, y) => y[1][1]! - x[1][1]!)) {
  console.log(`${n} (${cnt! / pids.length} threads/node): cpu ${(t! / secs / pids.length).toFixed(2)} %/node, vol ${(vol! / secs / pids.length).toFixed(1)}/s, invol ${(inv! / secs / pids.length).toFixed(1)}/s`);
}
await nodes.cluster.stopAll();
await Deno.remove(dataRoot, { recursive: true });
