/**
 * One origin's index in the catch-up log: seq → the slot of the log's ring that holds the record,
 * an open-addressing hash table (linear probing, backward-shift deletion) in one `Int32Array`.
 *
 * Owns the table only. It stores slots, not seqs: a key is read back from the ring's seq array,
 * which the caller passes on every call (the ring replaces that array when it grows, and then
 * re-indexes). Kept in a typed array because the `Map<number, number>` per origin it replaces
 * was more than half of the index's JavaScript heap (0.28 of 0.50 KB a job on a loaded node,
 * bench/results/session32/README.md, old_gen), traced by every mark-compact, and churned once
 * the log was at its bound (bench/results/session32/micro/):
 * the GC does not trace a typed array's contents, and this table allocates only when it
 * grows or shrinks.
 */

import { assert } from "../lib/assert.ts";

/** Smallest table; a power of two, as every capacity is (the hash keeps its top bits). */
const SEQ_INDEX_CAPACITY_MIN = 8;

export class SeqSlotIndex {
  /** slot + 1 of each entry; 0 is an empty cell. At most half full, so a probe ends. */
  #cells = new Int32Array(SEQ_INDEX_CAPACITY_MIN);
  /** 32 − log2(capacity): the home cell is the product's top bits. */
  #shift = 32 - Math.log2(SEQ_INDEX_CAPACITY_MIN);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Cells of the table (what it costs in memory: four bytes each). */
  get capacity(): number {
    return this.#cells.length;
  }

  /**
   * Fibonacci hashing: consecutive seqs, the common case, spread evenly over the table, and
   * seqs that share their low bits (a stride of a power of two) do not all share a home cell
   * as they would under `seq & mask`. `Math.imul` takes the seq mod 2^32.
   */
  #home(seq: number): number {
    return Math.imul(seq, 0x9e3779b1) >>> this.#shift;
  }

  /** The slot holding `seq`, or −1. `seqs[slot]` is the seq of the record in `slot`. */
  find(seq: number, seqs: Float64Array): number {
    const cells = this.#cells;
    const mask = cells.length - 1;
    for (let i = this.#home(seq);; i = (i + 1) & mask) {
      const cell = cells[i]!;
      if (cell === 0) return -1;
      if (seqs[cell - 1] === seq) return cell - 1;
    }
  }

  /** Indexes `slot` as holding `seq`, which the table must not hold yet. */
  insert(seq: number, slot: number, seqs: Float64Array): void {
    assert(slot >= 0 && slot < 0x7fffffff, "seq index: slot out of range");
    if ((this.#size + 1) * 2 > this.#cells.length) this.#rehash(this.#cells.length * 2, seqs);
    this.#place(seq, slot + 1);
    this.#size++;
  }

  /** Removes `seq`: returns whether the table held it. */
  remove(seq: number, seqs: Float64Array): boolean {
    const cells = this.#cells;
    const mask = cells.length - 1;
    let hole = this.#home(seq);
    for (;; hole = (hole + 1) & mask) {
      const cell = cells[hole]!;
      if (cell === 0) return false;
      if (seqs[cell - 1] === seq) break;
    }
    // Backward shift: an entry further along the run moves into the hole unless its home lies
    // cyclically after the hole (then a probe from its home would no longer reach it).
    for (let j = (hole + 1) & mask;; j = (j + 1) & mask) {
      const cell = cells[j]!;
      if (cell === 0) break;
      const home = this.#home(seqs[cell - 1]!);
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        cells[hole] = cell;
        hole = j;
      }
    }
    cells[hole] = 0;
    this.#size--;
    // Shrinks at an eighth full (and grows at a half), so an origin that fell silent does not
    // keep the table of its busiest minute, and no add or remove can make it resize twice.
    if (this.#size * 8 < cells.length && cells.length > SEQ_INDEX_CAPACITY_MIN) {
      this.#rehash(cells.length / 2, seqs);
    }
    return true;
  }

  /** Calls `visit` with every slot indexed, in no set order. */
  forEach(visit: (slot: number) => void): void {
    for (const cell of this.#cells) if (cell !== 0) visit(cell - 1);
  }

  /** Forgets every entry, keeping the capacity (the ring re-indexes after it moved its slots). */
  clear(): void {
    this.#cells.fill(0);
    this.#size = 0;
  }

  #place(seq: number, cell: number): void {
    const cells = this.#cells;
    const mask = cells.length - 1;
    let i = this.#home(seq);
    while (cells[i] !== 0) i = (i + 1) & mask;
    cells[i] = cell;
  }

  #rehash(capacity: number, seqs: Float64Array): void {
    const old = this.#cells;
    this.#cells = new Int32Array(capacity);
    this.#shift = 32 - Math.log2(capacity);
    for (const cell of old) if (cell !== 0) this.#place(seqs[cell - 1]!, cell);
  }
}
