/**
 * The whole-cluster simulation's judge: given what a run recorded (submits and their answers,
 * what each disk held at each acknowledgement, every request the receiver saw, node lives,
 * stalls) and the nodes' tables at the end, it lists every broken invariant and counts the
 * duplicate deliveries by cause.
 *
 * Invariants checked (DESIGN.md numbering where it has one):
 * 1. An acknowledged submit was durable on a majority of the configured voters' disks at the
 *    instant it was acknowledged (the durability probe read what a crash would leave).
 * 2. Every acknowledged job got a 2xx at the receiver or is a dead letter once the cluster
 *    healed and drained, even with nodes left down, and the cluster holds it finished; after
 *    the settle time (and, while some copy is still pending, the pending checks' wait) no live
 *    node still holds a finished job pending (DONE/DEAD reached every replica), and none holds
 *    pending a job finished and compacted everywhere else (a zombie).
 * 3. Every attempt of a job carries the job's id as `webhook-id`, the body and URL the client
 *    submitted, and a signature under the secret the client gave; nothing is delivered that no
 *    client submitted; an unkeyed submit makes at most one job; a node that saw a 2xx never
 *    attempts that job again in the same life. Duplicates are counted by cause: the earlier
 *    2xx was seen as a timeout or error (`retry_after_timeout`), the node that got it crashed
 *    before the news spread (`crash`), another node took the job over (`failover`), or the
 *    job came back after it was compacted (`after_compaction`: a replica that missed its DONE
 *    outlived the retention window and brought it back; a known weakness, not an invariant).
 * 4. A submit is answered within the submit timeout (plus the time its node was stalled).
 * 5. A node whose WAL failed (an injected write, fsync or disk-full fault) acknowledges
 *    nothing afterwards.
 * Retries by hand (runs with retries): an acknowledged retry's REVIVE was durable on a majority
 * of the voters' disks at that instant, its node's WAL had not failed, it was answered in time,
 * and the job was delivered (after the retry's life began, or recorded so by a node at any time:
 * delivered absorbs every generation) or its generation died after the retry was taken. A job compacted (a tombstone or
 * kept key left) and reported dead by an owner counts as dead.
 * Seqs: one (origin, seq) names one record on every disk (a restart never reuses a seq).
 * Idempotency: every acknowledgement of one id names one body, and the job is delivered with
 * it; a keyed job's id is one of its key's incarnation ids; an incarnation answers submits for
 * no longer than its window (plus the clock skew) after its first acknowledged submit, and a
 * second incarnation of a key is not acknowledged while a submit is still within the first
 * one's window (minus the skew). Every acknowledged incarnation is delivered like any job, so
 * a reuse after the window that lost its job, or one given the old job's id (and
 * `webhook-id`), fails the run.
 *
 * Events (runs that send them): event_checker.ts's rules, each event's jobs all durable or none.
 *
 * Owns judgement only: it reads the run's records through `SimHistory` (sim_history.ts, its
 * only link to the driver) and never changes a node.
 */

import { signatureHeader } from "../delivery/signing.ts";
import { jobsDefaults } from "../config/jobs.ts";
import { unheardVoterGraceDefaultMs } from "../jobs/job_store.ts";
import { keyedJobId, keyEpoch } from "../jobs/keyed_id.ts";
import { SIM_WALL_EPOCH_MS } from "./sim_runtime.ts";
import { isDeadPhase, isFinishedPhase, type SimHistory, type SubmitLog } from "./sim_history.ts";
import type { ReceivedRequest } from "./sim_receiver.ts";
import { OwnershipHistory } from "./ownership_history.ts";
import { checkEvents, checkOrdered } from "./event_checker.ts";
import { endpointOfJob, eventIdOfJob } from "../jobs/event_model.ts";

/** Duplicates of one cause: after an ownership change, or with none. */
export interface OwnershipSplit {
  after_ownership_change: number;
  no_ownership_change: number;
}

/** Duplicates described in `duplicateDetails`. */
const DUPLICATE_DETAILS_MAX = 20;

