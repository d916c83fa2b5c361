/**
 * The bounded queue of membership updates waiting to be piggybacked (memberlist's
 * TransmitLimitedQueue, rewritten): at most one update per member (a newer one replaces the
 * older), each sent at most `retransmitLimit` times, least-sent first and, among updates sent
 * equally often, the one that most recently got there first (newest first for fresh ones).
 *
 * `take` runs for every datagram the transport builds, so it must not sort the whole queue:
 * updates sit in one bucket per send count, each bucket in the order its updates entered it,
 * and `take` walks the buckets from the least-sent, newest end, stopping as soon as the packet
 * is full. Entries an update left (sent again, replaced, dropped) stay behind as stale slots
 * that walks skip and a compaction clears once they outnumber the live ones.
 *
 * Owns the queued updates and their send counts. It does not decide what is news (the core
 * does) and it never encodes a packet.
 */

import { assert } from "../lib/assert.ts";
import { messageBytes } from "./codec.ts";
import type { GossipMessage, SwimMessage } from "./messages.ts";

interface Item {
  message: GossipMessage;
  bytes: number;
  transmits: number;
  /** False once sent for the last time, replaced or dropped: its bucket slots are stale. */
  live: boolean;
}

export class GossipQueue {
  readonly #capacity: number;
  readonly #items = new Map<string, Item>();
  /** `#buckets[t]`: slots of the updates sent t times, oldest arrival first. */
  readonly #buckets: Item[][] = [];
  #slots = 0;
  /** The smallest update ever queued: a packet with less room left takes nothing more. */
  #bytesMin = Infinity;
  /** Updates dropped because the queue was full. */
  dropped = 0;

  constructor(capacity: number) {
    assert(Number.isInteger(capacity) && capacity > 0, "gossip queue capacity > 0");
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#items.size;
  }

  /** Queues `message`, replacing any queued update about the same member. */
  push(message: GossipMessage): void {
    const old = this.#items.get(message.nodeId);
    if (old !== undefined) this.#remove(old);
    if (this.#items.size >= this.#capacity) {
      // Full: drop the update sent most often (the longest there among those); it has done
      // most of its spreading already.
      const worst = this.#mostSent();
      if (worst !== undefined) {
        this.#remove(worst);
        this.dropped++;
      }
    }
    const item: Item = { message, bytes: messageBytes(message), transmits: 0, live: true };
    this.#bytesMin = Math.min(this.#bytesMin, item.bytes);
    this.#items.set(message.nodeId, item);
    this.#slot(item);
  }

  /**
   * Takes updates that fit in `spaceBytes` (at most `countMax`), least-sent first, counting one
   * transmission each; an update reaching `retransmitLimit` leaves the queue. Stops at the
   * first point where nothing more could fit, so the cost follows what is taken, not the
   * queue's length.
   */
  take(
    spaceBytes: number,
    countMax: number,
    retransmitLimit: number,
    alreadySent: readonly SwimMessage[] = [],
  ): GossipMessage[] {
    const out: GossipMessage[] = [];
    const moved: Item[] = [];
    let room = spaceBytes;
    walk: for (let t = 0; t < this.#buckets.length; t++) {
      const bucket = this.#buckets[t]!;
      for (let i = bucket.length - 1; i >= 0; i--) {
        if (out.length >= countMax || room < this.#bytesMin) break walk;
        const item = bucket[i]!;
        if (!item.live || item.transmits !== t) {
          // A stale slot at the end is dropped at once (the common case: the update was
          // taken from this end last time).
          if (i === bucket.length - 1) {
            bucket.pop();
            this.#slots--;
          }
          continue;
        }
        if (item.bytes > room) continue;
        // The packet already carries this very update as its main message: a copy would burn
        // one of its few retransmissions for nothing.
        if (alreadySent.some((m) => sameUpdate(m, item.message))) continue;
        room -= item.bytes;
        out.push(item.message);
        item.transmits++;
        if (item.transmits >= retransmitLimit) this.#remove(item);
        else moved.push(item);
      }
    }
    // Into their next bucket after the walk (not during it, or one packet could carry an
    // update twice), newest last so that the next walk meets them in the order taken.
    for (let i = moved.length - 1; i >= 0; i--) this.#slot(moved[i]!);
    if (this.#slots > 2 * this.#items.size + 64) this.#compact();
    return out;
  }

  #slot(item: Item): void {
    while (this.#buckets.length <= item.transmits) this.#buckets.push([]);
    this.#buckets[item.transmits]!.push(item);
    this.#slots++;
  }

  #remove(item: Item): void {
    item.live = false;
    this.#items.delete(item.message.nodeId);
  }

  #mostSent(): Item | undefined {
    for (let t = this.#buckets.length - 1; t >= 0; t--) {
      for (const item of this.#buckets[t]!) {
        if (item.live && item.transmits === t) return item;
      }
    }
    return undefined;
  }

  /** Drops every stale slot: linear, and run only once they are as many as the live ones. */
  #compact(): void {
    this.#slots = 0;
    for (let t = 0; t < this.#buckets.length; t++) {
      const kept = this.#buckets[t]!.filter((item) => item.live && item.transmits === t);
      this.#buckets[t] = kept;
      this.#slots += kept.length;
    }
    while (this.#buckets.length > 0 && this.#buckets[this.#buckets.length - 1]!.length === 0) {
      this.#buckets.pop();
    }
  }
}

function sameUpdate(a: SwimMessage, b: GossipMessage): boolean {
  return a.type === b.type && "nodeId" in a && a.nodeId === b.nodeId &&
    a.incarnation === b.incarnation;
}
