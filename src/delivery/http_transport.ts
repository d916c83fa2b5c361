/**
 * The HTTP side of an attempt: SSRF check, Standard Webhooks signing, one POST with a timeout
 * covering headers and body, and a truncated read of the response body. Plain HTTP goes
 * through hookd's own HTTP/1.1 client (http1_client.ts, a fifth of fetch's CPU); HTTPS
 * through `fetch`.
 *
 * The connection goes to the address the SSRF guard checked, never to a second lookup of the
 * name (DNS rebinding): a plain-HTTP target is dialled at the checked IP with the URL's own
 * `Host` header; an HTTPS target goes through an in-process CONNECT relay that dials the
 * checked IP while TLS (SNI, certificate check) runs end to end for the URL's name
 * (pinned_relay.ts). With private targets allowed nothing is checked and fetch resolves as
 * usual.
 *
 * Owns its HTTP clients (pooled `Deno.HttpClient`s, so connections are reused across attempts
 * and closed with the transport), the relay, a small cache of DNS verdicts and the pins the
 * relay reads. Must not decide retries: it only reports what happened (`AttemptResult`).
 */

import { checkScheme, denoResolver, type Resolver, resolveTarget } from "./ssrf_guard.ts";
import { PinnedRelay, type RelayTarget } from "./pinned_relay.ts";
import { webhookHeaders } from "./signing.ts";
import { Http1Client } from "./http1_client.ts";
import { type AttemptResult, type DeliveryJob, webhookIdOf } from "./types.ts";

export interface AttemptRequest {
  readonly job: DeliveryJob;
  /** 1-based attempt number. */
  readonly attempt: number;
  readonly timeoutMs: number;
  /**
   * How long past `timeoutMs` the request stays open to hear a late answer (0: abort at the
   * timeout). Only with `onLateAnswer`: the attempt is then reported as a `listening` timeout
   * at `timeoutMs`, and `onLateAnswer` gets, exactly once, the answer that came later, or a
   * timeout or error when none did.
   */
  readonly lateAnswerMs?: number;
  readonly onLateAnswer?: (result: AttemptResult) => void;
}

/** What the engine needs from a transport; tests and the simulator supply their own. */
export interface AttemptTransport {
  send(request: AttemptRequest): Promise<AttemptResult>;
  /** Aborts attempts in flight and releases connections. */
  close(): void;
}

export interface HttpTransportOptions {
  allowPrivateTargets: boolean;
  responseBodyBytesMax: number;
  /**
   * Wall-clock epoch ms; `webhook-timestamp` is its seconds. The receiver checks it against its
   * own wall clock (Standard Webhooks: within ~5 min), so it must follow NTP: not the engine's
   * monotonic clock (`performance.timeOrigin + now()`), which keeps any clock error the host
   * had when the process started and drifts from true time the longer it runs.
   * @default Date.now
   */
  wallClockMs?: () => number;
  /**
   * Timed-out requests kept open at once to hear a late answer (`AttemptRequest.lateAnswerMs`);
   * past it a timed-out request is aborted as before. Bounds the sockets a hung receiver can
   * hold beyond the attempts in flight. @default 256 (the engine passes its
   * `concurrentDeliveriesMax`)
   */
  listeningMax?: number;
  /** DNS for the SSRF guard. @default Deno.resolveDns (A and AAAA) */
  resolve?: Resolver;
  /** How long a host's SSRF verdict is reused, ms. @default 30_000 */
  dnsCacheMs?: number;
  /** Extra root certificates (PEM) trusted for HTTPS targets (tests use a private CA). */
  caCerts?: string[];
  /**
   * Where a connection to a checked address really goes. A test seam: a test pins a public
   * address and lands the connection on its own loopback server. @default the address itself
   */
  dial?: (address: string, port: number) => RelayTarget;
}

/** Hosts whose verdict is cached; past this the cache is dropped whole. */
const DNS_CACHE_MAX = 10_000;

