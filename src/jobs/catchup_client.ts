/**
 * The asking side of catch-up and anti-entropy: the sync exchanges this node runs with its
 * peers (a restart's or a freeze's catch-up, the random anti-entropy rounds, and the order
 * barriers of ordered endpoints), page by page, and what a complete snapshot lets it infer
 * (jobs finished and compacted at the server).
 *
 * Owns: the exchanges (their pages, retries and bound), the request ids, the set of voters
 * that completed our catch-up, when the catch-up started and asks next, whether it is a resync
 * after a freeze, the highest seq of ours a peer reported, and the anti-entropy deadline (its
 * random draws). Must not own the phase, originate records, void seqs or touch the serving
 * side (sync_server.ts): it applies what pages carry through the narrow host the core
 * (replication_core.ts) passes, and calls `caughtUp` when a majority has answered; the core
 * turns ready, routes sync replies here and asks it for its deadlines.
 */

import type { JobsConfig } from "../config/jobs.ts";
import type { Rng } from "../lib/rng.ts";
import type { CatchupLog } from "./catchup_log.ts";
import type { CoreMetrics } from "./core_metrics.ts";
import { encodeRecord } from "./job_codec.ts";
import type { JobsMessage, OutgoingMessage, SyncCursor } from "./job_messages.ts";
import type {
  ApplyEffect,
  HeldRanges,
  JobEntry,
  JobRecord,
  ReplicatedRecord,
} from "./job_model.ts";
import type { JobTable } from "./job_table.ts";
import { type SeqTracker, summaryHas } from "./seq_tracker.ts";
import type { VoterSet } from "./voter_set.ts";

/**
 * A sync exchange this node asked for (restart catch-up or anti-entropy): the server answers
 * page by page, each page at most `syncReplyBytesMax`, and the exchange is complete with the
 * page that says no more follows.
 */
interface SyncExchange {
  readonly peer: string;
  readonly requestId: number;
  /** Counts towards the restart (or resync) catch-up once complete. */
  catchup: boolean;
  /** Counts towards this order barrier once complete (0: none). */
  readonly barrier: number;
  /** The page asked for last and where it starts: asked again when no answer comes. */
  page: number;
  cursor: SyncCursor;
  /**
   * The page being assembled from parts that may arrive in any order, of the answer to the
   * latest asking (`ask`): a page asked again may come cut differently, and parts of two
   * answers do not make a page.
   */
  ask: number;
  parts: number;
  readonly seen: Set<number>;
  /** Job ids the snapshot pages carried so far (undefined until one did). */
  snapshotIds: Set<string> | undefined;
  /** Endpoint ids the snapshot pages carried so far, tombstones included (with `snapshotIds`). */
  snapshotEndpointIds: Set<string> | undefined;
  /** The server's coverage, on its snapshot's last part. */
  held: readonly HeldRanges[];
  /**
   * When the page was last asked for, or a new part of its answer last came: it is asked
   * again `catchupRetryMs` after that. A page that is still arriving is not asked again: a
   * snapshot page cut into more parts than arrive within `catchupRetryMs` (sim seed 30109 with
   * `--events`: 183 parts of 4-KiB messages, 690 ms) was asked again before it was whole,
   * which threw away the parts it had and made its server send every part again, for ever.
   */
  waitFromMs: number;
  /** Times the current page was asked for without an answer. */
  tries: number;
}

/** Sync exchanges tracked at once (the oldest goes past it). */
const SYNC_EXCHANGES_MAX = 64;

/**
 * Pages an anti-entropy exchange asks for again without an answer before it is dropped (the
 * next round starts afresh); a catch-up exchange asks until its peer is held down.
 */
const SYNC_TRIES_MAX = 3;

/** Ranges per origin a sync request carries: a peer ships what lies past them again. */
const SYNC_SUMMARY_RANGES_MAX = 1024;

type SyncReply = Extract<JobsMessage, { kind: "sync-reply" }>;

/** How a catch-up ended, for the core that turns ready on it. */
export interface CaughtUp {
  /** After a freeze (`stalled`), not a restart: no seq of ours needs voiding. */
  readonly resync: boolean;
  /** The voters that completed our catch-up, joined by ",". */
  readonly from: string;
  readonly tookMs: number;
  /** Highest seq of our own origin any peer reported holding. */
  readonly peerSeqOfMine: number;
}

