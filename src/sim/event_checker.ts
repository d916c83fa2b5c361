/**
 * The simulation checker's rules for events (docs/endpoints.md), in runs whose workload sends
 * them (`SimProfile.events`; sim_events.ts records what it sent and saw):
 *
 * - All or nothing: at an event's answer (acknowledged or refused), no disk held the event's
 *   record without every one of its jobs.
 * - Majority-durable (invariant 1, for events): at an acknowledgement, every job of the event
 *   was on a majority of the configured voters' disks, and the event had as many jobs as the
 *   answer said.
 * - The fan-out: each job of an event is for an endpoint that takes the event's type.
 * - Every attempt of an event's job carries the event's id as `webhook-id`, the event's
 *   payload as its body, the endpoint's URL, and a signature under the endpoint's secret;
 *   nothing is delivered as an event's job that no event made.
 * - Ordered endpoints (`checkOrdered`): the acknowledged events' jobs of each reached it in
 *   order-key order, and no job's first attempt was sent before every job keyed earlier was
 *   delivered (a 2xx arrived) or dead (its last allowed attempt was sent).
 *
 * - Signed at attempt time (docs/endpoints.md, "Secret rotation"): every attempt carries a
 *   signature under each secret its sender's own table held valid for the endpoint at the
 *   sender's wall clock as the attempt started (the current secret and, during a rotation's
 *   overlap, the replaced one), recomputed here from the value, not from what the node signed.
 * - Rotation overlaps honoured: every attempt that starts after a rotation was acknowledged
 *   (durable on a majority), from a node whose table held it, carries a signature under the
 *   new secret; one that starts within the overlap (by the sender's wall clock) a signature
 *   under the replaced secret too, and none after it. An attempt from a node that had not yet
 *   received the rotation (a partition) signs as its table says: the previous rule.
 * - Disabled means no attempts: no attempt starts at a node whose own table held the endpoint
 *   disabled (its jobs go dead instead, new events skip it). So once the disable is durable on
 *   a majority, the only attempts left are those already in flight and those of nodes the
 *   disable has not reached yet; after the heal, when it reached every node, none.
 * - Gone disables: when a node that stayed up to the end saw a 410 from an endpoint, every up
 *   node ends holding that endpoint disabled with `disabled_reason` "gone".
 *
 * Delivery of every acknowledged event's jobs is checked with every other job's (the run's
 * `ackedJobs` holds them). Owns judgement only: reads the run through `SimHistory`.
 */

import { signatureHeader } from "../delivery/signing.ts";
import { compareVersions, secretsAt } from "../jobs/endpoint_model.ts";
import { eventIdOfJob, eventJobId } from "../jobs/event_model.ts";
import { jobsDefaults } from "../config/jobs.ts";
import { compareOrderKeys, type OrderKey } from "../jobs/ordered_queues.ts";
import type { SimHistory } from "./sim_history.ts";
import type { ReceivedRequest } from "./sim_receiver.ts";

