/**
 * Receiver outages for chaos runs — TEST-ONLY, on with `hookd sink --faults`. For a while the
 * receiver:
 * - answers `500` or `503` without looking at the webhook (it is not counted as received);
 * - answers slowly: holds each request `slowMs` (longer than the job's attempt timeout), then
 *   handles it anyway, as an overloaded receiver does (the caller has given up and retries:
 *   a duplicate the receiver causes);
 * - resets connections: the TCP front closes every open connection and every new one at once,
 *   so the caller sees its connection drop with no answer at all.
 *
 * Owns the outage state, the handler wrapper (which also serves the control route `GET/POST
 * /faults` on the sink's inner port, reachable while the front resets), and the TCP front that
 * pipes the public port to the sink's inner `Deno.serve` port. Must not count receipts: the
 * sink does, for what reaches it.
 */

import { err, ok, type Result } from "../lib/result.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";

export type ReceiverMode = "ok" | "500" | "503" | "slow" | "reset";

const MODES: ReadonlySet<string> = new Set(["ok", "500", "503", "slow", "reset"]);

export interface ReceiverFaultState {
  readonly mode: ReceiverMode;
  /** Ms until the outage ends by itself, or null (no outage, or until told). */
  readonly remainingMs: number | null;
  readonly slowMs: number;
  /** Requests answered 500/503, held slow, and connections reset, since start. */
  readonly refused: number;
  readonly slowed: number;
  readonly resets: number;
}

/** `POST /faults` body: `{"mode":"503","ms":5000,"slowMs":3000}`. */
export interface ReceiverFaultCommand {
  readonly mode: ReceiverMode;
  readonly ms?: number;
  readonly slowMs?: number;
}

/** Longest outage one command may ask for, ms (a harness that died cannot leave it down). */
const OUTAGE_MS_MAX = 600_000;
/** Largest control body, bytes. */
const CONTROL_BODY_BYTES_MAX = 4_096;

export function decodeReceiverFaultCommand(value: unknown): Result<ReceiverFaultCommand> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return err("the body must be a JSON object with a `mode`");
  }
  const body = value as Record<string, unknown>;
  if (typeof body.mode !== "string" || !MODES.has(body.mode)) {
    return err('mode must be one of "ok", "500", "503", "slow", "reset"');
  }
  const out: { mode: ReceiverMode; ms?: number; slowMs?: number } = {
    mode: body.mode as ReceiverMode,
  };
  for (const key of ["ms", "slowMs"] as const) {
    const v = body[key];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      return err(`${key} must be a non-negative number of milliseconds`);
    }
    out[key] = Math.min(v, OUTAGE_MS_MAX);
  }
  return ok(out);
}

export class ReceiverFaults {
  readonly #runtime: Runtime;
  #mode: ReceiverMode = "ok";
  #untilMs = Infinity;
  #slowMs: number;
  #refused = 0;
  #slowed = 0;
  #resets = 0;
  /** Called when a reset outage begins, so the front drops the connections it holds. */
  onReset: (() => void) | undefined;

  constructor(options: { runtime?: Runtime; slowMs?: number } = {}) {
    this.#runtime = options.runtime ?? realRuntime;
    this.#slowMs = options.slowMs ?? 3_000;
  }

  get mode(): ReceiverMode {
    if (this.#mode !== "ok" && this.#runtime.nowMs() >= this.#untilMs) {
      this.#mode = "ok";
      this.#untilMs = Infinity;
    }
    return this.#mode;
  }

  apply(command: ReceiverFaultCommand): void {
    this.#mode = command.mode;
    this.#untilMs = command.ms === undefined || command.mode === "ok"
      ? Infinity
      : this.#runtime.nowMs() + command.ms;
    if (command.slowMs !== undefined) this.#slowMs = command.slowMs;
    if (command.mode === "reset") this.onReset?.();
  }

  countReset(): void {
    this.#resets++;
  }