/** What the client needs of the core: each a narrow door, none the whole core. */
export interface CatchupHost {
  /** Whether the core is catching up (after a restart or a freeze). */
  catchingUp(): boolean;
  isDown(peer: string): boolean;
  send(to: string, message: OutgoingMessage): void;
  /** Records of a peer's log, merged as replication is (without acknowledging them). */
  onRecords(
    nowMs: number,
    wallMs: number,
    from: string,
    records: readonly { record: ReplicatedRecord; bytes: Uint8Array }[],
  ): void;
  /** Applies a record to the table and reacts (schedules, cancels). */
  applyAndReact(nowMs: number, record: JobRecord, wallMs: number): ApplyEffect;
  /** Adds a record to the append being built. */
  addToBatch(bytes: Uint8Array, record: JobRecord): void;
  /** A snapshot server's coverage, held here once the append being built is durable. */
  mergeHeld(held: readonly HeldRanges[]): void;
  log(event: string, fields: Record<string, unknown>): void;
  /** A majority (this node included) answered our catch-up: the core turns ready. */
  caughtUp(nowMs: number, done: CaughtUp): void;
  /**
   * A majority (this node included) answered an order barrier started at `startedWallMs`:
   * every record acknowledged before then is held here (docs/replication.md, "Ordered
   * endpoints").
   */
  orderSettled(nowMs: number, startedWallMs: number): void;
}

/**
 * An order barrier: a sync exchange with every voter not held down, done once a majority
 * (this node included) completed theirs. An acknowledged record is on a majority, which
 * intersects the one that answered, so once done, every record acknowledged before it
 * started is held here: the catch-up gate's argument, asked for again while ready.
 */
interface OrderBarrier {
  readonly id: number;
  readonly startedWallMs: number;
  readonly done: Set<string>;
  /** When the peers not yet answered (nor asked) are asked. */
  askAtMs: number;
}

export interface CatchupClientOptions extends Pick<VoterSet, "self" | "peers" | "quorum"> {
  readonly config: Pick<
    JobsConfig,
    | "catchupRetryMs"
    | "catchupStragglerWaitMs"
    | "antiEntropyIntervalMs"
    | "idempotencyWindowMs"
    | "idempotencyClockSkewMs"
    | "finishedTombstoneMs"
  >;
  readonly rng: Rng;
  readonly tracker: Pick<SeqTracker, "summary">;
  readonly catchupLog: Pick<CatchupLog, "raiseFloor">;
  readonly table: Pick<JobTable, "activeEntries" | "endpoints">;
  readonly metrics: Pick<CoreMetrics, "catchupRecords" | "finishedElsewhere">;
  readonly host: CatchupHost;
}

export class CatchupClient {
  readonly #self: string;
  readonly #peers: readonly string[];
  readonly #quorum: number;
  readonly #config: CatchupClientOptions["config"];
  readonly #rng: Rng;
  readonly #tracker: CatchupClientOptions["tracker"];
  readonly #catchupLog: CatchupClientOptions["catchupLog"];
  readonly #table: CatchupClientOptions["table"];
  readonly #metrics: CatchupClientOptions["metrics"];
  readonly #host: CatchupHost;
  #syncRequestId = 1;
  /** Catch-up: voters that sent a complete reply to our restart catch-up. */
  readonly #catchupDone = new Set<string>();
  /** Sync exchanges this node asked for, by request id. */
  readonly #exchanges = new Map<number, SyncExchange>();
  #catchupNextMs = 0;
  #catchupStartedMs = 0;
  /** When a majority had answered our catch-up (undefined: not yet); stragglers wait past it. */
  #majorityAtMs: number | undefined;
  /** Catching up again after a freeze (`stalled`), not after a restart. */
  #resyncing = false;
  /** Highest seq of our own origin any peer reported holding. */
  #peerSeqOfMine = 0;
  #antiEntropyAtMs = Infinity;
  #barrierIds = 0;
  #barrier: OrderBarrier | undefined;
  /** The wall time a barrier asked for while one ran must start at or after (-1: none). */
  #barrierWantedWallMs = -1;

