/**
 * The workload of a whole-cluster simulation run: submits at seeded instants to random live
 * nodes, as a client would send them: new unkeyed bodies, new keyed ones, a keyed body again
 * (a client's retry, most likely to another node) and an earlier key with a new body. Records
 * each body and each submit with its answer and, at an acknowledgement, the disks that held
 * the job then (invariant 1's evidence).
 *
 * Owns the submits only; talks to a node as its client does (`JobStore.submit`). Draws only
 * from the workload generator it is given, in the order the schedule fixes.
 */

import { submitBodyHash } from "../jobs/replication_core.ts";
import type { SubmitRequest } from "../jobs/service.ts";
import type { Rng } from "../lib/rng.ts";
import type { DurabilityProbe } from "./durability_probe.ts";
import type { SimScheduler } from "./scheduler.ts";
import type { BodySpec, SubmitLog } from "./sim_history.ts";
import type { SimProfile } from "./sim_profile.ts";
import type { Slot } from "./sim_slot.ts";

/** What the workload needs of the cluster around it. */
export interface WorkloadHost {
  readonly scheduler: SimScheduler;
  readonly profile: SimProfile;
  readonly probe: DurabilityProbe;
  /** The workload generator. */
  readonly rng: Rng;
  /** Virtual ms of workload before the heal. */
  readonly chaosMs: number;
  /** The cluster's nodes, in address order. */
  readonly slots: readonly Slot[];
  readonly bodies: BodySpec[];
  readonly submits: SubmitLog[];
  trace(line: string): void;
  /** `slot`'s life `life` acknowledged a new job. */
  acknowledged(slot: Slot, life: number): void;
}

export class SimWorkload {
  readonly #host: WorkloadHost;
  readonly #scheduler: SimScheduler;
  readonly #profile: SimProfile;
  readonly #probe: DurabilityProbe;
  readonly #rng: Rng;
  readonly #chaosMs: number;
  readonly #slots: readonly Slot[];
  readonly #bodies: BodySpec[];
  readonly #submits: SubmitLog[];

  constructor(host: WorkloadHost) {
    this.#host = host;
    this.#scheduler = host.scheduler;
    this.#profile = host.profile;
    this.#probe = host.probe;
    this.#rng = host.rng;
    this.#chaosMs = host.chaosMs;
    this.#slots = host.slots;
    this.#bodies = host.bodies;
    this.#submits = host.submits;
  }

  schedule(): void {
    const rng = this.#rng;
    const exp = (mean: number) => -Math.log(1 - rng.next()) * mean;
    for (let t = 1_500 + exp(this.#profile.submitIntervalMs); t < this.#chaosMs;) {
      const nodeRoll = rng.next();
      const kindRoll = rng.next();
      const pickRoll = rng.next();
      this.#scheduler.at(t, () => this.#submitOne(nodeRoll, kindRoll, pickRoll));
      t += exp(this.#profile.submitIntervalMs);
    }
  }

  #newBody(key: string | undefined, variantRoll: number): BodySpec {
    const bodyId = this.#bodies.length;
    const rng = this.#rng;
    const secretBytes = new Uint8Array(24);
    for (let i = 0; i < secretBytes.length; i++) secretBytes[i] = (bodyId * 31 + i * 7) & 0xff;
    const request: SubmitRequest = {
      url: `http://r${bodyId % 3}.receiver.sim/hook`,
      payload: JSON.stringify({ body: bodyId, key: key ?? null, v: variantRoll.toFixed(3) }),
      ...(rng.next() < 0.5 ? { secret: "whsec_" + btoa(String.fromCharCode(...secretBytes)) } : {}),
      ...(rng.next() < 0.2 ? { maxAttempts: 2 + rng.int(2) } : {}),
      ...(rng.next() < 0.1 ? { timeoutMs: 300 } : {}),
      ...(key !== undefined ? { idempotencyKey: key } : {}),
    };
    const body: BodySpec = {
      bodyId,
      request,
      bodyHash: key !== undefined ? submitBodyHash(request) : "",
    };
    this.#bodies.push(body);
    return body;
  }

  #submitOne(nodeRoll: number, kindRoll: number, pickRoll: number): void {
    const live = this.#slots.filter((s) => s.store !== undefined);
    if (live.length === 0) return;
    let body: BodySpec;
    const keyed = this.#bodies.filter((b) => b.request.idempotencyKey !== undefined);
    if (kindRoll < 0.7 || (kindRoll < 0.85 && keyed.length === 0)) {
      body = this.#newBody(undefined, pickRoll);
    } else if (kindRoll < 0.85) {
      body = this.#newBody(`key-${this.#bodies.length}`, pickRoll);
    } else if (kindRoll < 0.97 || keyed.length === 0) {
      // The same keyed body again, most likely to another node (a client's retry).
      body = keyed.length > 0
        ? keyed[Math.floor(pickRoll * keyed.length)]!
        : this.#newBody(`key-${this.#bodies.length}`, pickRoll);
    } else {
      const earlier = keyed[Math.floor(pickRoll * keyed.length)]!;
      body = this.#newBody(earlier.request.idempotencyKey, pickRoll);
    }
    const slot = live[Math.floor(nodeRoll * live.length)]!;
    const store = slot.store!;
    const log: SubmitLog = {
      serial: this.#submits.length,
      bodyId: body.bodyId,
      node: slot.nodeId,
      life: slot.life,
      atMs: this.#scheduler.nowMs,
      answeredAtMs: undefined,
      outcome: undefined,
      durableOn: [],
    };
    this.#submits.push(log);
    this.#host.trace(`submit #${log.serial} body ${body.bodyId} to ${slot.nodeId}/${slot.life}`);
    store.submit(body.request).then((outcome) => {
      log.answeredAtMs = this.#scheduler.nowMs;
      log.outcome = outcome;
      if (outcome.ok) {
        // Invariant 1, checked at the instant of the acknowledgement: on which disks would
        // the job survive a crash of every node right now?
        const bodyHash = body.request.idempotencyKey !== undefined ? body.bodyHash : "";
        for (const s of this.#slots) {
          if (this.#probe.holds(s.disk, outcome.id, bodyHash)) log.durableOn.push(s.nodeId);
        }
        if (!outcome.existing) this.#host.acknowledged(slot, log.life);
      }
      this.#host.trace(
        `answer #${log.serial} ${
          outcome.ok ? `ok ${outcome.id}${outcome.existing ? " existing" : ""}` : outcome.code
        } durable on ${log.durableOn.length}`,
      );
    });
  }
}
