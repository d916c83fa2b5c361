/**
 * `hookd endpoint add|list|show|secret|update|rotate|disable|enable|recover`: the endpoints of
 * docs/endpoints.md
 * through a node's HTTP API, with `hookd submit`'s node and token flags and exit codes:
 *   0  done (a write is durable on a majority; a read answered)
 *   1  refused by the node (a 4xx: invalid, unauthorized, no such endpoint)
 *   2  usage: a bad flag or a missing argument
 *   3  unavailable: no node answered, or every node answered 503 (or a proxy's 502/504)
 *
 * Reads and PATCHes go to the next node when one is unavailable: a PATCH sets values, so
 * repeating it is harmless. `add` sends an Idempotency-Key (a random `hookd-cli-…` one unless
 * `--idempotency-key` is given) and, without `--secret`, a secret it generates itself, so every
 * node it tries gets the same body under the same key: a node that answered `no_quorum` may
 * have stored the create, and the next one finds it by the key instead of making a second
 * endpoint (docs/endpoints.md, "Idempotent creates"). `rotate` stops after `no_quorum` (a
 * second rotation would drop the secret receivers still verify with); `recover` goes on (a
 * revive of a job revived already is refused, and counted).
 *
 * Owns the command's flags and output; the API owns validation (its 400 names the field).
 */

import {
  booleanFlag,
  type CommandSpec,
  type FlagSpec,
  type FlagValues,
  numberFlag,
  type ParsedArgs,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type GroupCommand, type LeafCommand } from "../process/command.ts";
import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import {
  API_TOKEN_ENV,
  type ApiAnswer,
  ApiClient,
  apiClientFlags,
  apiErrorOf,
  clientOptionsFromFlags,
  describeAnswer,
  EXIT_UNAVAILABLE,
  isUnavailable,
} from "./api_client.ts";
import { headerFlags } from "./submit.ts";
import { generateSecret } from "../delivery/signing.ts";

const jsonFlag: Record<string, FlagSpec> = {
  json: { type: "boolean", help: "Print the node's JSON answer instead of lines" },
};

/** The fields `add` and `update` set. */
const fieldFlags: Record<string, FlagSpec> = {
  url: { type: "string", valueName: "URL", help: "Where events are POSTed (http or https)" },
  "event-type": {
    type: "string",
    valueName: "TYPE",
    multiple: true,
    help: "An event type it receives (repeat for more; none: every type)",
  },
  "all-event-types": { type: "boolean", help: "update: receive every type again" },
  secret: {
    type: "string",
    valueName: "WHSEC",
    help: "Its whsec_ signing secret (add: generated when absent)",
  },
  description: { type: "string", valueName: "TEXT", help: "Free text" },
  header: {
    type: "string",
    valueName: "K:V",
    multiple: true,
    help: "A request header its deliveries carry; repeat for more",
  },
  "rate-limit": {
    type: "string",
    valueName: "N",
    help: `Attempts per second across the cluster, 0-${ENDPOINT_LIMITS.rateLimitPerSMax} (0: none)`,
  },
  ordered: { type: "boolean", help: "Deliver its events one at a time, in order" },
  unordered: { type: "boolean", help: "update: deliver in parallel again" },
  disabled: { type: "boolean", help: "add: create it disabled" },
};

