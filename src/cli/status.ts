/**
 * `hookd status`: one job in detail (`hookd status --node URL JOB_ID`), or the cluster as the
 * nodes see it: the SWIM members with their state and incarnation (from the first node that
 * answers), jobs by state, and per API node its role and key figures from its /metrics.
 *
 * What the figures mean (the README says the same):
 * - submits/s, refused/s, delivered/s: counter increases between two scrapes of each node's
 *   /metrics `--window` seconds apart (default 1 s), so they are rates NOW, not since start;
 *   the cluster line sums the nodes listed with --node (list them all for the whole cluster).
 * - delivery p99: submit to a 2xx at the receiver, as the node that delivered measured it,
 *   over every delivery since that node started (its histogram is never reset). The cluster
 *   figure is the highest node's p99: an upper bound of the p99 of all those deliveries.
 *
 * Owns the command's flags, output and exit codes: 0 shown, 1 refused (no such job, a bad
 * token), 2 usage, 3 no node answered.
 */

import { booleanFlag, type CommandSpec, numberFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import {
  type ApiAnswer,
  ApiClient,
  apiClientFlags,
  apiErrorOf,
  cliConfig,
  clientOptionsFromFlags,
  describeAnswer,
  EXIT_UNAVAILABLE,
  isUnavailable,
  NODE_ENV,
} from "./api_client.ts";
import { decodeJobJson } from "./job_follow.ts";
import { realRuntime } from "../lib/runtime.ts";
import { formatDuration, formatNumber, renderJob, renderTable } from "./render.ts";
import {
  type ParsedMetrics,
  parsePrometheusText,
  sampleValue,
  sumSamples,
} from "../metrics/prometheus_text.ts";

const spec: CommandSpec = {
  name: "status",
  summary: "Show one job in detail, or the cluster: members, jobs by state, key figures",
  positionals: "[JOB_ID]",
  flags: {
    ...apiClientFlags,
    node: {
      ...apiClientFlags.node!,
      help: "A node's API base URL; repeat or comma-separate: the cluster view comes from the " +
        "first that answers, the figures from every one listed (list them all) " +
        `(else $${NODE_ENV})`,
    },
    window: {
      type: "string",
      valueName: "S",
      help: `Seconds between the two /metrics scrapes rates are taken over; 0: no rates ` +
        `(default: ${cliConfig.statusWindowMs / 1000})`,
    },
    json: { type: "boolean", help: "Print one JSON object instead of tables" },
  },
};

export const statusCommand: LeafCommand = {
  spec,
  async run(args) {
    const client = new ApiClient(clientOptionsFromFlags("status", args.values));
    const json = booleanFlag(args.values, "json");
    if (args.positionals.length > 1) {
      throw new UsageError("hookd status: give at most one JOB_ID");
    }
    const jobId = args.positionals[0];
    if (jobId !== undefined) return await showJob(client, jobId, json);
    const windowMs = numberFlag(args.values, "window", cliConfig.statusWindowMs / 1000, {
      min: 0,
      max: 600,
    }) * 1000;
    return await showCluster(client, windowMs, json);
  },
};

async function showJob(client: ApiClient, id: string, json: boolean): Promise<number> {
  const tried: ApiAnswer[] = [];
  for (const node of client.nodes) {
    const answer = await client.request(node, "GET", `/v1/jobs/${encodeURIComponent(id)}`);
    tried.push(answer);
    if (isUnavailable(answer)) continue;
    const job = answer.kind === "answered" && answer.status === 200
      ? decodeJobJson(answer.json)
      : undefined;
    if (job === undefined) {
      console.error(`hookd status: ${describeAnswer(answer)}`);
      return EXIT_FAILURE;
    }
    console.log(
      json
        ? JSON.stringify(answer.kind === "answered" ? answer.json : job)
        : renderJob(job, Date.now()),
    );
    return EXIT_OK;
  }
  console.error(`hookd status: no node answered: ${tried.map(describeAnswer).join("; ")}`);
  return EXIT_UNAVAILABLE;
}

/** What one API node said about itself. */
interface NodeReport {
  url: string;
  /** Why it could not be read; the rest is absent then. */
  error?: string;
  nodeId?: string;
  role?: string;
  acceptedTotal?: number;
  refusedTotal?: number;
  deliveredTotal?: number;
  acceptedPerS?: number;
  refusedPerS?: number;
  deliveredPerS?: number;
  /** Over every delivery since the node started. */
  deliveryP99Ms?: number;
  deliveries?: number;
}

interface Scrape {
  atMs: number;
  metrics: ParsedMetrics;
}

interface Counters {
  accepted: number | undefined;
  refused: number | undefined;
  delivered: number | undefined;
}

function countersOf(metrics: ParsedMetrics): Counters {
  const rejected = sumSamples(metrics, "hookd_api_jobs_total", { outcome: "rejected" });
  const admission = sumSamples(metrics, "hookd_api_admission_rejected_total");
  return {
    accepted: sampleValue(metrics, "hookd_api_jobs_total", { outcome: "accepted" }),
    refused: rejected === undefined && admission === undefined
      ? undefined
      : (rejected ?? 0) + (admission ?? 0),
    delivered: sampleValue(metrics, "hookd_delivery_delivered_total"),
  };
}

async function scrape(client: ApiClient, node: string): Promise<Scrape | string> {
  const answer = await client.request(node, "GET", "/metrics");
  if (answer.kind !== "answered" || answer.status !== 200) return describeAnswer(answer);
  return { atMs: realRuntime.nowMs(), metrics: parsePrometheusText(answer.text) };
}

async function showCluster(client: ApiClient, windowMs: number, json: boolean): Promise<number> {
  const startedMs = realRuntime.nowMs();
  const [views, firstScrapes] = await Promise.all([
    Promise.all(client.nodes.map((node) => client.request(node, "GET", "/v1/cluster"))),
    Promise.all(client.nodes.map((node) => scrape(client, node))),
  ]);
  // Only nodes that answered the first scrape are scraped again.
  const leftMs = windowMs - (realRuntime.nowMs() - startedMs);
  if (windowMs > 0 && leftMs > 0) {
    await new Promise<void>((resolve) => realRuntime.setTimer(leftMs, resolve));
  }
  const secondScrapes = windowMs > 0
    ? await Promise.all(
      client.nodes.map((node, i) =>
        typeof firstScrapes[i] === "string" ? Promise.resolve(undefined) : scrape(client, node)
      ),
    )
    : client.nodes.map(() => undefined);

  const reports: NodeReport[] = client.nodes.map((url, i) => {
    const view = views[i]!;
    const first = firstScrapes[i]!;
    const second = secondScrapes[i];
    if (view.kind === "unreachable" || (view.status !== 200 && typeof first === "string")) {
      return { url, error: describeAnswer(view) };
    }
    const report: NodeReport = { url };
    const body = view.status === 200 ? view.json as Record<string, unknown> | undefined : undefined;
    if (typeof body?.nodeId === "string") report.nodeId = body.nodeId;
    if (typeof body?.role === "string") report.role = body.role;
    if (view.status !== 200) report.error = describeAnswer(view);
    if (typeof first === "string") {
      report.error = first;
      return report;
    }
    const latest = second !== undefined && typeof second !== "string" ? second : first;
    const now = countersOf(latest.metrics);
    if (now.accepted !== undefined) report.acceptedTotal = now.accepted;
    if (now.refused !== undefined) report.refusedTotal = now.refused;
    if (now.delivered !== undefined) report.deliveredTotal = now.delivered;
    const p99 = sampleValue(latest.metrics, "hookd_delivery_latency_ms", { quantile: "0.99" });
    const count = sampleValue(latest.metrics, "hookd_delivery_latency_ms_count");
    if (count !== undefined) report.deliveries = count;
    if (p99 !== undefined && (count ?? 0) > 0) report.deliveryP99Ms = p99;
    if (second !== undefined && typeof second !== "string" && second.atMs > first.atMs) {
      const seconds = (second.atMs - first.atMs) / 1000;
      const before = countersOf(first.metrics);
      const rate = (a: number | undefined, b: number | undefined) =>
        a !== undefined && b !== undefined ? Math.max(0, b - a) / seconds : undefined;
      const accepted = rate(before.accepted, now.accepted);
      const refused = rate(before.refused, now.refused);
      const delivered = rate(before.delivered, now.delivered);
      if (accepted !== undefined) report.acceptedPerS = accepted;
      if (refused !== undefined) report.refusedPerS = refused;
      if (delivered !== undefined) report.deliveredPerS = delivered;
    } else if (second !== undefined && typeof second === "string") {
      report.error = `second scrape failed: ${second}`;
    }
    return report;
  });

  const viewIndex = views.findIndex((v) => v.kind === "answered" && v.status === 200);
  if (viewIndex === -1) {
    const refused = views.find((v) => !isUnavailable(v));
    if (refused !== undefined) {
      const hint = apiErrorOf(refused)?.code === "unauthorized" ? " (pass --api-token)" : "";
      console.error(`hookd status: ${describeAnswer(refused)}${hint}`);
      return EXIT_FAILURE;
    }
    console.error(`hookd status: no node answered: ${views.map(describeAnswer).join("; ")}`);
    return EXIT_UNAVAILABLE;
  }
  const viewAnswer = views[viewIndex] as Extract<ApiAnswer, { kind: "answered" }>;
  const view = (viewAnswer.json ?? {}) as ClusterJson;
  const totals = sumReports(reports);
  if (json) {
    console.log(JSON.stringify({
      viewFrom: viewAnswer.node,
      view: viewAnswer.json,
      windowMs,
      nodes: reports,
      totals,
    }));
    return EXIT_OK;
  }
  console.log(renderCluster(viewAnswer.node, view, reports, totals, windowMs));
  return EXIT_OK;
}

interface ClusterJson {
  nodeId?: string;
  address?: string;
  voters?: number;
  quorum?: number;
  votersReachable?: number;
  role?: string;
  members?: Array<
    { nodeId?: string; address?: string; state?: string; incarnation?: number; voter?: boolean }
  >;
  jobs?: Record<string, number>;
}

interface Totals {
  acceptedPerS?: number;
  refusedPerS?: number;
  deliveredPerS?: number;
  /** The highest node p99: an upper bound of the p99 over all their deliveries. */
  deliveryP99MsMax?: number;
  deliveries: number;
  nodesReporting: number;
}

function sumReports(reports: readonly NodeReport[]): Totals {
  const sum = (pick: (r: NodeReport) => number | undefined) => {
    const values = reports.map(pick).filter((v): v is number => v !== undefined);
    return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0);
  };
  const p99s = reports.map((r) => r.deliveryP99Ms).filter((v): v is number => v !== undefined);
  const totals: Totals = {
    deliveries: sum((r) => r.deliveries) ?? 0,
    nodesReporting: reports.filter((r) => r.acceptedTotal !== undefined).length,
  };
  const accepted = sum((r) => r.acceptedPerS);
  const refused = sum((r) => r.refusedPerS);
  const delivered = sum((r) => r.deliveredPerS);
  if (accepted !== undefined) totals.acceptedPerS = accepted;
  if (refused !== undefined) totals.refusedPerS = refused;
  if (delivered !== undefined) totals.deliveredPerS = delivered;
  if (p99s.length > 0) totals.deliveryP99MsMax = Math.max(...p99s);
  return totals;
}