export interface CheckResult {
  readonly violations: string[];
  readonly jobsAcked: number;
  readonly delivered: number;
  readonly deadLettered: number;
  readonly duplicates: Record<string, number>;
  /**
   * The same duplicates per cause, split by whether an ownership change preceded them
   * (`ownership_history.ts`: some node's owner of the job changed, or two nodes disagreed on
   * it, between the job's first 2xx and the duplicate); `total` sums every cause.
   */
  readonly duplicateOwnership: Record<string, OwnershipSplit>;
  /** The first duplicates no ownership change explains, described (for `hookd sim --trace`). */
  readonly duplicateDetails: string[];
  /**
   * Acknowledged jobs some live node still holds uncommitted after the settle time: a copy
   * that missed its COMMIT or a losing keyed body, kept as garbage (a known weakness).
   */
  readonly leftoverUncommitted: number;
  /**
   * Acknowledged jobs compacted where they finished but still pending on a live replica (each
   * also a violation: the seed fails).
   */
  readonly zombies: number;
}

/** Violations of one kind kept in full; the rest are counted. */
const PER_KIND_MAX = 5;

export class Findings {
  readonly #byKind = new Map<string, { items: string[]; more: number }>();

  add(kind: string, detail: string): void {
    let k = this.#byKind.get(kind);
    if (k === undefined) {
      k = { items: [], more: 0 };
      this.#byKind.set(kind, k);
    }
    if (k.items.length < PER_KIND_MAX) k.items.push(detail);
    else k.more++;
  }

  list(): string[] {
    const out: string[] = [];
    for (const [kind, k] of this.#byKind) {
      for (const item of k.items) out.push(`${kind}: ${item}`);
      if (k.more > 0) out.push(`${kind}: ... and ${k.more} more`);
    }
    return out;
  }
}

const is2xx = (r: ReceivedRequest) => r.status >= 200 && r.status < 300;