/** The JSON body `add` or `update` sends, from the flags given. */
export function endpointBody(command: string, flags: FlagValues): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const url = stringFlag(flags, "url");
  if (url !== undefined) body.url = url;
  const types = flags["event-type"];
  if (booleanFlag(flags, "all-event-types")) {
    if (Array.isArray(types)) {
      throw new UsageError(`${command}: give --event-type or --all-event-types, not both`);
    }
    body.event_types = [];
  } else if (Array.isArray(types)) body.event_types = types.map(String);
  const secret = stringFlag(flags, "secret");
  if (secret !== undefined) body.secret = secret;
  const description = stringFlag(flags, "description");
  if (description !== undefined) body.description = description;
  const headers = headerFlags(command, flags);
  if (Object.keys(headers).length > 0) body.headers = headers;
  if (stringFlag(flags, "rate-limit") !== undefined) {
    body.rate_limit_per_s = numberFlag(flags, "rate-limit", 0, {
      min: 0,
      max: ENDPOINT_LIMITS.rateLimitPerSMax,
      integer: true,
    });
  }
  if (booleanFlag(flags, "ordered") && booleanFlag(flags, "unordered")) {
    throw new UsageError(`${command}: give --ordered or --unordered, not both`);
  }
  if (booleanFlag(flags, "ordered")) body.ordered = true;
  if (booleanFlag(flags, "unordered")) body.ordered = false;
  if (booleanFlag(flags, "disabled")) body.disabled = true;
  return body;
}

/** The one positional ID a command takes. */
function idOf(command: string, args: ParsedArgs): string {
  if (args.positionals.length !== 1 || args.positionals[0] === "") {
    throw new UsageError(`${command}: give one endpoint ID`);
  }
  return args.positionals[0]!;
}

type Method = "GET" | "POST" | "PATCH" | "DELETE";

/**
 * Sends one request to the nodes in turn until one takes it; prints the answer. `stopOn` says
 * after which unavailable answer not to try another node (a create that may be stored).
 */
async function send(
  command: string,
  flags: FlagValues,
  request: {
    method: Method;
    path: string;
    body?: Record<string, unknown>;
    headers?: Record<string, string>;
  },
  print: (json: unknown) => void,
  stopOn: (answer: ApiAnswer) => boolean = () => false,
  maybeStored = "it may have been created all the same: check `hookd endpoint list` before " +
    "trying again",
): Promise<number> {
  const client = new ApiClient(clientOptionsFromFlags(command.replace(/^hookd /, ""), flags));
  const tried: ApiAnswer[] = [];
  for (const node of client.nodes) {
    const answer = await client.request(node, request.method, request.path, {
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
      ...(request.headers !== undefined ? { headers: request.headers } : {}),
    });
    tried.push(answer);
    if (isUnavailable(answer)) {
      if (!stopOn(answer)) continue;
      console.error(`${command}: ${describeAnswer(answer)}; ${maybeStored}`);
      return EXIT_UNAVAILABLE;
    }
    if (answer.kind === "answered" && answer.status >= 200 && answer.status < 300) {
      if (booleanFlag(flags, "json")) console.log(answer.text);
      else print(answer.json);
      return EXIT_OK;
    }
    const hint = apiErrorOf(answer)?.code === "unauthorized"
      ? ` (pass --api-token or set $${API_TOKEN_ENV})`
      : "";
    console.error(`${command}: refused by ${describeAnswer(answer)}${hint}`);
    return EXIT_FAILURE;
  }
  console.error(`${command}: no node answered: ${tried.map(describeAnswer).join("; ")}`);
  return EXIT_UNAVAILABLE;
}

/** An endpoint as lines of `name: value`. */
export function describeEndpoint(json: unknown): string {
  if (typeof json !== "object" || json === null) return String(json);
  const e = json as Record<string, unknown>;
  const types = Array.isArray(e.event_types) && e.event_types.length > 0
    ? e.event_types.join(", ")
    : "(every type)";
  const state = e.disabled === true ? `disabled (${String(e.disabled_reason)})` : "enabled";
  const headers = typeof e.headers === "object" && e.headers !== null
    ? Object.entries(e.headers as Record<string, unknown>).map(([k, v]) => `${k}: ${v}`)
    : [];
  return [
    `id:          ${e.id}`,
    `url:         ${e.url}`,
    `event types: ${types}`,
    `state:       ${state}`,
    `ordered:     ${e.ordered === true ? "yes" : "no"}`,
    `rate limit:  ${e.rate_limit_per_s === 0 ? "none" : `${e.rate_limit_per_s}/s`}`,
    ...(typeof e.secret === "string" ? [`secret:      ${e.secret}`] : []),
    ...(e.description !== "" ? [`description: ${e.description}`] : []),
    ...headers.map((h) => `header:      ${h}`),
    ...(typeof e.previous_secret === "string"
      ? [`previous:    ${e.previous_secret} (signs until ${e.previous_secret_until})`]
      : []),
    ...(typeof e.last_success_at === "string" ? [`last success: ${e.last_success_at}`] : []),
    `created:     ${e.created_at}`,
    `updated:     ${e.updated_at}`,
  ].join("\n");
}