  state(): ReceiverFaultState {
    const mode = this.mode;
    return {
      mode,
      remainingMs: mode !== "ok" && Number.isFinite(this.#untilMs)
        ? Math.max(0, Math.round(this.#untilMs - this.#runtime.nowMs()))
        : null,
      slowMs: this.#slowMs,
      refused: this.#refused,
      slowed: this.#slowed,
      resets: this.#resets,
    };
  }

  /** The sink's handler with outages in front of it and the control route beside it. */
  wrap(
    handler: (request: Request) => Promise<Response>,
  ): (request: Request) => Promise<Response> {
    return async (request) => {
      if (new URL(request.url).pathname === "/faults") return await this.#control(request);
      if (request.method !== "POST") return await handler(request);
      switch (this.mode) {
        case "ok":
        case "reset": // Resets happen in the TCP front; a request that got past it is served.
          return await handler(request);
        case "500":
        case "503":
          this.#refused++;
          await request.body?.cancel();
          return new Response("outage (chaos)\n", { status: Number(this.#mode) });
        case "slow": {
          this.#slowed++;
          // Like a real overloaded receiver it still handles the request in the end, whether
          // or not the caller has given up meanwhile (then it counts, and the caller's retry
          // is a duplicate the receiver causes).
          await new Promise<void>((resolve) => this.#runtime.setTimer(this.#slowMs, resolve));
          return await handler(request);
        }
      }
    };
  }

  async #control(request: Request): Promise<Response> {
    if (request.method === "GET") return Response.json(this.state());
    if (request.method !== "POST") return Response.json({ error: "GET or POST" }, { status: 405 });
    const declared = Number(request.headers.get("content-length") ?? "0");
    if (!(declared <= CONTROL_BODY_BYTES_MAX)) {
      await request.body?.cancel();
      return Response.json({ error: "body too large" }, { status: 413 });
    }
    let parsed: unknown;
    try {
      const text = await request.text();
      if (text.length > CONTROL_BODY_BYTES_MAX) throw new Error("too large");
      parsed = JSON.parse(text);
    } catch {
      return Response.json({ error: "the body is not JSON" }, { status: 400 });
    }
    const command = decodeReceiverFaultCommand(parsed);
    if (!command.ok) return Response.json({ error: command.reason }, { status: 400 });
    this.apply(command.value);
    return Response.json(this.state());
  }
}

export interface TcpFront {
  readonly hostname: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Listens on `hostname:port` and pipes every connection to `backendPort` on 127.0.0.1, except
 * while `faults` is in `reset` mode: then a new connection is closed at once and the
 * connections already open are closed when the outage begins.
 */
export function startTcpFront(
  options: { hostname: string; port: number; backendPort: number; faults: ReceiverFaults },
): TcpFront {
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  /** Open client connections → their backend connections. */
  const open = new Map<Deno.Conn, Deno.Conn>();
  const pipes = new Set<Promise<void>>();
  const close = (conn: Deno.Conn) => {
    try {
      conn.close();
    } catch {
      // Already closed.
    }
  };
  const drop = (client: Deno.Conn) => {
    const backend = open.get(client);
    open.delete(client);
    close(client);
    if (backend !== undefined) close(backend);
  };
  options.faults.onReset = () => {
    for (const client of [...open.keys()]) {
      options.faults.countReset();
      drop(client);
    }
  };
  const serve = async (client: Deno.Conn): Promise<void> => {
    if (options.faults.mode === "reset") {
      options.faults.countReset();
      drop(client);
      return;
    }
    let backend: Deno.Conn;
    try {
      backend = await Deno.connect({ hostname: "127.0.0.1", port: options.backendPort });
    } catch {
      drop(client);
      return;
    }
    open.set(client, backend);
    const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
      try {
        await from.readable.pipeTo(to.writable, { preventClose: true });
      } catch {
        // A side went away (or a reset closed it); close both.
      }
      drop(client);
    };
    await Promise.all([pipe(client, backend), pipe(backend, client)]);
  };
  const accepting = (async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        return;
      }
      const p = serve(conn).finally(() => pipes.delete(p));
      pipes.add(p);
    }
  })();
  const addr = listener.addr as Deno.NetAddr;
  return {
    hostname: addr.hostname,
    port: addr.port,
    async close() {
      listener.close();
      await accepting;
      for (const client of [...open.keys()]) drop(client);
      await Promise.all([...pipes]);
    },
  };
}
