/**
 * The webhook sink: a real receiver on `Deno.serve` for benchmarks and tests. It answers 204
 * to every POST, counts receipts and duplicates by (request path, `webhook-id`), measures
 * latency from the `hookd-submitted-at` header (epoch ms) when a job carries one, optionally
 * verifies signatures with the `standardwebhooks` package, and serves its figures on GET /stats
 * and the clock it reads receipts on at GET /clock (`{"now_ms": …}`).
 * POST /receipts `{"ids":[…], "path"?: "/hook/2"}` answers, for each id, when it first arrived
 * at that path (epoch ms, the `performance.timeOrigin + performance.now()` clock) and how many
 * duplicates followed there, or null: the sweeps join it with what their generator had
 * acknowledged to find lost jobs and per-step latencies. Without `path` it is `/hook`
 * (`SINK_JOB_PATH`), where every harness sends its plain jobs.
 *
 * Why the path: every delivery of one event carries the event's id as `webhook-id`, to every
 * endpoint alike (docs/endpoints.md). Keyed by id alone, an event's K deliveries to K endpoints
 * (`/hook/1` … `/hook/K` on one sink) would count as one receipt and K − 1 duplicates. Keyed
 * by (path, id), a duplicate is what it says: the same endpoint receiving the same id again.
 *
 * Owns its server and counters. Bounded: ids remembered for duplicate detection are capped
 * (`idsMax`); past it the set is cleared and `ids_reset` counts how often, so duplicates
 * could then go unseen. A body past `bodyBytesMax` is answered 413 unread (`too_large`).
 */

import process from "node:process";
import { Webhook } from "standardwebhooks";
import { Histogram, type HistogramSummary } from "../metrics/histogram.ts";
import { readTextAtMost } from "../lib/bounded_text.ts";

export interface SinkOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  /** `whsec_` secret; when set, every POST's signature is checked (401 when it fails). */
  secret?: string;
  /** @default 5_000_000 */
  idsMax?: number;
  /** Largest request body read, bytes (4x hookd's largest payload). @default 1_048_576 */
  bodyBytesMax?: number;
  /** Wraps the request handler (chaos runs put receiver outages in front of it). */
  wrapHandler?: (handler: (request: Request) => Promise<Response>) => (
    request: Request,
  ) => Promise<Response>;
}

/** One id's receipt, as POST /receipts answers it. */
export interface SinkReceipt {
  /** First arrival, epoch ms. */
  at: number;
  /** Arrivals after the first. */
  duplicates: number;
}

/** The path POST /receipts asks about when its body names none. */
export const SINK_JOB_PATH = "/hook";

/** Most ids one POST /receipts may ask about. */
export const RECEIPT_IDS_PER_REQUEST_MAX = 100_000;

export interface SinkStats {
  received: number;
  /** Distinct (path, webhook-id) pairs received. */
  unique: number;
  /** Receipts of a (path, webhook-id) pair after its first. */
  duplicates: number;
  signature_failures: number;
  missing_id: number;
  ids_reset: number;
  too_large: number;
  latency_ms: HistogramSummary;
  /** User + system CPU of the sink process so far (`process.cpuUsage`, getrusage), ms. */
  cpu_ms: number;
}

export interface Sink {
  readonly hostname: string;
  readonly port: number;
  stats(): SinkStats;
  close(): Promise<void>;
}

const SUBMITTED_AT_HEADER = "hookd-submitted-at";

