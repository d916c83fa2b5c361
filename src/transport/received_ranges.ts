/**
 * The set of packet numbers received from one peer, as a bounded list of disjoint ranges.
 *
 * Owns only that set. Ranges are kept highest first, which is the order acknowledgements are
 * written in. When more than `rangesMax` ranges exist the lowest is forgotten: a retransmission
 * of a packet in it is then re-acknowledged later or suppressed by message ids, never
 * delivered twice.
 */

import { assert } from "../lib/assert.ts";
import type { PacketRange } from "./frame_codec.ts";

export class ReceivedRanges {
  /** Disjoint, non-adjacent, sorted by `hi` descending. */
  readonly #ranges: PacketRange[] = [];

  constructor(readonly rangesMax: number) {
    assert(rangesMax >= 1, "ReceivedRanges needs room for one range");
  }

  get size(): number {
    return this.#ranges.length;
  }

  get largest(): number {
    return this.#ranges[0]?.hi ?? -1;
  }

  has(pn: number): boolean {
    for (const r of this.#ranges) {
      if (pn > r.hi) return false;
      if (pn >= r.lo) return true;
    }
    return false;
  }

  /** Adds `pn`; returns false when it was already present. */
  add(pn: number): boolean {
    const ranges = this.#ranges;
    let i = 0;
    while (i < ranges.length && ranges[i]!.lo > pn + 1) i++;
    // ranges[i], if any, is the highest range with lo <= pn + 1; every range above it lies
    // strictly above pn + 1, so only the range below can become adjacent.
    const r = ranges[i];
    if (r === undefined) {
      ranges.push({ lo: pn, hi: pn });
    } else if (pn >= r.lo && pn <= r.hi) {
      return false;
    } else if (pn === r.hi + 1) {
      r.hi = pn;
    } else if (pn === r.lo - 1) {
      r.lo = pn;
      const below = ranges[i + 1];
      if (below !== undefined && below.hi === pn - 1) {
        r.lo = below.lo;
        ranges.splice(i + 1, 1);
      }
    } else {
      ranges.splice(i, 0, { lo: pn, hi: pn });
    }
    if (ranges.length > this.rangesMax) ranges.pop();
    return true;
  }

  /** The highest `count` ranges, highest first (copies). */
  top(count: number): PacketRange[] {
    return this.#ranges.slice(0, count).map((r) => ({ lo: r.lo, hi: r.hi }));
  }
}
