/**
 * Records on their way to peers: the ones to send at this flush, and the lazy ones nobody
 * waits for (COMMIT, delivery reports) that ride along with the next message to their peer or
 * leave on their own at a deadline.
 *
 * Owns: the per-peer queues, the lazy deadline, and which peers were sent a message since the
 * last flush. Must not encode or send messages, or know what the records mean: `take` hands
 * the flush's records back and the core (replication_core.ts) sends them.
 */

export class ReplicationOutbox {
  readonly #lazySendMs: number;
  /** Per-peer records to send this flush. */
  #outbox = new Map<string, Uint8Array[]>();
  /** Records nobody waits for, by peer (see `queueLazy`). */
  readonly #lazy = new Map<string, Uint8Array[]>();
  #lazyDueMs = Infinity;
  /** Send every lazy record at the next flush (their time came, or the node is stopping). */
  #lazyDue = false;
  /** Peers sent a message since the last flush: lazy records to them go along (one datagram). */
  readonly #sentTo = new Set<string>();

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
    this.#lazyDueMs = Math.min(this.#lazyDueMs, nowMs + this.#lazySendMs);
  }

  /** A message went to `peer`: its lazy records go with the next flush. */
  sent(peer: string): void {
    this.#sentTo.add(peer);
  }

  /** Every lazy record goes at the next flush (the node is stopping). */
  markDue(): void {
    this.#lazyDue = true;
  }

  /** Marks the lazy records due once their deadline has passed. */
  tick(nowMs: number): void {
    if (nowMs >= this.#lazyDueMs) this.#lazyDue = true;
  }

  /**
   * The records to send at this flush, by peer (in the order peers were first queued): the
   * queued ones, with the lazy ones of each peer that gets a message anyway, or of every peer
   * once they are due. The queues start afresh.
   */
  take(): Map<string, Uint8Array[]> {
    for (const [peer, lazy] of this.#lazy) {
      if (!this.#lazyDue && !this.#outbox.has(peer) && !this.#sentTo.has(peer)) continue;
      for (const bytes of lazy) this.queue(peer, bytes);
      this.#lazy.delete(peer);
    }
    this.#lazyDue = false;
    this.#sentTo.clear();
    if (this.#lazy.size === 0) this.#lazyDueMs = Infinity;
    const out = this.#outbox;
    this.#outbox = new Map();
    return out;
  }
}
