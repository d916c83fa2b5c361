/**
 * The whole-cluster simulation with events (`hookd sim --events`): five node stacks under
 * crashes, loss, partitions and skewed clocks, with endpoints and events in the workload, keep
 * every invariant, events' included (src/sim/event_checker.ts); and the event checker itself
 * fails what it must (a disk with part of an event, a wrong webhook-id, an unsigned attempt).
 */

import { assert, assertEquals } from "../assert.ts";
import { type ClusterSimOptions, replayCommand, runClusterSim } from "../../src/sim/cluster_sim.ts";
import { checkEvents, checkOrdered } from "../../src/sim/event_checker.ts";
import type { EventLog, RotationLog, SimHistory } from "../../src/sim/sim_history.ts";
import type { EndpointState } from "../../src/jobs/endpoint_model.ts";
import type { ReceivedRequest } from "../../src/sim/sim_receiver.ts";
import { signatureHeader } from "../../src/delivery/signing.ts";

/** Virtual ms of faults and workload per seed, as the other simulation tests run. */
const CHAOS_MS = 6_000;
const SEEDS = 30;

Deno.test(`the whole-cluster simulation with events keeps every invariant over ${SEEDS} seeds`, async () => {
  const failures: string[] = [];
  let events = 0;
  let eventJobs = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const options: ClusterSimOptions = { seed, chaosMs: CHAOS_MS, events: true };
    const report = await runClusterSim(options);
    if (!report.ok) {
      failures.push(`seed ${seed}: ${report.violations.join("; ")}\n  ${replayCommand(options)}`);
    }
    events += report.stats.eventsAcked;
    eventJobs += report.stats.eventJobsAcked;
  }
  assertEquals(failures, [], failures.join("\n"));
  // The runs did something: events were acknowledged, most with jobs.
  assert(events > 100 && eventJobs > events, `${events} events, ${eventJobs} jobs`);
});

const SECRET = "whsec_" + btoa("x".repeat(24));

/** A finished run's record with one endpoint and one acknowledged event (what a test edits). */
function history(
  event: Partial<EventLog>,
  requests: ReceivedRequest[],
  extra: { rotations?: RotationLog[]; endpointAtEnd?: EndpointState } = {},
): {
  sim: SimHistory;
  byJob: Map<string, ReceivedRequest[]>;
} {
  const log: EventLog = {
    serial: 0,
    node: "n1",
    life: 1,
    type: "invoice.paid",
    payload: '{"event":0}',
    atMs: 0,
    answeredAtMs: 5,
    outcome: { ok: true, id: "evt_1", type: "invoice.paid", jobs: 1, existing: false },
    eventId: "evt_1",
    jobIds: ["evt_1.ep_a"],
    durableOn: new Map([["evt_1.ep_a", ["n1", "n2", "n3"]]]),
    partialOn: [],
    orderKey: undefined,
    ...event,
  };
  const sim = {
    voters: ["a", "b", "c", "d", "e"],
    endpoints: [{ id: "ep_a", url: "http://a/", secret: SECRET, eventTypes: ["invoice.paid"] }],
    events: [log],
    rotations: extra.rotations ?? [],
    lives: [{ node: "n1", life: 1, startMs: 0, endMs: undefined }],
    receiver: { requests },
    upNodes: () => [{ node: "n1", phase: "ready" }],
    endpointValues: () => [{ node: "n1", state: extra.endpointAtEnd }],
  } as unknown as SimHistory;
  const byJob = new Map<string, ReceivedRequest[]>();
  for (const r of requests) byJob.set(r.jobId, [...(byJob.get(r.jobId) ?? []), r]);
  return { sim, byJob };
}

function attempt(patch: Partial<ReceivedRequest>): ReceivedRequest {
  const base = {
    serial: 0,
    node: "n1",
    life: 1,
    jobId: "evt_1.ep_a",
    attempt: 1,
    sentAtMs: 1,
    arrivedAtMs: 2,
    status: 204,
    webhookId: "evt_1",
    timestampS: 100,
    payload: '{"event":0}',
    url: "http://a/",
    secrets: [SECRET],
    ...patch,
  };
  return {
    ...base,
    signature: signatureHeader(base.secrets, base.webhookId, base.timestampS, base.payload),
    ...patch,
  } as ReceivedRequest;
}

function findings(
  event: Partial<EventLog>,
  requests: ReceivedRequest[] = [],
  extra: { rotations?: RotationLog[]; endpointAtEnd?: EndpointState } = {},
): string[] {
  const { sim, byJob } = history(event, requests, extra);
  const out: string[] = [];
  checkEvents(sim, byJob, (kind) => out.push(kind));
  return out;
}

