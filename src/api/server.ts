/**
 * Puts the API handler on `Deno.serve`, over HTTPS when given a certificate and key (PEM),
 * plain HTTP otherwise (as behind a terminating proxy).
 *
 * Owns the listening socket and its shutdown. What Deno.serve bounds for us (measured with
 * Deno 2.9.6, see tests/api/server_test.ts): request headers past ~64-200 KiB are refused
 * with 400 before the handler runs. What it does not: a client that never finishes its headers
 * keeps its connection (and one file descriptor) open; there is no header-read timeout or
 * connection cap to set. Bodies are bounded and timed by the handler (body.ts).
 */

import { type ApiHandler, type ApiOptions, createApiHandler } from "./handler.ts";
import { errorResponse } from "./errors.ts";

export interface ApiTls {
  /** Certificate chain, PEM. */
  readonly cert: string;
  /** Private key, PEM. */
  readonly key: string;
}

export interface ServeApiOptions extends ApiOptions {
  /** Interface to bind, e.g. "127.0.0.1" or "0.0.0.0". */
  readonly hostname: string;
  /** Port; 0 picks a free one (read it back from the result). */
  readonly port: number;
  readonly tls?: ApiTls;
  /** Aborting it shuts the server down like `shutdown()`. */
  readonly signal?: AbortSignal;
}

export interface ApiServer {
  readonly hostname: string;
  readonly port: number;
  /** Base URL clients use, e.g. `https://127.0.0.1:8080`. */
  readonly url: string;
  readonly handler: ApiHandler;
  /** Resolves once the server has stopped. */
  readonly finished: Promise<void>;
  /** Stops accepting connections and resolves once in-flight requests have been answered. */
  shutdown(): Promise<void>;
}

/** What each file must hold: Deno.serve's own error for a miss names neither flag nor file. */
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
const PEM_PRIVATE_KEY = /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;

/**
 * Reads `--tls-cert` and `--tls-key` files; the error names the flag and the path, also when
 * a file is not a PEM certificate (or key): swapped or junk files failed later, in Deno.serve,
 * as a bare "No certificates found in certificate data" and exit 1.
 */
export async function loadTlsFiles(certPath: string, keyPath: string): Promise<ApiTls> {
  const read = async (
    flag: string,
    path: string,
    pem: RegExp,
    what: string,
  ): Promise<string> => {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (cause) {
      const why = cause instanceof Error ? cause.message : String(cause);
      throw new Error(`${flag} ${path}: cannot read it (${why})`, { cause });
    }
    if (!pem.test(text)) throw new Error(`${flag} ${path}: holds no PEM ${what}`);
    return text;
  };
  return {
    cert: await read("--tls-cert", certPath, PEM_CERTIFICATE, "certificate"),
    key: await read("--tls-key", keyPath, PEM_PRIVATE_KEY, "private key"),
  };
}

/** Binds and serves at once; throws (e.g. AddrInUse, a bad certificate) when it cannot. */
export function serveApi(options: ServeApiOptions): ApiServer {
  const handler = createApiHandler(options);
  const base = {
    hostname: options.hostname,
    port: options.port,
    signal: options.signal,
    onListen: () => {},
    // The handler answers its own errors; this catches what escapes it (a bug) as JSON.
    onError: () =>
      errorResponse({ code: "internal", message: "internal error; the node logged the cause" }),
  };
  const server = options.tls === undefined
    ? Deno.serve(base, handler)
    : Deno.serve({ ...base, cert: options.tls.cert, key: options.tls.key }, handler);
  const addr = server.addr;
  const scheme = options.tls === undefined ? "http" : "https";
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return {
    hostname: addr.hostname,
    port: addr.port,
    url: `${scheme}://${host}:${addr.port}`,
    handler,
    finished: server.finished,
    shutdown: () => server.shutdown(),
  };
}
