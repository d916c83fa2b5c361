/**
 * The bounded queue of membership updates waiting to be piggybacked (memberlist's
 * TransmitLimitedQueue, rewritten): at most one update per member (a newer one replaces the
 * older), each sent at most `retransmitLimit` times, least-sent first and newest first among
 * equals.
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
  /** Insertion order: higher is newer. */
  id: number;
}

export class GossipQueue {
  readonly #capacity: number;
  readonly #items = new Map<string, Item>();
  #nextId = 0;
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
    this.#items.delete(message.nodeId);
    if (this.#items.size >= this.#capacity) {
      // Full: drop the update sent most often (the oldest among those), it has done most of
      // its spreading already.
      let worst: Item | undefined;
      for (const item of this.#items.values()) {
        if (
          worst === undefined || item.transmits > worst.transmits ||
          (item.transmits === worst.transmits && item.id < worst.id)
        ) worst = item;
      }
      if (worst !== undefined) {
        this.#items.delete(worst.message.nodeId);
        this.dropped++;
      }
    }
    this.#items.set(message.nodeId, {
      message,
      bytes: messageBytes(message),
      transmits: 0,
      id: this.#nextId++,
    });
  }

  /**
   * Takes updates that fit in `spaceBytes` (at most `countMax`), least-sent then newest first,
   * counting one transmission each; an update reaching `retransmitLimit` leaves the queue.
   */
  take(
    spaceBytes: number,
    countMax: number,
    retransmitLimit: number,
    alreadySent: readonly SwimMessage[] = [],
  ): GossipMessage[] {
    if (this.#items.size === 0 || spaceBytes <= 0 || countMax <= 0) return [];
    const ordered = [...this.#items.values()].sort((a, b) =>
      a.transmits - b.transmits || b.id - a.id
    );
    const out: GossipMessage[] = [];
    let room = spaceBytes;
    for (const item of ordered) {
      if (out.length >= countMax) break;
      if (item.bytes > room) continue;
      // The packet already carries this very update as its main message: a copy would burn
      // one of its few retransmissions for nothing.
      if (alreadySent.some((m) => sameUpdate(m, item.message))) continue;
      room -= item.bytes;
      out.push(item.message);
      item.transmits++;
      if (item.transmits >= retransmitLimit) this.#items.delete(item.message.nodeId);
    }
    return out;
  }
}

function sameUpdate(a: SwimMessage, b: GossipMessage): boolean {
  return a.type === b.type && "nodeId" in a && a.nodeId === b.nodeId &&
    a.incarnation === b.incarnation;
}