Deno.test("the event checker passes a whole, majority-durable, rightly signed event", () => {
  assertEquals(findings({}, [attempt({})]), []);
});

Deno.test("the event checker fails part of an event on a disk, or a job on a minority", () => {
  assertEquals(findings({ partialOn: ["n4"] }), ["a disk held part of an event"]);
  assertEquals(findings({ durableOn: new Map([["evt_1.ep_a", ["n1", "n2"]]]) }), [
    "an event's job not durable on a majority when acknowledged",
  ]);
  assertEquals(findings({ jobIds: [] }), ["an event answered with another job count than it made"]);
  assertEquals(findings({ type: "user.created" }), [
    "an event fanned out to an endpoint that does not take it",
  ]);
});

Deno.test("the event checker fails an attempt with the job's id, another body, or no signature", () => {
  assertEquals(findings({}, [attempt({ webhookId: "evt_1.ep_a" })]), [
    "an event's attempt with a wrong webhook-id",
  ]);
  assertEquals(findings({}, [attempt({ payload: "{}" })]), [
    "an event's attempt differs from the event or endpoint",
  ]);
  assertEquals(findings({}, [attempt({ secrets: [], signature: undefined })]), [
    "an event's attempt not signed under its endpoint's secrets at attempt time",
  ]);
  assertEquals(findings({ eventId: "evt_2" }, [attempt({ payload: '{"event":9}' })]), [
    "delivered an event's job no event made",
  ]);
});

Deno.test("the event checker knows an event its dead node never answered, by its payload", () => {
  const unanswered = { eventId: undefined, outcome: undefined, jobIds: [] };
  assertEquals(findings(unanswered, [attempt({})]), []);
  // The same event delivered under a second id: one event became two.
  assertEquals(
    findings(unanswered, [attempt({}), attempt({ jobId: "evt_9.ep_a", webhookId: "evt_9" })]),
    ["one event delivered under two ids"],
  );
});

/** Two acknowledged events to one ordered endpoint, keyed A (serial 0) before B (serial 1). */
function orderedFindings(requests: ReceivedRequest[]): string[] {
  const event = (serial: number, atMs: number): EventLog => ({
    serial,
    node: "n1",
    life: 1,
    type: "invoice.paid",
    payload: `{"event":${serial}}`,
    atMs: 0,
    answeredAtMs: 5,
    outcome: { ok: true, id: `evt_${serial}`, type: "invoice.paid", jobs: 1, existing: false },
    eventId: `evt_${serial}`,
    jobIds: [`evt_${serial}.ep_o`],
    durableOn: new Map(),
    partialOn: [],
    orderKey: { atMs, origin: "a", seq: serial + 1 },
  });
  const sim = {
    voters: ["a", "b", "c", "d", "e"],
    profile: { jobs: { maxAttemptsDefault: 3 } },
    endpoints: [{ id: "ep_o", url: "http://o/", secret: SECRET, eventTypes: [], ordered: true }],
    // Sent B first: the order is the keys', not the serials'.
    events: [event(1, 2_000), event(0, 1_000)],
  } as unknown as SimHistory;
  const byJob = new Map<string, ReceivedRequest[]>();
  for (const r of requests) byJob.set(r.jobId, [...(byJob.get(r.jobId) ?? []), r]);
  const out: string[] = [];
  checkOrdered(sim, byJob, (kind) => out.push(kind));
  return out;
}

Deno.test("the ordered check passes jobs in key order, a retried head, a dead head, a duplicate", () => {
  const a = (patch: Partial<ReceivedRequest>) => attempt({ jobId: "evt_0.ep_o", ...patch });
  const b = (patch: Partial<ReceivedRequest>) => attempt({ jobId: "evt_1.ep_o", ...patch });
  assertEquals(orderedFindings([a({ sentAtMs: 1, arrivedAtMs: 2 }), b({ sentAtMs: 3 })]), []);
  // The head failed twice, then got its 2xx; a duplicate of it after B started is allowed.
  assertEquals(
    orderedFindings([
      a({ attempt: 1, sentAtMs: 1, status: 500 }),
      a({ attempt: 2, sentAtMs: 5, arrivedAtMs: 6 }),
      b({ sentAtMs: 7 }),
      a({ attempt: 2, sentAtMs: 8, arrivedAtMs: 9 }),
    ]),
    [],
  );
  // A dead head (its last allowed attempt failed) released B.
  const dead = [1, 2, 3].map((n) => a({ attempt: n, sentAtMs: n * 10, status: 500 }));
  assertEquals(orderedFindings([...dead, b({ sentAtMs: 31 })]), []);
});

