/**
 * What `hookd submit`, `hookd status` and `hookd cluster` share to talk to nodes' HTTP APIs:
 * the node list (`--node`, repeatable or comma-separated, else `$HOOKD_NODE`), the bearer
 * token (`--api-token`, else `$HOOKD_API_TOKEN`), one request with a deadline and a bounded
 * response, the API's error body read back, and the exit codes these commands share.
 *
 * Owns the client side of the HTTP API only: it must not import the API's or the store's
 * modules (a client speaks the wire format, not the server's types), and never exits.
 */

import { type CliConfig, cliDefaults, validateCliConfig } from "./cli_config.ts";
import {
  type FlagSpec,
  type FlagValues,
  listFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { API_TOKEN_ENV } from "./node.ts";
import { safe } from "./render.ts";
import { readTextAtMost } from "../lib/bounded_text.ts";

/** Exit codes of the API clients, on top of command.ts's 0 (ok), 1 (failure) and 2 (usage). */
export const EXIT_UNAVAILABLE = 3;
/** `submit --wait` stopped following a job that was accepted but is not finished yet. */
export const EXIT_WAIT_ENDED = 4;

/** Where `--node` is read from when the flag is absent (comma-separated URLs). */
export const NODE_ENV = "HOOKD_NODE";
// The same variable `hookd node` reads its token from: one export serves both ends.
export { API_TOKEN_ENV };

/** Checked once when the CLI loads: a bad relation between defaults fails every command. */
export const cliConfig: Readonly<CliConfig> = validateCliConfig({ ...cliDefaults });

/** The flags every API client takes. */
export const apiClientFlags: Record<string, FlagSpec> = {
  node: {
    type: "string",
    valueName: "URL",
    multiple: true,
    help: `A node's API base URL; repeat or comma-separate to try the next when one is ` +
      `unreachable or answers 503 (else $${NODE_ENV})`,
  },
  "api-token": {
    type: "string",
    valueName: "TOKEN",
    help: `Bearer token for nodes started with --api-token (else $${API_TOKEN_ENV})`,
  },
};

export interface ApiClientOptions {
  readonly nodes: readonly string[];
  readonly apiToken?: string;
  /** @default cliConfig.requestTimeoutMs */
  readonly requestTimeoutMs?: number;
  /** @default cliConfig.responseBytesMax */
  readonly responseBytesMax?: number;
}

/** The API's `{"error": {...}}` body, read back. */
export interface ApiErrorBody {
  readonly code: string;
  readonly message: string;
  readonly field?: string;
  readonly retryAfterS?: number;
}

export type ApiAnswer =
  | {
    readonly kind: "answered";
    readonly node: string;
    readonly status: number;
    readonly headers: Headers;
    readonly text: string;
    /** The body parsed as JSON; undefined when it is not JSON. */
    readonly json: unknown;
  }
  | {
    readonly kind: "unreachable";
    readonly node: string;
    /** One line: connection refused, timed out, a TLS failure, a response too large. */
    readonly reason: string;
  };

/** The API clients' node list and token from their flags, checked. */
export function clientOptionsFromFlags(
  command: string,
  values: FlagValues,
): { nodes: string[]; apiToken?: string } {
  const raw = listFlag(values, "node");
  const fromEnv = raw.length === 0 ? listFlag({ node: Deno.env.get(NODE_ENV) }, "node") : [];
  const given = raw.length > 0 ? raw : fromEnv;
  if (given.length === 0) {
    throw new UsageError(`hookd ${command}: --node URL is required (or set $${NODE_ENV})`);
  }
  const nodes = given.map((n) => parseNodeUrl(command, n));
  const apiToken = stringFlag(values, "api-token") ?? Deno.env.get(API_TOKEN_ENV);
  return { nodes: [...new Set(nodes)], ...(apiToken ? { apiToken } : {}) };
}

/** `http(s)://host:port[/prefix]` without a trailing slash; a bare `host:port` means http. */
export function parseNodeUrl(command: string, raw: string): string {
  const withScheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`hookd ${command}: --node ${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`hookd ${command}: --node ${JSON.stringify(raw)} must be http(s)`);
  }
  if (url.search !== "" || url.hash !== "") {
    throw new UsageError(`hookd ${command}: --node ${JSON.stringify(raw)} takes no query`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

export class ApiClient {
  readonly nodes: readonly string[];
  readonly #apiToken: string | undefined;
  readonly #timeoutMs: number;
  readonly #bytesMax: number;

  constructor(options: ApiClientOptions) {
    if (options.nodes.length === 0) throw new RangeError("ApiClient: no nodes");
    this.nodes = options.nodes;
    this.#apiToken = options.apiToken;
    this.#timeoutMs = options.requestTimeoutMs ?? cliConfig.requestTimeoutMs;
    this.#bytesMax = options.responseBytesMax ?? cliConfig.responseBytesMax;
  }

  /** One request to one node; never throws for what the network or the node does. */
  async request(
    node: string,
    method: "GET" | "POST" | "PATCH" | "DELETE",
    path: string,
    options: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiAnswer> {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    if (this.#apiToken !== undefined) headers.authorization = `Bearer ${this.#apiToken}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const response = await fetch(`${node}${path}`, {
        method,
        headers,
        signal,
        ...(options.body !== undefined ? { body: options.body } : {}),
      });
      const text = await readBounded(response, this.#bytesMax);
      if (text === undefined) {
        return {
          kind: "unreachable",
          node,
          reason: `answered more than ${this.#bytesMax} bytes`,
        };
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return {
        kind: "answered",
        node,
        status: response.status,
        headers: response.headers,
        text,
        json,
      };
    } catch (error) {
      return { kind: "unreachable", node, reason: networkReason(error, signal, this.#timeoutMs) };
    }
  }
}

/** The API error in an answer's body, when it carries one. */
export function apiErrorOf(answer: ApiAnswer): ApiErrorBody | undefined {
  if (answer.kind !== "answered") return undefined;
  const body = answer.json;
  if (typeof body !== "object" || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  if (typeof error !== "object" || error === null) return undefined;
  const e = error as Record<string, unknown>;
  if (typeof e.code !== "string" || typeof e.message !== "string") return undefined;
  return {
    code: e.code,
    message: e.message,
    ...(typeof e.field === "string" ? { field: e.field } : {}),
    ...(typeof e.retryAfterS === "number" ? { retryAfterS: e.retryAfterS } : {}),
  };
}

/** One line saying what a node answered: `503 overloaded: … (retry after 1 s)`. */
export function describeAnswer(answer: ApiAnswer): string {
  if (answer.kind === "unreachable") return `${answer.node}: ${safe(answer.reason)}`;
  const error = apiErrorOf(answer);
  if (error === undefined) {
    const snippet = safe(answer.text.replace(/\s+/g, " ").trim().slice(0, 120));
    return `${answer.node}: HTTP ${answer.status}${snippet !== "" ? `: ${snippet}` : ""}`;
  }
  const field = error.field !== undefined ? ` (field ${safe(error.field)})` : "";
  const retry = error.retryAfterS !== undefined ? ` (retry after ${error.retryAfterS} s)` : "";
  return `${answer.node}: ${answer.status} ${safe(error.code)}${field}: ${
    safe(error.message)
  }${retry}`;
}

/**
 * Whether the next node should be tried: this one did not take the request (and may later).
 * 502 and 504 are what a proxy in front of a node (TLS termination) answers when the node is
 * down or does not answer in time: no answer from the node, not a refusal.
 */
export function isUnavailable(answer: ApiAnswer): boolean {
  return answer.kind === "unreachable" || answer.status === 502 || answer.status === 503 ||
    answer.status === 504;
}

/** The body as text, or undefined once it passes `bytesMax` (the rest is cancelled). */
async function readBounded(response: Response, bytesMax: number): Promise<string | undefined> {
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (declared > bytesMax) {
    await response.body?.cancel();
    return undefined;
  }
  return await readTextAtMost(response.body, bytesMax);
}

function networkReason(error: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `no answer within ${timeoutMs} ms`;
  // fetch says "fetch failed" and nests the OS error in its cause, whose last clause
  // ("Connection refused (os error 111)") is the one a person can act on.
  let message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) message = cause.message;
  if (/connection refused/i.test(message)) return "connection refused";
  const clauses = message.split("\n")[0]!.split(": ");
  return clauses.slice(-2).join(": ").slice(0, 200);
}

/** Quotes `word` for a POSIX shell when it holds anything a shell would interpret. */
export function shellQuote(word: string): string {
  if (word !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}
