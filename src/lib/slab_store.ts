/**
 * Byte strings kept outside the JavaScript heap's object graph: each copied into a large slab,
 * named by a slot (a small integer the caller keeps), with the slots' places in typed arrays.
 *
 * Owns the slabs and the slot table only; knows nothing of what the bytes mean. What it is
 * for: a long-lived population of small immutable values (a node's delivered jobs, hundreds of
 * thousands of them for an hour) held as objects costs a full GC time in proportion to their
 * number, while held here it is a few hundred ArrayBuffers whatever their number
 * (bench/results/session43/memory/: 720,000 delivered jobs, a full GC 399 ms as objects,
 * 108 ms as bytes in slabs).
 *
 * Freed bytes leave holes; a slab whose every value was freed is dropped, and `compact` moves
 * the values out of mostly empty slabs (values freed in about the order they were put, as
 * retention frees them, seldom need it). A view `bytes` returns stays valid only until the
 * next `put`, `free` or `compact`: decode it at once.
 */

import { assert } from "./assert.ts";

/** Bytes of a slab: a value larger than this gets a slab of its own size. */
export const SLAB_BYTES = 1 << 20;

/** A slab is compacted when less than this share of it is still in use. */
const SPARSE_SLAB_SHARE = 0.25;

const FREE = -1;

export class SlabStore {
  readonly #slabBytes: number;
  /** Slabs by index; a dropped one leaves `undefined` and its index on `#freeSlabs`. */
  readonly #slabs: (Uint8Array | undefined)[] = [];
  /** Bytes of each slab still in use (what `compact` weighs). */
  readonly #slabLive: number[] = [];
  /**
   * Values in each slab: a slab is dropped when none is left, not when its bytes in use are 0
   * (an empty value uses none, and its view would name a dropped slab).
   */
  readonly #slabValues: number[] = [];
  readonly #freeSlabs: number[] = [];
  /** The slab being filled (its index), and how much of it is. */
  #current = -1;
  #currentUsed = 0;
  // The slot table: one index across these arrays per slot. A free slot has length FREE.
  #slotSlab = new Int32Array(1024);
  #slotOffset = new Int32Array(1024);
  #slotLength = new Int32Array(1024).fill(FREE);
  /** Slots ever handed out (the table's used length). */
  #slotsUsed = 0;
  readonly #freeSlots: number[] = [];
  #liveBytes = 0;
  #allocatedBytes = 0;
  #values = 0;

  constructor(slabBytes = SLAB_BYTES) {
    assert(slabBytes > 0, "a slab holds at least a byte");
    this.#slabBytes = slabBytes;
  }

  /** Values held. */
  get size(): number {
    return this.#values;
  }

  /** Bytes of the values held. */
  get liveBytes(): number {
    return this.#liveBytes;
  }

  /** Bytes of the slabs allocated (the memory this store holds outside the object graph). */
  get allocatedBytes(): number {
    return this.#allocatedBytes;
  }

  /** Keeps a copy of `value`; returns its slot. */
  put(value: Uint8Array): number {
    const slot = this.#freeSlots.length > 0 ? this.#freeSlots.pop()! : this.#newSlot();
    this.#place(slot, value);
    this.#liveBytes += value.length;
    this.#values++;
    return slot;
  }

  /** A view of the value in `slot` (valid until the next put, free or compact). */
  bytes(slot: number): Uint8Array {
    const length = this.#slotLength[slot];
    assert(length !== undefined && length !== FREE, "a slot read is held");
    const offset = this.#slotOffset[slot]!;
    return this.#slabs[this.#slotSlab[slot]!]!.subarray(offset, offset + length);
  }

  /** Lets `slot` go; a slab left empty is dropped. */
  free(slot: number): void {
    const length = this.#slotLength[slot];
    assert(length !== undefined && length !== FREE, "a slot freed is held");
    this.#release(this.#slotSlab[slot]!, length);
    this.#slotLength[slot] = FREE;
    this.#freeSlots.push(slot);
    this.#liveBytes -= length;
    this.#values--;
  }

