/**
 * The overload test's load: its own process (so the test's probes of /healthz and /metrics are
 * not queued behind it), `--clients` concurrent clients that each POST a job, and as soon as it
 * is answered the next, to the nodes in turn, until `--ms` has passed — ignoring Retry-After,
 * so the nodes are offered far more than they take.
 *
 * Run by tests/e2e/overload_e2e_test.ts: `deno run --allow-net overload_flood.ts --urls A,B
 * --target URL --clients N --ms M --answer-limit-ms L`. Prints one JSON line on stdout: the
 * ids acknowledged (202), the number refused (503) and how many lacked Retry-After, anything
 * else (other statuses, errors, hangs past the limit) with its first few descriptions, and
 * latency summaries as this process saw them (its own event-loop queueing included).
 */

import { parseArgs } from "node:util";
import { Histogram } from "../../src/metrics/histogram.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    urls: { type: "string" },
    target: { type: "string" },
    clients: { type: "string" },
    ms: { type: "string" },
    "answer-limit-ms": { type: "string" },
  },
});
const urls = String(values.urls).split(",");
const clients = Number(values.clients);
const floodMs = Number(values.ms);
const answerLimitMs = Number(values["answer-limit-ms"]);
const body = JSON.stringify({ url: values.target, payload: { load: true }, maxAttempts: 10 });

const accepted: string[] = [];
const acceptedMs = new Histogram();
const refusedMs = new Histogram();
const problems: string[] = [];
let other = 0;
let missingRetryAfter = 0;
const startedMs = performance.now();
const endsMs = startedMs + floodMs;

async function client(index: number): Promise<void> {
  let round = 0;
  while (performance.now() < endsMs) {
    const url = urls[(index + round++) % urls.length]!;
    const sentMs = performance.now();
    try {
      const response = await fetch(`${url}/v1/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(answerLimitMs),
      });
      const text = await response.text();
      const ms = performance.now() - sentMs;
      if (response.status === 202) {
        accepted.push(JSON.parse(text).id);
        acceptedMs.record(ms);
      } else if (response.status === 503) {
        refusedMs.record(ms);
        if (response.headers.get("retry-after") === null) missingRetryAfter++;
      } else {
        other++;
        if (problems.length < 5) problems.push(`${response.status} ${text.slice(0, 200)}`);
      }
    } catch (error) {
      other++;
      if (problems.length < 5) problems.push(String(error));
    }
  }
}

await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
console.log(JSON.stringify({
  seconds: (performance.now() - startedMs) / 1000,
  accepted,
  refused: refusedMs.count,
  missingRetryAfter,
  other,
  problems,
  acceptedMs: acceptedMs.summary(),
  refusedMs: refusedMs.summary(),
}));
