/**
 * The replicated job store on real (or simulated) I/O: it runs `ReplicationCore` on the WAL,
 * the transport, the membership view and the delivery engine, and offers the `JobService`
 * the API speaks and the `DeliveryStore` the engine reports to. The node builds the engine
 * (`JobStoreOptions.scheduler`); the store sees only its `DeliveryScheduler` side.
 *
 * Owns: the WAL and its directory lock, closing the engine it was given, the one timer (armed
 * at the core's next deadline), promise bookkeeping for callers, and the order outputs are
 * carried out in: appends are handed to the WAL in the order the core issued them and
 * `persisted` is called in that order (the WAL's writer is FIFO). Must not make replication
 * decisions (the core does) or delivery decisions (the engine does).
 *
 * Sends made during one event-loop turn are flushed together in a microtask: concurrent
 * submits share one WAL append (one fsync) and one replication message per peer.
 */

import { type ApiConfig, apiDefaults } from "../config/api.ts";
import { type DeliveryConfig, deliveryDefaults } from "../config/delivery.ts";
import type { JobsConfig } from "../config/jobs.ts";
import { type WalConfig, walDefaults } from "../config/wal.ts";
import { membershipDefaults } from "../config/membership.ts";
import { detectionBoundMs } from "../membership/suspicion_math.ts";
import { fail } from "../lib/assert.ts";
import { DeadlineTimer } from "../lib/deadline_timer.ts";
import type { Rng } from "../lib/rng.ts";
import { realRuntime, type Runtime } from "../lib/runtime.ts";
import type { Counter, MetricsRegistry } from "../metrics/registry.ts";
import type { StallMonitor } from "../lib/stall_monitor.ts";
import type {
  DeadLetter,
  DeliveryJob,
  DeliveryReport,
  DeliveryScheduler,
  DeliveryStore,
  DeliveryWiring,
} from "../delivery/types.ts";
import { endpointIdOf } from "../delivery/types.ts";
import { Wal } from "../wal/wal.ts";
import { denoWalFsWith, type WalFs } from "../wal/wal_fs.ts";
import type { DeliveredMessage, SendResult, TransportEvent } from "../transport/types.ts";
import { JOBS_CHANNEL } from "./job_messages.ts";
import { type EndpointState, type EndpointWrite, fieldsOf, secretsAt } from "./endpoint_model.ts";
import { recoverableJobs } from "./endpoint_health.ts";
import { eventJobId } from "./event_model.ts";
import { keyedEndpointId } from "./endpoint_keyed.ts";
import {
  entryOfSnapshot,
  type JobEntry,
  type JobStateSnapshot,
  numberAttempts,
} from "./job_model.ts";
import { ReplicationCore, type ReplicationOutput, type VoterState } from "./replication_core.ts";
import type { EndpointHealthView } from "./endpoint_attempt_stats.ts";
import type {
  AttemptView,
  ClusterView,
  DeadLetterPage,
  EndpointCreateKey,
  EndpointFields,
  EndpointHealthItem,
  EndpointHealthPage,
  EndpointOutcome,
  EndpointPage,
  EndpointView,
  EventJobView,
  EventOutcome,
  EventRequest,
  EventView,
  JobService,
  JobState,
  JobView,
  MemberView,
  Readiness,
  RecoverOutcome,
  Refusal,
  SubmitOutcome,
  SubmitRequest,
} from "./service.ts";
import { type DataDirLock, lockDataDir } from "./data_dir_lock.ts";

/**
 * The WAL holds a complete (durable) batch this node cannot decode: recovery stops, and the
 * node does not start. Skipping it would drop whatever it holds — acknowledged jobs of other
 * clients among them — from this disk without a trace, so the operator decides.
 */
export class JobLogReplayError extends Error {
  override name = "JobLogReplayError";
  constructor(
    readonly dataDir: string,
    readonly segment: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(
      `cannot recover the job log: WAL segment ${segment} in ${dataDir}, the record at byte ` +
        `offset ${offset}, is a complete batch this node cannot decode (${reason}). ` +
        "Skipping it could lose acknowledged jobs it holds, so the node refuses to start. " +
        `To proceed: keep ${dataDir} aside for diagnosis (move it away), start the node with ` +
        "an empty data directory and let it catch up from its peers (a majority holds every " +
        "acknowledged job); or restore that directory from a backup.",
    );
  }
}

/** What the store needs from the transport (`UdpTransport` has it). */
export interface JobsTransport {
  /** `ackMayWait`: the peer may hold its acknowledgement (transport.lazyAckMs). */
  send(address: string, channel: number, bytes: Uint8Array, ackMayWait?: boolean): SendResult;
  onMessage(handler: (message: DeliveredMessage) => void): () => void;
  onEvent(handler: (event: TransportEvent) => void): () => void;
  /**
   * Sends what is queued now, not at the end of the turn (`UdpTransport.sendQueuedNow`): the
   * store calls it before its WAL blocks the thread in an inline fsync.
   */
  sendQueuedNow?(): void;
}

/** A member as membership reports it. */
export interface MemberRow {
  readonly nodeId: string;
  readonly address: string;
  /** SWIM's states; `unheard` is the store's own (a voter membership has not reported). */
  readonly state: Exclude<VoterState, "unheard">;
  readonly incarnation: number;
}

