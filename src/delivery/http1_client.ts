/**
 * hookd's own HTTP/1.1 client for plain-HTTP deliveries: one POST written on a pooled
 * keep-alive TCP connection, its response read by http1_response.ts.
 *
 * Why not `fetch`: a keep-alive POST through `fetch` cost 140-173 µs of the client's CPU on the
 * 2-core machine, the same exchange written and read on a `Deno.Conn` 27 µs
 * (bench/results/cost/http_client_floor.txt); at 1,600 jobs/s the delivery was the nodes' largest
 * component (361 µs a job, bench/results/cost/cost_6924e98.json). HTTPS keeps `fetch` (TLS, and
 * the pinned relay: http_transport.ts).
 *
 * Owns its idle connections (per dialled `host:port`, closed after `idleMs` or by `close()`).
 * Must not decide where to connect (the SSRF guard's pin comes in as `hostname`), nor what an
 * answer means. Aborting the signal closes the connection, which ends any read or write.
 * A POST that finds a reused connection closed before any byte of an answer (the receiver
 * timed the idle connection out as we wrote) is sent once more on a new connection: the
 * receiver closed it without answering, as `fetch` also retries. A webhook is delivered at
 * least once anyway, with the same `webhook-id`.
 */

import { type Http1Response, Http1ResponseReader } from "./http1_response.ts";

export interface Http1Request {
  /** Where to connect: the checked address (or the URL's host when none is pinned). */
  readonly hostname: string;
  readonly port: number;
  /** The `Host` header: the URL's own host. */
  readonly host: string;
  /** Path and query, starting with "/". */
  readonly target: string;
  /** Validated already (a `Headers` refuses CR and LF); connection-level names are skipped. */
  readonly headers: Iterable<[string, string]>;
  readonly body: string;
  readonly signal: AbortSignal;
}

export interface Http1ClientOptions {
  /** Response body bytes kept. */
  readonly bodyBytesMax: number;
  /** An idle connection is closed after this long. @default 4_000 */
  readonly idleMs?: number;
  /** Idle connections kept per `host:port`. @default 64 */
  readonly idlePerTargetMax?: number;
}

/** Headers the client writes itself; a job's own are dropped (validation refuses them too). */
const CONNECTION_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection"]);
const HEAD_BYTES_MAX = 16_384;
/** Body bytes read past what is kept so that the connection can be reused. */
const DRAIN_BYTES_MAX = 65_536;
/** Below Node's and most servers' 5-s keep-alive timeout, so we rarely reuse a closing one. */
const IDLE_MS_DEFAULT = 4_000;
const IDLE_PER_TARGET_DEFAULT = 64;
/** Read size: a webhook receiver's answer is a few hundred bytes. */
const READ_BYTES = 4_096;

interface IdleConn {
  readonly conn: Deno.TcpConn;
  readonly idleSinceMs: number;
}

export class Http1Client {
  readonly #options: Http1ClientOptions;
  readonly #idle = new Map<string, IdleConn[]>();
  readonly #busy = new Set<Deno.Conn>();
  readonly #encoder = new TextEncoder();
  #closed = false;
  /** Connections opened, for tests and the reuse figures. */
  connectionsOpened = 0;

  constructor(options: Http1ClientOptions) {
    this.#options = options;
  }

  /** Sends the POST; throws on a network or protocol error (the caller reports it). */
  async post(request: Http1Request): Promise<Http1Response> {
    const bytes = this.#encode(request);
    const key = `${request.hostname}:${request.port}`;
    const reused = this.#takeIdle(key);
    if (reused !== undefined) {
      const result = await this.#exchange(reused, key, bytes, request.signal);
      if (result.ok) return result.response;
      if (!result.retryable || request.signal.aborted) throw result.error;
    }
    const conn = await this.#dial(request);
    const result = await this.#exchange(conn, key, bytes, request.signal);
    if (result.ok) return result.response;
    throw result.error;
  }