export function checkRun(sim: SimHistory, drained: boolean): CheckResult {
  const f = new Findings();
  const quorum = Math.floor(sim.voters.length / 2) + 1;
  const acked = sim.ackedJobs();

  // 1. Majority-durable at the instant of acknowledgement.
  for (const s of sim.submits) {
    if (s.outcome?.ok !== true) continue;
    if (s.durableOn.length < quorum) {
      f.add(
        "not durable on a majority when acknowledged",
        `submit #${s.serial} (job ${s.outcome.id}, body ${s.bodyId}) answered by ${s.node}/${s.life} ` +
          `at ${s.answeredAtMs?.toFixed(1)} ms was on ${s.durableOn.length} disks ` +
          `[${s.durableOn.join(",")}]`,
      );
    }
  }

  // Requests by job.
  const windowMs = sim.profile.jobs.idempotencyWindowMs ?? jobsDefaults.idempotencyWindowMs;
  /** The ids a key's incarnations can have in this run: one per epoch its node clocks saw. */
  const incarnationIds = (key: string): Set<string> => {
    const ids = new Set<string>();
    const fromMs = SIM_WALL_EPOCH_MS - sim.profile.skewMsMax;
    const toMs = SIM_WALL_EPOCH_MS + sim.scheduler.nowMs + sim.profile.skewMsMax;
    for (let e = keyEpoch(fromMs, windowMs); e <= keyEpoch(toMs, windowMs); e++) {
      ids.add(keyedJobId(key, e));
    }
    return ids;
  };
  const byJob = new Map<string, ReceivedRequest[]>();
  for (const r of sim.receiver.requests) {
    let list = byJob.get(r.jobId);
    if (list === undefined) {
      list = [];
      byJob.set(r.jobId, list);
    }
    list.push(r);
  }

  // 2. Delivered or dead-lettered, and over for the cluster; once a live node holds a job
  // finished, no live node still holds it pending (DONE/DEAD reached every replica).
  let delivered = 0;
  let deadLettered = 0;
  let leftoverUncommitted = 0;
  let zombies = 0;
  for (const [id, bodyId] of acked) {
    const got2xx = (byJob.get(id) ?? []).some(is2xx);
    const phases = sim.phases(id);
    // Compacted without a 2xx, and reported dead by an owner: it died (dead letters are kept
    // seconds in runs with retries). A tombstone alone is no proof: a copy compacted as
    // finished elsewhere leaves one too, and that may be a loss.
    const compacted = phases.some((p) => p.phase === "compacted");
    const dead = phases.some((p) => isDeadPhase(p.phase)) ||
      (!got2xx && compacted && sim.deadReportsOf(id).length > 0);
    const finished = phases.some((p) => isFinishedPhase(p.phase));
    const describe = () =>
      `job ${id} (body ${bodyId}): attempts ${(byJob.get(id) ?? []).length}, 2xx ${got2xx}, ` +
      `phases ${phases.map((p) => `${p.node}=${p.phase}`).join(" ")}`;
    if (got2xx) delivered++;
    else if (dead) deadLettered++;
    else f.add("acknowledged job neither delivered nor dead-lettered after the drain", describe());
    const committedPending = phases.some((p) => p.phase === "pending");
    if ((got2xx || dead) && !finished && committedPending) {
      // Delivered and compacted where it finished, still pending on a replica: a zombie. The
      // finished-job tombstones (job_table.ts) exist so that none happens; it fails the seed.
      // Otherwise the cluster lost track of a job.
      if (sim.compactedAfterDone(id) || compacted) {
        zombies++;
        f.add("zombie: a finished, compacted job pending again on a live node", describe());
      } else f.add("acknowledged job never finished by the cluster", describe());
    }
    if (phases.some((p) => p.phase === "uncommitted")) leftoverUncommitted++;
    const pendingOn = phases.filter((p) => p.phase === "pending").map((p) => p.node);
    if (finished && pendingOn.length > 0) {
      f.add(
        "finished job still pending on a live replica after the settle time",
        `pending on ${pendingOn.join(",")}: ${describe()}`,
      );
    }
  }
  if (!drained) f.add("drain did not finish", `within the drain limit`);

  // Liveness: every node meant to be up is up, caught up and taking submits after the heal.
  const up = new Map(sim.upNodes().map((u) => [u.node, u.phase]));
  for (const node of sim.expectedUp()) {
    const phase = up.get(node);
    if (phase !== "ready") {
      f.add("node not ready after the heal", `${node}: ${phase ?? "its store never opened"}`);
    }
  }

  // 3. Every attempt: the right webhook-id, body, URL and signature; nothing unsubmitted.
  const jobOfBody = new Map<number, string>();
  checkEvents(sim, byJob, (kind, detail) => f.add(kind, detail));
  checkOrdered(sim, byJob, (kind, detail) => f.add(kind, detail));
  for (const [jobId, requests] of byJob) {
    // An event's jobs carry their event's body and id: checked by checkEvents.
    if (eventIdOfJob(jobId) !== undefined) continue;
    let firstBody: number | undefined;
    for (const r of requests) {
      if (r.webhookId !== jobId) {
        f.add("attempt with a wrong webhook-id", `job ${jobId} sent as ${r.webhookId}`);
      }
      let bodyId: number | undefined;
      try {
        const parsed = JSON.parse(r.payload) as { body?: unknown };
        if (typeof parsed.body === "number") bodyId = parsed.body;
      } catch {
        bodyId = undefined;
      }
      const body = bodyId === undefined ? undefined : sim.bodies[bodyId];
      if (body === undefined) {
        f.add("delivered a job no client submitted", `job ${jobId} payload ${r.payload}`);
        continue;
      }
      if (body.request.payload !== r.payload || body.request.url !== r.url) {
        f.add("attempt body differs from the submit", `job ${jobId} body ${bodyId}`);
      }
      const secrets = body.request.secret !== undefined ? [body.request.secret] : [];
      if (JSON.stringify(secrets) !== JSON.stringify(r.secrets)) {
        f.add("attempt signed with other secrets than submitted", `job ${jobId}`);
      } else if (
        secrets.length > 0 &&
        r.signature !== signatureHeader(secrets, r.webhookId, r.timestampS, r.payload)
      ) {
        f.add("attempt signature does not verify", `job ${jobId}`);
      }
      if (firstBody === undefined) firstBody = body.bodyId;
      else if (firstBody !== body.bodyId) {
        f.add(
          "one job delivered with two bodies",
          `job ${jobId}: bodies ${firstBody} and ${body.bodyId}`,
        );
      }
      const key = body.request.idempotencyKey;
      if (key !== undefined) {
        if (!incarnationIds(key).has(jobId)) {
          f.add("keyed job delivered under another id", `key ${key} as ${jobId}`);
        }
      } else {
        const earlier = jobOfBody.get(body.bodyId);
        if (earlier !== undefined && earlier !== jobId) {
          f.add(
            "one unkeyed submit became two jobs",
            `body ${body.bodyId} delivered as ${earlier} and ${jobId}`,
          );
        }
        jobOfBody.set(body.bodyId, jobId);
      }
    }
  }
  for (const s of sim.submits) {
    if (s.outcome?.ok !== true) continue;
    const body = sim.bodies[s.bodyId]!;
    if (body.request.idempotencyKey !== undefined) continue;
    const deliveredAs = jobOfBody.get(s.bodyId);
    if (deliveredAs !== undefined && deliveredAs !== s.outcome.id) {
      f.add(
        "unkeyed job delivered under another id than acknowledged",
        `body ${s.bodyId} acknowledged as ${s.outcome.id}, delivered as ${deliveredAs}`,
      );
    }
  }

  // Idempotency: one body per keyed job among the acknowledgements; incarnations of a key
  // one window apart (measured on node clocks, which differ by up to twice the skew).
  const ackedBodyOfKey = new Map<string, { id: string; bodyHash: string; serial: number }>();
  const firstSubmitOfKey = new Map<string, SubmitLog>();
  /** Per key: the incarnation first acknowledged, with when, and when it was first asked. */
  const firstAckOfKey = new Map<string, { id: string; answeredAtMs: number }>();
  const firstAskOfId = new Map<string, SubmitLog>();
  const fuzzMs = 2 * sim.profile.skewMsMax + (sim.profile.jobs.submitTimeoutMs ??
    jobsDefaults.submitTimeoutMs);
  for (const s of sim.submits) {
    const body = sim.bodies[s.bodyId]!;
    const key = body.request.idempotencyKey;
    if (key === undefined) continue;
    if (!firstSubmitOfKey.has(key)) firstSubmitOfKey.set(key, s);
    if (s.outcome?.ok !== true) continue;
    const id = s.outcome.id;
    const earlier = ackedBodyOfKey.get(id);
    if (earlier === undefined) {
      ackedBodyOfKey.set(id, { id, bodyHash: body.bodyHash, serial: s.serial });
    } else if (earlier.bodyHash !== body.bodyHash) {
      f.add(
        "one keyed job acknowledged with two bodies",
        `key ${key} job ${id}: submit #${earlier.serial} and #${s.serial}`,
      );
    }
    const firstAsk = firstAskOfId.get(id);
    if (firstAsk === undefined) firstAskOfId.set(id, s);
    else if (s.atMs - firstAsk.atMs > windowMs + fuzzMs) {
      f.add(
        "a key reused after its window was answered with the old job",
        `key ${key} job ${id}: submit #${firstAsk.serial} at ${firstAsk.atMs.toFixed(0)} ms, ` +
          `#${s.serial} at ${s.atMs.toFixed(0)} ms (window ${windowMs} ms)`,
      );
    }
    const firstAck = firstAckOfKey.get(key);
    if (firstAck === undefined) firstAckOfKey.set(key, { id, answeredAtMs: s.answeredAtMs! });
    else if (
      firstAck.id !== id && s.atMs > firstAck.answeredAtMs &&
      s.atMs - firstSubmitOfKey.get(key)!.atMs < windowMs - fuzzMs
    ) {
      f.add(
        "a key made two jobs within its window",
        `key ${key}: ${firstAck.id} and, by submit #${s.serial}, ${id}`,
      );
    }
  }
  for (const ack of ackedBodyOfKey.values()) {
    for (const r of byJob.get(ack.id) ?? []) {
      const bodyId = (JSON.parse(r.payload) as { body: number }).body;
      if (sim.bodies[bodyId]?.bodyHash !== ack.bodyHash) {
        f.add(
          "keyed job delivered with another body than acknowledged",
          `job ${ack.id}: acknowledged body of #${ack.serial}, delivered body ${bodyId}`,
        );
      }
    }
  }

  // Duplicates by cause, and redelivery by a node that had seen the 2xx.
  const duplicates: Record<string, number> = {
    total: 0,
    retry_after_timeout: 0,
    crash: 0,
    failover: 0,
  };
  const lifeEnd = new Map<string, number | undefined>();
  for (const l of sim.lives) lifeEnd.set(`${l.node}/${l.life}`, l.endMs);
  const duplicateOwnership: Record<string, OwnershipSplit> = {};
  const duplicateDetails: string[] = [];
  const history = new OwnershipHistory(
    sim.voters,
    sim.nodeIds(),
    sim.lives,
    sim.readyLog,
    sim.memberLog,
    // The grace every store of the run had (JobStore's default: the simulator passes none).
    unheardVoterGraceDefaultMs(sim.voters),
  );
  const retentionMs = sim.profile.jobs.finishedRetentionMs ?? jobsDefaults.finishedRetentionMs;
  // An ordered endpoint's jobs are owned by the endpoint's owner (ordered_queues.ts).
  const orderedIds = new Set(sim.endpoints.filter((e) => e.ordered).map((e) => e.id));
  const ownerKey = (jobId: string) => {
    const endpointId = endpointOfJob(jobId);
    return endpointId !== undefined && orderedIds.has(endpointId) ? endpointId : jobId;
  };
  for (const [jobId, requests] of byJob) {
    const ok = requests.filter(is2xx);
    let firstSeenMs = Infinity;
    let ownershipChanged = false;
    for (let i = 1; i < ok.length; i++) {
      const prev = ok[i - 1]!;
      const cur = ok[i]!;
      if (prev.nodeSaw === "response") firstSeenMs = Math.min(firstSeenMs, prev.nodeSawAtMs!);
      duplicates.total!++;
      const prevEnd = lifeEnd.get(`${prev.node}/${prev.life}`);
      const sameLife = prev.node === cur.node && prev.life === cur.life;
      let cause: string;
      if (firstSeenMs + retentionMs < cur.sentAtMs) {
        // A node recorded the job delivered longer ago than the retention: it was compacted
        // there, and a replica that missed the DONE (restarted and caught up by snapshot,
        // cut off) brought it back pending. A known weakness, counted, not a broken invariant.
        cause = "after_compaction";
      } else if (prev.nodeSaw === "timeout" || prev.nodeSaw === "network_error") {
        cause = "retry_after_timeout";
      } else if (prevEnd !== undefined && prevEnd <= cur.sentAtMs) cause = "crash";
      else if (!sameLife) cause = "failover";
      else if (prev.nodeSawAtMs === undefined || prev.nodeSawAtMs > cur.sentAtMs) {
        // Two attempts of one job in flight at once on one node.
        cause = "overlap";
        f.add(
          "a node had two attempts of one job in flight at once",
          `job ${jobId} by ${cur.node}/${cur.life}: attempt ${prev.attempt} sent at ` +
            `${prev.sentAtMs.toFixed(1)} ms, attempt ${cur.attempt} at ${
              cur.sentAtMs.toFixed(1)
            } ms`,
        );
      } else {
        cause = "same_node";
        f.add(
          "a node attempted a job again after it saw the 2xx",
          `job ${jobId} by ${cur.node}/${cur.life}: attempt ${prev.attempt} got ${prev.status} ` +
            `at ${prev.nodeSawAtMs.toFixed(1)} ms, attempt ${cur.attempt} sent at ` +
            `${cur.sentAtMs.toFixed(1)} ms`,
        );
      }
      duplicates[cause] = (duplicates[cause] ?? 0) + 1;
      // Once a change is seen for a job, every later duplicate of it follows one too.
      ownershipChanged ||= history.changed(ownerKey(jobId), ok[0]!.sentAtMs, cur.sentAtMs);
      for (const key of [cause, "total"]) {
        const split = duplicateOwnership[key] ??= {
          after_ownership_change: 0,
          no_ownership_change: 0,
        };
        if (ownershipChanged) split.after_ownership_change++;
        else split.no_ownership_change++;
      }
      if (!ownershipChanged && duplicateDetails.length < DUPLICATE_DETAILS_MAX) {
        duplicateDetails.push(
          `${cause}: job ${jobId}: ${prev.node}/${prev.life} a${prev.attempt} sent ` +
            `${prev.sentAtMs.toFixed(1)} ${prev.status} (node saw ${prev.nodeSaw} at ` +
            `${prev.nodeSawAtMs?.toFixed(1)}), then ${cur.node}/${cur.life} a${cur.attempt} sent ` +
            `${cur.sentAtMs.toFixed(1)} ${cur.status}`,
        );
      }
    }
  }

  // Seqs are never reused: one (origin, seq) names one record on every disk. A reused seq
  // makes a replica take a new record for one it holds, and acknowledge it unstored.
  for (const node of sim.nodeIds()) sim.probe.scan(sim.disk(node));
  for (const conflict of sim.probe.stampConflicts) f.add("one seq names two records", conflict);
  if (sim.probe.stampConflictsMore > 0) {
    f.add("one seq names two records", `... and ${sim.probe.stampConflictsMore} more`);
  }

  // 5. A node whose WAL failed acknowledges nothing more (fail-stop).
  for (const s of sim.submits) {
    if (s.outcome?.ok !== true) continue;
    const failure = sim.walFailures.find((w) => w.node === s.node && w.life === s.life);
    // Strictly later: an answer decided in the same instant, from appends made durable before
    // the failing one, reaches the harness a microtask after the failure is logged.
    if (failure !== undefined && s.answeredAtMs! > failure.atMs) {
      f.add(
        "acknowledged after its WAL failed",
        `submit #${s.serial} answered ok by ${s.node}/${s.life} at ${s.answeredAtMs!.toFixed(1)} ` +
          `ms, its WAL failed at ${failure.atMs.toFixed(1)} ms`,
      );
    }
  }

  checkRevives(sim, byJob, quorum, f);

  // 4. Submits are answered in time (stalls of their node excepted), never left hanging.
  const bound = sim.submitTimeoutMs + 100;
  for (const s of sim.submits) {
    const stalledMs = stalledDuring(sim, s, s.answeredAtMs ?? sim.scheduler.nowMs);
    if (s.answeredAtMs === undefined) {
      const life = sim.lives.find((l) => l.node === s.node && l.life === s.life);
      if (life?.endMs === undefined) {
        f.add("submit never answered", `submit #${s.serial} to ${s.node}/${s.life}`);
      }
      continue;
    }
    const tookMs = s.answeredAtMs - s.atMs;
    if (tookMs > bound + stalledMs) {
      f.add(
        "submit answered too late",
        `submit #${s.serial} to ${s.node}/${s.life} took ${tookMs.toFixed(0)} ms ` +
          `(bound ${bound} ms + ${stalledMs.toFixed(0)} ms stalled)`,
      );
    }
  }

  return {
    violations: f.list(),
    jobsAcked: acked.size,
    delivered,
    deadLettered,
    duplicates,
    duplicateOwnership,
    duplicateDetails,
    leftoverUncommitted,
    zombies,
  };
}