  constructor(options: CatchupClientOptions) {
    this.#self = options.self;
    this.#peers = options.peers;
    this.#quorum = options.quorum;
    this.#config = options.config;
    this.#rng = options.rng;
    this.#tracker = options.tracker;
    this.#catchupLog = options.catchupLog;
    this.#table = options.table;
    this.#metrics = options.metrics;
    this.#host = options.host;
  }

  /** When the catch-up asks its missing voters again (while the core catches up). */
  get catchupDueMs(): number {
    return this.#catchupNextMs;
  }

  /** When the next anti-entropy round starts (while the core is ready). */
  get antiEntropyDueMs(): number {
    return this.#antiEntropyAtMs;
  }

  /** When the first unanswered page is asked for again (Infinity: no exchange runs). */
  exchangesDueMs(): number {
    let t = this.#barrier?.askAtMs ?? Infinity;
    for (const ex of this.#exchanges.values()) {
      t = Math.min(t, ex.waitFromMs + this.#config.catchupRetryMs);
    }
    return t;
  }

  /** Recovery is over: the restart catch-up starts now (`catchupTick` asks). */
  begin(nowMs: number): void {
    this.#catchupStartedMs = nowMs;
    this.#catchupNextMs = nowMs;
    this.#majorityAtMs = undefined;
  }

  /**
   * The node was frozen: the catch-up starts over, its answers so far forgotten; after a freeze
   * of a ready node (`resync`) it is a resync, else it stays what it was.
   */
  startOver(nowMs: number, resync: boolean): void {
    if (resync) this.#resyncing = true;
    this.#catchupDone.clear();
    for (const [id, ex] of this.#exchanges) if (ex.catchup) this.#exchanges.delete(id);
    this.#catchupStartedMs = nowMs;
    this.#catchupNextMs = nowMs;
    this.#majorityAtMs = undefined;
  }

  /**
   * Asks the voters not yet heard from, at most every `catchupRetryMs`. Done on a majority and
   * then every voter not held down, or `catchupStragglerWaitMs` after the majority: the DONE of
   * a job its replacement delivered just before we came back may be on that replacement alone
   * (a DONE is sent lazily and nobody waits for its majority), and a majority that lacks it
   * would have us attempt the job again.
   */
  catchupTick(nowMs: number): void {
    if (!this.#host.catchingUp()) return;
    let waitEndsMs = Infinity;
    if (this.#catchupDone.size + 1 >= this.#quorum) {
      this.#majorityAtMs ??= nowMs;
      waitEndsMs = this.#majorityAtMs + this.#config.catchupStragglerWaitMs;
      const straggling = this.#peers.some((p) =>
        !this.#catchupDone.has(p) && !this.#host.isDown(p)
      );
      if (!straggling || nowMs >= waitEndsMs) {
        this.#finishCatchup(nowMs);
        return;
      }
    }
    if (nowMs >= this.#catchupNextMs) {
      this.#catchupNextMs = nowMs + this.#config.catchupRetryMs;
      const asking = new Set<string>();
      for (const ex of this.#exchanges.values()) if (ex.catchup) asking.add(ex.peer);
      for (const peer of this.#peers) {
        if (this.#catchupDone.has(peer) || this.#host.isDown(peer) || asking.has(peer)) continue;
        this.#startExchange(nowMs, peer, true);
      }
    }
    // Waiting for stragglers: the tick at the wait's end finishes.
    this.#catchupNextMs = Math.min(this.#catchupNextMs, waitEndsMs);
  }

  #finishCatchup(nowMs: number): void {
    // Exchanges still running go on as anti-entropy: what they bring is welcome, not awaited.
    for (const ex of this.#exchanges.values()) ex.catchup = false;
    const resync = this.#resyncing;
    this.#resyncing = false;
    this.#host.caughtUp(nowMs, {
      resync,
      from: [...this.#catchupDone].join(","),
      tookMs: Math.round(nowMs - this.#catchupStartedMs),
      peerSeqOfMine: this.#peerSeqOfMine,
    });
  }

  /** Draws the next anti-entropy round, half to one and a half intervals from `nowMs`. */
  scheduleAntiEntropy(nowMs: number): void {
    this.#antiEntropyAtMs = nowMs + this.#config.antiEntropyIntervalMs * (0.5 + this.#rng.next());
  }

  /**
   * Asks for an order barrier that starts at a wall time of at least `sinceWallMs` (it is at
   * `wallMs` now): the one running does if it started late enough, else the next one, started
   * as soon as this one is done (one runs at a time; any number of asks share it).
   */
  requestBarrier(nowMs: number, wallMs: number, sinceWallMs: number): void {
    const running = this.#barrier;
    if (running !== undefined) {
      if (running.startedWallMs < sinceWallMs) {
        this.#barrierWantedWallMs = Math.max(this.#barrierWantedWallMs, sinceWallMs);
      }
      return;
    }
    this.#barrier = { id: ++this.#barrierIds, startedWallMs: wallMs, done: new Set(), askAtMs: 0 };
    this.#barrierTick(nowMs, wallMs);
  }

  /**
   * Asks the voters that have not answered the barrier (and are not being asked, nor held
   * down), at most every `catchupRetryMs`; done once a majority answered.
   */
  #barrierTick(nowMs: number, wallMs: number): void {
    const b = this.#barrier;
    if (b === undefined) return;
    if (b.done.size + 1 >= this.#quorum) {
      this.#barrier = undefined;
      this.#host.orderSettled(nowMs, b.startedWallMs);
      if (this.#barrierWantedWallMs >= 0) {
        const since = this.#barrierWantedWallMs;
        this.#barrierWantedWallMs = -1;
        this.requestBarrier(nowMs, wallMs, since);
      }
      return;
    }
    if (nowMs < b.askAtMs) return;
    b.askAtMs = nowMs + this.#config.catchupRetryMs;
    const asking = new Set<string>();
    for (const ex of this.#exchanges.values()) if (ex.barrier === b.id) asking.add(ex.peer);
    for (const peer of this.#peers) {
      if (b.done.has(peer) || this.#host.isDown(peer) || asking.has(peer)) continue;
      this.#startExchange(nowMs, peer, false, b.id);
    }
  }

  /** Starts a sync exchange with `peer`: it sends what we lack, page by page. */
  #startExchange(nowMs: number, peer: string, catchup: boolean, barrier = 0): void {
    if (this.#exchanges.size >= SYNC_EXCHANGES_MAX) {
      this.#exchanges.delete(this.#exchanges.keys().next().value!);
    }
    const ex: SyncExchange = {
      peer,
      requestId: this.#syncRequestId++,
      catchup,
      barrier,
      page: 0,
      cursor: { kind: "start" },
      ask: 0,
      parts: 0,
      seen: new Set(),
      snapshotIds: undefined,
      snapshotEndpointIds: undefined,
      held: [],
      waitFromMs: nowMs,
      tries: 0,
    };
    this.#exchanges.set(ex.requestId, ex);
    this.#askPage(nowMs, ex);
  }

  #askPage(nowMs: number, ex: SyncExchange): void {
    ex.waitFromMs = nowMs;
    ex.tries++;
    ex.ask++;
    ex.parts = 0;
    ex.seen.clear();
    this.#host.send(ex.peer, {
      kind: "sync-req",
      from: this.#self,
      requestId: ex.requestId,
      catchup: ex.catchup,
      page: ex.page,
      cursor: ex.cursor,
      ask: ex.ask,
      held: this.#tracker.summary(SYNC_SUMMARY_RANGES_MAX),
    });
  }

  /** Pages not answered in time are asked for again; exchanges with a down peer end. */
  tick(nowMs: number, wallMs: number): void {
    for (const [id, ex] of this.#exchanges) {
      if (this.#host.isDown(ex.peer)) {
        this.#exchanges.delete(id);
        continue;
      }
      // The same sum as exchangesDueMs: a difference compared instead can round the other
      // way, and the timer armed at that deadline would fire for ever at one instant.
      if (nowMs < ex.waitFromMs + this.#config.catchupRetryMs) continue;
      // A catch-up or a barrier asks until its peer answers or is held down.
      if (!ex.catchup && ex.barrier !== this.#barrier?.id && ex.tries >= SYNC_TRIES_MAX) {
        this.#exchanges.delete(id);
      } else this.#askPage(nowMs, ex);
    }
    this.#barrierTick(nowMs, wallMs);
  }

  /** A part of a page a peer sent in answer to one of our sync requests. */
  onSyncReply(nowMs: number, wallMs: number, m: SyncReply): void {
    this.#peerSeqOfMine = Math.max(this.#peerSeqOfMine, m.yourSeqMax);
    const ex = this.#exchanges.get(m.requestId);
    // A page of an exchange that ended, or one asked for before: its records are still
    // good (merging is idempotent), but it says nothing about this exchange.
    const current = ex !== undefined && ex.peer === m.from && ex.page === m.page;
    this.#metrics.catchupRecords.inc(m.records.length);
    const assembling = current && m.ask === ex.ask;
    if (assembling && ex.seen.size === 0) ex.parts = m.parts;
    if (assembling && ex.seen.has(m.part)) return;
    if (m.snapshot) {
      if (assembling) {
        ex.snapshotIds ??= new Set();
        ex.snapshotEndpointIds ??= new Set();
      }
      for (const { record, bytes } of m.records) {
        if (
          record.type !== "state" && record.type !== "key" && record.type !== "gone" &&
          record.type !== "endpoint-state" && record.type !== "event-state"
        ) continue;
        if (assembling && record.type === "state") ex.snapshotIds!.add(record.state.jobId);
        if (assembling && record.type === "endpoint-state") {
          ex.snapshotEndpointIds!.add(record.state.id);
        }
        const effect = this.#host.applyAndReact(nowMs, record, wallMs);
        if (effect === "changed") this.#host.addToBatch(bytes, record);
      }
      if (assembling && m.held.length > 0) ex.held = m.held;
    } else {
      this.#host.onRecords(
        nowMs,
        wallMs,
        m.from,
        m.records as readonly { record: ReplicatedRecord; bytes: Uint8Array }[],
      );
    }
    if (!assembling) return;
    ex.seen.add(m.part);
    ex.waitFromMs = nowMs;
    if (ex.seen.size < ex.parts) return;
    // The page is in.
    ex.tries = 0;
    if (m.more) {
      // A server that lost its snapshot session starts over: what the old one carried says
      // nothing about the new one's coverage.
      if (m.cursor.kind === "start") {
        ex.snapshotIds = undefined;
        ex.snapshotEndpointIds = undefined;
        ex.held = [];
      }
      ex.page++;
      ex.cursor = m.cursor;
      this.#askPage(nowMs, ex);
      return;
    }
    this.#exchanges.delete(m.requestId);
    if (m.snapshot && ex.snapshotIds !== undefined && ex.held.length > 0) {
      this.#afterSnapshot(nowMs, wallMs, ex.snapshotIds, ex.snapshotEndpointIds!, ex.held);
    }
    if (ex.catchup) {
      this.#catchupDone.add(m.from);
      this.catchupTick(nowMs);
    }
    if (ex.barrier !== 0 && ex.barrier === this.#barrier?.id) {
      this.#barrier.done.add(m.from);
      this.#barrierTick(nowMs, wallMs);
    }
  }

  /**
   * A whole snapshot arrived: its states are merged, so what the server held is now held here
   * (once this append is durable) and out of reach of our log. A pending job we hold whose
   * SUBMIT the server held, but which is not in its table, finished there and was compacted
   * (its DONE or DEAD is among what we now count as held, though we never got it): compact it
   * here too, or it would wait pending, and be delivered again, for ever. Likewise an
   * endpoint the server dropped (`#droppedEndpoints`).
   */
  #afterSnapshot(
    nowMs: number,
    wallMs: number,
    ids: ReadonlySet<string>,
    endpointIds: ReadonlySet<string>,
    held: readonly HeldRanges[],
  ): void {
    const finished: JobEntry[] = [];
    const keyKeptMs = this.#config.idempotencyWindowMs + this.#config.idempotencyClockSkewMs;
    for (const entry of this.#table.activeEntries()) {
      if (entry.phase !== "pending" || ids.has(entry.jobId)) continue;
      // A keyed SUBMIT the server held may be one it refused (another incarnation of the key
      // was live there: sim seed 319), so "held but not in its table" says nothing while the
      // server would still keep the key of a finished one, which its snapshot then carries.
      const spec = entry.spec;
      if (spec?.idempotencyKey !== undefined && spec.submittedAtMs + keyKeptMs > wallMs) continue;
      // A dead letter retried by hand lives on in a later generation, which its SUBMIT's stamp
      // says nothing of: the server may have compacted the dead letter before the REVIVE
      // reached it (session 39's review: the acknowledged retry compacted here, then, through
      // the tombstone, everywhere). A generation that did finish there left a tombstone its
      // snapshot carries; past that tombstone's life this copy waits, as a stub would.
      if (entry.gen > 0) continue;
      const stamp = entry.submitStamp;
      if (stamp !== undefined && summaryHas(held, stamp.origin, stamp.seq)) finished.push(entry);
    }
    for (const entry of finished) {
      // The server compacted the job, tombstone and all, so nothing says whether it was
      // delivered or died: do as it did — compact it here and keep a tombstone against late
      // records — rather than call it delivered (a dead letter would then show delivered for
      // an hour and could not be retried through this node).
      const record: JobRecord = {
        type: "gone",
        gone: {
          jobId: entry.jobId,
          gen: entry.gen,
          expiresAtMs: wallMs + this.#config.finishedTombstoneMs,
        },
      };
      this.#host.applyAndReact(nowMs, record, wallMs);
      this.#host.addToBatch(encodeRecord(record), record);
    }
    if (finished.length > 0) {
      this.#metrics.finishedElsewhere.inc(finished.length);
      this.#host.log("finished-elsewhere", { jobs: finished.length });
    }
    this.#droppedEndpoints(nowMs, wallMs, endpointIds, held);
    this.#host.mergeHeld(held);
    for (const h of held) {
      const top = h.above.length > 0 ? h.above[h.above.length - 1]![1] : h.contiguous;
      this.#catchupLog.raiseFloor(h.origin, top);
    }
  }

