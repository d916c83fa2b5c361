/**
 * The event workload of a whole-cluster simulation run that asks for it (`SimProfile.events`,
 * `hookd sim --events`): five endpoints created early (two take `invoice.paid`, one of them
 * `user.created` too, the third `user.created` only, an ordered one both, whose receiver
 * fails the first attempts of a third of its jobs, and a fifth takes `invoice.paid` and answers
 * every request 410 Gone, so it gets disabled), then events of either type at seeded
 * instants to random live nodes, as a client sends them. Records each event, its answer, the
 * job ids the node that took it made, and at the answer what every disk held of it: on which
 * disks each job was (invariant 1, for events) and which disks held the event's record
 * without all its jobs (the all-or-nothing rule; must be none). Midway it rotates the second
 * endpoint's secret through a random live node (the nodes run with a short overlap,
 * `eventRotationOverlapMs`, so attempts after the overlap are in the run too).
 *
 * Owns the endpoints' creation and the events; talks to a node as its client does
 * (`JobStore.createEndpoint`, `JobStore.submitEvent`). Draws only from the generator it is
 * given (its own, never the other workload's), so a run without events is the run it was.
 */

import type { EndpointFields } from "../jobs/service.ts";
import type { SimProfile } from "./sim_profile.ts";
import type { ReceivedRequest } from "./sim_receiver.ts";
import { eventKey } from "./durability_probe.ts";
import type { EventLog, RotationLog, SimEndpoint } from "./sim_history.ts";
import type { Slot } from "./sim_slot.ts";
import type { WorkloadHost } from "./sim_workload.ts";

/**
 * What the event workload needs of the cluster around it: the job workload's view of it
 * (its `rng` the event workload's own generator), and where to record endpoints and events.
 */
export interface EventWorkloadHost
  extends
    Pick<WorkloadHost, "scheduler" | "profile" | "probe" | "rng" | "chaosMs" | "slots" | "trace"> {
  readonly endpoints: SimEndpoint[];
  readonly events: EventLog[];
  readonly rotations: RotationLog[];
}

/** The endpoint whose receiver answers 410 Gone to everything (the receiver's `goneUrls`). */
export const GONE_HOST = "e4";
/** The URL the endpoint on `host` is created with. */
export function endpointUrl(host: string): string {
  return `http://${host}.receiver.sim/hook`;
}
/**
 * The rotation overlap the nodes of a run with events use (`jobs.secretRotationOverlapMs`),
 * for a run of `chaosMs`: a quarter of it, so attempts within the overlap and after it are
 * both in the run, however long it is.
 */
export function eventRotationOverlapMs(chaosMs: number): number {
  return Math.round(chaosMs / 4);
}
/** The second endpoint's secret is rotated this far into the faults, to this secret. */
const ROTATE_AT_SHARE = 0.3;
const ROTATED_SECRET = "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(0x60)));

/** The endpoints every run with events creates: URL host, event types, ordered. */
const ENDPOINTS: ReadonlyArray<readonly [string, readonly string[], boolean]> = [
  ["e0", ["invoice.paid"], false],
  ["e1", ["invoice.paid", "user.created"], false],
  ["e2", ["user.created"], false],
  ["e3", ["invoice.paid", "user.created"], true],
  [GONE_HOST, ["invoice.paid"], false],
];

/** The ordered endpoint's receiver fails this many first attempts of a third of its jobs. */
const ORDERED_FAILED_ATTEMPTS = 2;

/**
 * Whether the receiver answers this request 500: the ordered endpoint's, on the first
 * attempts of a third of its jobs (picked by a hash of the job id, so no generator moves), so
 * its heads fail and hold the rest behind them.
 */
export function orderedFailures(request: ReceivedRequest): boolean {
  if (!request.url.startsWith("http://e3.")) return false;
  let h = 0;
  for (let i = 0; i < request.jobId.length; i++) {
    h = Math.imul(h ^ request.jobId.charCodeAt(i), 0x01000193) >>> 0;
  }
  return h % 3 === 0 && request.attempt <= ORDERED_FAILED_ATTEMPTS;
}

