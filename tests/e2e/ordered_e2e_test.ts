/**
 * An ordered endpoint against five real `hookd node` processes (docs/replication.md, "Ordered
 * endpoints"; issue 20's acceptance in test form): events sent one after another, each after
 * the previous 202, to nodes other than the endpoint's owner; the receiver (verifying every
 * signature with the `standardwebhooks` package) fails one event's job at first, and while it
 * fails the owner is killed (SIGKILL), another node takes the head over, the owner is
 * restarted and takes it back, and then a bystander node is killed (every pending job is
 * looked at again on a view change: only the head may go). Every event is delivered, the first
 * 2xx of each comes in send order, and no request for an event reached the receiver before
 * every earlier event had its 2xx (the head itself may be attempted again, at least once; a
 * later event never early).
 */

import { Webhook } from "standardwebhooks";
import { assert, assertEquals } from "../assert.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";
import { eventJobId } from "../../src/jobs/event_model.ts";
import { preferenceList } from "../../src/jobs/preference.ts";
import { ready, startCluster } from "./store_cluster.ts";

const EVENTS = 8;
/** The event (0-based, in send order) whose job the receiver fails at first. */
const FAILING_EVENT = 2;
/**
 * Its first attempts answered 500 at least; it keeps failing until the test has seen the
 * owner's kill, the takeover, the restart and the bystander's death through (`holdHead`),
 * so no step depends on how fast the retries come.
 */
const FAILURES_MIN = 8;
/** The owner is killed once the failing job has had this many attempts. */
const KILL_AFTER_ATTEMPTS = 2;
/** The owner stays down at least this long (and until another node attempted the head). */
const DOWN_MS = 3_000;
const SECRET = "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(7)));

/** One request as the receiver saw it, in arrival order. */
interface Request {
  /** The event's place in send order, from the payload. */
  readonly event: number;
  readonly webhookId: string;
  readonly status: number;
}

interface OrderedReceiver {
  readonly url: string;
  /** Every verified request, in the order they arrived. */
  readonly requests: Request[];
  /** Requests whose signature did not verify (answered 401). */
  unverified: number;
  /** While true, `FAILING_EVENT`'s job is answered 500 (after `FAILURES_MIN`, too). */
  holdHead: boolean;
  close(): Promise<void>;
}

/** Answers `FAILING_EVENT`'s job 500 while it is held or young, every other request 204. */
function startOrderedReceiver(): OrderedReceiver {
  const verifier = new Webhook(SECRET);
  const receiver: Omit<OrderedReceiver, "url" | "close"> = {
    requests: [],
    unverified: 0,
    holdHead: true,
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const body = await request.text();
      try {
        verifier.verify(body, Object.fromEntries(request.headers.entries()));
      } catch {
        receiver.unverified++;
        return new Response("bad signature", { status: 401 });
      }
      // The event's number comes from its payload, so the receiver needs no id before the
      // 202 that names it (the owner may attempt as soon as the event settles).
      const event = (JSON.parse(body) as { i: number }).i;
      const earlier = receiver.requests.filter((r) => r.event === event).length;
      const fail = event === FAILING_EVENT && (receiver.holdHead || earlier < FAILURES_MIN);
      const status = fail ? 500 : 204;
      receiver.requests.push({ event, webhookId: request.headers.get("webhook-id")!, status });
      return new Response(status === 204 ? null : "not yet", { status });
    },
  );
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    close: () => server.shutdown(),
  });
}

/** A job as `GET /v1/jobs/{id}` shows it (the fields read here). */
interface JobJson {
  owner: string;
  attempts: { node: string; startedAtMs: number }[];
}

async function getJob(base: string | undefined, jobId: string): Promise<JobJson | undefined> {
  if (base === undefined) return undefined;
  try {
    const response = await fetch(`${base}/v1/jobs/${jobId}`, {
      signal: AbortSignal.timeout(5_000),
    });
    const body = await response.json();
    return response.status === 200 ? body as JobJson : undefined;
  } catch {
    return undefined;
  }
}

/** Requests for an event that came before some earlier event had its 2xx (must be none). */
function earlyRequests(requests: readonly Request[]): string[] {
  const delivered = new Set<number>();
  const early: string[] = [];
  for (const [n, r] of requests.entries()) {
    for (let j = 0; j < r.event; j++) {
      if (!delivered.has(j)) early.push(`request ${n} (event ${r.event}) before event ${j}'s 2xx`);
    }
    if (r.status === 204) delivered.add(r.event);
  }
  return early;
}

/** The events in the order of their first 2xx. */
function firstOk(requests: readonly Request[]): number[] {
  const order: number[] = [];
  for (const r of requests) if (r.status === 204 && !order.includes(r.event)) order.push(r.event);
  return order;
}

