/**
 * Reads one HTTP/1.1 response from the bytes of a connection, as they arrive: the status line,
 * the headers, and a body framed by `Content-Length`, by chunks, or by the connection's end.
 * The delivery client (http1_client.ts) feeds it what each read returns.
 *
 * Owns the parsing and its bounds only; must not touch a socket. Never throws on hostile
 * bytes: a malformed or oversized response is an `error` step, which the client reports as a
 * network error of the attempt. Interim 1xx responses are skipped, as a client that sent no
 * `Expect` must.
 */

/** A complete response, or what made it unreadable. */
export type ResponseStep =
  | { readonly kind: "more" }
  | { readonly kind: "done"; readonly response: Http1Response }
  | { readonly kind: "error"; readonly message: string };

export interface Http1Response {
  readonly status: number;
  /** Header names lower-cased; a repeated header keeps its last value. */
  readonly headers: ReadonlyMap<string, string>;
  /** The body's first `bodyBytesMax` bytes. */
  readonly body: Uint8Array;
  /**
   * Whether the connection may carry the next request: HTTP/1.1 without `Connection: close`,
   * and the whole body read (not cut at the bound, not framed by the connection's end).
   */
  readonly reusable: boolean;
}

export interface ResponseBounds {
  /** Longest status line plus headers. */
  readonly headBytesMax: number;
  /** Body bytes kept for the attempt's record. */
  readonly bodyBytesMax: number;
  /**
   * Body bytes read past `bodyBytesMax` so the connection can be reused; a longer body ends
   * the response there and the connection is closed instead.
   */
  readonly drainBytesMax: number;
}

const CR = 13;
const LF = 10;
const decoder = new TextDecoder();

type State =
  | { readonly kind: "head" }
  | { readonly kind: "length"; left: number }
  | { readonly kind: "chunk-size" }
  | { readonly kind: "chunk-data"; left: number }
  | { readonly kind: "chunk-end" }
  | { readonly kind: "trailers" }
  | { readonly kind: "until-close" }
  | { readonly kind: "finished" };

export class Http1ResponseReader {
  readonly #bounds: ResponseBounds;
  /** Bytes received and not yet consumed (a head, a chunk-size line, trailers). */
  #pending: Uint8Array = new Uint8Array(0);
  #state: State = { kind: "head" };
  #status = 0;
  #headers = new Map<string, string>();
  #keepAlive = false;
  readonly #body: Uint8Array[] = [];
  #bodyKept = 0;
  #bodyRead = 0;
  /** Set when the body outgrew `drainBytesMax`: the response ends early, not reusable. */
  #cut = false;
  #anyBytes = false;

  constructor(bounds: ResponseBounds) {
    this.#bounds = bounds;
  }

  /**
   * Whether any byte of a response arrived: a reused connection closed before one did was
   * closed unanswered, and the request may go again on a new one. Even an interim 1xx answer
   * counts: it proves the receiver has the request.
   */
  get started(): boolean {
    return this.#anyBytes;
  }

  /** Feeds the next bytes read. */
  push(bytes: Uint8Array): ResponseStep {
    if (bytes.length > 0) this.#anyBytes = true;
    if (this.#state.kind === "finished") {
      return { kind: "error", message: "bytes after the response" };
    }
    // A copy (or a new buffer): the client reads into one buffer again and again.
    this.#pending = this.#pending.length === 0 ? bytes.slice() : concat(this.#pending, bytes);
    return this.#advance();
  }

  /** The connection ended (EOF): completes a body framed by the close, else it is an error. */
  end(): ResponseStep {
    if (this.#state.kind === "until-close") {
      this.#state = { kind: "finished" };
      return this.#done(false);
    }
    return {
      kind: "error",
      message: this.#status === 0
        ? "connection closed before a response"
        : "connection closed in the response body",
    };
  }

