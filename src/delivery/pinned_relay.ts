/**
 * The in-process CONNECT relay that pins HTTPS deliveries to the address the SSRF guard
 * checked. `fetch` has no way to be told "connect to this IP, but speak TLS for that name":
 * given a host name it resolves the name itself, so a DNS answer that changes between the
 * guard's lookup and the connection (rebinding) would reach an address nobody checked. Given a
 * proxy, though, it sends `CONNECT host:port` and runs TLS end to end through the tunnel, SNI
 * and certificate check for the URL's own name. This relay is that proxy: it answers each
 * CONNECT by dialling the address the guard pinned for `host:port`, never by resolving the name.
 *
 * Owns one loopback listener (started on first use), the tunnels through it and their bounds.
 * Only this process can use it: every CONNECT must carry `Proxy-Authorization` with a random
 * secret made at start, so another local process cannot borrow it as an open proxy. A CONNECT
 * for a target with no pin is refused (403); the relay never resolves a name. Plain-HTTP
 * deliveries do not come here: they are sent to the pinned IP with a `Host` header
 * (http_transport.ts).
 */

export interface RelayTarget {
  readonly hostname: string;
  readonly port: number;
}

export interface PinnedRelayOptions {
  /** The checked address for a CONNECT target (`host`, `port` as the URL names them). */
  readonly pinned: (host: string, port: number) => RelayTarget | undefined;
  /** Tunnels open at once; past it a CONNECT is refused 503. @default 1_024 */
  readonly tunnelsMax?: number;
  /** Longest a client may take to send its CONNECT head, and a dial may take, ms. @default 10_000 */
  readonly handshakeTimeoutMs?: number;
}

/** Largest CONNECT request head read, bytes. */
const HEAD_BYTES_MAX = 8_192;

export class PinnedRelay {
  readonly #options: PinnedRelayOptions;
  readonly #secret = Array.from(crypto.getRandomValues(new Uint8Array(24)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  readonly #tunnels = new Set<Deno.Conn>();
  readonly #work = new Set<Promise<void>>();
  #listener: Deno.Listener | undefined;
  #accepting: Promise<void> | undefined;
  #closed = false;
  /** CONNECTs refused (bad secret, no pin, too many, dial failure), for tests and logs. */
  refused = 0;

  constructor(options: PinnedRelayOptions) {
    this.#options = options;
  }