export interface JobStoreOptions {
  /** This node's voter address: the transport address peers reach it at. */
  readonly self: string;
  readonly nodeId: string;
  /** Every configured voter's address, this node's included. */
  readonly voters: readonly string[];
  /** The WAL's directory. */
  readonly dataDir: string;
  /** File system for the WAL (the simulator's disk). @default the real disk, locked */
  readonly fs?: WalFs;
  /**
   * Wraps the real disk's file system (the fault injector's failing disk); the directory is
   * still locked. Ignored with `fs`.
   */
  readonly wrapFs?: (fs: WalFs) => WalFs;
  readonly wal?: Partial<WalConfig>;
  readonly jobs?: Partial<JobsConfig>;
  readonly delivery?: DeliveryConfig;
  /**
   * The node's API bounds that a UDP client's submit is also checked against, so a key the
   * HTTP API refuses is refused on the UDP path too. @default apiDefaults
   */
  readonly api?: Pick<ApiConfig, "idempotencyKeyCharsMax">;
  readonly transport: JobsTransport;
  /** The membership table now (called after every `membershipChanged`). */
  readonly members: () => readonly MemberRow[];
  readonly runtime?: Runtime;
  readonly rng: Rng;
  readonly metrics: MetricsRegistry;
  /**
   * Builds the delivery engine this store hands its jobs to (`deliveryEngineFor`,
   * src/delivery/engine.ts): called once, with the store (the engine's `DeliveryStore`) and
   * its freeze check, before the store carries out its first output.
   * Required unless `deliver` is false.
   */
  readonly scheduler?: (wiring: DeliveryWiring) => DeliveryScheduler;
  /**
   * Deliver owned jobs. Off only for `bench replication`, which measures the store alone.
   * @default true
   */
  readonly deliver?: boolean;
  /** Phase changes, handoffs, catch-up progress, WAL failure: for the node's log. */
  readonly onLog?: (event: string, fields: Record<string, unknown>) => void;
  /**
   * Notices that this process was frozen (src/lib/stall_monitor.ts). On a freeze the store
   * stops delivering and catches up from a majority before it attempts anything again
   * (`ReplicationCore.stalled`); the engine checks for a freeze before every step
   * (`DeliveryWiring.beforeStep`). @default none (the simulator freezes nothing it does not see)
   */
  readonly stallMonitor?: StallMonitor;
  /**
   * How long after this store opens a voter that membership has not reported keeps its jobs
   * (`unheard`) before it is taken as dead. Pass the membership's detection bound
   * (`detectionBoundMs`): a voter down before this node started is then taken as dead no later
   * than a voter that dies while it runs. @default unheardVoterGraceDefaultMs(voters)
   */
  readonly unheardVoterGraceMs?: number;
}

/**
 * `JobStoreOptions.unheardVoterGraceMs` when none is given: the detection bound of membership
 * at its default timings. The simulator's checker replays the stores' rule with it.
 */
export function unheardVoterGraceDefaultMs(voters: readonly string[]): number {
  return detectionBoundMs(voters.length, membershipDefaults);
}

interface Waiter<T> {
  resolve: (value: T) => void;
}

export class JobStore implements JobService, DeliveryStore {
  readonly core: ReplicationCore;
  readonly nodeId: string;
  readonly #runtime: Runtime;
  readonly #wal: Wal;
  readonly #lock: DataDirLock | undefined;
  readonly #transport: JobsTransport;
  readonly #members: () => readonly MemberRow[];
  readonly #timer: DeadlineTimer;
  readonly #onLog: (event: string, fields: Record<string, unknown>) => void;
  readonly #metrics: MetricsRegistry;
  #engine: DeliveryScheduler | undefined;
  readonly #deliver: boolean;
  readonly #unsubscribe: Array<() => void> = [];
  readonly #submitWaiters = new Map<number, Waiter<SubmitOutcome>>();
  readonly #reviveWaiters = new Map<number, Waiter<{ ok: true } | Refusal>>();
  readonly #endpointWaiters = new Map<number, Waiter<EndpointOutcome>>();
  readonly #endpointReadWaiters = new Map<number, Waiter<{ ok: true } | Refusal>>();
  readonly #eventWaiters = new Map<number, Waiter<EventOutcome>>();
  readonly #queryWaiters = new Map<number, Waiter<JobStateSnapshot | undefined>>();
  /** Engine calls waiting for the append that makes their report durable, by token. */
  readonly #tokenWaiters = new Map<
    number,
    Array<{ resolve: () => void; reject: (e: Error) => void }>
  >();
  #nextRequestId = 1;
  /** Voters membership has reported at least once since this store opened. */
  readonly #everSeen = new Set<string>();
  /** Until when (monotonic ms) a voter never reported is `unheard`, then `dead`. */
  readonly #unheardUntilMs: number;
  #flushQueued = false;
  /** What the engine's rate limits were last read under (`#noticeLimits`). */
  #limitsSeen = { endpoints: 0, voters: 0 };
  #flushing = false;
  #stallMonitor: StallMonitor | undefined;
  #closed = false;
  #walFailure: string | undefined;
  #pendingAppends = 0;
  #idle: Array<() => void> = [];

