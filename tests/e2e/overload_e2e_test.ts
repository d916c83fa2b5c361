/**
 * Issue 9's overload test, on real processes: three nodes with a small API admission bound
 * (`--submits-in-flight-max 4`) are offered far more submits than they can take — a separate
 * load process (overload_flood.ts) with hundreds of concurrent clients that resubmit at once,
 * ignoring Retry-After — for a few seconds, while this process probes every node's /healthz,
 * /readyz and /metrics. What must hold:
 * - every submit is answered (nothing hangs, no connection error): 202, or 503 + Retry-After;
 * - /healthz, /readyz and /metrics answer every probe throughout (/readyz with 200: a busy
 *   node is still ready);
 * - no node is declared dead (no `member-dead` line from any observer);
 * - every job a node acknowledged (202) reaches the receiver, checked by id.
 * Latencies are printed, not asserted as targets (benches measure those); the only time
 * bound asserted is the per-request limit that tells "answered" from "hung".
 */

import { assert, assertEquals } from "../assert.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
} from "../../src/cluster/local_cluster.ts";
import type { HistogramSummary } from "../../src/metrics/histogram.ts";
import { Histogram } from "../../src/metrics/histogram.ts";
import { fromFileUrl } from "../paths.ts";
import { clusterReady, pollUntil } from "./hookd_process.ts";

const NODES = 3;
const IN_FLIGHT_MAX = 4;
/** Concurrent clients in the load process, each resubmitting as soon as it is answered. */
const CLIENTS = 200;
const FLOOD_MS = 5_000;
/** A request not answered within this counts as hung (the test fails). */
const ANSWER_LIMIT_MS = 5_000;
const PROBE_EVERY_MS = 100;
const FLOOD_SCRIPT = fromFileUrl(new URL("./overload_flood.ts", import.meta.url));

interface FloodResult {
  seconds: number;
  accepted: string[];
  refused: number;
  missingRetryAfter: number;
  other: number;
  problems: string[];
  acceptedMs: HistogramSummary;
  refusedMs: HistogramSummary;
}

interface Receiver {
  url: string;
  received: Map<string, number>;
  close(): Promise<void>;
}

function startReceiver(): Receiver {
  const received = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    await r.arrayBuffer();
    const id = r.headers.get("webhook-id");
    if (id !== null) received.set(id, (received.get(id) ?? 0) + 1);
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    close: () => server.shutdown(),
  };
}

function line(s: HistogramSummary): string {
  return `n=${s.count} p50=${s.p50.toFixed(1)} p99=${s.p99.toFixed(1)} max=${s.max.toFixed(1)} ms`;
}

async function runFlood(urls: readonly string[], target: string): Promise<FloodResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-net",
      FLOOD_SCRIPT,
      "--urls",
      urls.join(","),
      "--target",
      target,
      "--clients",
      String(CLIENTS),
      "--ms",
      String(FLOOD_MS),
      "--answer-limit-ms",
      String(ANSWER_LIMIT_MS),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), FLOOD_MS + ANSWER_LIMIT_MS + 30_000);
  try {
    const output = await child.output();
    assert(output.success, `the load process failed (code ${output.code})`);
    return JSON.parse(new TextDecoder().decode(output.stdout));
  } finally {
    clearTimeout(guard);
  }
}

