// What a backlog costs a real node: five `hookd node` processes whose receiver refuses every
// connection (nothing listens on its port), so every job stays pending with its first retry an
// hour away; batches of jobs with a PAYLOAD_CHARS payload are submitted until each node holds
// TARGET pending jobs or the bound refuses, and at each STEP every node's /metrics is read:
// pending jobs, the backlog's payload bytes, V8's heap used and the RSS. The slope of heap
// against pending jobs is a node's memory per pending job (garbage not yet collected makes the
// single readings noisy: the slope over many is the figure).
//
// deno run -A --config deno.json bench/results/session29/backlog/backlog_mem.ts TARGET PAYLOAD_CHARS [BACKLOG_MAX]
import { freeUdpPortRange, LocalCluster, localNodeSpecs, waitUntil } from "../../../../src/cluster/local_cluster.ts";
import { scrapeAll } from "../../../../src/bench/bench_cluster.ts";

const TARGET = Number(Deno.args[0] ?? 100_000);
const PAYLOAD_CHARS = Number(Deno.args[1] ?? 200);
const BACKLOG_MAX = Deno.args[2];
const STEP = Math.max(1_000, Math.round(TARGET / 10));
const BATCH = 500;
const CONCURRENCY = 4;

const dead = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const deadPort = (dead.addr as Deno.NetAddr).port;
dead.close();
const target = `http://127.0.0.1:${deadPort}/hook`;

const specs = localNodeSpecs(5, "127.0.0.1", freeUdpPortRange(5));
const cluster = new LocalCluster({
  nodes: specs,
  clusterKey: "backlog-mem-bench-cluster-key-0123456789",
  extraArgs: () => [
    "--allow-private-targets",
    "--retry-schedule",
    "3600000",
    "--max-attempts",
    "100",
    ...(BACKLOG_MAX !== undefined ? ["--backlog-max", BACKLOG_MAX] : []),
  ],
  onStderr: () => {},
});
const ids = specs.map((s) => s.id);

interface Row {
  node: string;
  pending: number;
  backlogBytes: number;
  heapUsedBytes: number;
  rssBytes: number;
  refusals: number;
}

async function read(): Promise<Row[]> {
  const rows: Row[] = [];
  const scrapes = await scrapeAll(ids.map((id) => cluster.httpUrls.get(id)!));
  for (const [i, id] of ids.entries()) {
    const m = scrapes[i]!;
    rows.push({
      node: id,
      pending: m.get('hookd_jobs{state="pending"}') ?? NaN,
      // Named hookd_jobs_backlog_payload_bytes when the recorded runs were made.
      backlogBytes: m.get("hookd_jobs_backlog_bytes") ?? m.get("hookd_jobs_backlog_payload_bytes") ??
        NaN,
      heapUsedBytes: m.get("hookd_v8_heap_used_bytes") ?? NaN,
      rssBytes: m.get("process_resident_memory_bytes") ?? NaN,
      refusals: m.get("hookd_jobs_backlog_refusals_total") ?? 0,
    });
  }
  return rows;
}

const payload = "x".repeat(Math.max(0, PAYLOAD_CHARS - 2));
let accepted = 0;
let refused = 0;
let batchNo = 0;
async function oneBatch(): Promise<void> {
  const node = ids[batchNo++ % ids.length]!;
  const jobs = Array.from({ length: BATCH }, () => ({ url: target, payload }));
  const response = await fetch(`${cluster.httpUrls.get(node)}/v1/jobs/batch`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jobs }),
    signal: AbortSignal.timeout(60_000),
  });
  const body = await response.json();
  if (!Array.isArray(body.results)) {
    refused += BATCH;
    return;
  }
  for (const r of body.results) {
    if (r.id !== undefined) accepted++;
    else refused++;
  }
}

cluster.startAll();
const samples: Array<{ offered: number; accepted: number; refused: number; rows: Row[] }> = [];
try {
  if (!await waitUntil(() => ids.every((id) => cluster.httpUrls.has(id)), 30_000)) throw new Error("APIs");
  await new Promise((r) => setTimeout(r, 3_000));
  samples.push({ offered: 0, accepted, refused, rows: await read() });
  let nextSample = STEP;
  const started = performance.now();
  while (accepted < TARGET && refused < 20 * BATCH) {
    await Promise.all(Array.from({ length: CONCURRENCY }, () => oneBatch()));
    if (accepted >= nextSample || refused >= 20 * BATCH) {
      await new Promise((r) => setTimeout(r, 1_000));
      samples.push({ offered: batchNo * BATCH, accepted, refused, rows: await read() });
      const r = samples.at(-1)!.rows;
      console.error(
        `${((performance.now() - started) / 1000).toFixed(0)} s: accepted ${accepted}, refused ${refused}, ` +
          `pending ${r.map((x) => x.pending).join("/")}, heap MB ${r.map((x) => (x.heapUsedBytes / 2 ** 20).toFixed(0)).join("/")}`,
      );
      nextSample = accepted + STEP;
    }
  }
  // Least squares of heap (and RSS) against pending, per node.
  const fit = (xs: number[], ys: number[]) => {
    const n = xs.length;
    const mx = xs.reduce((a, b) => a + b, 0) / n;
    const my = ys.reduce((a, b) => a + b, 0) / n;
    let sxy = 0;
    let sxx = 0;
    for (let i = 0; i < n; i++) {
      sxy += (xs[i]! - mx) * (ys[i]! - my);
      sxx += (xs[i]! - mx) ** 2;
    }
    return sxy / sxx;
  };
  const perNode = ids.map((id, i) => {
    const xs = samples.map((s) => s.rows[i]!.pending);
    return {
      node: id,
      heapBytesPerPendingJob: Math.round(fit(xs, samples.map((s) => s.rows[i]!.heapUsedBytes))),
      rssBytesPerPendingJob: Math.round(fit(xs, samples.map((s) => s.rows[i]!.rssBytes))),
      backlogBytesPerJob: Math.round(
        fit(xs, samples.map((s) => s.rows[i]!.backlogBytes)),
      ),
    };
  });
  console.log(JSON.stringify({ target: TARGET, payloadChars: PAYLOAD_CHARS, backlogMax: BACKLOG_MAX ?? null, accepted, refused, perNode, samples }));
} finally {
  await cluster.stopAll();
}