export function checkEvents(
  sim: SimHistory,
  byJob: ReadonlyMap<string, readonly ReceivedRequest[]>,
  add: (kind: string, detail: string) => void,
): void {
  const quorum = Math.floor(sim.voters.length / 2) + 1;
  const endpoints = new Map(sim.endpoints.map((e) => [e.id, e]));
  const events = new Map<string, (typeof sim.events)[number]>();
  for (const e of sim.events) {
    if (e.eventId !== undefined) events.set(e.eventId, e);
    if (e.partialOn.length > 0) {
      add(
        "a disk held part of an event",
        `event #${e.serial} (${e.eventId}) at ${e.answeredAtMs?.toFixed(1)} ms: the record ` +
          `without all of its ${e.jobIds.length} jobs on ${e.partialOn.join(",")}`,
      );
    }
    for (const jobId of e.jobIds) {
      const endpoint = endpoints.get(jobId.slice(jobId.indexOf(".") + 1));
      if (endpoint === undefined || !endpoint.eventTypes.includes(e.type)) {
        add("an event fanned out to an endpoint that does not take it", `${e.type}: ${jobId}`);
      }
    }
    if (e.outcome?.ok !== true) continue;
    if (e.jobIds.length !== e.outcome.jobs) {
      add(
        "an event answered with another job count than it made",
        `event #${e.serial} ${e.outcome.id}: answered ${e.outcome.jobs}, made ${e.jobIds.length}`,
      );
    }
    for (const [jobId, nodes] of e.durableOn) {
      if (nodes.length < quorum) {
        add(
          "an event's job not durable on a majority when acknowledged",
          `event #${e.serial} job ${jobId} on ${nodes.length} disks [${nodes.join(",")}]`,
        );
      }
    }
  }
  // An event whose node died before it answered may still be delivered (its record reached
  // replicas, and a confirm round committed it): known by its payload, which names it.
  const idOfSerial = new Map<number, string>();
  for (const [jobId, requests] of byJob) {
    const eventId = eventIdOfJob(jobId);
    if (eventId === undefined) continue;
    const byPayload = sim.events[serialOf(requests[0]?.payload)];
    const event = events.get(eventId) ??
      (byPayload?.payload === requests[0]?.payload ? byPayload : undefined);
    const endpoint = endpoints.get(jobId.slice(eventId.length + 1));
    if (event === undefined || endpoint === undefined) {
      add("delivered an event's job no event made", jobId);
      continue;
    }
    const seen = idOfSerial.get(event.serial);
    if (seen === undefined) idOfSerial.set(event.serial, eventId);
    else if (seen !== eventId) {
      add("one event delivered under two ids", `event #${event.serial}: ${seen} and ${eventId}`);
    }
    if (!endpoint.eventTypes.includes(event.type)) {
      add("an event fanned out to an endpoint that does not take it", `${event.type}: ${jobId}`);
    }
    for (const r of requests) {
      if (r.webhookId !== eventId) {
        add("an event's attempt with a wrong webhook-id", `job ${jobId} sent as ${r.webhookId}`);
      }
      if (r.payload !== event.payload || r.url !== endpoint.url) {
        add("an event's attempt differs from the event or endpoint", `job ${jobId}`);
      }
      checkSigned(r, endpoint.secret, jobId, add);
    }
  }
  checkRotations(sim, add);
  checkGone(sim, add);
}

/**
 * An attempt's signatures: under the secrets its sender's table held valid at its wall clock
 * (the endpoint's own secret when the sender held no value of it: the job's fallback), and
 * none from a node that held the endpoint disabled.
 */
function checkSigned(
  r: ReceivedRequest,
  createdSecret: string,
  jobId: string,
  add: (kind: string, detail: string) => void,
): void {
  const saw = r.senderSaw;
  if (saw?.endpoint?.disabled === true) {
    add(
      "an attempt by a node that held its endpoint disabled",
      `job ${jobId} by ${r.node}/${r.life} at ${r.sentAtMs.toFixed(1)} ms ` +
        `(${saw.endpoint.disabledReason})`,
    );
  }
  const expected = saw?.endpoint !== undefined
    ? secretsAt(saw.endpoint, saw.wallMs)
    : [createdSecret];
  if (r.signature !== signatureHeader(expected, r.webhookId, r.timestampS, r.payload)) {
    add(
      "an event's attempt not signed under its endpoint's secrets at attempt time",
      `job ${jobId} by ${r.node}/${r.life} at ${r.sentAtMs.toFixed(1)} ms`,
    );
  }
}

/** Every attempt after an acknowledged rotation, from a node that held it, honours it. */
function checkRotations(sim: SimHistory, add: (kind: string, detail: string) => void): void {
  for (const rotation of sim.rotations) {
    const written = rotation.written;
    if (written === undefined || rotation.answeredAtMs === undefined) continue;
    const old = written.previousSecret;
    for (const r of sim.receiver.requests) {
      const saw = r.senderSaw;
      if (
        r.sentAtMs <= rotation.answeredAtMs || saw?.endpoint?.id !== rotation.endpointId ||
        compareVersions(saw.endpoint.version, written.version) < 0
      ) continue;
      const parts = (r.signature ?? "").split(" ");
      const under = (secret: string) =>
        parts.includes(signatureHeader([secret], r.webhookId, r.timestampS, r.payload));
      const within = saw.wallMs < written.previousSecretUntilMs;
      // A later rotation replaces this one's secrets: checked as its own.
      const newer = sim.rotations.some((o) =>
        o !== rotation && o.written !== undefined &&
        compareVersions(o.written.version, written.version) > 0 &&
        compareVersions(saw.endpoint!.version, o.written.version) >= 0
      );
      if (newer) continue;
      if (!under(rotation.secret)) {
        add("an attempt after a rotation not signed under the new secret", `${r.jobId}`);
      }
      if (within && !under(old)) {
        add("an attempt within a rotation's overlap not signed under the old secret", r.jobId);
      }
      if (!within && under(old)) {
        add("an attempt after a rotation's overlap still signed under the old secret", r.jobId);
      }
    }
  }
}

