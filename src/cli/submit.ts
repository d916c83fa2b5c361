/**
 * `hookd submit`: submits one job through a node's HTTP API and prints its id; with `--wait`
 * it follows the job until it is delivered or dead.
 *
 * Owns the command's flags, its output and its exit codes:
 *   0  accepted (with --wait: delivered)
 *   1  refused by the node (a 4xx: invalid, unauthorized, idempotency conflict, too large),
 *      or, with --wait, the job is dead
 *   2  usage: a bad flag, unreadable --file, --data that is not JSON
 *   3  unavailable: no node answered, or every node answered 503 (overloaded, no quorum, not
 *      ready, shutting down) or, through a proxy, 502/504; trying again later is safe
 *   4  --wait stopped following a job that is accepted but not finished yet
 *
 * Every submit carries an Idempotency-Key (a random `hookd-cli-…` one unless --idempotency-key
 * is given), so trying the next node after a lost answer or a 503 can never make a second job:
 * a node that already holds the key answers with the same id.
 */

import { isAbsolute, resolve } from "node:path";
import {
  booleanFlag,
  type CommandSpec,
  type FlagSpec,
  type FlagValues,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import {
  API_TOKEN_ENV,
  type ApiAnswer,
  ApiClient,
  apiClientFlags,
  apiErrorOf,
  cliConfig,
  clientOptionsFromFlags,
  describeAnswer,
  EXIT_UNAVAILABLE,
  EXIT_WAIT_ENDED,
  isUnavailable,
} from "./api_client.ts";
import {
  decodeJobJson,
  followJob,
  type FollowOutcome,
  type JobJson,
  type JobRead,
} from "./job_follow.ts";
import { describeAttempt, describeFinal, describeProgress, formatDuration } from "./render.ts";
import { apiDefaults } from "../config/api.ts";
import { deliveryDefaults } from "../config/delivery.ts";
import { jobsDefaults } from "../config/jobs.ts";
import { realRuntime } from "../lib/runtime.ts";
import { readTextAtMost } from "../lib/bounded_text.ts";

/** Where `--secret` is read from when the flag is absent. */
export const WEBHOOK_SECRET_ENV = "HOOKD_WEBHOOK_SECRET";

/** The payload flags `submit` and `send` share (`payloadFromFlags` reads them). */
export const payloadFlags: Record<string, FlagSpec> = {
  data: { type: "string", valueName: "JSON", help: "Payload, JSON text (default: {})" },
  file: {
    type: "string",
    valueName: "FILE",
    help: "Payload read from a JSON file ('-' reads stdin); instead of --data",
  },
};

/** `--wait-timeout` and `--json`, as `submit` and `send` take them (`commonPlan` reads them). */
export const followFlags: Record<string, FlagSpec> = {
  "wait-timeout": {
    type: "string",
    valueName: "S",
    help: `Stop following after S seconds (exit 4; it goes on) (default: ${
      cliConfig.waitTimeoutMs / 1000
    })`,
  },
  json: {
    type: "boolean",
    help: "Print JSON lines instead: the answer, then (--wait) the final state of each job",
  },
};

const spec: CommandSpec = {
  name: "submit",
  summary: "Submit a webhook job to a node's API and print its id (--wait: follow it)",
  flags: {
    ...apiClientFlags,
    url: { type: "string", valueName: "URL", help: "Target the job is POSTed to (http or https)" },
    ...payloadFlags,
    header: {
      type: "string",
      valueName: "K:V",
      multiple: true,
      help: "Extra request header for the receiver; repeat for more",
    },
    secret: {
      type: "string",
      valueName: "WHSEC",
      help:
        `Sign deliveries with this whsec_ secret (Standard Webhooks; else $${WEBHOOK_SECRET_ENV})`,
    },
    "idempotency-key": {
      type: "string",
      valueName: "KEY",
      help: "Same key and body on any node: the same job id, not a second job (default: random)",
    },
    "max-attempts": {
      type: "string",
      valueName: "N",
      help:
        `Attempts before the job is dead-lettered (default: the node's, ${jobsDefaults.maxAttemptsDefault})`,
    },
    "timeout-ms": {
      type: "string",
      valueName: "MS",
      help:
        `Per-attempt timeout, at most ${deliveryDefaults.attemptTimeoutMaxMs} (default: the node's, ${deliveryDefaults.attemptTimeoutMs})`,
    },
    wait: { type: "boolean", help: "Follow the job until delivered (exit 0) or dead (exit 1)" },
    ...followFlags,
  },
};

export interface SubmitPlan {
  body: string;
  idempotencyKey: string;
  wait: boolean;
  waitTimeoutMs: number;
  json: boolean;
}

export const submitCommand: LeafCommand = {
  spec,
  async run(args) {
    const client = new ApiClient(clientOptionsFromFlags("submit", args.values));
    const plan = await planFromFlags(args.values);
    const out = plan.json ? undefined : (line: string) => console.log(line);

    const accepted = await postToFirstNode(client, "hookd submit", "/v1/jobs", plan);
    if (typeof accepted === "number") return accepted;
    if (plan.json) {
      console.log(
        JSON.stringify({ id: accepted.id, existing: accepted.existing, node: accepted.node }),
      );
    } else {
      out!(accepted.id);
      if (accepted.existing) {
        console.error("hookd submit: the idempotency key matched an earlier job; this is its id");
      }
    }
    if (!plan.wait) return EXIT_OK;

    const outcome = await followOne(client, accepted.node, accepted.id, plan, "");
    if (outcome.kind === "finished") {
      if (plan.json) console.log(JSON.stringify(outcome.job));
      else out!(describeFinal(outcome.job));
      return outcome.job.state === "delivered" ? EXIT_OK : EXIT_FAILURE;
    }
    const last: JobJson | undefined = outcome.last;
    if (plan.json && last !== undefined) console.log(JSON.stringify(last));
    const state = last !== undefined
      ? describeProgress(last, Date.now())
      : "its state was never read";
    const problem = outcome.problem !== undefined ? ` (last read: ${outcome.problem})` : "";
    console.error(
      `hookd submit: stopped waiting after ${
        formatDuration(plan.waitTimeoutMs)
      }; job ${accepted.id} ` +
        `is accepted and goes on: ${state}${problem}`,
    );
    return EXIT_WAIT_ENDED;
  },
};

/**
 * POSTs `body` to the nodes in turn with its Idempotency-Key: the first that takes it (202)
 * answers for it. Returns the node and its answer's id, or the exit code after saying why
 * (1: refused; 3: no node took it). `command` names the command in messages.
 */
export async function postToFirstNode(
  client: ApiClient,
  command: string,
  path: string,
  request: { readonly body: string; readonly idempotencyKey: string },
): Promise<{ node: string; id: string; existing: boolean; json: unknown } | number> {
  const tried: ApiAnswer[] = [];
  for (const node of client.nodes) {
    const answer = await client.request(node, "POST", path, {
      body: request.body,
      headers: { "idempotency-key": request.idempotencyKey },
    });
    tried.push(answer);
    if (isUnavailable(answer)) continue;
    if (answer.kind === "answered" && answer.status === 202) {
      const id = idOf(answer.json);
      if (id === undefined) {
        console.error(
          `${command}: ${node} answered 202 without an id: ${answer.text.slice(0, 200)}`,
        );
        return EXIT_FAILURE;
      }
      const existing = (answer.json as { existing?: unknown }).existing === true;
      return { node, id, existing, json: answer.json };
    }
    const hint = apiErrorOf(answer)?.code === "unauthorized"
      ? ` (pass --api-token or set $${API_TOKEN_ENV})`
      : "";
    console.error(`${command}: refused by ${describeAnswer(answer)}${hint}`);
    return EXIT_FAILURE;
  }
  const why = tried.map(describeAnswer).join("; ");
  console.error(`${command}: no node took it (safe to try again): ${why}`);
  return EXIT_UNAVAILABLE;
}

/**
 * Follows job `id` (read from `first` first) until it is finished or the plan's wait is over,
 * printing each failed attempt on stderr as it happens (after `prefix`) unless `--json`.
 */
export function followOne(
  client: ApiClient,
  first: string,
  id: string,
  plan: Pick<SubmitPlan, "json" | "waitTimeoutMs">,
  prefix: string,
): Promise<FollowOutcome> {
  return followJob({
    read: jobReader(client, first, id),
    runtime: realRuntime,
    timeoutMs: plan.waitTimeoutMs,
    pollFirstMs: cliConfig.waitPollFirstMs,
    pollMaxMs: cliConfig.waitPollMaxMs,
    onChange: (job, previous) => {
      if (plan.json) return;
      const seen = previous?.attempts.length ?? 0;
      for (const attempt of job.attempts.slice(seen)) {
        if (attempt.outcome !== "success") console.error(prefix + describeAttempt(attempt));
      }
    },
  });
}

/** Reads job `id`, from `first` (the node that took it, which holds it committed) first. */
export function jobReader(client: ApiClient, first: string, id: string): () => Promise<JobRead> {
  const order = [first, ...client.nodes.filter((n) => n !== first)];
  return async () => {
    const problems: string[] = [];
    for (const node of order) {
      const answer = await client.request(node, "GET", `/v1/jobs/${encodeURIComponent(id)}`);
      if (answer.kind === "answered" && answer.status === 200) {
        const job = decodeJobJson(answer.json);
        if (job !== undefined) return { ok: true, job };
      }
      problems.push(describeAnswer(answer));
      if (answer.kind === "answered" && answer.status === 401) break;
    }
    return { ok: false, reason: problems.join("; ") };
  };
}

/**
 * The payload text from `--data` (default `{}`) or `--file` (`-`: stdin), checked to be JSON;
 * the text itself is sent, since a parse turns 64-bit ids, 1e400 or 1.10 into other numbers.
 */
export async function payloadFromFlags(command: string, flags: FlagValues): Promise<string> {
  const data = stringFlag(flags, "data");
  const file = stringFlag(flags, "file");
  if (data !== undefined && file !== undefined) {
    throw new UsageError(`${command}: give --data or --file, not both`);
  }
  const payloadText = file !== undefined ? await readPayloadFile(file) : data ?? "{}";
  try {
    JSON.parse(payloadText);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new UsageError(
      `${command}: the payload (${file !== undefined ? file : "--data"}) is not JSON: ${why}`,
    );
  }
  return payloadText;
}

async function planFromFlags(flags: FlagValues): Promise<SubmitPlan> {
  const url = stringFlag(flags, "url");
  if (url === undefined || url === "") throw new UsageError("hookd submit: --url URL is required");
  const payloadText = await payloadFromFlags("hookd submit", flags);
  const headers = headerFlags("hookd submit", flags);
  const secret = stringFlag(flags, "secret") ?? Deno.env.get(WEBHOOK_SECRET_ENV);
  const body: Record<string, unknown> = { url };
  if (Object.keys(headers).length > 0) body.headers = headers;
  if (secret !== undefined && secret !== "") body.secret = secret;
  if (stringFlag(flags, "max-attempts") !== undefined) {
    body.maxAttempts = numberFlag(flags, "max-attempts", 0, { min: 1, integer: true });
  }
  if (stringFlag(flags, "timeout-ms") !== undefined) {
    body.timeoutMs = numberFlag(flags, "timeout-ms", 0, { min: 1, integer: true });
  }
  return { body: jobBody(body, payloadText), ...commonPlan("hookd submit", flags) };
}

/** The flags `submit` and `send` share: the key (random unless given), --wait, --json. */
export function commonPlan(command: string, flags: FlagValues): Omit<SubmitPlan, "body"> {
  const key = stringFlag(flags, "idempotency-key") ?? `hookd-cli-${crypto.randomUUID()}`;
  if (key === "") throw new UsageError(`${command}: --idempotency-key is empty`);
  const waitTimeoutS = numberFlag(flags, "wait-timeout", cliConfig.waitTimeoutMs / 1000, {
    min: 0,
    max: 7 * 86_400,
  });
  return {
    idempotencyKey: key,
    wait: booleanFlag(flags, "wait"),
    waitTimeoutMs: waitTimeoutS * 1000,
    json: booleanFlag(flags, "json"),
  };
}

/** The repeated `--header NAME:VALUE` flags as headers (`command` names the command in errors). */
export function headerFlags(command: string, flags: FlagValues): Record<string, string> {
  const headers: Record<string, string> = {};
  // Not listFlag: a header value may hold commas.
  const rawHeaders = flags.header;
  for (const raw of Array.isArray(rawHeaders) ? rawHeaders.map(String) : []) {
    const colon = raw.indexOf(":");
    const name = colon > 0 ? raw.slice(0, colon).trim() : "";
    if (name === "") {
      throw new UsageError(`${command}: --header ${JSON.stringify(raw)} is not NAME:VALUE`);
    }
    if (Object.keys(headers).some((k) => k.toLowerCase() === name.toLowerCase())) {
      throw new UsageError(`${command}: --header ${name} is given twice`);
    }
    headers[name] = raw.slice(colon + 1).trim();
  }
  return headers;
}

/**
 * The request body: `fields` as JSON with `payloadText` (JSON, checked by the caller) spliced
 * in as the user wrote it, so its numbers reach the node exactly.
 */
export function jobBody(fields: Readonly<Record<string, unknown>>, payloadText: string): string {
  const rest = JSON.stringify(fields).slice(1, -1);
  return `{"payload":${payloadText}${rest === "" ? "" : `,${rest}`}}`;
}

/**
 * The payload file's text. A relative path is taken from where the user typed the command:
 * `deno task` runs hookd in the project's directory and says where that was in INIT_CWD.
 */
async function readPayloadFile(path: string): Promise<string> {
  if (path === "-") return await readStdin(apiDefaults.bodyBytesMax);
  const base = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  const full = isAbsolute(path) ? path : resolve(base, path);
  let size: number;
  try {
    size = (await Deno.stat(full)).size;
  } catch (error) {
    throw new UsageError(
      `hookd submit: --file ${path}: ${error instanceof Error ? error.message : error}`,
    );
  }
  if (size > apiDefaults.bodyBytesMax) {
    throw new UsageError(`hookd submit: --file ${path} is ${size} bytes, more than a node takes`);
  }
  try {
    return await Deno.readTextFile(full);
  } catch (error) {
    throw new UsageError(
      `hookd submit: --file ${path}: ${error instanceof Error ? error.message : error}`,
    );
  }
}

async function readStdin(bytesMax: number): Promise<string> {
  const text = await readTextAtMost(Deno.stdin.readable, bytesMax);
  if (text === undefined) throw new UsageError("hookd submit: stdin holds more than a node takes");
  return text;
}

function idOf(json: unknown): string | undefined {
  if (typeof json !== "object" || json === null) return undefined;
  const id = (json as { id?: unknown }).id;
  return typeof id === "string" && id !== "" ? id : undefined;
}