Deno.test({
  name: "an ordered endpoint gets its events in send order across its owner's kill -9 and restart",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const receiver = startOrderedReceiver();
    const { cluster, ids } = await startCluster([
      "--allow-private-targets",
      "--retry-schedule",
      "100,200,400,800",
      // Past the head's failures (a few dozen at most) and the repeats an owner change adds.
      "--max-attempts",
      "100",
    ]);
    try {
      const url = (id: string) => cluster.httpUrls.get(id)!;
      const created = await fetch(`${url("n1")}/v1/endpoints`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url, secret: SECRET, ordered: true }),
      });
      const endpoint = await created.json();
      assertEquals(created.status, 201, JSON.stringify(endpoint));
      const endpointId = endpoint.id as string;
      // Every node fans an event out from its own table: each must hold the endpoint first.
      for (const node of ids) {
        assert(
          await waitUntil(async () => {
            const r = await fetch(`${url(node)}/v1/endpoints/${endpointId}`);
            const body = await r.json();
            return r.status === 200 && body.ordered === true;
          }, 10_000),
          `${node} holds the ordered endpoint`,
        );
      }

      // The owner: the rendezvous of the endpoint id over the voters' sorted addresses; the
      // next in that ranking takes over while it is down; the bystander is neither.
      const voters = cluster.nodes.map((n) => n.address).sort();
      const idOf = (address: string) => cluster.nodes.find((n) => n.address === address)!.id;
      const [ownerAddress, standInAddress] = preferenceList(endpointId, voters) as [
        string,
        string,
      ];
      const owner = idOf(ownerAddress);
      const standIn = idOf(standInAddress);
      const bystander = ids.find((id) => id !== owner && id !== standIn)!;
      const others = ids.filter((id) => id !== owner);

      const eventIds: string[] = [];
      for (let i = 0; i < EVENTS; i++) {
        const response = await fetch(`${url(others[i % others.length]!)}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ type: "order.updated", payload: { i } }),
        });
        const answer = await response.json();
        assertEquals(response.status, 202, JSON.stringify(answer));
        assertEquals(answer.jobs, 1);
        eventIds.push(answer.id);
      }
      // With every node up, the nodes name that owner for the endpoint's jobs.
      for (const node of others) {
        const job = await getJob(url(node), eventJobId(eventIds[0]!, endpointId));
        assertEquals(job?.owner, owner, `${node}'s owner of the first job`);
      }

      const attemptsOf = (event: number) =>
        receiver.requests.filter((r) => r.event === event).length;
      const failingJob = eventJobId(eventIds[FAILING_EVENT]!, endpointId);
      /**
       * Waits (bounded) until `done`; fails at once, showing every request, should a request
       * for an event come before an earlier event's 2xx, or a signature not verify.
       */
      const step = async (
        what: string,
        done: () => boolean | Promise<boolean>,
        limitMs: number,
      ): Promise<void> => {
        const held = await waitUntil(
          async () =>
            earlyRequests(receiver.requests).length > 0 || receiver.unverified > 0 ||
            await done(),
          limitMs,
        );
        assertEquals(receiver.unverified, 0, "every request verifies under the endpoint's secret");
        assertEquals(earlyRequests(receiver.requests), [], JSON.stringify(receiver.requests));
        assert(held, `${what}: not within ${limitMs} ms`);
      };
      /** Whether `address` attempted the failing job at or after `sinceMs` (wall clock). */
      const attemptedSince = async (address: string, sinceMs: number) =>
        (await getJob(cluster.httpUrls.get(standIn), failingJob))?.attempts.some((a) =>
          a.node === address && a.startedAtMs >= sinceMs
        ) === true;

      // 1. The owner dies while the head fails; the stand-in takes the head over.
      await step(
        `the failing job attempted ${KILL_AFTER_ATTEMPTS} times`,
        () => attemptsOf(FAILING_EVENT) >= KILL_AFTER_ATTEMPTS,
        30_000,
      );
      const killedAtMs = Date.now();
      await cluster.kill(owner);
      await step(
        `${standIn} took the head over while ${owner} was down`,
        async () =>
          Date.now() - killedAtMs >= DOWN_MS && await attemptedSince(standInAddress, killedAtMs),
        30_000,
      );

      // 2. The owner comes back from its disk and takes the head back.
      const restartedAtMs = Date.now();
      cluster.start(owner);
      await step(`${owner} ready again`, () => ready(cluster, owner), 30_000);
      await step(
        `${owner} attempted the head again after its restart`,
        () => attemptedSince(ownerAddress, restartedAtMs),
        30_000,
      );

      // 3. A bystander dies: the owner, settled past every event's key, looks at every pending
      // job again; only the head may go.
      await cluster.kill(bystander);
      await step(
        `${owner} holds ${bystander} dead`,
        () => cluster.views.get(owner)?.get(bystander) === "member-dead",
        30_000,
      );
      const seen = attemptsOf(FAILING_EVENT);
      await step(
        "the head attempted again after the view change",
        () => attemptsOf(FAILING_EVENT) > seen,
        10_000,
      );
      receiver.holdHead = false;

      await step(
        "every event delivered",
        () => firstOk(receiver.requests).length === EVENTS,
        60_000,
      );
      assertEquals(
        firstOk(receiver.requests),
        [...Array(EVENTS).keys()],
        "first 2xx in send order",
      );
      // Each delivery carried its event's id as webhook-id.
      for (const r of receiver.requests) assertEquals(r.webhookId, eventIds[r.event]);
    } finally {
      await cluster.stopAll();
      await receiver.close();
    }
  },
});
