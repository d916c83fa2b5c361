/**
 * The record of a whole-cluster simulation run, as the checker reads it: every body the
 * workload sent, every submit and its answer (with the disks that held the job at the
 * acknowledgement), node lives, membership events, stalls, ready and WAL-failure instants, and
 * a read-only view of the cluster (`SimHistory`) for the state at the end: each up node's phase
 * of a job, its disk, the receiver's requests.
 *
 * Owns the shape of the observations only: cluster_sim.ts (the driver) records them and
 * implements `SimHistory`; cluster_sim_checker.ts and ownership_history.ts read them. Imports
 * nothing from either side, so the checker never depends on the driver that runs it.
 */

import type { OrderKey } from "../jobs/ordered_queues.ts";
import type { EndpointState } from "../jobs/endpoint_model.ts";
import type { EventOutcome, SubmitOutcome, SubmitRequest } from "../jobs/service.ts";
import type { JobPhase } from "../jobs/job_model.ts";
import type { MemberEvent } from "../membership/swim_core.ts";
import type { SimDisk } from "./disk.ts";
import type { DurabilityProbe } from "./durability_probe.ts";
import type { SimScheduler } from "./scheduler.ts";
import type { SimReceiver } from "./sim_receiver.ts";
import type { SimProfile } from "./sim_profile.ts";

/** `compacted`: not held, but a tombstone or kept key says it finished here. */
export type SimJobPhase =
  | JobPhase
  | "absent"
  | `stub:${JobPhase}`
  | "uncommitted"
  | "compacted";

/** The node holds the job dead-lettered (a stub too: the DEAD record came, the SUBMIT not). */
export function isDeadPhase(phase: SimJobPhase): boolean {
  return phase === "dead" || phase === "stub:dead";
}

/** The node holds the job over: delivered or dead. */
export function isFinishedPhase(phase: SimJobPhase): boolean {
  return isDeadPhase(phase) || phase === "delivered" || phase === "stub:delivered";
}

/** A job body as the client sent it (keyed retries resend the same body). */
export interface BodySpec {
  readonly bodyId: number;
  readonly request: SubmitRequest;
  readonly bodyHash: string;
}

export interface SubmitLog {
  readonly serial: number;
  readonly bodyId: number;
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
  answeredAtMs: number | undefined;
  outcome: SubmitOutcome | undefined;
  /** For acknowledged submits: nodes whose disk held the job at that instant. */
  durableOn: string[];
}

/** An owner recorded a job dead (its `dead-letter` log line). */
export interface DeadReport {
  readonly atMs: number;
  readonly gen: number;
}

/** A dead letter retried by hand (runs with retries), and its answer. */
export interface ReviveLog {
  readonly serial: number;
  readonly jobId: string;
  /** The generation the node that took the retry held the dead letter in. */
  readonly fromGen: number;
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
  answeredAtMs: number | undefined;
  outcome: { ok: true } | { ok: false; code: string } | undefined;
  /** For acknowledged retries: nodes whose disk held the REVIVE at that instant. */
  durableOn: string[];
}

/** An endpoint the event workload created (never changed after). */
export interface SimEndpoint {
  readonly id: string;
  readonly url: string;
  readonly secret: string;
  readonly eventTypes: readonly string[];
  /** Its jobs are delivered one at a time in order-key order (docs/replication.md). */
  readonly ordered: boolean;
}

/** A secret rotation the event workload asked for, and its answer. */
export interface RotationLog {
  readonly endpointId: string;
  readonly node: string;
  readonly secret: string;
  readonly atMs: number;
  answeredAtMs: number | undefined;
  /** The value written, when acknowledged (durable on a majority). */
  written: EndpointState | undefined;
}

/** One event sent, its answer, and what the disks held of it at the answer. */
export interface EventLog {
  readonly serial: number;
  readonly node: string;
  readonly life: number;
  readonly type: string;
  readonly payload: string;
  readonly atMs: number;
  answeredAtMs: number | undefined;
  outcome: EventOutcome | undefined;
  /** The event's id and job ids as the node that took it held them at the answer. */
  eventId: string | undefined;
  jobIds: string[];
  /** Per job: the nodes whose disk held it at the answer. */
  durableOn: Map<string, string[]>;
  /** Disks that held the event's record at the answer without every one of its jobs. */
  partialOn: string[];
  /**
   * The event's order key (its record's submit time and stamp), as the node that took it
   * held it at the answer: where its ordered endpoints' jobs stand (ordered_queues.ts).
   */
  orderKey: OrderKey | undefined;
}

export interface LifeLog {
  readonly node: string;
  readonly life: number;
  readonly startMs: number;
  endMs: number | undefined;
}

/** One membership event as a node's SWIM core reported it (the node's own view changing). */
export interface MemberLog {
  /** The observer: the node whose view changed, and its life. */
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
  readonly type: MemberEvent["type"];
  /** The voter address the event is about. */
  readonly subject: string;
}

export interface StallLog {
  readonly node: string;
  readonly fromMs: number;
  readonly toMs: number;
}

/** A node life's store caught up after its start: it delivers from then. */
export interface ReadyLog {
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
}

/** A node life's WAL failed (an injected disk fault): it must acknowledge nothing after. */
export interface WalFailureLog {
  readonly node: string;
  readonly life: number;
  readonly atMs: number;
}

/** What the checker may read of a finished run: its records and the cluster's end state. */
export interface SimHistory {
  readonly profile: SimProfile;
  readonly scheduler: SimScheduler;
  readonly receiver: SimReceiver;
  readonly probe: DurabilityProbe;
  readonly bodies: readonly BodySpec[];
  readonly submits: readonly SubmitLog[];
  /** The event workload's endpoints and events (empty unless the profile asks for events). */
  readonly endpoints: readonly SimEndpoint[];
  readonly events: readonly EventLog[];
  readonly rotations: readonly RotationLog[];
  /** Dead letters retried by hand (empty unless the profile asks for retries). */
  readonly revives: readonly ReviveLog[];
  readonly lives: readonly LifeLog[];
  readonly stallLog: readonly StallLog[];
  /** Every node's membership events: the views from which the checker derives ownership. */
  readonly memberLog: readonly MemberLog[];
  readonly readyLog: readonly ReadyLog[];
  readonly walFailures: readonly WalFailureLog[];
  /** Every voter's address. */
  readonly voters: string[];
  /** The submit timeout the nodes ran with, ms. */
  readonly submitTimeoutMs: number;
  nodeIds(): string[];
  disk(nodeId: string): SimDisk;
  /**
   * Acknowledged job ids with the body each was acknowledged with (-1: a job of an
   * acknowledged event).
   */
  ackedJobs(): Map<string, number>;
  /** Phase of `jobId` on every up node. */
  phases(jobId: string): Array<{ node: string; phase: SimJobPhase }>;
  /** When an owner reported `jobId` dead (its `dead-letter` log line), and in which generation. */
  deadReportsOf(jobId: string): readonly DeadReport[];
  /** A node saw `jobId`'s 2xx longer ago than the retention window (it may have compacted it). */
  compactedAfterDone(jobId: string): boolean;
  /** Nodes that were up at the end (their stores open), with their replication phase. */
  upNodes(): Array<{ node: string; phase: string }>;
  /** Nodes meant to be up at the end (not left down after the heal). */
  expectedUp(): string[];
  /** What every up node's table holds of endpoint `id` at the end (undefined: nothing live). */
  endpointValues(id: string): Array<{ node: string; state: EndpointState | undefined }>;
}
