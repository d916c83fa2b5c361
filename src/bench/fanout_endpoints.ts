/**
 * The endpoints of `hookd bench --fanout K` (docs/endpoints.md): K endpoints, each subscribed
 * to the one event type the sweep sends and each at its own path on the sink
 * (`/hook/1` … `/hook/K`), so the sink can tell an event's K deliveries apart (they all carry
 * the event's id as `webhook-id`). They are created through a node's API before the first
 * step, and the sweep waits until every node lists them all: a node answers an event's fan-out
 * from its own endpoint table, and one that had not yet received a create would fan out to
 * fewer endpoints.
 *
 * Owns the endpoints' shape and their setup; the sweep (sweep.ts) owns the cluster and the sink.
 * Talks to the nodes over HTTP only.
 */

/** The one event type every step sends and every bench endpoint takes. */
export const FANOUT_EVENT_TYPE = "bench.fanout";

/** The sink path of endpoint `k` (1-based). */
export function fanoutPath(k: number): string {
  return `/hook/${k}`;
}

/** Each endpoint's sink path, endpoint 1 first. */
export function fanoutPaths(fanout: number): string[] {
  return Array.from({ length: fanout }, (_, i) => fanoutPath(i + 1));
}

export interface FanoutSetupOptions {
  /** The nodes' HTTP API base URLs; creates go to the first, reads to every one. */
  readonly httpUrls: readonly string[];
  /** The sink's base URL (`http://host:port`). */
  readonly sinkUrl: string;
  readonly fanout: number;
  /** Longest the whole setup (creates and the wait for every node) may take, ms. */
  readonly limitMs: number;
  readonly log: (line: string) => void;
}

/** Pause between two tries of a create refused 503 (a cluster still forming its majority). */
const RETRY_PAUSE_MS = 250;
/** The list page size asked for while waiting (the bench makes at most `FANOUT_MAX`). */
export const FANOUT_MAX = 100;

/**
 * Creates the K endpoints (each with an `Idempotency-Key`, so a create retried after a 503
 * that was in fact stored makes no second endpoint) and waits until every node lists every one.
 * Returns their ids, endpoint 1 first; throws when the limit passes first.
 */
export async function createFanoutEndpoints(options: FanoutSetupOptions): Promise<string[]> {
  if (!Number.isInteger(options.fanout) || options.fanout < 1 || options.fanout > FANOUT_MAX) {
    throw new Error(`fanout must be an integer in [1, ${FANOUT_MAX}], got ${options.fanout}`);
  }
  const deadline = performance.now() + options.limitMs;
  const base = options.httpUrls[0];
  if (base === undefined) throw new Error("no node to create the endpoints on");
  const ids: string[] = [];
  for (const [i, path] of fanoutPaths(options.fanout).entries()) {
    const body = JSON.stringify({
      url: `${options.sinkUrl}${path}`,
      event_types: [FANOUT_EVENT_TYPE],
      description: `hookd bench --fanout: endpoint ${i + 1} of ${options.fanout}`,
    });
    // Bounded by the deadline: every pass either returns, throws or pauses RETRY_PAUSE_MS.
    for (;;) {
      const answer = await postJson(`${base}/v1/endpoints`, body, `hookd-bench-fanout-${i + 1}`);
      if (answer.status === 201 && typeof answer.json?.id === "string") {
        ids.push(answer.json.id);
        break;
      }
      if (answer.status !== 503 && answer.status !== 0) {
        throw new Error(`creating bench endpoint ${i + 1}: ${answer.status} ${answer.text}`);
      }
      if (performance.now() > deadline) {
        throw new Error(`bench endpoint ${i + 1} was not created within ${options.limitMs} ms`);
      }
      await sleep(RETRY_PAUSE_MS);
    }
  }
  options.log(`created ${ids.length} endpoints taking ${FANOUT_EVENT_TYPE}: ${ids.join(", ")}`);
  const want = new Set(ids);
  for (const url of options.httpUrls) {
    for (;;) {
      const listed = await listedIds(url);
      if ([...want].every((id) => listed.has(id))) break;
      if (performance.now() > deadline) {
        throw new Error(`${url} did not list every bench endpoint within ${options.limitMs} ms`);
      }
      await sleep(RETRY_PAUSE_MS);
    }
  }
  return ids;
}

/** The endpoint ids a node lists on its first page (the bench's endpoints fit in it). */
async function listedIds(baseUrl: string): Promise<Set<string>> {
  try {
    const response = await fetch(`${baseUrl}/v1/endpoints?limit=${FANOUT_MAX}`, {
      signal: AbortSignal.timeout(5_000),
    });
    const json = await response.json() as { items?: Array<{ id?: unknown }> };
    return new Set((json.items ?? []).map((e) => String(e.id)));
  } catch {
    return new Set();
  }
}

/** POSTs JSON; status 0 when no answer came (a refused connection, a timeout). */
async function postJson(
  url: string,
  body: string,
  idempotencyKey: string,
): Promise<{ status: number; text: string; json: Record<string, unknown> | undefined }> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    let json: Record<string, unknown> | undefined;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    return { status: response.status, text: text.slice(0, 300), json };
  } catch (error) {
    return { status: 0, text: String(error), json: undefined };
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