/** The guard's answer: refused, or allowed with the address to connect to (if any). */
type GuardVerdict =
  | { readonly ok: false; readonly permanent: boolean; readonly message: string }
  | { readonly ok: true; readonly address: string | undefined };
const SUBMITTED_AT_HEADER = "hookd-submitted-at";
/** One decoder for every answer's body, not one per attempt. */
const UTF8 = new TextDecoder();
/** What deliveries call themselves, over HTTP and HTTPS alike. */
export const USER_AGENT = "hookd-webhooks";

/** `HttpTransportOptions.listeningMax` when none is given. */
const LISTENING_MAX_DEFAULT = 256;

class TimeoutSignal extends Error {
  override name = "TimeoutSignal";
}

export class HttpTransport implements AttemptTransport {
  readonly #options: HttpTransportOptions;
  readonly #resolve: Resolver;
  readonly #dnsCacheMs: number;
  readonly #wallClockMs: () => number;
  readonly #client: Deno.HttpClient;
  /** Every plain-HTTP delivery (http1_client.ts); `fetch` below is for HTTPS. */
  readonly #http1: Http1Client;
  /** HTTPS through the pinning relay. */
  #relayClient: Deno.HttpClient | undefined;
  readonly #relay: PinnedRelay;
  readonly #dial: (address: string, port: number) => RelayTarget;
  readonly #inflight = new Set<AbortController>();
  /** Timed-out requests still open for their late answer. */
  #listening = 0;
  readonly #verdicts = new Map<
    string,
    { untilMs: number; refusal?: string; address: string | undefined }
  >();
  /** `host:port` → the checked address HTTPS connections to it go to (read by the relay). */
  readonly #pins = new Map<string, { address: string; untilMs: number }>();
  #closed = false;