  #advance(): ResponseStep {
    for (;;) {
      const state = this.#state;
      switch (state.kind) {
        case "head": {
          const end = indexOfHeadEnd(this.#pending);
          if (end < 0) {
            if (this.#pending.length > this.#bounds.headBytesMax) {
              return {
                kind: "error",
                message: `response head over ${this.#bounds.headBytesMax} bytes`,
              };
            }
            return { kind: "more" };
          }
          if (end > this.#bounds.headBytesMax) {
            return {
              kind: "error",
              message: `response head over ${this.#bounds.headBytesMax} bytes`,
            };
          }
          const head = decoder.decode(this.#pending.subarray(0, end));
          this.#pending = this.#pending.subarray(end + 4);
          const parsed = this.#parseHead(head);
          if (parsed !== undefined) return { kind: "error", message: parsed };
          if (this.#status < 200) {
            // An interim answer (100 Continue, 103 Early Hints): the real one follows.
            this.#status = 0;
            this.#headers = new Map();
            continue;
          }
          const framing = this.#framing();
          if (typeof framing === "string") return { kind: "error", message: framing };
          this.#state = framing;
          continue;
        }
        case "length": {
          if (state.left === 0) {
            this.#state = { kind: "finished" };
            return this.#finish();
          }
          if (this.#pending.length === 0) return { kind: "more" };
          const n = Math.min(state.left, this.#pending.length);
          this.#takeBody(this.#pending.subarray(0, n));
          this.#pending = this.#pending.subarray(n);
          state.left -= n;
          if (this.#cut) return this.#done(false);
          continue;
        }
        case "chunk-size": {
          const lineEnd = indexOfCrlf(this.#pending);
          if (lineEnd < 0) {
            if (this.#pending.length > 1_024) {
              return { kind: "error", message: "chunk size line too long" };
            }
            return { kind: "more" };
          }
          const line = decoder.decode(this.#pending.subarray(0, lineEnd));
          this.#pending = this.#pending.subarray(lineEnd + 2);
          const sizeText = line.split(";")[0]!.trim();
          if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) {
            return { kind: "error", message: "malformed chunk size" };
          }
          const size = parseInt(sizeText, 16);
          this.#state = size === 0 ? { kind: "trailers" } : { kind: "chunk-data", left: size };
          continue;
        }
        case "chunk-data": {
          if (this.#pending.length === 0) return { kind: "more" };
          const n = Math.min(state.left, this.#pending.length);
          this.#takeBody(this.#pending.subarray(0, n));
          this.#pending = this.#pending.subarray(n);
          state.left -= n;
          if (this.#cut) return this.#done(false);
          if (state.left === 0) this.#state = { kind: "chunk-end" };
          continue;
        }
        case "chunk-end": {
          if (this.#pending.length < 2) return { kind: "more" };
          if (this.#pending[0] !== CR || this.#pending[1] !== LF) {
            return { kind: "error", message: "chunk not followed by CRLF" };
          }
          this.#pending = this.#pending.subarray(2);
          this.#state = { kind: "chunk-size" };
          continue;
        }
        case "trailers": {
          // Trailer fields end with an empty line; they are read and ignored.
          const lineEnd = indexOfCrlf(this.#pending);
          if (lineEnd < 0) {
            if (this.#pending.length > this.#bounds.headBytesMax) {
              return { kind: "error", message: "trailers too long" };
            }
            return { kind: "more" };
          }
          this.#pending = this.#pending.subarray(lineEnd + 2);
          if (lineEnd === 0) {
            this.#state = { kind: "finished" };
            return this.#finish();
          }
          continue;
        }
        case "until-close": {
          if (this.#pending.length > 0) {
            this.#takeBody(this.#pending);
            this.#pending = new Uint8Array(0);
          }
          if (this.#cut) return this.#done(false);
          return { kind: "more" };
        }
        case "finished":
          return { kind: "error", message: "bytes after the response" };
      }
    }
  }

  /** Returns a problem, or undefined when the head is well formed. */
  #parseHead(head: string): string | undefined {
    const lines = head.split("\r\n");
    const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!);
    if (statusLine === null) {
      return `malformed status line ${JSON.stringify(lines[0]!.slice(0, 80))}`;
    }
    this.#status = Number(statusLine[2]);
    this.#keepAlive = statusLine[1] === "1";
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0 || /[\s]/.test(line[colon - 1]!)) return "malformed header line";
      const name = line.slice(0, colon).toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (
        name === "content-length" && this.#headers.has(name) && this.#headers.get(name) !== value
      ) {
        return "conflicting Content-Length";
      }
      this.#headers.set(name, value);
    }
    const connection = this.#headers.get("connection")?.toLowerCase() ?? "";
    if (connection.split(",").some((t) => t.trim() === "close")) this.#keepAlive = false;
    return undefined;
  }

  #framing(): State | string {
    // 204 and 304 carry no body whatever their headers say.
    if (this.#status === 204 || this.#status === 304) return { kind: "length", left: 0 };
    const encoding = this.#headers.get("transfer-encoding");
    if (encoding !== undefined) {
      if (encoding.toLowerCase().split(",").pop()!.trim() !== "chunked") {
        return "unsupported Transfer-Encoding";
      }
      // Both framings at once may be a desync attempt (RFC 9112 §6.1): read by chunks, then
      // close the connection rather than trust where the next answer starts.
      if (this.#headers.has("content-length")) this.#keepAlive = false;
      return { kind: "chunk-size" };
    }
    const length = this.#headers.get("content-length");
    if (length !== undefined) {
      if (!/^\d{1,15}$/.test(length)) return "malformed Content-Length";
      return { kind: "length", left: Number(length) };
    }
    this.#keepAlive = false;
    return { kind: "until-close" };
  }

  #takeBody(bytes: Uint8Array): void {
    this.#bodyRead += bytes.length;
    const room = this.#bounds.bodyBytesMax - this.#bodyKept;
    if (room > 0) {
      // A copy: the client reuses its read buffer.
      const kept = bytes.slice(0, Math.min(room, bytes.length));
      this.#body.push(kept);
      this.#bodyKept += kept.length;
    }
    if (this.#bodyRead > this.#bounds.bodyBytesMax + this.#bounds.drainBytesMax) this.#cut = true;
  }

  #finish(): ResponseStep {
    // Bytes past the response on a connection we did not pipeline: the peer is confused.
    if (this.#pending.length > 0) return this.#done(false);
    return this.#done(this.#keepAlive);
  }

  #done(reusable: boolean): ResponseStep {
    this.#state = { kind: "finished" };
    const body = new Uint8Array(this.#bodyKept);
    let offset = 0;
    for (const part of this.#body) {
      body.set(part, offset);
      offset += part.length;
    }
    return {
      kind: "done",
      response: { status: this.#status, headers: this.#headers, body, reusable },
    };
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function indexOfCrlf(bytes: Uint8Array): number {
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i] === CR && bytes[i + 1] === LF) return i;
  }
  return -1;
}

function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === CR && bytes[i + 1] === LF && bytes[i + 2] === CR && bytes[i + 3] === LF) {
      return i;
    }
  }
  return -1;
}