  /** The proxy settings for `Deno.createHttpClient`; starts the listener on first use. */
  proxy(): Deno.Proxy {
    if (this.#closed) throw new Error("relay closed");
    if (this.#listener === undefined) this.#start();
    const port = (this.#listener!.addr as Deno.NetAddr).port;
    return {
      url: `http://127.0.0.1:${port}`,
      basicAuth: { username: "hookd", password: this.#secret },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    try {
      this.#listener?.close();
    } catch {
      // Already closed.
    }
    await this.#accepting;
    for (const conn of this.#tunnels) closeQuietly(conn);
    await Promise.all([...this.#work]);
  }

  #start(): void {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#listener = listener;
    this.#accepting = (async () => {
      for (;;) {
        let conn: Deno.Conn;
        try {
          conn = await listener.accept();
        } catch {
          return;
        }
        const work = this.#serve(conn).catch(() => closeQuietly(conn)).finally(() =>
          this.#work.delete(work)
        );
        this.#work.add(work);
      }
    })();
  }

  async #serve(client: Deno.Conn): Promise<void> {
    const tunnelsMax = this.#options.tunnelsMax ?? 1_024;
    const timeoutMs = this.#options.handshakeTimeoutMs ?? 10_000;
    if (this.#tunnels.size >= tunnelsMax) {
      await this.#refuse(client, "503 Service Unavailable");
      return;
    }
    this.#tunnels.add(client);
    let upstream: Deno.Conn | undefined;
    try {
      const head = await readHead(client, timeoutMs);
      const request = head === undefined ? undefined : parseConnect(head.text);
      if (request === undefined) {
        await this.#refuse(client, "400 Bad Request");
        return;
      }
      if (!timingSafeEqual(request.authorization, `Basic ${btoa(`hookd:${this.#secret}`)}`)) {
        await this.#refuse(client, "407 Proxy Authentication Required");
        return;
      }
      const target = this.#options.pinned(request.host, request.port);
      if (target === undefined) {
        await this.#refuse(client, "403 Forbidden");
        return;
      }
      try {
        upstream = await Deno.connect({
          hostname: target.hostname,
          port: target.port,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch {
        await this.#refuse(client, "502 Bad Gateway");
        return;
      }
      this.#tunnels.add(upstream);
      await writeAll(
        client,
        new TextEncoder().encode("HTTP/1.1 200 Connection Established\r\n\r\n"),
      );
      if (head!.rest.length > 0) await writeAll(upstream, head!.rest);
      const up = upstream;
      await Promise.all([pipe(client, up), pipe(up, client)]);
    } finally {
      this.#tunnels.delete(client);
      closeQuietly(client);
      if (upstream !== undefined) {
        this.#tunnels.delete(upstream);
        closeQuietly(upstream);
      }
    }
  }

  async #refuse(client: Deno.Conn, status: string): Promise<void> {
    this.refused++;
    try {
      await writeAll(
        client,
        new TextEncoder().encode(`HTTP/1.1 ${status}\r\ncontent-length: 0\r\n\r\n`),
      );
    } catch {
      // The client went away.
    }
    this.#tunnels.delete(client);
    closeQuietly(client);
  }
}

interface ConnectRequest {
  readonly host: string;
  readonly port: number;
  readonly authorization: string;
}

/** `CONNECT host:port HTTP/1.1` and its Proxy-Authorization, or undefined. Never throws. */
export function parseConnect(head: string): ConnectRequest | undefined {
  const lines = head.split("\r\n");
  const match = /^CONNECT (\S+) HTTP\/1\.[01]$/.exec(lines[0] ?? "");
  if (match === null) return undefined;
  const authority = match[1]!;
  // `host:port`, `[v6]:port`, or a bare host (port 443, what CONNECT is for).
  const colon = authority.lastIndexOf(":");
  const bare = colon < 0 || authority.endsWith("]");
  let host = bare ? authority : authority.slice(0, colon);
  if (host === "") return undefined;
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  const portText = bare ? "443" : authority.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port === 0 || port > 65_535) return undefined;
  let authorization = "";
  for (const line of lines.slice(1)) {
    const sep = line.indexOf(":");
    if (sep > 0 && line.slice(0, sep).trim().toLowerCase() === "proxy-authorization") {
      authorization = line.slice(sep + 1).trim();
    }
  }
  return { host: host.toLowerCase(), port, authorization };
}

/** Reads up to the blank line ending the head (bounded in bytes and time). */
async function readHead(
  conn: Deno.Conn,
  timeoutMs: number,
): Promise<{ text: string; rest: Uint8Array } | undefined> {
  const buffer = new Uint8Array(HEAD_BYTES_MAX);
  let filled = 0;
  const timer = setTimeout(() => closeQuietly(conn), timeoutMs);
  try {
    while (filled < buffer.length) {
      const n = await conn.read(buffer.subarray(filled));
      if (n === null) return undefined;
      filled += n;
      const end = indexOfBlankLine(buffer, filled);
      if (end >= 0) {
        return {
          text: new TextDecoder().decode(buffer.subarray(0, end)),
          rest: buffer.slice(end + 4, filled),
        };
      }
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

function indexOfBlankLine(bytes: Uint8Array, length: number): number {
  for (let i = 0; i + 3 < length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

async function pipe(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable, { preventClose: true });
  } catch {
    // One side went away.
  }
  closeQuietly(from);
  closeQuietly(to);
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) offset += await conn.write(bytes.subarray(offset));
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}

/** Compares two strings in time that depends on their lengths only. */
function timingSafeEqual(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