  constructor(options: HttpTransportOptions) {
    this.#options = options;
    this.#resolve = options.resolve ?? denoResolver;
    this.#dnsCacheMs = options.dnsCacheMs ?? 30_000;
    this.#wallClockMs = options.wallClockMs ?? Date.now;
    this.#dial = options.dial ?? ((hostname, port) => ({ hostname, port }));
    this.#client = Deno.createHttpClient(this.#tls());
    this.#http1 = new Http1Client({ bodyBytesMax: options.responseBodyBytesMax });
    this.#relay = new PinnedRelay({
      pinned: (host, port) => {
        const pin = this.#pins.get(`${host}:${port}`);
        return pin === undefined || pin.untilMs < performance.now()
          ? undefined
          : this.#dial(pin.address, port);
      },
    });
  }

  send(request: AttemptRequest): Promise<AttemptResult> {
    const startMs = performance.now();
    const latency = () => performance.now() - startMs;
    if (this.#closed) {
      return Promise.resolve({ kind: "network_error", message: "transport closed", latencyMs: 0 });
    }
    const onLate = request.onLateAnswer;
    const listenMs = onLate !== undefined ? Math.max(0, request.lateAnswerMs ?? 0) : 0;
    // The timeout covers the guard's DNS lookup too: a resolver that hangs must not hold a
    // delivery slot past the attempt's timeout.
    const controller = new AbortController();
    this.#inflight.add(controller);
    const timer = setTimeout(
      () => controller.abort(new TimeoutSignal()),
      request.timeoutMs + listenMs,
    );
    const exchange = this.#exchange(request, controller, latency).finally(() => {
      clearTimeout(timer);
      this.#inflight.delete(controller);
    });
    if (onLate === undefined || listenMs === 0) return exchange;
    // A receiver slower than the timeout usually still handles the request: the attempt is a
    // timeout for the retry policy, but its answer is still heard (and a 2xx then ends the job
    // instead of a retry delivering it twice).
    return new Promise<AttemptResult>((resolve) => {
      let timedOut = false;
      const soft = setTimeout(() => {
        if (this.#listening >= (this.#options.listeningMax ?? LISTENING_MAX_DEFAULT)) {
          // Enough requests held open already: this one times out as it always did.
          controller.abort(new TimeoutSignal());
          return;
        }
        this.#listening++;
        timedOut = true;
        resolve({ kind: "timeout", latencyMs: latency(), listening: true });
      }, request.timeoutMs);
      void exchange.then((result) => {
        if (!timedOut) {
          clearTimeout(soft);
          resolve(result);
        } else {
          this.#listening--;
          onLate(result);
        }
      });
    });
  }

  async #exchange(
    request: AttemptRequest,
    controller: AbortController,
    latency: () => number,
  ): Promise<AttemptResult> {
    const { job } = request;
    try {
      const verdict = await this.#guard(job.url, controller.signal);
      if (controller.signal.reason instanceof TimeoutSignal) {
        return { kind: "timeout", latencyMs: latency() };
      }
      if (!verdict.ok) {
        return verdict.permanent
          ? { kind: "refused", message: verdict.message, latencyMs: latency() }
          : { kind: "network_error", message: verdict.message, latencyMs: latency() };
      }

      let headers: Headers;
      try {
        headers = requestHeaders(job, Math.floor(this.#wallClockMs() / 1000));
      } catch (error) {
        // checkJob refuses such jobs at schedule time; one that got past it still must not be
        // mistaken for a receiver failure.
        const message = error instanceof Error ? error.message : String(error);
        return { kind: "refused", message: message.slice(0, 500), latencyMs: latency() };
      }

      // The protocol as the URL parser reads it (`HTTP://` is http: too); the validator and the
      // guard parsed this URL already, so it parses.
      const parsed = new URL(job.url);
      if (parsed.protocol === "http:") {
        const response = await this.#http1.post({
          ...this.#plainTarget(parsed, verdict.address),
          headers,
          body: job.payload,
          signal: controller.signal,
        });
        const retryAfter = response.headers.get("retry-after");
        return {
          kind: "response",
          status: response.status,
          ...(retryAfter !== undefined ? { retryAfter } : {}),
          body: UTF8.decode(response.body),
          latencyMs: latency(),
        };
      }
      const { url, client } = this.#connection(parsed, verdict.address, request);
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: job.payload,
        // A redirect could point at a private address the guard never saw: treat 3xx as failure.
        redirect: "manual",
        signal: controller.signal,
        client,
      });
      const body = await readTruncated(response, this.#options.responseBodyBytesMax);
      const retryAfter = response.headers.get("retry-after");
      return {
        kind: "response",
        status: response.status,
        ...(retryAfter !== null ? { retryAfter } : {}),
        body,
        latencyMs: latency(),
      };
    } catch (error) {
      if (controller.signal.reason instanceof TimeoutSignal) {
        return { kind: "timeout", latencyMs: latency() };
      }
      const message = error instanceof Error ? error.message : String(error);
      return { kind: "network_error", message: message.slice(0, 500), latencyMs: latency() };
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#inflight) controller.abort(new Error("transport closed"));
    this.#client.close();
    this.#http1.close();
    this.#relayClient?.close();
    void this.#relay.close();
  }

  /**
   * Where a plain-HTTP POST connects: the pinned address (through the dial seam) with the URL's
   * own `Host`, or the URL's host itself when nothing was checked (private targets allowed).
   */
  #plainTarget(
    url: URL,
    address: string | undefined,
  ): { hostname: string; port: number; host: string; target: string } {
    const port = url.port !== "" ? Number(url.port) : 80;
    const target = `${url.pathname}${url.search}`;
    if (address === undefined) {
      const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
      return { hostname, port, host: url.host, target };
    }
    const dialled = this.#dial(address, port);
    return { hostname: dialled.hostname, port: dialled.port, host: url.host, target };
  }

  /**
   * Where an HTTPS request goes. Without a pinned address: the URL as given. With one: through
   * the relay, which dials the pin while TLS runs end to end for the URL's name.
   */
  #connection(
    url: URL,
    address: string | undefined,
    request: AttemptRequest,
  ): { url: URL; client: Deno.HttpClient } {
    if (address === undefined) return { url, client: this.#client };
    const port = url.port !== "" ? Number(url.port) : 443;
    // The pin outlives the attempt's timeout, so the relay still finds it when fetch dials.
    if (this.#pins.size >= DNS_CACHE_MAX) this.#pins.clear();
    this.#pins.set(`${url.hostname.toLowerCase()}:${port}`, {
      address,
      untilMs: performance.now() + this.#dnsCacheMs + request.timeoutMs,
    });
    this.#relayClient ??= Deno.createHttpClient({
      ...this.#tls(),
      proxy: this.#relay.proxy(),
    });
    return { url, client: this.#relayClient };
  }

  #tls(): Deno.CreateHttpClientOptions {
    return this.#options.caCerts !== undefined ? { caCerts: this.#options.caCerts } : {};
  }

  async #guard(url: string, signal: AbortSignal): Promise<GuardVerdict> {
    if (this.#options.allowPrivateTargets) {
      const scheme = checkScheme(url);
      return scheme.ok
        ? { ok: true, address: undefined }
        : { ok: false, permanent: true, message: scheme.reason };
    }
    let host: string;
    try {
      host = new URL(url).host;
    } catch {
      host = url;
    }
    const nowMs = performance.now();
    const cached = this.#verdicts.get(host);
    if (cached !== undefined && cached.untilMs > nowMs) {
      return cached.refusal === undefined
        ? { ok: true, address: cached.address }
        : { ok: false, permanent: true, message: cached.refusal };
    }
    const verdict = await resolveTarget(url, {
      allowPrivateTargets: false,
      resolve: (hostname) => untilAborted(this.#resolve(hostname, signal), signal),
    });
    if (!verdict.ok && !verdict.reason.permanent) return { ok: false, ...verdict.reason };
    if (this.#verdicts.size >= DNS_CACHE_MAX) this.#verdicts.clear();
    this.#verdicts.set(host, {
      untilMs: nowMs + this.#dnsCacheMs,
      address: verdict.ok ? verdict.value.address : undefined,
      ...(verdict.ok ? {} : { refusal: verdict.reason.message }),
    });
    return verdict.ok
      ? { ok: true, address: verdict.value.address }
      : { ok: false, ...verdict.reason };
  }
}