export function startSink(options: SinkOptions): Promise<Sink> {
  const idsMax = options.idsMax ?? 5_000_000;
  const verifier = options.secret !== undefined ? new Webhook(options.secret) : undefined;
  // receiptKey(path, id) → first arrival (epoch ms); duplicates only for the few that have any.
  let ids = new Map<string, number>();
  let duplicatesById = new Map<string, number>();
  const counts = {
    received: 0,
    unique: 0,
    duplicates: 0,
    signature_failures: 0,
    missing_id: 0,
    ids_reset: 0,
    too_large: 0,
  };
  const bodyBytesMax = options.bodyBytesMax ?? 1_048_576;
  const latency = new Histogram();
  const stats = (): SinkStats => {
    const cpu = process.cpuUsage();
    return { ...counts, latency_ms: latency.summary(), cpu_ms: (cpu.user + cpu.system) / 1000 };
  };

  const handler = async (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/stats") {
      return Response.json(stats());
    }
    if (request.method === "GET" && path === "/clock") {
      // The clock receipts are read on: a sweep sets it against its own (bench/clock_offset.ts).
      return Response.json({ now_ms: performance.timeOrigin + performance.now() });
    }
    if (request.method === "POST" && path === "/receipts") {
      return await receipts(request);
    }
    if (request.method !== "POST") return new Response("POST only\n", { status: 405 });
    const body = await readBody(request, bodyBytesMax);
    if (body === undefined) {
      counts.too_large++;
      return new Response("body too large\n", { status: 413 });
    }
    const nowMs = performance.timeOrigin + performance.now();
    if (verifier !== undefined) {
      try {
        // jsonParse off: the sink checks signatures, not what the payload says.
        verifier.verify(body, Object.fromEntries(request.headers), { jsonParse: false });
      } catch {
        counts.signature_failures++;
        return new Response("bad signature\n", { status: 401 });
      }
    }
    counts.received++;
    const id = request.headers.get("webhook-id");
    const key = id === null ? undefined : receiptKey(path, id);
    if (key === undefined) {
      counts.missing_id++;
    } else if (ids.has(key)) {
      counts.duplicates++;
      duplicatesById.set(key, (duplicatesById.get(key) ?? 0) + 1);
    } else {
      if (ids.size >= idsMax) {
        ids = new Map();
        duplicatesById = new Map();
        counts.ids_reset++;
      }
      ids.set(key, nowMs);
      counts.unique++;
    }
    const submitted = request.headers.get(SUBMITTED_AT_HEADER);
    if (submitted !== null) {
      const submittedMs = Number(submitted);
      if (Number.isFinite(submittedMs)) latency.record(Math.max(0, nowMs - submittedMs));
    }
    return new Response(null, { status: 204 });
  };

  const receipts = async (request: Request): Promise<Response> => {
    let asked: unknown;
    let path: unknown;
    try {
      const body = await request.json() as { ids?: unknown; path?: unknown };
      asked = body?.ids;
      path = body?.path ?? SINK_JOB_PATH;
    } catch {
      return new Response("body must be JSON\n", { status: 400 });
    }
    if (typeof path !== "string" || !path.startsWith("/")) {
      return new Response("path must be a string starting with /\n", { status: 400 });
    }
    if (
      !Array.isArray(asked) || asked.length > RECEIPT_IDS_PER_REQUEST_MAX ||
      !asked.every((id) => typeof id === "string")
    ) {
      return new Response(
        `ids must be an array of at most ${RECEIPT_IDS_PER_REQUEST_MAX} strings\n`,
        { status: 400 },
      );
    }
    const out: Array<SinkReceipt | null> = (asked as string[]).map((id) => {
      const key = receiptKey(path as string, id);
      const at = ids.get(key);
      return at === undefined ? null : { at, duplicates: duplicatesById.get(key) ?? 0 };
    });
    return Response.json({ receipts: out, ids_reset: counts.ids_reset });
  };

  return new Promise((resolve) => {
    const server = Deno.serve({
      hostname: options.hostname,
      port: options.port,
      onListen: () => {},
    }, options.wrapHandler?.(handler) ?? handler);
    const addr = server.addr as Deno.NetAddr;
    resolve({
      hostname: addr.hostname,
      port: addr.port,
      stats,
      close: () => server.shutdown(),
    });
  });
}

/**
 * One receipt's key: the path, then the id. A URL's pathname never holds a raw space (the URL
 * parser percent-encodes it), so the first space splits the two unambiguously.
 */
function receiptKey(path: string, id: string): string {
  return `${path} ${id}`;
}

/** The body as text, or undefined (the rest unread) once it passes `maxBytes`. */
async function readBody(request: Request, maxBytes: number): Promise<string | undefined> {
  const length = request.headers.get("content-length");
  if (length !== null) {
    // Deno.serve holds the body to its declared length: read it whole on the fast path.
    return Number(length) > maxBytes ? undefined : await request.text();
  }
  return await readTextAtMost(request.body, maxBytes);
}