function renderCluster(
  from: string,
  view: ClusterJson,
  reports: readonly NodeReport[],
  totals: Totals,
  windowMs: number,
): string {
  const lines: string[] = [];
  lines.push(
    `cluster as ${view.nodeId ?? "?"} (${from}) sees it: role ${view.role ?? "?"}, ` +
      `${view.votersReachable ?? "?"} of ${view.voters ?? "?"} voters reachable, ` +
      `quorum ${view.quorum ?? "?"}`,
  );
  lines.push("");
  const apiOf = new Map(reports.filter((r) => r.nodeId).map((r) => [r.nodeId!, r]));
  lines.push(renderTable(
    ["MEMBER", "ADDRESS", "STATE", "INCARNATION", "VOTER", "API"],
    (view.members ?? []).map((m) => [
      m.nodeId ?? "?",
      m.address ?? "?",
      m.state ?? "?",
      m.incarnation !== undefined ? String(m.incarnation) : "?",
      m.voter === true ? "yes" : "no",
      apiOf.get(m.nodeId ?? "")?.url ?? "-",
    ]),
  ));
  lines.push("");
  const jobs = view.jobs ?? {};
  lines.push(
    `jobs held by ${view.nodeId ?? "?"}: ` +
      ["pending", "delivering", "delivered", "dead"].map((s) => `${s} ${jobs[s] ?? "?"}`).join(
        ", ",
      ) +
      " (every node holds every job; delivered jobs are kept for the node's --retention, at most --retention-max of them)",
  );
  lines.push("");
  const rate = (v: number | undefined) => formatNumber(v, 1);
  lines.push(renderTable(
    [
      "NODE",
      "API",
      "ROLE",
      "SUBMITS/S",
      "REFUSED/S",
      "DELIVERED/S",
      "ACCEPTED",
      "DELIVERED",
      "DELIVERY P99",
    ],
    reports.map((r) =>
      r.acceptedTotal === undefined && r.error !== undefined
        ? [r.nodeId ?? "?", r.url, r.role ?? "-", `unreachable: ${r.error}`]
        : [
          r.nodeId ?? "?",
          r.url,
          r.role ?? "-",
          rate(r.acceptedPerS),
          rate(r.refusedPerS),
          rate(r.deliveredPerS),
          formatNumber(r.acceptedTotal, 0),
          formatNumber(r.deliveredTotal, 0),
          r.deliveryP99Ms !== undefined ? formatDuration(r.deliveryP99Ms) : "-",
        ]
    ),
  ));
  lines.push("");
  const over = windowMs > 0
    ? `over the last ${formatDuration(windowMs)} (two /metrics scrapes)`
    : "(no rates: --window 0)";
  lines.push(
    `submits ${rate(totals.acceptedPerS)}/s accepted, ${rate(totals.refusedPerS)}/s refused, ` +
      `${rate(totals.deliveredPerS)}/s delivered ${over}, summed over the ` +
      `${totals.nodesReporting} node(s) listed with --node`,
  );
  lines.push(
    totals.deliveryP99MsMax !== undefined
      ? `delivery p99 (submit to 2xx) at most ${formatDuration(totals.deliveryP99MsMax)} over ` +
        `${totals.deliveries} deliveries since the nodes started (the highest node's p99)`
      : "delivery p99: no deliveries yet on the nodes listed",
  );
  return lines.join("\n");
}
