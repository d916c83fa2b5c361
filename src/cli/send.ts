/**
 * `hookd send`: submits one event through a node's HTTP API (`POST /v1/events`) and prints its
 * id; the node fans it out to every endpoint that takes its type (docs/endpoints.md). With
 * `--wait` it follows every job of the event until each is delivered or dead.
 *
 * Owns the command's flags and output; its exit codes are `hookd submit`'s:
 *   0  accepted (with --wait: every job delivered)
 *   1  refused by the node (a 4xx), or, with --wait, a job of the event is dead
 *   2  usage: a bad flag, unreadable --file, --data that is not JSON
 *   3  unavailable: no node answered, or every node answered 503; trying again later is safe
 *   4  --wait stopped following jobs that are accepted but not finished yet
 *
 * Every send carries an Idempotency-Key (a random `hookd-cli-…` one unless given), so trying
 * the next node after a lost answer or a 503 can never make a second event.
 */

import { type CommandSpec, stringFlag, UsageError } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import {
  ApiClient,
  apiClientFlags,
  clientOptionsFromFlags,
  describeAnswer,
  EXIT_WAIT_ENDED,
} from "./api_client.ts";
import type { FollowOutcome } from "./job_follow.ts";
import { describeFinal, describeProgress, formatDuration } from "./render.ts";
import {
  commonPlan,
  followFlags,
  followOne,
  payloadFlags,
  payloadFromFlags,
  postToFirstNode,
} from "./submit.ts";

const spec: CommandSpec = {
  name: "send",
  summary: "Send an event to a node's API; it fans out to the endpoints that take its type",
  flags: {
    ...apiClientFlags,
    type: { type: "string", valueName: "TYPE", help: "The event type (e.g. invoice.paid)" },
    ...payloadFlags,
    "idempotency-key": {
      type: "string",
      valueName: "KEY",
      help: "Same key and body on any node: the same event, not a second one (default: random)",
    },
    wait: {
      type: "boolean",
      help: "Follow every job of the event until each is delivered (exit 0) or dead (exit 1)",
    },
    ...followFlags,
  },
};

const COMMAND = "hookd send";

export const sendCommand: LeafCommand = {
  spec,
  async run(args) {
    const type = stringFlag(args.values, "type");
    if (type === undefined || type === "") throw new UsageError(`${COMMAND}: --type T is required`);
    const payloadText = await payloadFromFlags(COMMAND, args.values);
    const plan = commonPlan(COMMAND, args.values);
    const client = new ApiClient(clientOptionsFromFlags("send", args.values));
    const body = `{"type":${JSON.stringify(type)},"payload":${payloadText}}`;
    const accepted = await postToFirstNode(client, COMMAND, "/v1/events", { ...plan, body });
    if (typeof accepted === "number") return accepted;
    const jobs = (accepted.json as { jobs?: unknown }).jobs;
    if (plan.json) {
      console.log(JSON.stringify({ ...(accepted.json as object), node: accepted.node }));
    } else {
      console.log(accepted.id);
      console.error(
        `${COMMAND}: fanned out to ${jobs} endpoint(s)` +
          (accepted.existing ? " (the idempotency key matched an earlier event)" : ""),
      );
    }
    if (!plan.wait) return EXIT_OK;

    // The node that took the event holds it (and its jobs' ids) at once.
    const read = await client.request(
      accepted.node,
      "GET",
      `/v1/events/${encodeURIComponent(accepted.id)}`,
    );
    const jobIds = read.kind === "answered" && read.status === 200
      ? jobIdsOf(read.json)
      : undefined;
    if (jobIds === undefined) {
      console.error(`${COMMAND}: could not read event ${accepted.id}: ${describeAnswer(read)}`);
      return EXIT_FAILURE;
    }
    const outcomes: FollowOutcome[] = await Promise.all(
      jobIds.map((id) => followOne(client, accepted.node, id, plan, `${id}: `)),
    );
    let dead = false;
    let unfinished = false;
    outcomes.forEach((outcome, i) => {
      if (outcome.kind === "finished") {
        if (outcome.job.state !== "delivered") dead = true;
        if (plan.json) console.log(JSON.stringify(outcome.job));
        else console.log(`${outcome.job.id}: ${describeFinal(outcome.job)}`);
        return;
      }
      unfinished = true;
      const last = outcome.last;
      if (plan.json && last !== undefined) console.log(JSON.stringify(last));
      const state = last !== undefined
        ? describeProgress(last, Date.now())
        : "its state was never read";
      console.error(
        `${COMMAND}: stopped waiting after ${formatDuration(plan.waitTimeoutMs)}; job ` +
          `${jobIds[i]} is accepted and goes on: ${state}`,
      );
    });
    return dead ? EXIT_FAILURE : unfinished ? EXIT_WAIT_ENDED : EXIT_OK;
  },
};

/** The job ids of a `GET /v1/events/{id}` answer, or undefined when it is not one. */
function jobIdsOf(json: unknown): string[] | undefined {
  const jobs = (json as { jobs?: unknown } | null)?.jobs;
  if (!Array.isArray(jobs)) return undefined;
  const ids: string[] = [];
  for (const j of jobs) {
    const id = (j as { job_id?: unknown } | null)?.job_id;
    if (typeof id !== "string") return undefined;
    ids.push(id);
  }
  return ids;
}
