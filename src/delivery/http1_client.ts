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
 * Owns its connections: idle ones per dialled `host:port`, each with one read outstanding so
 * that bytes or a close while idle (a late or doubled answer, a proxy's 408, the receiver's
 * keep-alive timeout) retire it before it could be taken for the next POST's answer; idle ones
 * are closed after `idleMs` by one sweep timer armed only while any is idle, and all by
 * `close()`. Must not decide where to connect (the SSRF guard's pin comes in as `hostname`),
 * nor what an answer means. Aborting the signal closes the connection, which ends a connect,
 * a read or a write.
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
/** Idle connections kept over every target; past it a finished one is closed, not kept. */
const IDLE_TOTAL_MAX = 1_024;
/** Read size: a webhook receiver's answer is a few hundred bytes. */
const READ_BYTES = 4_096;

/** One TCP connection and the read buffer its exchanges use (one exchange at a time). */
class PooledConn {
  readonly buffer = new Uint8Array(READ_BYTES);
  /** The read started when it went idle: the next exchange's first read, if it is reused. */
  pending: Promise<number | null> | undefined;
  /** The pending read finished while idle: bytes or a close nobody asked for. */
  stale = false;
  idle = false;
  idleSinceMs = 0;

  constructor(readonly conn: Deno.TcpConn, readonly key: string) {}

  close(): void {
    try {
      this.conn.close();
    } catch {
      // Closed already.
    }
  }
}

type Exchange =
  | { ok: true; response: Http1Response }
  | { ok: false; retryable: boolean; error: Error };

export class Http1Client {
  readonly #options: Http1ClientOptions;
  /** Per target, oldest first. */
  readonly #idle = new Map<string, PooledConn[]>();
  #idleCount = 0;
  readonly #busy = new Set<PooledConn>();
  #sweep: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** Connections opened, for tests and the reuse figures. */
  connectionsOpened = 0;

  constructor(options: Http1ClientOptions) {
    this.#options = options;
  }

  /** Connections kept idle for reuse, for tests. */
  get idleConnections(): number {
    return this.#idleCount;
  }

  /** Sends the POST; throws on a network or protocol error (the caller reports it). */
  async post(request: Http1Request): Promise<Http1Response> {
    const bytes = encodeRequest(request);
    const key = `${request.hostname}:${request.port}`;
    const reused = this.#takeIdle(key);
    if (reused !== undefined) {
      const result = await this.#exchange(reused, bytes, request.signal);
      if (result.ok) return result.response;
      if (!result.retryable || request.signal.aborted) throw result.error;
    }
    const pooled = await this.#dial(request, key);
    const result = await this.#exchange(pooled, bytes, request.signal);
    if (result.ok) return result.response;
    throw result.error;
  }

  /** Closes every connection, idle or in use. */
  close(): void {
    this.#closed = true;
    for (const list of this.#idle.values()) for (const pooled of list) pooled.close();
    this.#idle.clear();
    this.#idleCount = 0;
    for (const pooled of this.#busy) pooled.close();
    this.#busy.clear();
    if (this.#sweep !== undefined) clearTimeout(this.#sweep);
    this.#sweep = undefined;
  }

  #idleMs(): number {
    return this.#options.idleMs ?? IDLE_MS_DEFAULT;
  }

  #takeIdle(key: string): PooledConn | undefined {
    const list = this.#idle.get(key);
    if (list === undefined) return undefined;
    const nowMs = performance.now();
    // The newest first: the one least likely to be closing.
    for (let pooled = list.pop(); pooled !== undefined; pooled = list.pop()) {
      this.#idleCount--;
      pooled.idle = false;
      if (!pooled.stale && nowMs - pooled.idleSinceMs < this.#idleMs()) {
        if (list.length === 0) this.#idle.delete(key);
        return pooled;
      }
      pooled.close();
    }
    this.#idle.delete(key);
    return undefined;
  }

  #release(pooled: PooledConn): void {
    if (this.#closed || this.#idleCount >= IDLE_TOTAL_MAX) {
      pooled.close();
      return;
    }
    let list = this.#idle.get(pooled.key);
    if (list === undefined) {
      list = [];
      this.#idle.set(pooled.key, list);
    }
    if (list.length >= (this.#options.idlePerTargetMax ?? IDLE_PER_TARGET_DEFAULT)) {
      this.#retire(list[0]!);
    }
    pooled.idle = true;
    pooled.stale = false;
    pooled.idleSinceMs = performance.now();
    list.push(pooled);
    this.#idleCount++;
    // Anything the peer sends or a close while we do not wait for an answer retires it.
    const pending = pooled.conn.read(pooled.buffer);
    pooled.pending = pending;
    const onIdleRead = () => {
      if (pooled.pending !== pending) return;
      pooled.stale = true;
      if (pooled.idle) this.#retire(pooled);
    };
    pending.then(onIdleRead, onIdleRead);
    this.#armSweep();
  }

  /** Closes an idle connection and forgets it. */
  #retire(pooled: PooledConn): void {
    const list = this.#idle.get(pooled.key);
    const index = list?.indexOf(pooled) ?? -1;
    if (list !== undefined && index >= 0) {
      list.splice(index, 1);
      this.#idleCount--;
      if (list.length === 0) this.#idle.delete(pooled.key);
    }
    pooled.idle = false;
    pooled.close();
  }

  /** One timer, only while something is idle, at the oldest idle connection's expiry. */
  #armSweep(): void {
    if (this.#sweep !== undefined || this.#idleCount === 0 || this.#closed) return;
    let oldestMs = Infinity;
    for (const list of this.#idle.values()) oldestMs = Math.min(oldestMs, list[0]!.idleSinceMs);
    const delayMs = Math.max(0, oldestMs + this.#idleMs() - performance.now());
    const sweep = setTimeout(() => {
      this.#sweep = undefined;
      const nowMs = performance.now();
      for (const list of [...this.#idle.values()]) {
        for (const pooled of [...list]) {
          if (nowMs - pooled.idleSinceMs >= this.#idleMs()) this.#retire(pooled);
        }
      }
      this.#armSweep();
    }, delayMs);
    this.#sweep = sweep;
    // An idle pool must not keep the process (or a test) alive.
    Deno.unrefTimer(sweep);
  }

  async #dial(request: Http1Request, key: string): Promise<PooledConn> {
    if (this.#closed) throw new Error("client closed");
    if (request.signal.aborted) throw asError(request.signal.reason);
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({
        hostname: request.hostname,
        port: request.port,
        signal: request.signal,
      });
    } catch (error) {
      throw request.signal.aborted ? asError(request.signal.reason) : asError(error);
    }
    if (request.signal.aborted || this.#closed) {
      conn.close();
      throw asError(request.signal.reason ?? new Error("client closed"));
    }
    conn.setNoDelay(true);
    this.connectionsOpened++;
    return new PooledConn(conn, key);
  }

  async #exchange(pooled: PooledConn, bytes: Uint8Array, signal: AbortSignal): Promise<Exchange> {
    if (signal.aborted) {
      pooled.close();
      return { ok: false, retryable: false, error: asError(signal.reason) };
    }
    this.#busy.add(pooled);
    const onAbort = () => pooled.close();
    signal.addEventListener("abort", onAbort, { once: true });
    const reader = new Http1ResponseReader({
      headBytesMax: HEAD_BYTES_MAX,
      bodyBytesMax: this.#options.bodyBytesMax,
      drainBytesMax: DRAIN_BYTES_MAX,
    });
    let keep = false;
    try {
      const { conn, buffer } = pooled;
      for (let offset = 0; offset < bytes.length;) {
        offset += await conn.write(bytes.subarray(offset));
      }
      // A reused connection's first read is the one it has had outstanding since it went idle.
      let next = pooled.pending ?? conn.read(buffer);
      pooled.pending = undefined;
      for (;;) {
        const n = await next;
        const step = n === null ? reader.end() : reader.push(buffer.subarray(0, n));
        if (step.kind === "error") {
          return { ok: false, retryable: !reader.started, error: new Error(step.message) };
        }
        if (step.kind === "done") {
          keep = step.response.reusable;
          return { ok: true, response: step.response };
        }
        next = conn.read(buffer);
      }
    } catch (error) {
      return {
        ok: false,
        retryable: !reader.started && !signal.aborted,
        error: signal.aborted ? asError(signal.reason) : asError(error),
      };
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#busy.delete(pooled);
      if (keep && !signal.aborted) this.#release(pooled);
      else pooled.close();
    }
  }
}

/**
 * The request's bytes. Header values are byte strings (a `Headers` refuses anything else), so
 * the head is written one byte per character, as `fetch` writes Latin-1 values; the body is
 * UTF-8.
 */
function encodeRequest(request: Http1Request): Uint8Array {
  let head = `POST ${request.target} HTTP/1.1\r\nhost: ${request.host}\r\n`;
  for (const [name, value] of request.headers) {
    if (CONNECTION_HEADERS.has(name.toLowerCase())) continue;
    head += `${name}: ${value}\r\n`;
  }
  const body = new TextEncoder().encode(request.body);
  head += `content-length: ${body.length}\r\n\r\n`;
  const out = new Uint8Array(head.length + body.length);
  for (let i = 0; i < head.length; i++) out[i] = head.charCodeAt(i) & 0xff;
  out.set(body, head.length);
  return out;
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
