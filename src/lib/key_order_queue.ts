/**
 * Values added under increasing numeric keys (packet numbers, message ids, append tokens) and
 * removed in any order: a `Map` for the long-lived bookkeeping of things in flight, without
 * its garbage.
 *
 * Why not a `Map`: V8 rehashes a Map's table every few inserts once deleted entries fill it,
 * shrinks it when it empties, and allocates the new table in the old generation when the old
 * table lives there, which it does for any long-lived Map. A Map that takes one entry per
 * datagram and drops it at the acknowledgement so made old-generation garbage every few
 * datagrams, a share of what the major GCs collect (bench/results/session27 measures it; the
 * major GCs did not become fewer).
 * Here removal leaves a hole that the head skips, the arrays are compacted in place and never
 * shrink, so once they have grown to the most ever in flight nothing is allocated.
 *
 * Owns the two arrays and the live count; never looks at the values.
 */

import { assert, fail } from "./assert.ts";

/** Holes at the front that make a compaction worth its copy (and at least half the length). */
const COMPACT_HEAD_MIN = 32;

export class KeyOrderQueue<V> {
  readonly #keys: number[] = [];
  /** `undefined` marks a removed entry (a hole), and every slot at or past `#end`. */
  readonly #values: (V | undefined)[] = [];
  /** Index of the first live entry (`#end` when empty). */
  #head = 0;
  /** Entries in use are [#head, #end); the arrays' room past it is kept for later pushes. */
  #end = 0;
  #size = 0;
  /** The last key pushed since `clear` (keys only go up, holes or not). */
  #lastKey = -Infinity;

  get size(): number {
    return this.#size;
  }

  /** Slots the arrays hold, live or not: bounded by the most ever live plus the holes. */
  get slots(): number {
    return this.#keys.length;
  }

  /** Adds `value` under `key`, which must exceed every key added before (since `clear`). */
  push(key: number, value: V): void {
    assert(value !== undefined, "a KeyOrderQueue value must not be undefined");
    if (!(key > this.#lastKey)) fail(`key ${key} is not above the last one (${this.#lastKey})`);
    this.#lastKey = key;
    if (this.#size === 0) {
      this.#head = 0;
      this.#end = 0;
    } else if (this.#head >= COMPACT_HEAD_MIN && this.#head * 2 >= this.#end) this.#compact();
    const i = this.#end++;
    if (i < this.#keys.length) {
      this.#keys[i] = key;
      this.#values[i] = value;
    } else {
      this.#keys.push(key);
      this.#values.push(value);
    }
    this.#size++;
  }

  get(key: number): V | undefined {
    const i = this.#find(key);
    return i < 0 ? undefined : this.#values[i];
  }

  has(key: number): boolean {
    return this.get(key) !== undefined;
  }

  /** Removes `key`'s value; returns whether there was one. */
  delete(key: number): boolean {
    const i = this.#find(key);
    if (i < 0 || this.#values[i] === undefined) return false;
    this.#values[i] = undefined;
    this.#size--;
    while (this.#head < this.#end && this.#values[this.#head] === undefined) this.#head++;
    return true;
  }

  /** The live value with the lowest key. */
  first(): V | undefined {
    return this.#size === 0 ? undefined : this.#values[this.#head];
  }

  /** The live key lowest in order (undefined when empty). */
  firstKey(): number | undefined {
    return this.#size === 0 ? undefined : this.#keys[this.#head];
  }

  /**
   * Live values in key order. Deleting during the iteration is safe (a hole is skipped);
   * pushing is not (a compaction would move what the iteration has not reached).
   */
  *values(): Generator<V> {
    const values = this.#values;
    for (let i = this.#head; i < this.#end; i++) {
      const v = values[i];
      if (v !== undefined) yield v;
    }
  }

  /** Empties the queue; keys may start low again. */
  clear(): void {
    this.#values.fill(undefined, this.#head, this.#end);
    this.#head = 0;
    this.#end = 0;
    this.#size = 0;
    this.#lastKey = -Infinity;
  }

  /** Index of `key` in the arrays, or -1 (binary search over the live span). */
  #find(key: number): number {
    const keys = this.#keys;
    let lo = this.#head;
    let hi = this.#end - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const k = keys[mid]!;
      if (k === key) return mid;
      if (k < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Moves the entries from the head to the front, in place; the slots freed hold nothing. */
  #compact(): void {
    const head = this.#head;
    const n = this.#end - head;
    this.#keys.copyWithin(0, head, this.#end);
    this.#values.copyWithin(0, head, this.#end);
    this.#values.fill(undefined, n, this.#end);
    this.#head = 0;
    this.#end = n;
  }
}