  /**
   * Moves the values out of slabs less than a quarter used (not the one being filled), when the
   * slabs hold more than twice the live bytes and a slab more. Walks the slot table once: call
   * it from a periodic pass, not per value. Returns the bytes moved.
   */
  compact(): number {
    if (this.#allocatedBytes <= 2 * this.#liveBytes + this.#slabBytes) return 0;
    const sparse = new Set<number>();
    for (let s = 0; s < this.#slabs.length; s++) {
      const slab = this.#slabs[s];
      if (slab === undefined || s === this.#current) continue;
      if (this.#slabLive[s]! < SPARSE_SLAB_SHARE * slab.length) sparse.add(s);
    }
    if (sparse.size === 0) return 0;
    let moved = 0;
    for (let slot = 0; slot < this.#slotsUsed; slot++) {
      const length = this.#slotLength[slot]!;
      const from = this.#slotSlab[slot]!;
      if (length === FREE || !sparse.has(from)) continue;
      const offset = this.#slotOffset[slot]!;
      // Copied before the release: the slab it leaves may be dropped by it.
      const value = this.#slabs[from]!.subarray(offset, offset + length);
      this.#place(slot, value);
      this.#release(from, length);
      // Emptied and dropped: its index may come back as a new slab, whose values stay.
      if (this.#slabs[from] === undefined) sparse.delete(from);
      moved += length;
    }
    return moved;
  }

  /** Copies `value` to the end of the slab being filled (a new one when it does not fit). */
  #place(slot: number, value: Uint8Array): void {
    const length = value.length;
    let slab: number;
    if (length > this.#slabBytes) {
      slab = this.#newSlab(length);
    } else {
      if (this.#current < 0 || this.#currentUsed + length > this.#slabBytes) {
        const full = this.#current;
        this.#current = this.#newSlab(this.#slabBytes);
        this.#currentUsed = 0;
        // The slab just left behind may already be empty (all its values freed while filled).
        if (full >= 0 && this.#slabValues[full] === 0) this.#drop(full);
      }
      slab = this.#current;
    }
    const offset = slab === this.#current ? this.#currentUsed : 0;
    this.#slabs[slab]!.set(value, offset);
    if (slab === this.#current) this.#currentUsed += length;
    this.#slabLive[slab]! += length;
    this.#slabValues[slab]!++;
    this.#slotSlab[slot] = slab;
    this.#slotOffset[slot] = offset;
    this.#slotLength[slot] = length;
  }

  #release(slab: number, length: number): void {
    const live = this.#slabLive[slab]! - length;
    const values = this.#slabValues[slab]! - 1;
    assert(live >= 0 && values >= 0, "a slab's bytes and values in use never go negative");
    this.#slabLive[slab] = live;
    this.#slabValues[slab] = values;
    if (values === 0 && slab !== this.#current) this.#drop(slab);
  }

  #newSlab(bytes: number): number {
    const slab = new Uint8Array(bytes);
    const index = this.#freeSlabs.length > 0 ? this.#freeSlabs.pop()! : this.#slabs.length;
    this.#slabs[index] = slab;
    this.#slabLive[index] = 0;
    this.#slabValues[index] = 0;
    this.#allocatedBytes += slab.length;
    return index;
  }

  #drop(slab: number): void {
    this.#allocatedBytes -= this.#slabs[slab]!.length;
    this.#slabs[slab] = undefined;
    this.#freeSlabs.push(slab);
  }

  #newSlot(): number {
    if (this.#slotsUsed === this.#slotLength.length) {
      const grown = 2 * this.#slotsUsed;
      this.#slotSlab = grow(this.#slotSlab, grown, 0);
      this.#slotOffset = grow(this.#slotOffset, grown, 0);
      this.#slotLength = grow(this.#slotLength, grown, FREE);
    }
    return this.#slotsUsed++;
  }
}

function grow(from: Int32Array, length: number, fill: number): Int32Array<ArrayBuffer> {
  const to = new Int32Array(length).fill(fill, from.length);
  to.set(from);
  return to;
}
