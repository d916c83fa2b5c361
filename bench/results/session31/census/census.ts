// Datagram census: scrape every node's /metrics, submit N jobs at R/s round-robin, wait, scrape
// again, and print each counter's change per job (summed over the nodes).
// Usage: deno run -A census.ts API1,API2,… SINK_URL N RATE SECRET
const [apiList, sink, nText, rateText, secret] = Deno.args;
if (apiList === undefined || sink === undefined || secret === undefined) {
  throw new Error("usage: census.ts API1,API2,… SINK_URL N RATE SECRET");
}
const apis = apiList.split(",");
const n = Number(nText ?? 1000), rate = Number(rateText ?? 200);
async function scrape(): Promise<Map<string, number>> {
  const sum = new Map<string, number>();
  for (const a of apis) {
    const text = await (await fetch(`${a}/metrics`)).text();
    for (const line of text.split("\n")) {
      if (line.startsWith("#") || line === "") continue;
      const i = line.lastIndexOf(" ");
      const k = line.slice(0, i), v = Number(line.slice(i + 1));
      if (!Number.isFinite(v) || k.includes("_bucket") || k.includes("quantile")) continue;
      sum.set(k, (sum.get(k) ?? 0) + v);
    }
  }
  return sum;
}
const before = await scrape();
const t0 = performance.now();
const pending: Promise<unknown>[] = [];
for (let i = 0; i < n; i++) {
  const due = t0 + (i * 1000) / rate;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  pending.push(fetch(`${apis[i % apis.length]!}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url: sink, secret, payload: { i } }) }).then((r) => r.text()));
}
await Promise.all(pending);
await new Promise((r) => setTimeout(r, 3000));
const after = await scrape();
const rows: [string, number][] = [];
for (const [k, v] of after) {
  const d = v - (before.get(k) ?? 0);
  if (d !== 0 && /transport|repl|acks|fsync|wal|timers|membership|swim|gossip|deliver/.test(k)) rows.push([k, d / n]);
}
rows.sort((a, b) => a[0] < b[0] ? -1 : 1);
for (const [k, v] of rows) console.log(v.toFixed(3).padStart(10), k);