/** Retries by hand (runs with retries): see the header. */
export function checkRevives(
  sim: SimHistory,
  byJob: ReadonlyMap<string, readonly ReceivedRequest[]>,
  quorum: number,
  f: Findings,
): void {
  const bound = sim.submitTimeoutMs + 100;
  for (const r of sim.revives) {
    const what = `retry #${r.serial} of ${r.jobId} (g${r.fromGen}) via ${r.node}/${r.life}`;
    if (r.answeredAtMs === undefined) {
      const life = sim.lives.find((l) => l.node === r.node && l.life === r.life);
      if (life?.endMs === undefined) f.add("retry never answered", what);
      continue;
    }
    const tookMs = r.answeredAtMs - r.atMs;
    const stalledMs = stalledDuring(sim, r, r.answeredAtMs);
    if (tookMs > bound + stalledMs) {
      f.add("retry answered too late", `${what} took ${tookMs.toFixed(0)} ms`);
    }
    if (r.outcome?.ok !== true) continue;
    if (r.durableOn.length < quorum) {
      f.add(
        "retry not durable on a majority when acknowledged",
        `${what} was on ${r.durableOn.length} disks [${r.durableOn.join(",")}]`,
      );
    }
    const failure = sim.walFailures.find((w) => w.node === r.node && w.life === r.life);
    if (failure !== undefined && r.answeredAtMs > failure.atMs) {
      f.add("retry acknowledged after its WAL failed", what);
    }
    // Delivered: a 2xx to an attempt sent after its life began (retries of one dead letter
    // from one generation start the same life, with the first of them: seed 1, two clients
    // at once), or one some node recorded at any time, which makes the job delivered in every
    // generation (the merge rule: seeds 506 and 516, a 2xx the owner heard late, or whose news
    // a partition held back, then the retry). Else its own generation died after the retry
    // was taken: a retry absorbed by one that had died before (its node was a generation
    // behind) made no attempt at all.
    const lifeFromMs = Math.min(
      ...sim.revives.filter((o) => o.jobId === r.jobId && o.fromGen === r.fromGen).map((o) =>
        o.atMs
      ),
    );
    const delivered = (byJob.get(r.jobId) ?? []).some((q) =>
      is2xx(q) && (q.sentAtMs >= lifeFromMs || q.nodeSaw === "response")
    );
    const diedAfter = sim.deadReportsOf(r.jobId).some((d) => d.atMs > r.atMs && d.gen > r.fromGen);
    if (!delivered && !diedAfter) {
      f.add(
        "acknowledged retry neither delivered nor dead again",
        `${what}: phases ${sim.phases(r.jobId).map((p) => `${p.node}=${p.phase}`).join(" ")}`,
      );
    }
  }
}

function stalledDuring(
  sim: SimHistory,
  s: { readonly node: string; readonly atMs: number },
  untilMs: number,
): number {
  let ms = 0;
  for (const w of sim.stallLog) {
    if (w.node !== s.node) continue;
    const from = Math.max(w.fromMs, s.atMs);
    const to = Math.min(w.toMs, untilMs);
    if (to > from) ms += to - from;
  }
  return ms;
}