/**
 * The profile of a run with events: as drawn, with the ordered endpoints' clock allowance at
 * the most two of its nodes' clocks differ, so their order holds exactly (ordered_queues.ts),
 * and the rotation overlap a quarter of the run's `chaosMs` (`eventRotationOverlapMs`).
 */
export function eventsProfile(profile: SimProfile, chaosMs: number): SimProfile {
  return {
    ...profile,
    events: true,
    jobs: {
      ...profile.jobs,
      orderedClockSkewMs: 2 * profile.skewMsMax,
      secretRotationOverlapMs: eventRotationOverlapMs(chaosMs),
    },
  };
}
const TYPES = ["invoice.paid", "user.created"];
/** When the endpoints are created, and how often a refused create is tried again. */
const ENDPOINTS_AT_MS = 1_000;
const ENDPOINT_RETRY_MS = 300;
const ENDPOINT_TRIES_MAX = 20;
/** Events start once the endpoints had time to be created. */
const EVENTS_FROM_MS = 2_500;

export class SimEventWorkload {
  readonly #host: EventWorkloadHost;

  constructor(host: EventWorkloadHost) {
    this.#host = host;
  }

  schedule(): void {
    const { rng, scheduler, chaosMs, profile } = this.#host;
    for (const [i, [host, eventTypes, ordered]] of ENDPOINTS.entries()) {
      const secretBytes = new Uint8Array(24).fill(0x40 + i);
      const fields: EndpointFields = {
        url: endpointUrl(host),
        eventTypes: [...eventTypes],
        secret: "whsec_" + btoa(String.fromCharCode(...secretBytes)),
        description: "",
        headers: {},
        rateLimitPerS: 0,
        ordered,
        disabled: false,
        disabledReason: "",
      };
      scheduler.at(ENDPOINTS_AT_MS + i, () => this.#createEndpoint(fields, rng.next(), 1));
    }
    scheduler.at(
      Math.max(EVENTS_FROM_MS, ROTATE_AT_SHARE * chaosMs),
      () => this.#rotate(rng.next(), 1),
    );
    const exp = (mean: number) => -Math.log(1 - rng.next()) * mean;
    // Events at a quarter of the job submit rate: each fans out to one or two jobs.
    const meanMs = 4 * profile.submitIntervalMs;
    for (let t = EVENTS_FROM_MS + exp(meanMs); t < chaosMs; t += exp(meanMs)) {
      const nodeRoll = rng.next();
      const typeRoll = rng.next();
      scheduler.at(t, () => this.#send(nodeRoll, typeRoll));
    }
  }

  /** A refused endpoint write, tried again later through another random node (bounded). */
  #retry(tries: number, again: (nodeRoll: number) => void): void {
    if (tries >= ENDPOINT_TRIES_MAX) return;
    const roll = this.#host.rng.next();
    this.#host.scheduler.at(this.#host.scheduler.nowMs + ENDPOINT_RETRY_MS, () => again(roll));
  }

  #live(): Slot[] {
    return this.#host.slots.filter((s) => s.store !== undefined);
  }