/** `promise`, or its rejection with the abort reason once `signal` aborts (whichever is first). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The request's headers. `Headers.set` replaces a name whatever its case, so a job's
 * `Content-Type` replaces the default instead of being joined to it ("application/json,
 * text/plain"), and hookd's own headers always win. Throws on a header `fetch` refuses or a
 * secret that does not decode.
 */
function requestHeaders(job: DeliveryJob, timestampSeconds: number): Headers {
  // A User-Agent by default (a job may set its own): web firewalls refuse requests without one.
  const headers = new Headers({ "content-type": "application/json", "user-agent": USER_AGENT });
  for (const [name, value] of Object.entries(job.headers ?? {})) headers.set(name, value);
  const signed = webhookHeaders(job.secrets, webhookIdOf(job), timestampSeconds, job.payload);
  for (const [name, value] of Object.entries(signed)) headers.set(name, value);
  if (job.submittedAtMs !== undefined) headers.set(SUBMITTED_AT_HEADER, String(job.submittedAtMs));
  return headers;
}

/** Reads at most `maxBytes` of the body as text; the rest is cancelled, not read. */
async function readTruncated(response: Response, maxBytes: number): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < maxBytes) {
      const { done, value } = await reader.read();
      if (done) return decode(chunks, total, maxBytes);
      chunks.push(value);
      total += value.length;
    }
    await reader.cancel();
    return decode(chunks, total, maxBytes);
  } finally {
    reader.releaseLock();
  }
}

function decode(chunks: Uint8Array[], total: number, maxBytes: number): string {
  const bytes = new Uint8Array(Math.min(total, maxBytes));
  let offset = 0;
  for (const chunk of chunks) {
    const n = Math.min(chunk.length, bytes.length - offset);
    bytes.set(chunk.subarray(0, n), offset);
    offset += n;
    if (offset >= bytes.length) break;
  }
  return UTF8.decode(bytes);
}