function leaf(
  name: string,
  summary: string,
  flags: Record<string, FlagSpec>,
  positionals: string | undefined,
  run: (command: string, args: ParsedArgs) => Promise<number>,
): LeafCommand {
  const spec: CommandSpec = {
    name: `endpoint ${name}`,
    summary,
    flags: { ...apiClientFlags, ...flags, ...jsonFlag },
    ...(positionals !== undefined ? { positionals } : {}),
  };
  return { spec, run: (args) => run(`hookd endpoint ${name}`, args) };
}

const add = leaf(
  "add",
  "Create an endpoint; prints it once it is durable on a majority",
  {
    ...fieldFlags,
    "idempotency-key": {
      type: "string",
      valueName: "KEY",
      help: "The create's Idempotency-Key: the same key and fields give the same endpoint " +
        "(default: a random one, which makes trying the next node safe)",
    },
  },
  undefined,
  async (command, args) => {
    const body = endpointBody(command, args.values);
    if (body.url === undefined) throw new UsageError(`${command}: --url URL is required`);
    const key = stringFlag(args.values, "idempotency-key") ?? `hookd-cli-${crypto.randomUUID()}`;
    if (key === "") throw new UsageError(`${command}: --idempotency-key is empty`);
    // Generated here, not by the node, so that a retry under the key repeats the same body.
    body.secret ??= generateSecret();
    return await send(
      command,
      args.values,
      { method: "POST", path: "/v1/endpoints", body, headers: { "idempotency-key": key } },
      (json) => console.log(describeEndpoint(json)),
    );
  },
);

const update = leaf(
  "update",
  "Change the fields given of an endpoint",
  fieldFlags,
  "ID",
  async (command, args) => {
    const id = idOf(command, args);
    const body = endpointBody(command, args.values);
    if (Object.keys(body).length === 0) {
      throw new UsageError(`${command}: give at least one field to change`);
    }
    return await patch(command, args.values, id, body);
  },
);

function patch(
  command: string,
  flags: FlagValues,
  id: string,
  body: Record<string, unknown>,
): Promise<number> {
  return send(
    command,
    flags,
    { method: "PATCH", path: `/v1/endpoints/${encodeURIComponent(id)}`, body },
    (json) => console.log(describeEndpoint(json)),
  );
}

const disable = leaf(
  "disable",
  "Disable an endpoint: it gets no new events",
  {},
  "ID",
  (command, args) => patch(command, args.values, idOf(command, args), { disabled: true }),
);

const enable = leaf(
  "enable",
  "Enable a disabled endpoint again",
  {},
  "ID",
  (command, args) => patch(command, args.values, idOf(command, args), { disabled: false }),
);

const show = leaf(
  "show",
  "Print one endpoint",
  {},
  "ID",
  (command, args) =>
    send(
      command,
      args.values,
      { method: "GET", path: `/v1/endpoints/${encodeURIComponent(idOf(command, args))}` },
      (json) => console.log(describeEndpoint(json)),
    ),
);

const secret = leaf(
  "secret",
  "Print an endpoint's signing secret (and a rotation's previous one while it still signs)",
  {},
  "ID",
  (command, args) =>
    send(
      command,
      args.values,
      {
        method: "GET",
        path: `/v1/endpoints/${encodeURIComponent(idOf(command, args))}/secret`,
      },
      (json) => {
        const s = json as Record<string, unknown>;
        console.log(`secret:   ${s.secret}`);
        if (typeof s.previous_secret === "string") {
          console.log(`previous: ${s.previous_secret} (signs until ${s.previous_secret_until})`);
        }
      },
    ),
);

