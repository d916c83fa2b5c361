/**
 * The manual-retry workload of a whole-cluster simulation run that asks for it
 * (`SimProfile.revives`, `hookd sim --revives`): dead letters retried by hand
 * (`POST /v1/jobs/:id/retry`) through random live nodes while the faults run. The receiver
 * refuses (422) every attempt of a share of the jobs (picked by a hash of the id,
 * `doomedUntilRevived`) until a retry of the job starts, so dead letters are many; the nodes keep them for a few
 * seconds only, on skewed clocks, so a retry often goes through a node that still holds one
 * its owner or another replica has compacted already. Records each retry, the generation it
 * started from and its answer, and at an acknowledgement on which disks the REVIVE was.
 *
 * Owns the retries only; talks to a node as its client does (`JobStore.listDeadLetters`,
 * `JobStore.retryDeadLetter`). Draws only from the generator it is given (its own), so a run
 * without retries is the run it was.
 */

import { jobsDefaults } from "../config/jobs.ts";
import { eventIdOfJob } from "../jobs/event_model.ts";
import { Sfc32 } from "../lib/rng.ts";
import { reviveKey } from "./durability_probe.ts";
import type { ReviveLog } from "./sim_history.ts";
import type { SimProfile } from "./sim_profile.ts";
import type { ReceivedRequest } from "./sim_receiver.ts";
import type { WorkloadHost } from "./sim_workload.ts";

/** What the retry workload needs of the cluster around it (`rng`: its own generator). */
export interface ReviveWorkloadHost
  extends
    Pick<WorkloadHost, "scheduler" | "profile" | "probe" | "rng" | "chaosMs" | "slots" | "trace"> {
  readonly revives: ReviveLog[];
}

/** Retries start once the first dead letters can exist (a whole retry schedule in). */
const REVIVES_FROM_MS = 4_000;
/** Mean virtual ms between two retries. */
const REVIVE_INTERVAL_MS = 250;
/** Dead letters a retry picks among, oldest first, as a client paging the list would. */
const DEAD_LETTERS_PAGE = 20;

/**
 * Whether the receiver refuses this request (422, `SimReceiver.rejectWhen`): every attempt of
 * a fifth of the plain jobs (by a hash of the id, so no generator moves) until a retry of the
 * job by hand started (`revived`), so those jobs die and wait for one. A refusal, not a 500: a
 * fifth of a host's jobs failing with 500s keeps its circuit breaker open, and the drain
 * outlasts its limit.
 */
export function doomedUntilRevived(
  revived: ReadonlySet<string>,
): (request: ReceivedRequest) => boolean {
  return (request) => {
    if (revived.has(request.jobId) || eventIdOfJob(request.jobId) !== undefined) return false;
    let h = 0x811c9dc5;
    for (let i = 0; i < request.jobId.length; i++) {
      h = Math.imul(h ^ request.jobId.charCodeAt(i), 0x01000193) >>> 0;
    }
    return h % 5 === 0;
  };
}

/**
 * The profile of a run with retries: as drawn, with dead letters kept a few seconds (or until
 * a handful more push them out), so compaction races the retries, and clocks always skewed,
 * so the nodes' retention ends at different instants. Drawn from a generator of its own.
 */
export function revivesProfile(profile: SimProfile, seed: number): SimProfile {
  const rng = new Sfc32(seed ^ 0x2e71_7e5d);
  const pick = <T>(items: readonly T[]): T => items[rng.int(items.length)]!;
  return {
    ...profile,
    revives: true,
    skewMsMax: profile.skewMsMax === 0 ? 2_000 : profile.skewMsMax,
    jobs: {
      ...profile.jobs,
      deadRetentionMs: pick([3_000, 6_000, 12_000, jobsDefaults.deadRetentionMs]),
      deadLettersMax: pick([8, 40, jobsDefaults.deadLettersMax]),
    },
  };
}

export class SimReviveWorkload {
  readonly #host: ReviveWorkloadHost;
  /** Jobs some retry of which started: the receiver stops failing them. */
  readonly revived = new Set<string>();

  constructor(host: ReviveWorkloadHost) {
    this.#host = host;
  }

  schedule(): void {
    const { rng, scheduler, chaosMs } = this.#host;
    const exp = (mean: number) => -Math.log(1 - rng.next()) * mean;
    for (
      let t = REVIVES_FROM_MS + exp(REVIVE_INTERVAL_MS);
      t < chaosMs;
      t += exp(REVIVE_INTERVAL_MS)
    ) {
      const nodeRoll = rng.next();
      const pickRoll = rng.next();
      scheduler.at(t, () => this.#reviveOne(nodeRoll, pickRoll));
    }
  }

  #reviveOne(nodeRoll: number, pickRoll: number): void {
    const { slots, scheduler, probe, trace } = this.#host;
    const live = slots.filter((s) => s.store !== undefined && s.store.core.phase === "ready");
    if (live.length === 0) return;
    const slot = live[Math.floor(nodeRoll * live.length)]!;
    const store = slot.store!;
    // An event's jobs are left alone: the ordered endpoint's checks know nothing of retries.
    const dead = store.listDeadLetters(DEAD_LETTERS_PAGE).items.filter((j) =>
      eventIdOfJob(j.id) === undefined
    );
    if (dead.length === 0) return;
    const jobId = dead[Math.floor(pickRoll * dead.length)]!.id;
    const fromGen = store.core.table.get(jobId)?.gen ?? 0;
    this.revived.add(jobId);
    const log: ReviveLog = {
      serial: this.#host.revives.length,
      jobId,
      fromGen,
      node: slot.nodeId,
      life: slot.life,
      atMs: scheduler.nowMs,
      answeredAtMs: undefined,
      outcome: undefined,
      durableOn: [],
    };
    this.#host.revives.push(log);
    trace(`revive #${log.serial} ${jobId} g${fromGen} via ${slot.nodeId}/${slot.life}`);
    store.retryDeadLetter(jobId).then((outcome) => {
      log.answeredAtMs = scheduler.nowMs;
      log.outcome = outcome.ok ? { ok: true } : { ok: false, code: outcome.code };
      if (outcome.ok) {
        for (const s of slots) {
          if (probe.holds(s.disk, reviveKey(jobId, fromGen + 1), "")) log.durableOn.push(s.nodeId);
        }
      }
      trace(
        `revive answer #${log.serial} ${
          outcome.ok ? "ok" : outcome.code
        } durable on ${log.durableOn.length}`,
      );
    });
  }
}