  /** Closes every connection, idle or in use. */
  close(): void {
    this.#closed = true;
    for (const list of this.#idle.values()) for (const { conn } of list) closeQuietly(conn);
    this.#idle.clear();
    for (const conn of this.#busy) closeQuietly(conn);
    this.#busy.clear();
  }

  #encode(request: Http1Request): Uint8Array {
    const body = this.#encoder.encode(request.body);
    let head = `POST ${request.target} HTTP/1.1\r\nhost: ${request.host}\r\n`;
    for (const [name, value] of request.headers) {
      if (CONNECTION_HEADERS.has(name.toLowerCase())) continue;
      head += `${name}: ${value}\r\n`;
    }
    head += `content-length: ${body.length}\r\n\r\n`;
    const headBytes = this.#encoder.encode(head);
    const out = new Uint8Array(headBytes.length + body.length);
    out.set(headBytes, 0);
    out.set(body, headBytes.length);
    return out;
  }

  #takeIdle(key: string): Deno.TcpConn | undefined {
    const list = this.#idle.get(key);
    if (list === undefined) return undefined;
    const nowMs = performance.now();
    const idleMs = this.#options.idleMs ?? IDLE_MS_DEFAULT;
    while (list.length > 0) {
      const { conn, idleSinceMs } = list.pop()!;
      if (nowMs - idleSinceMs < idleMs) {
        if (list.length === 0) this.#idle.delete(key);
        return conn;
      }
      closeQuietly(conn);
    }
    this.#idle.delete(key);
    return undefined;
  }

  #release(key: string, conn: Deno.TcpConn): void {
    if (this.#closed) {
      closeQuietly(conn);
      return;
    }
    const nowMs = performance.now();
    const idleMs = this.#options.idleMs ?? IDLE_MS_DEFAULT;
    let list = this.#idle.get(key);
    if (list === undefined) {
      list = [];
      this.#idle.set(key, list);
    }
    // The oldest are at the front: drop the expired ones, and one if the list is full.
    while (list.length > 0 && nowMs - list[0]!.idleSinceMs >= idleMs) {
      closeQuietly(list.shift()!.conn);
    }
    if (list.length >= (this.#options.idlePerTargetMax ?? IDLE_PER_TARGET_DEFAULT)) {
      closeQuietly(list.shift()!.conn);
    }
    list.push({ conn, idleSinceMs: nowMs });
  }

  async #dial(request: Http1Request): Promise<Deno.TcpConn> {
    if (this.#closed) throw new Error("client closed");
    if (request.signal.aborted) throw request.signal.reason;
    const connecting = Deno.connect({ hostname: request.hostname, port: request.port });
    const onAbort = () => void connecting.then(closeQuietly, () => {});
    request.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const conn = await connecting;
      if (request.signal.aborted) {
        closeQuietly(conn);
        throw request.signal.reason;
      }
      conn.setNoDelay(true);
      this.connectionsOpened++;
      return conn;
    } finally {
      request.signal.removeEventListener("abort", onAbort);
    }
  }

  async #exchange(
    conn: Deno.TcpConn,
    key: string,
    bytes: Uint8Array,
    signal: AbortSignal,
  ): Promise<
    | { ok: true; response: Http1Response }
    | { ok: false; retryable: boolean; error: Error }
  > {
    if (signal.aborted) {
      closeQuietly(conn);
      return { ok: false, retryable: false, error: asError(signal.reason) };
    }
    this.#busy.add(conn);
    const onAbort = () => closeQuietly(conn);
    signal.addEventListener("abort", onAbort, { once: true });
    const reader = new Http1ResponseReader({
      headBytesMax: HEAD_BYTES_MAX,
      bodyBytesMax: this.#options.bodyBytesMax,
      drainBytesMax: DRAIN_BYTES_MAX,
    });
    // One buffer per exchange: reads on other connections run at the same time.
    const buffer = new Uint8Array(READ_BYTES);
    let keep = false;
    try {
      for (let offset = 0; offset < bytes.length;) {
        offset += await conn.write(bytes.subarray(offset));
      }
      for (;;) {
        const n = await conn.read(buffer);
        const step = n === null ? reader.end() : reader.push(buffer.subarray(0, n));
        if (step.kind === "more") continue;
        if (step.kind === "error") {
          return { ok: false, retryable: !reader.started, error: new Error(step.message) };
        }
        keep = step.response.reusable;
        return { ok: true, response: step.response };
      }
    } catch (error) {
      return {
        ok: false,
        retryable: !reader.started && !signal.aborted,
        error: signal.aborted ? asError(signal.reason) : asError(error),
      };
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#busy.delete(conn);
      if (keep && !signal.aborted) this.#release(key, conn);
      else closeQuietly(conn);
    }
  }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Closed already.
  }
}