Deno.test("the ordered check fails a later job attempted before an earlier one finished", () => {
  const a = (patch: Partial<ReceivedRequest>) => attempt({ jobId: "evt_0.ep_o", ...patch });
  const b = (patch: Partial<ReceivedRequest>) => attempt({ jobId: "evt_1.ep_o", ...patch });
  const kind = "an ordered endpoint's job attempted before an earlier one finished";
  // B before A, by keys (B's serial came first).
  assertEquals(orderedFindings([b({ sentAtMs: 1 }), a({ sentAtMs: 3, arrivedAtMs: 4 })]), [kind]);
  // B while A was failing and not yet dead.
  assertEquals(
    orderedFindings([
      a({ attempt: 1, sentAtMs: 1, status: 500 }),
      b({ sentAtMs: 2 }),
      a({ attempt: 2, sentAtMs: 5, arrivedAtMs: 6 }),
    ]),
    [kind],
  );
});

const NEW = "whsec_" + btoa("n".repeat(24));

/** Endpoint ep_a as a node's table holds it: rotated to NEW at version time 1000, overlap 500. */
function rotatedValue(patch: Partial<EndpointState> = {}): EndpointState {
  return {
    id: "ep_a",
    url: "http://a/",
    eventTypes: ["invoice.paid"],
    secret: NEW,
    description: "",
    headers: {},
    rateLimitPerS: 0,
    ordered: false,
    disabled: false,
    disabledReason: "",
    createdAtMs: 0,
    previousSecret: SECRET,
    previousSecretUntilMs: 1500,
    lastSuccessAtMs: 0,
    deleted: false,
    version: { atMs: 1000, origin: "n1", seq: 7 },
    ...patch,
  };
}

/** An attempt sent at virtual ms `sentAtMs` by a node whose table held `endpoint` at `wallMs`. */
function seen(endpoint: EndpointState, wallMs: number, secrets: string[], sentAtMs = 20) {
  return attempt({ secrets, sentAtMs, senderSaw: { wallMs, endpoint } });
}

Deno.test("the event checker holds attempts to the sender's secrets at attempt time and to acknowledged rotations", () => {
  const rotation: RotationLog = {
    endpointId: "ep_a",
    node: "n1",
    secret: NEW,
    atMs: 5,
    answeredAtMs: 10,
    written: rotatedValue(),
  };
  const rotations = [rotation];
  // Within the overlap: new and old; after it: the new one alone.
  assertEquals(findings({}, [seen(rotatedValue(), 1200, [NEW, SECRET])], { rotations }), []);
  assertEquals(findings({}, [seen(rotatedValue(), 1600, [NEW])], { rotations }), []);
  // Signed under the job's own (old) secret only: what a node signing from the spec does.
  assertEquals(findings({}, [seen(rotatedValue(), 1200, [SECRET])], { rotations }), [
    "an event's attempt not signed under its endpoint's secrets at attempt time",
    "an attempt after a rotation not signed under the new secret",
  ]);
  assertEquals(findings({}, [seen(rotatedValue(), 1200, [NEW])], { rotations }), [
    "an event's attempt not signed under its endpoint's secrets at attempt time",
    "an attempt within a rotation's overlap not signed under the old secret",
  ]);
  assertEquals(findings({}, [seen(rotatedValue(), 1600, [NEW, SECRET])], { rotations }), [
    "an event's attempt not signed under its endpoint's secrets at attempt time",
    "an attempt after a rotation's overlap still signed under the old secret",
  ]);
  // A sender that had not received the rotation signs as its table says.
  const before = rotatedValue({
    secret: SECRET,
    previousSecret: "",
    previousSecretUntilMs: 0,
    version: { atMs: 900, origin: "n2", seq: 3 },
  });
  assertEquals(findings({}, [seen(before, 1200, [SECRET])], { rotations }), []);
});

Deno.test("the event checker fails an attempt by a node that held the endpoint disabled, and a 410 endpoint left enabled", () => {
  const disabled = rotatedValue({ disabled: true, disabledReason: "gone" });
  assertEquals(findings({}, [seen(disabled, 1200, [NEW, SECRET])]), [
    "an attempt by a node that held its endpoint disabled",
  ]);
  const gone = attempt({ status: 410, nodeSaw: "response" });
  assertEquals(findings({}, [gone], { endpointAtEnd: disabled }), []);
  assertEquals(findings({}, [gone], { endpointAtEnd: rotatedValue() }), [
    "an endpoint that answered 410 is not disabled (gone)",
  ]);
});