const list = leaf(
  "list",
  "List the endpoints, one line each (--json: the first page's answer)",
  {
    limit: {
      type: "string",
      valueName: "N",
      help: `Endpoints per page (default ${ENDPOINT_LIMITS.listLimitDefault})`,
    },
    cursor: { type: "string", valueName: "C", help: "Start at this nextCursor" },
  },
  undefined,
  async (command, args) => {
    if (args.positionals.length > 0) throw new UsageError(`${command} takes no arguments`);
    const limit = numberFlag(args.values, "limit", ENDPOINT_LIMITS.listLimitDefault, {
      min: 1,
      max: ENDPOINT_LIMITS.listLimitMax,
      integer: true,
    });
    const cursor = stringFlag(args.values, "cursor");
    const query = `limit=${limit}${
      cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ""
    }`;
    return await send(
      command,
      args.values,
      { method: "GET", path: `/v1/endpoints?${query}` },
      (json) => {
        const page = json as { items?: Array<Record<string, unknown>>; nextCursor?: string };
        for (const e of page.items ?? []) {
          const types = Array.isArray(e.event_types) && e.event_types.length > 0
            ? e.event_types.join(",")
            : "*";
          const state = e.disabled === true ? `disabled:${e.disabled_reason}` : "enabled";
          console.log(`${e.id}  ${state}  ${types}  ${e.url}`);
        }
        if (page.nextCursor !== undefined) {
          console.error(`more: hookd endpoint list --cursor ${page.nextCursor}`);
        }
      },
    );
  },
);

const rotate = leaf(
  "rotate",
  "Give an endpoint a new signing secret; the old one keeps signing for the overlap (24 h)",
  {
    secret: {
      type: "string",
      valueName: "WHSEC",
      help: "The new whsec_ secret (generated by the node when absent)",
    },
  },
  "ID",
  async (command, args) => {
    const id = idOf(command, args);
    const secret = stringFlag(args.values, "secret");
    return await send(
      command,
      args.values,
      {
        method: "POST",
        path: `/v1/endpoints/${encodeURIComponent(id)}/secret/rotate`,
        body: secret !== undefined ? { secret } : {},
      },
      (json) => console.log(describeEndpoint(json)),
      // A rotation that may be stored is not repeated elsewhere: a second one would push the
      // secret the receiver still uses out of the overlap.
      (answer) => apiErrorOf(answer)?.code === "no_quorum",
      "it may have been rotated all the same: check `hookd endpoint show` before trying again",
    );
  },
);

const recover = leaf(
  "recover",
  "Revive the endpoint's dead jobs of events since a time, in event order",
  {
    since: {
      type: "string",
      valueName: "TIME",
      help: "Events submitted at or after this ISO 8601 time or epoch ms (required)",
    },
  },
  "ID",
  async (command, args) => {
    const id = idOf(command, args);
    const raw = stringFlag(args.values, "since");
    if (raw === undefined) throw new UsageError(`${command}: --since TIME is required`);
    // Epoch ms go as a number; anything else as text, for the node to check (400 names it).
    const since = /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
    return await send(
      command,
      args.values,
      {
        method: "POST",
        path: `/v1/endpoints/${encodeURIComponent(id)}/recover`,
        body: { since },
      },
      (json) => {
        const r = json as { recovered?: number; failed?: number };
        console.log(
          `recovered ${r.recovered ?? 0} dead jobs of ${id}` +
            (r.failed !== undefined && r.failed > 0 ? ` (${r.failed} refused: still dead)` : ""),
        );
      },
    );
  },
);

export const endpointCommand: GroupCommand = {
  spec: {
    name: "endpoint",
    summary: "Manage endpoints: add, list, show, secret, update, rotate, disable, enable, recover",
  },
  subcommands: [add, list, show, secret, update, rotate, disable, enable, recover],
};