  private constructor(
    options: JobStoreOptions,
    core: ReplicationCore,
    wal: Wal,
    lock: DataDirLock | undefined,
    openedAtMs: number,
  ) {
    this.core = core;
    this.nodeId = options.nodeId;
    this.#runtime = options.runtime ?? realRuntime;
    this.#wal = wal;
    this.#lock = lock;
    this.#transport = options.transport;
    this.#members = options.members;
    this.#deliver = options.deliver ?? true;
    this.#onLog = options.onLog ?? (() => {});
    this.#metrics = options.metrics;
    const graceMs = options.unheardVoterGraceMs ?? unheardVoterGraceDefaultMs(options.voters);
    if (!(graceMs >= 0)) fail(`JobStore: unheardVoterGraceMs ${graceMs} must be >= 0`);
    this.#unheardUntilMs = openedAtMs + graceMs;
    this.#timer = new DeadlineTimer(this.#runtime, () => {
      this.core.tick(this.#runtime.nowMs(), this.#runtime.wallMs());
      this.#flush();
    });
  }

  /**
   * Opens the WAL in `dataDir` (locked against a second process), replays it into the core,
   * starts the delivery engine and joins replication; catch-up then runs in the background
   * (`readiness()` says when it is done).
   */
  static async open(options: JobStoreOptions): Promise<JobStore> {
    // A store that owns jobs and has nobody to deliver them would acknowledge jobs and sit on
    // them without a word: a wiring mistake, refused before anything is opened.
    if ((options.deliver ?? true) && options.scheduler === undefined) {
      throw new RangeError(
        "JobStore: deliver is on, so a scheduler (the delivery engine) is needed",
      );
    }
    const runtime = options.runtime ?? realRuntime;
    // The grace for voters not heard of counts from here, before the replay: the simulator's
    // checker counts it from the life's start, the same instant.
    const openedAtMs = runtime.nowMs();
    const walConfig = { ...options.wal };
    const core = new ReplicationCore({
      self: options.self,
      voters: options.voters,
      ...(options.jobs !== undefined ? { config: options.jobs } : {}),
      rng: options.rng,
      metrics: options.metrics,
      walRecordBytesMax: walConfig.recordBytesMax ?? walDefaults.recordBytesMax,
      payloadBytesMax: (options.delivery ?? deliveryDefaults).payloadBytesMax,
      submitLimits: {
        jobHeadersBytesMax: (options.delivery ?? deliveryDefaults).jobHeadersBytesMax,
        attemptTimeoutMaxMs: (options.delivery ?? deliveryDefaults).attemptTimeoutMaxMs,
        idempotencyKeyCharsMax: (options.api ?? apiDefaults).idempotencyKeyCharsMax,
        // Only a node's own setting, as in the API: without one nothing says they are refused.
        ...(options.delivery !== undefined
          ? { allowPrivateTargets: options.delivery.allowPrivateTargets }
          : {}),
      },
    });
    const lock = options.fs === undefined ? await lockDataDir(options.dataDir) : undefined;
    // A SUBMIT's replicas fsync while the leader does: its records leave before the leader's
    // own inline fsync blocks the thread (wal_fs.ts), not after.
    const realDisk = () =>
      denoWalFsWith({
        inlineSyncMsMax: walConfig.inlineSyncMsMax ?? walDefaults.inlineSyncMsMax,
        beforeInlineSync: () => options.transport.sendQueuedNow?.(),
      });
    let wal: Wal;
    try {
      const opened = await Wal.open(options.dataDir, {
        config: walConfig,
        metrics: options.metrics,
        fs: options.fs ?? (options.wrapFs ?? ((fs) => fs))(realDisk()),
        rng: options.rng,
        clock: runtime,
        replay: (record) => {
          const problem = core.replay(record.kind, record.payload, runtime.wallMs());
          if (problem !== undefined) {
            throw new JobLogReplayError(options.dataDir, record.segment, record.offset, problem);
          }
        },
      });
      wal = opened.wal;
      if (opened.report.truncated !== undefined) {
        options.onLog?.("wal-truncated", { ...opened.report.truncated });
      }
    } catch (error) {
      lock?.release();
      throw error;
    }
    const store = new JobStore(options, core, wal, lock, openedAtMs);
    store.#start(options);
    return store;
  }

  #start(options: JobStoreOptions): void {
    this.#engine = options.scheduler?.({
      store: this,
      rateLimitPerS: (endpointId) => this.#ratePerS(endpointId),
      secretsFor: (job) => this.#secretsFor(job),
      ...(options.stallMonitor !== undefined
        ? { beforeStep: () => void options.stallMonitor!.check() }
        : {}),
    });
    this.#stallMonitor = options.stallMonitor;
    if (options.stallMonitor !== undefined) {
      this.#unsubscribe.push(options.stallMonitor.onStall((gapMs) => this.#stalled(gapMs)));
    }
    this.#unsubscribe.push(
      this.#transport.onMessage((m) => {
        if (m.channel !== JOBS_CHANNEL || this.#closed) return;
        this.core.receive(this.#runtime.nowMs(), this.#runtime.wallMs(), m.fromAddress, m.bytes);
        this.#scheduleFlush();
      }),
    );
    this.#unsubscribe.push(
      this.#transport.onEvent((event) => {
        if (event.type !== "messages-dropped" || this.#closed) return;
        const ours = event.messages.filter((m) => m.channel === JOBS_CHANNEL).length;
        if (ours === 0) return;
        this.#droppedCounter(event.reason).inc(ours);
        this.core.peerMissedMessages(this.#runtime.nowMs(), event.address);
        this.#scheduleFlush();
      }),
    );
    this.membershipChanged();
    // When the grace ends, voters still not heard of are taken as dead (membershipChanged).
    const graceLeftMs = this.#unheardUntilMs - this.#runtime.nowMs();
    if (graceLeftMs >= 0) {
      this.#unsubscribe.push(this.#runtime.setTimer(graceLeftMs, () => this.membershipChanged()));
    }
    this.core.recovered(this.#runtime.nowMs(), this.#runtime.wallMs());
    this.#flush();
  }

  /** Membership changed: the core recomputes ownership from the voters' states. */
  membershipChanged(): void {
    if (this.#closed) return;
    // A voter missing from the table keeps its last state: SWIM reaps dead members after a
    // while, and a reaped voter must stay dead for ownership, not come back as "alive". One
    // membership has never reported since this store opened is `unheard` (down, but keeping
    // its jobs) for the grace, then dead. Taken as alive for good, a voter that went down
    // before this node (re)started, and so never joins its table, kept its jobs here while the
    // others, who saw it die, left them to this node. Taken as dead at once, a voter merely
    // slower to join (a cluster starting under loss) lost its jobs to this node, which then
    // delivered them beside it: a duplicate of each.
    const view = new Map<string, VoterState>();
    const seen = new Set<string>();
    for (const m of this.#members()) {
      if (this.core.voters.includes(m.address)) seen.add(m.address);
    }
    for (const v of seen) this.#everSeen.add(v);
    const unheard: VoterState = this.#runtime.nowMs() < this.#unheardUntilMs ? "unheard" : "dead";
    for (const v of this.core.voters) {
      if (!seen.has(v)) view.set(v, this.#everSeen.has(v) ? this.core.voterState(v) : unheard);
    }
    for (const m of this.#members()) {
      if (!this.core.voters.includes(m.address)) continue;
      // A restarted voter may appear twice (old row dead, new row alive): alive wins.
      const before = view.get(m.address);
      if (before === undefined || before === "dead" || before === "left") {
        view.set(m.address, m.state);
      }
    }
    this.core.viewChanged(this.#runtime.nowMs(), view);
    this.#scheduleFlush();
  }

  // -------------------------------------------------------------------------------------------
  // JobService
  // -------------------------------------------------------------------------------------------

  submit(request: SubmitRequest): Promise<SubmitOutcome> {
    const requestId = this.#nextRequestId++;
    const { promise, resolve } = Promise.withResolvers<SubmitOutcome>();
    this.#submitWaiters.set(requestId, { resolve });
    this.core.submit(this.#runtime.nowMs(), this.#runtime.wallMs(), requestId, request);
    this.#scheduleFlush();
    return promise;
  }

  submitBatch(requests: readonly SubmitRequest[]): Promise<SubmitOutcome[]> {
    return Promise.all(requests.map((r) => this.submit(r)));
  }

  async getJob(id: string): Promise<JobView | undefined> {
    const entry = this.core.table.get(id);
    if (entry !== undefined && entry.spec !== undefined) return this.#view(entry);
    const requestId = this.#nextRequestId++;
    const { promise, resolve } = Promise.withResolvers<JobStateSnapshot | undefined>();
    this.#queryWaiters.set(requestId, { resolve });
    this.core.query(this.#runtime.nowMs(), requestId, id);
    this.#scheduleFlush();
    const state = await promise;
    if (state === undefined || state.spec === undefined) return undefined;
    return this.#viewOfSnapshot(state);
  }

  recentJobs(limit: number): readonly JobView[] {
    return this.core.table.recent(limit).map((e) => this.#view(e));
  }

  listDeadLetters(limit: number, cursor?: string): DeadLetterPage {
    // The cursor is a place in the dead-letter order ("d" + number); anything else starts
    // from the beginning.
    const after = cursor !== undefined && /^d\d{1,15}$/.test(cursor)
      ? Number(cursor.slice(1))
      : undefined;
    const page = this.core.deadLetters(limit, after);
    const items = page.items.map((e) => this.#view(e));
    return page.more && page.next !== undefined
      ? { items, nextCursor: `d${page.next}` }
      : { items };
  }

  retryDeadLetter(id: string): Promise<{ ok: true } | Refusal> {
    const requestId = this.#nextRequestId++;
    const { promise, resolve } = Promise.withResolvers<{ ok: true } | Refusal>();
    this.#reviveWaiters.set(requestId, { resolve });
    this.core.revive(this.#runtime.nowMs(), this.#runtime.wallMs(), requestId, id);
    this.#scheduleFlush();
    return promise;
  }

  createEndpoint(fields: EndpointFields, key?: EndpointCreateKey): Promise<EndpointOutcome> {
    if (key === undefined) return this.#writeEndpoint({ kind: "create", fields });
    return this.#writeEndpoint({
      kind: "create-keyed",
      id: keyedEndpointId(key.idempotencyKey),
      fields,
      secretGiven: key.secretGiven,
    });
  }

  updateEndpoint(id: string, patch: Partial<EndpointFields>): Promise<EndpointOutcome> {
    return this.#writeEndpoint({ kind: "update", id, patch });
  }

  deleteEndpoint(id: string): Promise<EndpointOutcome> {
    return this.#writeEndpoint({ kind: "delete", id });
  }

  rotateEndpointSecret(id: string, secret: string): Promise<EndpointOutcome> {
    const overlapMs = this.core.config.secretRotationOverlapMs;
    return this.#writeEndpoint({ kind: "rotate", id, secret, overlapMs });
  }

  /**
   * Revives the endpoint's dead jobs whose event was submitted at or after `sinceMs`, in
   * event order (recoverableJobs), through the manual retry's path: a REVIVE each, durable on
   * a majority. They go `endpointRecoverBatchMax` at a time: the revives of one batch are made
   * in one turn, so they share one WAL append and one message per peer, and the next batch
   * starts once the last one's majorities answered, so REVIVE records follow event order.
   */
  async recoverEndpoint(id: string, sinceMs: number): Promise<RecoverOutcome> {
    if (this.core.table.endpoints.get(id) === undefined) {
      return { ok: false, code: "not_found", message: `no endpoint ${JSON.stringify(id)}` };
    }
    const jobIds = recoverableJobs(this.core.table.activeEntries(), id, sinceMs);
    const batch = this.core.config.endpointRecoverBatchMax;
    let recovered = 0;
    let failed = 0;
    let refusal: Refusal | undefined;
    for (let i = 0; i < jobIds.length; i += batch) {
      const outcomes = await Promise.all(
        jobIds.slice(i, i + batch).map((jobId) => this.retryDeadLetter(jobId)),
      );
      for (const outcome of outcomes) {
        if (outcome.ok) recovered++;
        else {
          failed++;
          refusal ??= outcome;
        }
      }
    }
    if (recovered === 0 && refusal !== undefined) return refusal;
    return { ok: true, recovered, failed };
  }

  getEndpoint(id: string): EndpointView | undefined {
    const state = this.core.table.endpoints.get(id);
    return state === undefined ? undefined : endpointView(state);
  }

  async readEndpoint(id: string): Promise<EndpointView | undefined | Refusal> {
    const requestId = this.#nextRequestId++;
    const { promise, resolve } = Promise.withResolvers<{ ok: true } | Refusal>();
    this.#endpointReadWaiters.set(requestId, { resolve });
    this.core.lookupEndpoint(this.#runtime.nowMs(), this.#runtime.wallMs(), requestId, id);
    this.#scheduleFlush();
    const outcome = await promise;
    return outcome.ok ? this.getEndpoint(id) : outcome;
  }

  listEndpoints(limit: number, cursor?: string): EndpointPage {
    const page = this.core.table.endpoints.list(limit, cursor);
    return { ...page, items: page.items.map(endpointView) };
  }

  endpointHealth(limit: number, cursor?: string): EndpointHealthPage {
    const page = this.core.table.endpoints.list(limit, cursor);
    const wallMs = this.#runtime.wallMs();
    const health = this.core.endpointAttempts;
    return {
      windowMs: health.config.windowMs,
      items: page.items.map((s) =>
        endpointHealthItem(
          s,
          health.read(s.id, wallMs),
          s.ordered ? this.core.orderedBacklog(s.id) : undefined,
        )
      ),
      ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
    };
  }

  submitEvent(request: EventRequest): Promise<EventOutcome> {
    const requestId = this.#nextRequestId++;
    const { promise, resolve } = Promise.withResolvers<EventOutcome>();
    this.#eventWaiters.set(requestId, { resolve });
    this.core.submitEvent(this.#runtime.nowMs(), this.#runtime.wallMs(), requestId, request);
    this.#scheduleFlush();
    return promise;
  }

  /**
   * An event from this node's table, with each job's state as this node holds it (every
   * job's delivery records are replicated to every node); undefined if not held here.
   */
  getEvent(id: string): EventView | undefined {
    const event = this.core.table.event(id);
    if (event?.body === undefined) return undefined;
    const { event: spec, jobs } = event.body;
    return {
      id: spec.id,
      type: spec.type,
      payload: spec.payload,
      createdAtMs: spec.submittedAtMs,
      jobs: jobs.map((j): EventJobView => {
        const jobId = eventJobId(spec.id, j.endpointId);
        const entry = this.core.table.get(jobId);
        if (entry?.spec === undefined) {
          return { endpointId: j.endpointId, jobId, attemptsTotal: 0, attempts: [] };
        }
        const view = this.#view(entry);
        return {
          endpointId: j.endpointId,
          jobId,
          state: view.state,
          attemptsTotal: view.attemptsTotal,
          attempts: view.attempts,
        };
      }),
    };
  }

  #writeEndpoint(write: EndpointWrite): Promise<EndpointOutcome> {
    const requestId = this.#nextRequestId++;
    const { promise, resolve } = Promise.withResolvers<EndpointOutcome>();
    this.#endpointWaiters.set(requestId, { resolve });
    this.core.writeEndpoint(this.#runtime.nowMs(), this.#runtime.wallMs(), requestId, write);
    this.#scheduleFlush();
    return promise;
  }

  cluster(): ClusterView {
    const rows = this.#members();
    const members: MemberView[] = rows.map((m) => ({
      nodeId: m.nodeId,
      address: m.address,
      state: m.state,
      incarnation: m.incarnation,
      voter: this.core.voters.includes(m.address),
    }));
    const c = this.core.table.counts;
    const delivering = this.#engine?.inflight ?? 0;
    const jobs: Record<JobState, number> = {
      pending: Math.max(0, c.pending - delivering),
      delivering,
      delivered: c.delivered,
      dead: c.dead,
    };
    return {
      nodeId: this.nodeId,
      address: this.core.self,
      voters: this.core.voters.length,
      quorum: this.core.quorum,
      votersReachable: this.core.reachableVoters(),
      role: this.#role(),
      members,
      jobs,
    };
  }

  readiness(): Readiness {
    const phase = this.core.phase;
    const reachable = this.core.reachableVoters();
    const checks = [
      {
        name: "recovered" as const,
        ok: phase !== "recovering",
        detail: phase === "recovering" ? "replaying the WAL" : "WAL replayed",
      },
      {
        name: "caught_up" as const,
        ok: phase === "ready" || phase === "stopping",
        detail: phase === "catching_up" ? "fetching what it missed from a majority" : phase,
      },
      {
        name: "quorum" as const,
        ok: reachable >= this.core.quorum,
        detail:
          `${reachable} of ${this.core.voters.length} voters reachable, ${this.core.quorum} needed`,
      },
      {
        name: "wal" as const,
        ok: this.#walFailure === undefined,
        detail: this.#walFailure ?? "healthy",
      },
    ];
    return { ready: phase === "ready" && checks.every((c) => c.ok), checks };
  }

  #role(): string {
    const phase = this.core.phase;
    if (phase === "catching_up") return "catching_up";
    if (phase === "stopping") return "shutting_down";
    return phase;
  }

  #view(entry: JobEntry): JobView {
    const spec = entry.spec!;
    const numbered = numberAttempts(entry);
    const inFlight = this.core.isScheduled(entry.jobId) &&
      (this.#engine?.isInflight(entry.jobId) ?? false);
    const state: JobState = entry.phase === "pending"
      ? (inFlight ? "delivering" : "pending")
      : entry.phase;
    return {
      id: entry.jobId,
      state,
      url: spec.url,
      submittedAtMs: spec.submittedAtMs,
      ...(entry.phase !== "pending" ? { finishedAtMs: entry.finishedAtMs } : {}),
      attemptsMade: entry.attemptsMade,
      maxAttempts: spec.maxAttempts,
      retry: entry.gen,
      attemptsTotal: numbered.total,
      ...(entry.phase === "pending" && entry.nextAttemptAtMs > 0
        ? { nextAttemptAtMs: entry.nextAttemptAtMs }
        : {}),
      owner: this.#ownerName(entry.jobId),
      ...(entry.phase === "dead" ? { deadReason: entry.deadReason } : {}),
      attempts: entry.history.map((h, i): AttemptView => ({
        ...h,
        attempt: numbered.numbers[i]!,
        retry: h.retry ?? 0,
        ...(h.status === 0 ? { status: undefined } : {}),
      }))
        .map(stripUndefined),
      ...(entry.payloadDropped ? {} : { payload: spec.payload }),
      ...(spec.idempotencyKey !== undefined ? { idempotencyKey: spec.idempotencyKey } : {}),
    };
  }

  #viewOfSnapshot(s: JobStateSnapshot): JobView {
    return this.#view(entryOfSnapshot(s));
  }

  #ownerName(jobId: string): string {
    const owner = this.core.ownerOfJob(jobId);
    if (owner === undefined) return "";
    if (owner === this.core.self) return this.nodeId;
    return this.#members().find((m) => m.address === owner && m.state !== "dead")?.nodeId ?? owner;
  }

  // -------------------------------------------------------------------------------------------
  // DeliveryStore (the engine's reports)
  // -------------------------------------------------------------------------------------------

  recordRetry(report: Extract<DeliveryReport, { kind: "retry" }>): Promise<void> {
    const token = this.core.reportRetry(this.#runtime.nowMs(), this.#runtime.wallMs(), report);
    return this.#awaitToken(token);
  }

  recordDead(_job: DeliveryJob, report: Extract<DeliveryReport, { kind: "dead" }>): Promise<void> {
    const token = this.core.reportDead(this.#runtime.nowMs(), this.#runtime.wallMs(), report);
    return this.#awaitToken(token);
  }

  recordDelivered(report: Extract<DeliveryReport, { kind: "delivered" }>): void {
    this.core.reportDelivered(this.#runtime.nowMs(), this.#runtime.wallMs(), report);
    this.#scheduleFlush();
  }

  listDead(limit: number): readonly DeadLetter[] {
    return this.core.deadLetters(limit).items.map((e) => ({
      job: {
        id: e.jobId,
        url: e.spec!.url,
        payload: e.spec!.payload,
        headers: e.spec!.headers,
        secrets: e.spec!.secrets,
      },
      attemptsMade: e.attemptsMade,
      reason: e.deadReason,
      history: e.history.map((h) => ({
        attempt: h.attempt,
        startedAtMs: h.startedAtMs,
        latencyMs: h.latencyMs,
        outcome: h.outcome,
        ...(h.status !== 0 ? { status: h.status } : {}),
        detail: h.detail,
      })),
    }));
  }

  /**
   * A manual retry through the engine's own API: revived by a majority like the API's
   * retry. The core schedules the revived job itself when this node owns it, so this returns
   * undefined (the engine must not schedule it a second time).
   */
  async reviveDead(jobId: string): Promise<DeliveryJob | undefined> {
    await this.retryDeadLetter(jobId);
    return undefined;
  }

  /**
   * An event's job is signed under its endpoint's secrets valid now (docs/endpoints.md,
   * "Secret rotation"); undefined (the job's own, resolved at submit) for a job submitted on
   * its own or one whose endpoint this node no longer holds.
   */
  #secretsFor(job: DeliveryJob): readonly string[] | undefined {
    // By the job's webhookId: a plain job (none) returns at once, on every attempt.
    const endpointId = endpointIdOf(job);
    if (endpointId === undefined) return undefined;
    const endpoint = this.core.table.endpoints.get(endpointId);
    if (endpoint === undefined) return undefined;
    return secretsAt(endpoint, this.#runtime.wallMs());
  }

  #awaitToken(token: number | undefined): Promise<void> {
    if (token === undefined) {
      if (this.#walFailure !== undefined) {
        return Promise.reject(new Error(`WAL failed: ${this.#walFailure}`));
      }
      return Promise.resolve();
    }
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    let list = this.#tokenWaiters.get(token);
    if (list === undefined) {
      list = [];
      this.#tokenWaiters.set(token, list);
    }
    list.push({ resolve, reject });
    this.#scheduleFlush();
    return promise;
  }

  // -------------------------------------------------------------------------------------------
  // Carrying out the core's outputs
  // -------------------------------------------------------------------------------------------

  #scheduleFlush(): void {
    if (this.#flushQueued || this.#closed) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#closed) return;
    this.#flushing = true;
    try {
      this.core.flush(this.#runtime.nowMs());
      for (;;) {
        const outputs = this.core.takeOutputs();
        if (outputs.length === 0) break;
        for (const output of outputs) this.#carryOut(output);
        this.core.flush(this.#runtime.nowMs());
      }
    } finally {
      this.#flushing = false;
    }
    this.#timer.arm(this.core.nextWakeMs());
    this.#noticeLimits();
  }

  /**
   * This node's share of an endpoint's `rate_limit_per_s` (docs/endpoints.md, "Rate limits
   * across the cluster"): the rate over the voters it holds up, itself included. Each owner of
   * the endpoint's jobs takes that much, so the cluster's sum is the rate while views agree.
   */
  #ratePerS(endpointId: string): number {
    const endpoint = this.core.table.endpoints.get(endpointId);
    if (endpoint === undefined || endpoint.rateLimitPerS === 0) return 0;
    return endpoint.rateLimitPerS / Math.max(1, this.core.reachableVoters());
  }

  /** An endpoint changed, or a voter went down or came back: the engine's limits look again. */
  #noticeLimits(): void {
    const endpoints = this.core.table.endpoints.changes;
    const voters = this.core.reachableVoters();
    if (endpoints === this.#limitsSeen.endpoints && voters === this.#limitsSeen.voters) return;
    this.#limitsSeen = { endpoints, voters };
    this.#engine?.limitsChanged?.();
  }

  /**
   * The process was frozen: stale jobs are taken back from the engine now, synchronously, so
   * the step that noticed the freeze (an engine timer, most likely) finds nothing to attempt.
   */
  #stalled(gapMs: number): void {
    if (this.#closed) return;
    this.core.stalled(this.#runtime.nowMs(), this.#runtime.wallMs(), gapMs);
    // Inside a flush the loop carries the cancels out next; outside, carry them out now.
    if (!this.#flushing) this.#flush();
  }

  #carryOut(output: ReplicationOutput): void {
    switch (output.type) {
      case "append": {
        this.#pendingAppends++;
        const token = output.token;
        this.#wal.append(output.payload).then(
          () => {
            this.#pendingAppends--;
            this.core.persisted(this.#runtime.nowMs(), token);
            const waiters = this.#tokenWaiters.get(token);
            this.#tokenWaiters.delete(token);
            for (const w of waiters ?? []) w.resolve();
            this.#flush();
            this.#maybeIdle();
          },
          (error: unknown) => {
            this.#pendingAppends--;
            this.#walFailed(error, token);
            this.#maybeIdle();
          },
        );
        return;
      }
      case "send": {
        const result = this.#transport.send(
          output.to,
          JOBS_CHANNEL,
          output.bytes,
          output.ackMayWait,
        );
        if (!result.accepted) this.#sendRefused(result.reason);
        return;
      }
      case "submit-done": {
        const w = this.#submitWaiters.get(output.requestId);
        this.#submitWaiters.delete(output.requestId);
        w?.resolve(output.outcome);
        return;
      }
      case "revive-done": {
        const w = this.#reviveWaiters.get(output.requestId);
        this.#reviveWaiters.delete(output.requestId);
        w?.resolve(output.outcome);
        return;
      }
      case "endpoint-done": {
        const w = this.#endpointWaiters.get(output.requestId);
        this.#endpointWaiters.delete(output.requestId);
        const outcome = output.outcome;
        w?.resolve(outcome.ok ? { ok: true, endpoint: endpointView(outcome.endpoint) } : outcome);
        return;
      }
      case "endpoint-read-done": {
        const w = this.#endpointReadWaiters.get(output.requestId);
        this.#endpointReadWaiters.delete(output.requestId);
        w?.resolve(output.outcome);
        return;
      }
      case "event-done": {
        const w = this.#eventWaiters.get(output.requestId);
        this.#eventWaiters.delete(output.requestId);
        w?.resolve(output.outcome);
        return;
      }
      case "query-done": {
        const w = this.#queryWaiters.get(output.requestId);
        this.#queryWaiters.delete(output.requestId);
        w?.resolve(output.state);
        return;
      }
      case "schedule": {
        if (!this.#deliver || this.#engine === undefined) return;
        // A freeze noticed now cancels every scheduled job; this output is then stale.
        this.#stallMonitor?.check();
        if (!this.core.isScheduled(output.job.id)) return;
        const result = this.#engine.schedule(output.job, output.resume);
        if (!result.ok) this.core.scheduleRefused(this.#runtime.nowMs(), output.job.id);
        return;
      }
      case "cancel":
        this.#engine?.cancel(output.jobId);
        return;
      case "checkpoint":
        this.#wal.checkpoint(() => this.core.snapshotRecords()).then(
          (result) => {
            this.core.checkpointDone(result.snapshotBytes);
            this.#onLog("checkpoint", {
              records: result.snapshotRecords,
              bytes: result.snapshotBytes,
              removedSegments: result.removedSegments.length,
            });
          },
          (error: unknown) => {
            this.core.checkpointDone(undefined);
            this.#onLog("checkpoint-failed", { error: String(error) });
          },
        );
        return;
      case "log":
        this.#onLog(output.event, output.fields);
        return;
    }
  }

  #sendRefusals = 0;
  readonly #dropped = new Map<string, Counter>();

  /** Job-store messages the transport gave up on, by its reason. */
  #droppedCounter(reason: string): Counter {
    let c = this.#dropped.get(reason);
    if (c === undefined) {
      c = this.#metrics.counter(
        "hookd_jobs_messages_dropped_total",
        "Replication messages the transport gave up on (peer released, session reset or expired)",
        { reason },
      );
      this.#dropped.set(reason, c);
    }
    return c;
  }

  #sendRefused(_reason: string): void {
    // Counted by the transport (backpressure); the record reaches the peer by anti-entropy.
    this.#sendRefusals++;
  }

  #walFailed(error: unknown, token: number): void {
    const reason = error instanceof Error ? error.message : String(error);
    if (this.#walFailure === undefined) {
      this.#walFailure = reason;
      this.core.storageFailed(reason);
      this.#onLog("wal-failed", { error: reason });
    }
    const waiters = this.#tokenWaiters.get(token);
    this.#tokenWaiters.delete(token);
    for (const w of waiters ?? []) w.reject(new Error(`WAL failed: ${reason}`));
    this.#flush();
  }

  #maybeIdle(): void {
    if (this.#pendingAppends === 0) { for (const resolve of this.#idle.splice(0)) resolve(); }
  }

  /** Stops taking submits; replication and delivery go on until `close`. */
  stopAccepting(): void {
    this.core.stopping();
  }

  /**
   * Stops: no new submits, deliveries in flight finish (their reports are recorded), every
   * append issued is written, then the WAL closes and the directory lock is released.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.core.stopping();
    await this.#engine?.close();
    this.#flush();
    if (this.#pendingAppends > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
    this.#closed = true;
    this.#timer.close();
    for (const u of this.#unsubscribe) u();
    const refusal: SubmitOutcome = {
      ok: false,
      code: "shutting_down",
      message: "this node is shutting down",
      retryAfterS: 1,
    };
    for (const w of this.#submitWaiters.values()) w.resolve(refusal);
    this.#submitWaiters.clear();
    for (const w of this.#reviveWaiters.values()) w.resolve(refusal as Refusal);
    this.#reviveWaiters.clear();
    for (const w of this.#endpointWaiters.values()) w.resolve(refusal as Refusal);
    this.#endpointWaiters.clear();
    for (const w of this.#endpointReadWaiters.values()) w.resolve(refusal as Refusal);
    this.#endpointReadWaiters.clear();
    for (const w of this.#eventWaiters.values()) w.resolve(refusal as Refusal);
    this.#eventWaiters.clear();
    for (const w of this.#queryWaiters.values()) w.resolve(undefined);
    this.#queryWaiters.clear();
    await this.#wal.close();
    this.#lock?.release();
  }

  /** The node died (simulator): drop everything without writing or sending anything more. */
  halt(): void {
    this.#closed = true;
    this.#timer.close();
    for (const u of this.#unsubscribe) u();
  }

  get walFailed(): boolean {
    return this.#walFailure !== undefined;
  }
}

function stripUndefined<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = v;
  return out as T;
}

/**
 * An endpoint as the dashboard shows it: field by field, so that no secret (nor a header's
 * value, often the receiver's credentials) can reach it, whatever fields the value gains.
 */
export function endpointHealthItem(
  s: EndpointState,
  health: EndpointHealthView,
  backlog: number | undefined,
): EndpointHealthItem {
  return {
    id: s.id,
    url: s.url,
    description: s.description,
    eventTypes: s.eventTypes,
    headerNames: Object.keys(s.headers).sort(),
    rateLimitPerS: s.rateLimitPerS,
    ordered: s.ordered,
    disabled: s.disabled,
    disabledReason: s.disabledReason,
    createdAtMs: s.createdAtMs,
    updatedAtMs: s.version.atMs,
    health,
    ...(backlog !== undefined ? { backlog } : {}),
  };
}

/** An endpoint value as the service shows it. */
export function endpointView(s: EndpointState): EndpointView {
  return {
    ...fieldsOf(s),
    id: s.id,
    createdAtMs: s.createdAtMs,
    updatedAtMs: s.version.atMs,
    ...(s.previousSecret !== ""
      ? { previousSecret: s.previousSecret, previousSecretUntilMs: s.previousSecretUntilMs }
      : {}),
    ...(s.lastSuccessAtMs > 0 ? { lastSuccessAtMs: s.lastSuccessAtMs } : {}),
  };
}
