/**
 * Records on their way to peers: the ones to send at this flush, and the lazy ones nobody
 * waits for (COMMIT, delivery reports) that ride along with the next message to their peer or
 * leave on their own at a deadline.
 *
 * Owns: the per-peer queues, the lazy deadline, and which peers were sent a message since the
 * last flush. Must not encode or send messages, or know what the records mean: `take` hands
 * the flush's records back and the core (replication_core.ts) sends them.
 */

/** What `take` hands back when nothing is queued. */
const NOTHING: ReadonlyMap<string, readonly Uint8Array[]> = new Map();

export class ReplicationOutbox {
  readonly #lazySendMs: number;
  /** Per-peer records to send this flush (a fresh Map per flush that sends: young garbage). */
  #outbox = new Map<string, Uint8Array[]>();
  /**
   * Records nobody waits for, by peer (see `queueLazy`). A peer's list stays once made, empty
   * when sent: the peers are the voters, and deleting and re-adding keys of a long-lived Map
   * (or clearing a Set) allocates its new table in the old generation: garbage at every flush
   * (bench/results/session27).
   */
  readonly #lazy = new Map<string, Uint8Array[]>();
  /** Lazy records queued, over every peer. */
  #lazyCount = 0;
  #lazyDueMs = Infinity;
  /** Send every lazy record at the next flush (their time came, or the node is stopping). */
  #lazyDue = false;
  /** Flushes so far: `#sentAt` holds the flush a peer was last sent a message in. */
  #flushes = 0;
  /** Peers sent a message in flush `#flushes` (since the last one): their lazy records go along. */
  readonly #sentAt = new Map<string, number>();
  /** Peers whose records the last `take` handed back were all lazy (cleared only when used). */
  readonly #tookOnlyLazy = new Set<string>();

  constructor(lazySendMs: number) {
    this.#lazySendMs = lazySendMs;
  }

  /** When lazy records leave on their own (Infinity: none waits). */
  get lazyDueMs(): number {
    return this.#lazyDueMs;
  }

  /** Queues `bytes` for `peer` at this flush. */
  queue(peer: string, bytes: Uint8Array): void {
    let list = this.#outbox.get(peer);
    if (list === undefined) {
      list = [];
      this.#outbox.set(peer, list);
    }
    list.push(bytes);
  }

  /**
   * Queues a record nobody waits for: it goes with the next replication message to `peer`,
   * and at the latest `lazySendMs` after `nowMs`. Sent alone, each COMMIT and DONE costs a
   * datagram and its acknowledgement at every peer; riding along they cost a few bytes.
   */
  queueLazy(peer: string, bytes: Uint8Array, nowMs: number): void {
    let list = this.#lazy.get(peer);
    if (list === undefined) {
      list = [];
      this.#lazy.set(peer, list);
    }
    list.push(bytes);
    this.#lazyCount++;
    this.#lazyDueMs = Math.min(this.#lazyDueMs, nowMs + this.#lazySendMs);
  }

  /** A message went to `peer`: its lazy records go with the next flush. */
  sent(peer: string): void {
    this.#sentAt.set(peer, this.#flushes);
  }

  /** Every lazy record goes at the next flush (the node is stopping). */
  markDue(): void {
    this.#lazyDue = true;
  }

  /**
   * Whether the records the last `take` handed back for `peer` were all lazy ones: nobody
   * waits for them, so the peer's transport may hold its acknowledgement (lazyAckMs).
   */
  tookOnlyLazy(peer: string): boolean {
    return this.#tookOnlyLazy.has(peer);
  }

  /** Marks the lazy records due once their deadline has passed. */
  tick(nowMs: number): void {
    if (nowMs >= this.#lazyDueMs) this.#lazyDue = true;
  }

  /**
   * The records to send at this flush, by peer (in the order peers were first queued): the
   * queued ones, with the lazy ones of each peer that gets a message anyway, or of every peer
   * once they are due. The queues start afresh: the map handed back is the caller's.
   */
  take(): ReadonlyMap<string, readonly Uint8Array[]> {
    if (this.#tookOnlyLazy.size > 0) this.#tookOnlyLazy.clear();
    if (this.#lazyCount > 0) {
      for (const [peer, lazy] of this.#lazy) {
        if (lazy.length === 0) continue;
        if (
          !this.#lazyDue && !this.#outbox.has(peer) && this.#sentAt.get(peer) !== this.#flushes
        ) continue;
        // Only `queue` puts records someone waits for in the outbox before this.
        if (!this.#outbox.has(peer)) this.#tookOnlyLazy.add(peer);
        for (const bytes of lazy) this.queue(peer, bytes);
        this.#lazyCount -= lazy.length;
        lazy.length = 0;
      }
    }
    this.#lazyDue = false;
    this.#flushes++;
    if (this.#lazyCount === 0) this.#lazyDueMs = Infinity;
    if (this.#outbox.size === 0) return NOTHING;
    const out = this.#outbox;
    this.#outbox = new Map();
    return out;
  }
}
