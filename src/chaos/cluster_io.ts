/**
 * What a chaos run asks of the processes it runs, over HTTP and their stdout: the sink process
 * and its receipts and outage control, the nodes' readiness, dead letters, job views and commit
 * conflicts, and healing everything at the end.
 *
 * Owns those requests (each bounded by a timeout) and the sink process; decides nothing.
 */

import { hookdCommand } from "../process/self_command.ts";
import { type LocalCluster, waitUntil } from "../cluster/local_cluster.ts";
import { readLines } from "../lib/lines.ts";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Free TCP ports on loopback: bound, read and released (a small race, fine locally). */
export function freeTcpPorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}

// ---- helpers -------------------------------------------------------------------------------

/** POSTs `body` as JSON; whether the answer was 2xx (false also on no answer). */
export async function postJson(url: string, body: unknown): Promise<boolean> {
  return (await postJsonAnswer(url, body))?.ok ?? false;
}

/** POSTs `body`; the answer's JSON when it is 2xx, else undefined (also on no answer). */
export async function postJsonForJson(url: string, body: unknown): Promise<unknown> {
  const answer = await postJsonAnswer(url, body);
  if (answer?.ok !== true) return undefined;
  try {
    return JSON.parse(answer.text);
  } catch {
    return undefined;
  }
}

/** One JSON POST with a 2-s bound: whether 2xx and its body, or undefined when nobody answered. */
async function postJsonAnswer(
  url: string,
  body: unknown,
): Promise<{ ok: boolean; text: string } | undefined> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(2_000),
    });
    if (!response.ok) {
      await response.body?.cancel();
      return { ok: false, text: "" };
    }
    return { ok: true, text: await response.text() };
  } catch {
    return undefined;
  }
}

export async function getJson(url: string, timeoutMs = 5_000): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return await response.json();
}

export async function waitReady(
  cluster: LocalCluster,
  ids: readonly string[],
  control: ReadonlyMap<string, unknown>,
  limitMs: number,
): Promise<void> {
  const deadline = performance.now() + limitMs;
  for (const id of ids) {
    for (;;) {
      const url = cluster.httpUrls.get(id);
      const ready = url !== undefined && control.has(id) &&
        await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
          async (r) => (await r.body?.cancel(), r.status === 200),
          () => false,
        );
      if (ready) break;
      if (performance.now() > deadline) {
        throw new Error(`node ${id} not ready within ${limitMs} ms`);
      }
      await sleep(100);
    }
  }
}

export async function healEverything(
  cluster: LocalCluster,
  ids: readonly string[],
  control: Map<string, { faultsUrl: string; pid: number }>,
  stopped: Set<string>,
  sinkFaultsUrl: string,
): Promise<void> {
  for (const id of stopped) {
    const pid = control.get(id)?.pid;
    if (pid === undefined) continue;
    try {
      Deno.kill(pid, "SIGCONT");
    } catch {
      // Gone: the restart below brings it back.
    }
  }
  stopped.clear();
  for (const id of ids) if (!cluster.isRunning(id)) cluster.start(id);
  await waitUntil(() => ids.every((id) => control.has(id) && cluster.httpUrls.has(id)), 30_000);
  await Promise.all(ids.map((id) => {
    const url = control.get(id)?.faultsUrl;
    return url === undefined ? false : postJson(`${url}/faults`, { op: "heal" });
  }));
  await postJson(`${sinkFaultsUrl}/faults`, { mode: "ok" });
}

export interface SinkProcess {
  readonly url: string;
  readonly faultsUrl: string;
  close(): Promise<void>;
}

export async function startSinkProcess(
  log: (line: string) => void,
  slowMs: number,
): Promise<SinkProcess> {
  const child = hookdCommand([
    "sink",
    "--listen",
    "127.0.0.1:0",
    "--faults",
    "--slow-ms",
    String(slowMs),
  ]).spawn();
  const lines = readLines(child.stdout);
  const stderr = (async () => {
    for await (const line of readLines(child.stderr)) if (line !== "") log(`[sink] ${line}`);
  })();
  const first = await lines.next();
  if (first.done) throw new Error("the sink exited before it listened");
  const listening = JSON.parse(first.value) as { listening: string; faults: string };
  const rest = (async () => {
    for await (const _ of lines) { /* final stats line */ }
  })();
  return {
    url: `http://${listening.listening}`,
    faultsUrl: listening.faults,
    async close() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Gone.
      }
      await Promise.all([child.status, rest, stderr]);
    },
  };
}