  /**
   * An endpoint we hold whose value's record the server held (its stamp is inside the
   * server's summary) but which its snapshot does not carry: the server dropped it, and a
   * server drops an endpoint only as a tombstone past `endpointTombstoneMs`. Its value there
   * was at least as new as ours, so ours is the live copy of an endpoint deleted longer ago
   * than the horizon, which we missed (away all that time). Kept, it would come back at every
   * node that no longer holds the tombstone, through our checkpoints and snapshots. It is
   * marked deleted here, durably: an `endpoint-state` of the same value at the same version
   * with `deleted` set, which wins over the live value whatever the order (the merge's tie
   * rule, endpoint_model.ts) so a WAL replay of the older records does not bring it back, and
   * which expires with the next tombstone sweep.
   */
  #droppedEndpoints(
    nowMs: number,
    wallMs: number,
    ids: ReadonlySet<string>,
    held: readonly HeldRanges[],
  ): void {
    const dropped: JobRecord[] = [];
    for (const state of this.#table.endpoints.values()) {
      if (state.deleted || ids.has(state.id)) continue;
      if (!summaryHas(held, state.version.origin, state.version.seq)) continue;
      dropped.push({ type: "endpoint-state", state: { ...state, deleted: true } });
    }
    for (const record of dropped) {
      this.#host.applyAndReact(nowMs, record, wallMs);
      this.#host.addToBatch(encodeRecord(record), record);
    }
    if (dropped.length > 0) {
      this.#host.log("endpoints-dropped-elsewhere", { endpoints: dropped.length });
    }
  }

  /** An anti-entropy round when its time came: a random live peer, unless one runs with it. */
  antiEntropy(nowMs: number): void {
    if (nowMs < this.#antiEntropyAtMs) return;
    this.scheduleAntiEntropy(nowMs);
    const live = this.#peers.filter((p) => !this.#host.isDown(p));
    if (live.length === 0) return;
    const peer = live[Math.floor(this.#rng.next() * live.length)]!;
    this.exchangeWith(nowMs, peer);
  }

  /** Swaps held summaries with `peer` now, unless an exchange with it runs already. */
  exchangeWith(nowMs: number, peer: string): void {
    // One exchange with a peer at a time: a long one (a snapshot) is not started twice.
    for (const ex of this.#exchanges.values()) if (ex.peer === peer) return;
    this.#startExchange(nowMs, peer, false);
  }
}
