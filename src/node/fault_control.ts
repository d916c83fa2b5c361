/**
 * The fault-injection control port — TEST-ONLY, served only by a node started with
 * `--fault-injection`, on loopback, on a port of its own (never on the API's port, so the
 * API's route table and OpenAPI document know nothing of it):
 *
 * - `GET /faults` → the injector's state (`FaultState`);
 * - `POST /faults` with a `FaultCommand` (`{"op":"partition","from":["127.0.0.1:7102"],"ms":5000}`,
 *   `{"op":"loss","probability":0.3,"ms":4000}`, `{"op":"wal-fail","kind":"fsync"}`,
 *   `{"op":"heal"}`) → 200 and the new state, or 400 `{"error": reason}`.
 *
 * Owns the listening socket and request decoding; the faults themselves are the injector's.
 */

import { readBoundedBody } from "../api/body.ts";
import { realRuntime } from "../lib/runtime.ts";
import { decodeFaultCommand, type FaultInjector } from "./fault_injection.ts";

export interface FaultControlServer {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  shutdown(): Promise<void>;
}

/** How long a control request may take to send its body, ms (a harness sends it at once). */
const BODY_TIMEOUT_MS = 5_000;

/** Serves the control port on 127.0.0.1 (port 0: a free one). */
export function serveFaultControl(injector: FaultInjector, port = 0): FaultControlServer {
  const handler = async (request: Request): Promise<Response> => {
    const { pathname } = new URL(request.url);
    if (pathname !== "/faults") return Response.json({ error: "not found" }, { status: 404 });
    if (request.method === "GET") return Response.json(injector.state());
    if (request.method !== "POST") {
      return Response.json({ error: "GET or POST" }, {
        status: 405,
        headers: { allow: "GET, POST" },
      });
    }
    const body = await readBoundedBody(request, {
      bytesMax: injector.config.controlBodyBytesMax,
      timeoutMs: BODY_TIMEOUT_MS,
      runtime: realRuntime,
    });
    if (!body.ok) return Response.json({ error: `body: ${body.reason}` }, { status: 400 });
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body.value));
    } catch {
      return Response.json({ error: "the body is not JSON" }, { status: 400 });
    }
    const command = decodeFaultCommand(parsed, injector.config);
    if (!command.ok) return Response.json({ error: command.reason }, { status: 400 });
    injector.apply(command.value);
    return Response.json(injector.state());
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, handler);
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    shutdown: () => server.shutdown(),
  };
}
