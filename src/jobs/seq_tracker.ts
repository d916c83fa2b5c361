/**
 * Which records of each origin a node holds: per origin, every seq in [1, contiguous] plus a
 * short list of ranges above it. Anti-entropy swaps these summaries (a few numbers per origin)
 * and ships only the gaps, so catching up costs what is missing, not the table's size.
 *
 * Owns the range bookkeeping only; what "held" means (durable on this node's WAL) is the
 * caller's rule. Ranges are inclusive and kept ascending and disjoint.
 */

import { fail } from "../lib/assert.ts";
import type { HeldRanges } from "./job_model.ts";

class OriginRanges {
  contiguous = 0;
  /** Held ranges above contiguous + 1, ascending, disjoint, not adjacent. */
  above: Array<[number, number]> = [];
  /** Highest seq held. */
  get max(): number {
    return this.above.length > 0 ? this.above[this.above.length - 1]![1] : this.contiguous;
  }

  has(seq: number): boolean {
    if (seq <= this.contiguous) return true;
    for (const [a, b] of this.above) {
      if (seq < a) return false;
      if (seq <= b) return true;
    }
    return false;
  }

  add(from: number, to: number): boolean {
    if (!(from >= 1 && to >= from)) fail(`bad range [${from}, ${to}]`);
    if (to <= this.contiguous) return false;
    if (from <= this.contiguous + 1) {
      this.contiguous = to;
      this.#absorb();
      return true;
    }
    // Insert and merge with neighbours (adjacent ranges join).
    const ranges = this.above;
    let i = 0;
    while (i < ranges.length && ranges[i]![1] + 1 < from) i++;
    const covered = i < ranges.length && ranges[i]![0] <= from && ranges[i]![1] >= to;
    if (covered) return false;
    let lo = from;
    let hi = to;
    let j = i;
    while (j < ranges.length && ranges[j]![0] <= hi + 1) {
      lo = Math.min(lo, ranges[j]![0]);
      hi = Math.max(hi, ranges[j]![1]);
      j++;
    }
    ranges.splice(i, j - i, [lo, hi]);
    this.#assertAround(i);
    return true;
  }

  #absorb(): void {
    while (this.above.length > 0 && this.above[0]![0] <= this.contiguous + 1) {
      this.contiguous = Math.max(this.contiguous, this.above[0]![1]);
      this.above.shift();
    }
    const first = this.above[0];
    if (!(first === undefined || (first[0] > this.contiguous + 1 && first[0] <= first[1]))) {
      fail(
        `tracker: range [${first?.[0]}, ${first?.[1]}] not above contiguous ${this.contiguous} + 1`,
      );
    }
  }

  /**
   * The ranges around index `i` (the one just written) are well formed, above contiguous + 1,
   * and neither overlap nor touch their neighbours: a broken list would make `has` and `gaps`
   * disagree and anti-entropy ship (or skip) the wrong records. Checks only the neighbourhood
   * of the change, so an add costs what it did.
   */
  #assertAround(i: number): void {
    const r = this.above[i]!;
    const before = this.above[i - 1];
    const after = this.above[i + 1];
    if (
      !(r[0] <= r[1] && r[0] > this.contiguous + 1 &&
        (before === undefined || before[1] + 1 < r[0]) &&
        (after === undefined || r[1] + 1 < after[0]))
    ) {
      fail(
        `tracker: range [${r[0]}, ${r[1]}] at ${i} breaks order (contiguous ${this.contiguous})`,
      );
    }
  }
}

export class SeqTracker {
  readonly #origins = new Map<string, OriginRanges>();

  #of(origin: string): OriginRanges {
    let o = this.#origins.get(origin);
    if (o === undefined) {
      o = new OriginRanges();
      this.#origins.set(origin, o);
    }
    return o;
  }

  /** Marks `seq` of `origin` held; returns whether it was new. */
  add(origin: string, seq: number): boolean {
    return this.#of(origin).add(seq, seq);
  }

  addRange(origin: string, from: number, to: number): boolean {
    return this.#of(origin).add(from, to);
  }

  has(origin: string, seq: number): boolean {
    return this.#origins.get(origin)?.has(seq) ?? false;
  }

  contiguous(origin: string): number {
    return this.#origins.get(origin)?.contiguous ?? 0;
  }

  /** Highest seq held from `origin` (0: none). */
  max(origin: string): number {
    return this.#origins.get(origin)?.max ?? 0;
  }

  origins(): string[] {
    return [...this.#origins.keys()];
  }

  /** The summary anti-entropy sends, with at most `aboveMax` ranges per origin. */
  summary(aboveMax = 32): HeldRanges[] {
    const out: HeldRanges[] = [];
    for (const [origin, o] of this.#origins) {
      out.push({ origin, contiguous: o.contiguous, above: o.above.slice(0, aboveMax) });
    }
    return out;
  }

  /** Merges a summary in (what a snapshot or a checkpoint says is held). */
  merge(held: readonly HeldRanges[]): void {
    for (const h of held) {
      if (h.contiguous > 0) this.addRange(h.origin, 1, h.contiguous);
      for (const [a, b] of h.above) this.addRange(h.origin, a, b);
    }
  }

  /** The seqs of `origin` in [1, upTo] not held, as ranges (at most `rangesMax`). */
  gaps(origin: string, upTo: number, rangesMax = 1024): Array<[number, number]> {
    const o = this.#origins.get(origin);
    const out: Array<[number, number]> = [];
    let next = (o?.contiguous ?? 0) + 1;
    for (const [a, b] of o?.above ?? []) {
      if (next > upTo || out.length >= rangesMax) return out;
      if (a > next) out.push([next, Math.min(a - 1, upTo)]);
      next = b + 1;
    }
    if (next <= upTo && out.length < rangesMax) out.push([next, upTo]);
    return out;
  }
}

/**
 * The seqs in [from, to] that `theirs` (a peer's summary of one origin, or none) does not
 * cover, as ascending inclusive ranges.
 */
export function missingRanges(
  theirs: HeldRanges | undefined,
  from: number,
  to: number,
): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let next = Math.max(from, (theirs?.contiguous ?? 0) + 1);
  for (const [a, b] of theirs?.above ?? []) {
    if (next > to) return out;
    if (b < next) continue;
    if (a > to) break;
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  if (next <= to) out.push([next, to]);
  return out;
}

/** Whether `seq` of `origin` is covered by `held` (a peer's summary). */
export function summaryHas(held: readonly HeldRanges[], origin: string, seq: number): boolean {
  for (const h of held) {
    if (h.origin !== origin) continue;
    if (seq <= h.contiguous) return true;
    for (const [a, b] of h.above) if (seq >= a && seq <= b) return true;
    return false;
  }
  return false;
}

/** `ranges` (ascending, disjoint, inclusive) without the seqs in `minus` (ascending). */
export function subtractSeqs(
  ranges: readonly (readonly [number, number])[],
  minus: readonly number[],
): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let k = 0;
  for (const [a, b] of ranges) {
    let from = a;
    while (k < minus.length && minus[k]! < from) k++;
    while (k < minus.length && minus[k]! <= b) {
      if (minus[k]! > from) out.push([from, minus[k]! - 1]);
      from = minus[k]! + 1;
      k++;
    }
    if (from <= b) out.push([from, b]);
  }
  return out;
}