/**
 * An endpoint whose 410 a node saw and kept (its life lasted to the end, so its ask to
 * disable was not lost with a crash) is disabled, "gone", on every up node at the end.
 */
function checkGone(sim: SimHistory, add: (kind: string, detail: string) => void): void {
  const endpointOfUrl = new Map(sim.endpoints.map((e) => [e.url, e.id]));
  const lastLife = new Map<string, number>();
  for (const l of sim.lives) lastLife.set(l.node, Math.max(lastLife.get(l.node) ?? 0, l.life));
  const up = new Set(sim.upNodes().map((u) => u.node));
  const gone = new Set<string>();
  for (const r of sim.receiver.requests) {
    const id = endpointOfUrl.get(r.url);
    if (
      id !== undefined && r.status === 410 && r.nodeSaw === "response" && up.has(r.node) &&
      lastLife.get(r.node) === r.life
    ) gone.add(id);
  }
  for (const id of gone) {
    for (const { node, state } of sim.endpointValues(id)) {
      if (state?.disabled !== true || state.disabledReason !== "gone") {
        add(
          "an endpoint that answered 410 is not disabled (gone)",
          `${id} on ${node}: ${state === undefined ? "none" : state.disabledReason || "enabled"}`,
        );
      }
    }
  }
}

/**
 * Each ordered endpoint received the jobs of the acknowledged events in order-key order: no
 * job's first attempt was sent before every job keyed earlier had a 2xx arrive at the
 * receiver, or (never delivered) had its last allowed attempt sent, after which only a dead
 * letter follows. A duplicate of an earlier job after a later one started is allowed
 * (at-least-once, an owner change); a later job before an earlier one finished never is.
 * Events not acknowledged are left out: they take their key's place if the owner holds them
 * in time, and are not promised any (docs/replication.md, "Ordered endpoints").
 */
export function checkOrdered(
  sim: SimHistory,
  byJob: ReadonlyMap<string, readonly ReceivedRequest[]>,
  add: (kind: string, detail: string) => void,
): void {
  const maxAttempts = sim.profile.jobs.maxAttemptsDefault ?? jobsDefaults.maxAttemptsDefault;
  for (const endpoint of sim.endpoints) {
    if (!endpoint.ordered) continue;
    const jobs: Array<{ jobId: string; key: OrderKey; serial: number }> = [];
    for (const e of sim.events) {
      if (e.outcome?.ok !== true || e.eventId === undefined) continue;
      const jobId = eventJobId(e.eventId, endpoint.id);
      if (!e.jobIds.includes(jobId)) continue;
      if (e.orderKey === undefined) {
        add("an ordered event's key unknown at its answer", `event #${e.serial} ${jobId}`);
        continue;
      }
      jobs.push({ jobId, key: e.orderKey, serial: e.serial });
    }
    jobs.sort((a, b) => compareOrderKeys(a.key, b.key));
    /** When every job so far was finished: the latest of their finishing instants. */
    let finishedAtMs = -Infinity;
    let finishedBy = "";
    for (const job of jobs) {
      const requests = byJob.get(job.jobId) ?? [];
      const first = requests.reduce((t, r) => Math.min(t, r.sentAtMs), Infinity);
      if (first < finishedAtMs) {
        add(
          "an ordered endpoint's job attempted before an earlier one finished",
          `endpoint ${endpoint.id}: job ${job.jobId} (event #${job.serial}) first sent at ` +
            `${first.toFixed(1)} ms, before ${finishedBy} finished at ${
              finishedAtMs.toFixed(1)
            } ms`,
        );
      }
      const delivered = requests.filter((r) => r.status >= 200 && r.status < 300);
      const lastAllowed = requests.filter((r) => r.attempt >= maxAttempts);
      const doneAtMs = delivered.length > 0
        ? Math.min(...delivered.map((r) => r.arrivedAtMs ?? r.sentAtMs))
        : lastAllowed.length > 0
        ? Math.min(...lastAllowed.map((r) => r.sentAtMs))
        : Infinity;
      if (doneAtMs > finishedAtMs) {
        finishedAtMs = doneAtMs;
        finishedBy = `job ${job.jobId} (event #${job.serial})`;
      }
    }
  }
}

/** The serial an event's payload names (`{"event": serial, …}`), or -1. */
function serialOf(payload: string | undefined): number {
  try {
    const serial = (JSON.parse(payload ?? "") as { event?: unknown }).event;
    return typeof serial === "number" && Number.isInteger(serial) ? serial : -1;
  } catch {
    return -1;
  }
}