export type Receipt = { at: number; duplicates: number } | null;

/**
 * The sink's receipt of each id, in order. Throws when the sink cannot answer for every id
 * (a short answer, or ids it forgot past its bound): a verdict on a partial list could pass a
 * run that lost jobs.
 */
export async function sinkReceipts(sinkUrl: string, ids: readonly string[]): Promise<Receipt[]> {
  const out: Receipt[] = [];
  const chunk = 50_000;
  for (let i = 0; i < ids.length; i += chunk) {
    const asked = ids.slice(i, i + chunk);
    const response = await fetch(`${sinkUrl}/receipts`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ids: asked }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = await response.json() as { receipts?: unknown; ids_reset?: unknown };
    if (!Array.isArray(body.receipts) || body.receipts.length !== asked.length) {
      throw new Error(`the sink answered ${response.status} without a receipt per id`);
    }
    if (body.ids_reset !== 0) throw new Error("the sink forgot ids (its idsMax was reached)");
    out.push(...body.receipts as Receipt[]);
  }
  return out;
}

export async function sinkStats(sinkUrl: string): Promise<Record<string, unknown>> {
  try {
    return await getJson(`${sinkUrl}/stats`) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export async function receiverCounts(faultsUrl: string): Promise<Record<string, number>> {
  try {
    const state = await getJson(`${faultsUrl}/faults`) as Record<string, unknown>;
    const out: Record<string, number> = {};
    for (const k of ["refused", "slowed", "resets"]) out[k] = Number(state[k]);
    return out;
  } catch {
    return {};
  }
}

export async function deadLetterIds(
  cluster: LocalCluster,
  ids: readonly string[],
): Promise<Set<string>> {
  const out = new Set<string>();
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) continue;
    try {
      const page = await getJson(`${url}/v1/dead-letters?limit=1000`) as {
        items?: Array<{ id?: string }>;
      };
      for (const item of page.items ?? []) if (typeof item.id === "string") out.add(item.id);
    } catch {
      // A node that does not answer lists nothing.
    }
  }
  return out;
}

export async function jobViews(
  cluster: LocalCluster,
  ids: readonly string[],
  jobId: string,
): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) continue;
    try {
      const response = await fetch(`${url}/v1/jobs/${jobId}`, {
        signal: AbortSignal.timeout(5_000),
      });
      const view = await response.json() as Record<string, unknown>;
      if (response.status !== 200) {
        out.push([id, `${response.status}`]);
        continue;
      }
      const history = Array.isArray(view.attempts) ? view.attempts.length : 0;
      out.push([id, `state ${view.state}, owner ${view.owner}, ${history} attempts recorded`]);
    } catch (error) {
      out.push([id, `no answer (${error instanceof Error ? error.message : error})`]);
    }
  }
  return out;
}

/** The sum of `hookd_jobs_scheduled` over the nodes, or undefined if one did not answer. */
export async function scheduledJobs(
  cluster: LocalCluster,
  ids: readonly string[],
): Promise<number | undefined> {
  let total = 0;
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) return undefined;
    try {
      const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) }))
        .text();
      const line = text.split("\n").find((l) => l.startsWith("hookd_jobs_scheduled "));
      const value = Number(line?.slice(line.lastIndexOf(" ") + 1));
      if (line === undefined || !Number.isFinite(value)) return undefined;
      total += value;
    } catch {
      return undefined;
    }
  }
  return total;
}

export async function commitConflicts(
  cluster: LocalCluster,
  ids: readonly string[],
): Promise<number> {
  let total = 0;
  for (const id of ids) {
    const url = cluster.httpUrls.get(id);
    if (url === undefined) continue;
    try {
      const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) }))
        .text();
      for (const line of text.split("\n")) {
        if (line.startsWith("hookd_jobs_commit_conflicts_total")) {
          total += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
        }
      }
    } catch {
      // Counted as none; the run's other checks see a node that does not answer.
    }
  }
  return total;
}