Deno.test({
  name:
    "overload: nodes offered far more than they take answer 503 at once, stay healthy and alive, and deliver every 202",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn() {
    const receiver = startReceiver();
    const specs = localNodeSpecs(NODES, "127.0.0.1", freeUdpPortRange(NODES));
    const ids = specs.map((s) => s.id);
    const deadLines: NodeEventLine[] = [];
    let suspectLines = 0;
    const cluster = new LocalCluster({
      nodes: specs,
      clusterKey: "overload-e2e-cluster-key-0123456789",
      extraArgs: () => [
        "--allow-private-targets",
        "--submits-in-flight-max",
        String(IN_FLIGHT_MAX),
        "--retry-schedule",
        "200,500,1000",
      ],
      onEvent: (event) => {
        if (event.event === "member-dead") deadLines.push(event);
        if (event.event === "member-suspect") suspectLines++;
      },
    });
    try {
      cluster.startAll();
      const ready = await pollUntil(() => clusterReady(cluster, ids), 45_000);
      assert(
        ready,
        `the nodes are ready: views ${
          JSON.stringify([...cluster.views].map(([o, v]) => [o, [...v]]))
        }, APIs ${JSON.stringify([...cluster.httpUrls])}`,
      );
      const urls = ids.map((id) => cluster.httpUrls.get(id)!);

      // Probes from this process, which the load does not share: /healthz, /readyz, /metrics.
      const probeMs = {
        healthz: new Histogram(),
        readyz: new Histogram(),
        metrics: new Histogram(),
      };
      const probeFailures: string[] = [];
      let flooding = true;
      const prober = (async () => {
        while (flooding) {
          await Promise.all(
            urls.flatMap((url) =>
              (["healthz", "readyz", "metrics"] as const).map(async (path) => {
                const startMs = performance.now();
                try {
                  const response = await fetch(`${url}/${path}`, {
                    signal: AbortSignal.timeout(ANSWER_LIMIT_MS),
                  });
                  await response.arrayBuffer();
                  if (response.status === 200) probeMs[path].record(performance.now() - startMs);
                  else probeFailures.push(`${url}/${path}: ${response.status}`);
                } catch (error) {
                  probeFailures.push(`${url}/${path}: ${error}`);
                }
              })
            ),
          );
          await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
        }
      })();
      let flood: FloodResult;
      try {
        flood = await runFlood(urls, receiver.url);
      } finally {
        flooding = false;
        await prober;
      }

      const delivered = await pollUntil(
        () => flood.accepted.every((id) => receiver.received.has(id)),
        30_000,
        100,
      );
      const missing = flood.accepted.filter((id) => !receiver.received.has(id));
      const duplicates = [...receiver.received.values()].filter((n) => n > 1).length;
      const answered = flood.accepted.length + flood.refused;
      console.error(
        `overload e2e (${NODES} real nodes, --submits-in-flight-max ${IN_FLIGHT_MAX}, ` +
          `${CLIENTS} clients in a load process for ${flood.seconds.toFixed(1)} s): ` +
          `${answered} submits answered (${(answered / flood.seconds).toFixed(0)}/s), ` +
          `${flood.accepted.length} accepted, ${flood.refused} refused 503; as the load ` +
          `process saw them: 202 ${line(flood.acceptedMs)}, 503 ${line(flood.refusedMs)}; ` +
          `probes from the test process: /healthz ${line(probeMs.healthz.summary())}, ` +
          `/readyz ${line(probeMs.readyz.summary())}, /metrics ${
            line(probeMs.metrics.summary())
          }; ` +
          `member-suspect lines ${suspectLines}; ` +
          `delivered ${flood.accepted.length - missing.length}/${flood.accepted.length} ` +
          `(${duplicates} ids more than once)`,
      );

      assertEquals(flood.problems, [], "every submit answered 202 or 503");
      assertEquals(flood.other, 0);
      assert(flood.refused > flood.accepted.length, "offered far more than the nodes took");
      assert(flood.accepted.length > 0, "the nodes still took jobs");
      assertEquals(flood.missingRetryAfter, 0, "every 503 says when to come back");
      assertEquals(
        probeFailures,
        [],
        "/healthz, /readyz (200: ready) and /metrics answered every probe",
      );
      assert(probeMs.healthz.count >= NODES * 5, "the nodes were probed throughout");
      assertEquals(deadLines, [], "no node was declared dead");
      assert(delivered, `every acknowledged job reached the receiver; missing ${missing.length}`);
    } finally {
      await cluster.stopAll();
      await receiver.close();
    }
  },
});