  #createEndpoint(fields: EndpointFields, nodeRoll: number, tries: number): void {
    const live = this.#live();
    const retry = () => this.#retry(tries, (roll) => this.#createEndpoint(fields, roll, tries + 1));
    if (live.length === 0) return retry();
    const slot = live[Math.floor(nodeRoll * live.length)]!;
    slot.store!.createEndpoint(fields).then((outcome) => {
      this.#host.trace(
        `endpoint ${fields.url} via ${slot.nodeId}: ${
          outcome.ok ? outcome.endpoint.id : outcome.code
        }`,
      );
      if (outcome.ok) {
        this.#host.endpoints.push({
          id: outcome.endpoint.id,
          url: fields.url,
          secret: fields.secret,
          eventTypes: fields.eventTypes,
          ordered: fields.ordered,
        });
      } else retry();
    });
  }

  /** Rotates the second endpoint's secret through a live node (tried again if refused). */
  #rotate(nodeRoll: number, tries: number): void {
    const endpoint = this.#host.endpoints.find((e) => e.url === endpointUrl("e1"));
    const live = this.#live();
    const retry = () => this.#retry(tries, (roll) => this.#rotate(roll, tries + 1));
    if (endpoint === undefined || live.length === 0) return retry();
    const slot = live[Math.floor(nodeRoll * live.length)]!;
    const log: RotationLog = {
      endpointId: endpoint.id,
      node: slot.nodeId,
      secret: ROTATED_SECRET,
      atMs: this.#host.scheduler.nowMs,
      answeredAtMs: undefined,
      written: undefined,
    };
    this.#host.rotations.push(log);
    slot.store!.rotateEndpointSecret(endpoint.id, ROTATED_SECRET).then((outcome) => {
      log.answeredAtMs = this.#host.scheduler.nowMs;
      this.#host.trace(
        `rotate ${endpoint.id} via ${slot.nodeId}: ${outcome.ok ? "ok" : outcome.code}`,
      );
      if (outcome.ok) {
        log.written = slot.store?.core.table.endpoints.value(endpoint.id);
      } else retry();
    });
  }

  #send(nodeRoll: number, typeRoll: number): void {
    const live = this.#live();
    if (live.length === 0) return;
    const slot = live[Math.floor(nodeRoll * live.length)]!;
    const store = slot.store!;
    const events = this.#host.events;
    const serial = events.length;
    const type = TYPES[Math.floor(typeRoll * TYPES.length)]!;
    const log: EventLog = {
      serial,
      node: slot.nodeId,
      life: slot.life,
      type,
      payload: JSON.stringify({ event: serial, type }),
      atMs: this.#host.scheduler.nowMs,
      answeredAtMs: undefined,
      outcome: undefined,
      eventId: undefined,
      jobIds: [],
      durableOn: new Map(),
      partialOn: [],
      orderKey: undefined,
    };
    events.push(log);
    this.#host.trace(`event #${serial} ${type} to ${slot.nodeId}/${slot.life}`);
    store.submitEvent({ type, payload: log.payload }).then((outcome) => {
      log.answeredAtMs = this.#host.scheduler.nowMs;
      log.outcome = outcome;
      // What the node that took it holds (it applied the record before it proposed it): the
      // event's id and its jobs, also when refused (its record may still be on some disks).
      if (slot.store === store) {
        for (const e of store.core.table.events.values()) {
          if (e.body?.event.payload !== log.payload) continue;
          log.eventId = e.id;
          log.jobIds = store.getEvent(e.id)?.jobs.map((j) => j.jobId) ?? [];
          if (e.stamp !== undefined) {
            log.orderKey = { atMs: e.body.event.submittedAtMs, ...e.stamp };
          }
        }
      }
      if (outcome.ok) log.eventId ??= outcome.id;
      this.#observeDisks(log);
      this.#host.trace(
        `event answer #${serial} ${
          outcome.ok ? `ok ${outcome.id} jobs ${outcome.jobs}` : outcome.code
        }` +
          ` partial on ${log.partialOn.length}`,
      );
    });
  }

  /** At the answer: which disks hold each job, and which hold the event without them all. */
  #observeDisks(log: EventLog): void {
    const probe = this.#host.probe;
    for (const jobId of log.jobIds) log.durableOn.set(jobId, []);
    if (log.eventId === undefined) return;
    for (const s of this.#host.slots) {
      let held = 0;
      for (const jobId of log.jobIds) {
        if (probe.holds(s.disk, jobId, "")) {
          held++;
          log.durableOn.get(jobId)!.push(s.nodeId);
        }
      }
      if (probe.holds(s.disk, eventKey(log.eventId), "") && held < log.jobIds.length) {
        log.partialOn.push(s.nodeId);
      }
    }
  }
}
