/**
 * Five `hookd node` processes on loopback and a receiver in the test process, for the
 * end-to-end tests of the replicated store (store_e2e_test.ts, odd_input_e2e_test.ts).
 *
 * Owns the cluster's start, the receiver and the submit helper; each test owns its cluster
 * and must stop it.
 */

import { assert } from "../assert.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  waitUntil,
} from "../../src/cluster/local_cluster.ts";

const CLUSTER_KEY = "store-e2e-test-cluster-key-0123456789";

export interface Receiver {
  url: string;
  /** webhook-id → deliveries (2xx answers). */
  received: Map<string, number>;
  /** While true the receiver answers 503 (an outage), so owners hold their jobs pending. */
  failing: boolean;
  close(): Promise<void>;
}

export function startReceiver(): Receiver {
  const receiver: Receiver = {
    url: "",
    received: new Map(),
    failing: false,
    close: () => Promise.resolve(),
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      await request.arrayBuffer();
      if (receiver.failing) return new Response("outage", { status: 503 });
      const id = request.headers.get("webhook-id");
      if (id !== null) receiver.received.set(id, (receiver.received.get(id) ?? 0) + 1);
      return new Response(null, { status: 204 });
    },
  );
  receiver.url = `http://127.0.0.1:${server.addr.port}/hook`;
  receiver.close = () => server.shutdown();
  return receiver;
}

/** The `hookd node` flags every node gets unless the test names its own. */
const NODE_FLAGS = ["--allow-private-targets", "--retry-schedule", "200,500,1000,2000"];

/** Five nodes, every one ready; `nodeFlags` replaces `NODE_FLAGS` (e.g. a shorter schedule). */
export async function startCluster(
  nodeFlags: readonly string[] = NODE_FLAGS,
): Promise<{ cluster: LocalCluster; ids: string[] }> {
  const specs = localNodeSpecs(5, "127.0.0.1", freeUdpPortRange(5));
  const cluster = new LocalCluster({
    nodes: specs,
    clusterKey: CLUSTER_KEY,
    extraArgs: () => [...nodeFlags],
    onStderr: () => {},
  });
  cluster.startAll();
  const ids = specs.map((s) => s.id);
  try {
    assert(await waitUntil(() => ids.every((id) => cluster.httpUrls.has(id)), 30_000), "APIs up");
    assert(await waitUntil(async () => await allReady(cluster, ids), 30_000), "nodes ready");
  } catch (error) {
    // The caller gets no cluster to stop: stop its processes and remove its data here.
    await cluster.stopAll();
    throw error;
  }
  return { cluster, ids };
}

export async function ready(cluster: LocalCluster, id: string): Promise<boolean> {
  const url = cluster.httpUrls.get(id);
  if (url === undefined) return false;
  try {
    const response = await fetch(`${url}/readyz`);
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

export async function allReady(cluster: LocalCluster, ids: readonly string[]): Promise<boolean> {
  for (const id of ids) if (!await ready(cluster, id)) return false;
  return true;
}

export type SubmitResult = { status: number; id?: string; code?: string };

export async function submit(
  cluster: LocalCluster,
  node: string,
  target: string,
  n: number,
): Promise<SubmitResult> {
  const url = cluster.httpUrls.get(node);
  if (url === undefined) return { status: 0 };
  try {
    const response = await fetch(`${url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: target, payload: { n } }),
      signal: AbortSignal.timeout(5_000),
    });
    const body = await response.json();
    return { status: response.status, id: body.id, code: body.error?.code };
  } catch {
    return { status: 0 };
  }
}

/** What the API answered a POST: its status, Retry-After, and the fields of its JSON body. */
export interface ApiAnswer {
  status: number;
  retryAfter: string | null;
  id?: string;
  code?: string;
  field?: string;
  message?: string;
}

/** POSTs `body` as JSON to `base` + `path` (bounded at 10 s) and reads the answer. */
export async function postJson(base: string, path: string, body: unknown): Promise<ApiAnswer> {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = await response.json();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    id: json.id,
    code: json.error?.code,
    field: json.error?.field,
    message: json.error?.message,
  };
}
