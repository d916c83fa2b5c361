/**
 * The records this node holds, by origin and seq, kept in memory (as their encoded bytes) up
 * to a byte bound, so anti-entropy can ship a peer exactly the records it lacks.
 *
 * Owns the bounded record store only. The oldest records are evicted first; `floor(origin)`
 * says below which seq this log can no longer serve that origin (the peer then gets a
 * snapshot of the table instead). After a restart the log holds what the WAL replayed since
 * the last checkpoint, and the floor is the checkpoint's coverage.
 *
 * The bytes are copied into slabs (large buffers filled in order, dropped once every record in
 * them was evicted), and the order of eviction is a ring of typed arrays, indexed per origin by
 * a typed hash table (seq_slot_index.ts): no object per record, and nothing per record the GC
 * traces. Kept as objects — a view per record, an entry object per record — every record of
 * the last 64 MiB survived the young generation and had to be marked and moved by the major GCs,
 * which at 200 jobs/s came every few seconds, on all five nodes at the same job count (their heaps
 * grow alike: bench/results/session26/). A record received was also a view into its datagram, so
 * it kept the whole datagram alive: the bound counted the record, not the memory. Kept as arrays
 * of numbers and a `Map` per origin, the index was still 82 bytes a record of JavaScript heap
 * (a third of what a job left alive on a loaded node: bench/results/session32/old_gen/), and its
 * `Map` churned at the bound (bench/results/session32/micro/).
 */

import { assert, fail } from "../lib/assert.ts";
import { SeqSlotIndex } from "./seq_slot_index.ts";

/** Bytes of a slab (a record larger than the bound's slab gets one of its own size). */
export const CATCHUP_SLAB_BYTES_MAX = 1 << 20;
/** Smallest slab: a tiny bound (tests, `catchupLogBytesMax: 1`) still copies into one. */
const CATCHUP_SLAB_BYTES_MIN = 4096;
/** Slots of the ring at first; it doubles when full and never shrinks (the bound keeps it). */
const RING_SLOTS_MIN = 64;

export class CatchupLog {
  readonly #bytesMax: number;
  readonly #slabBytes: number;
  /** Origins by the small number the ring stores, and their indexes (seq → ring slot). */
  readonly #originNumber = new Map<string, number>();
  readonly #originNames: string[] = [];
  readonly #indexes: SeqSlotIndex[] = [];
  readonly #floor = new Map<string, number>();
  /** Highest seq ever kept per origin (kept past eviction: the floor covers what went). */
  readonly #max = new Map<string, number>();
  // The eviction order, oldest first: a ring of `#count` records from slot `#head`, one slot
  // across these arrays per record kept. Its capacity is a power of two (`#mask` + 1).
  #ringOrigin = new Int32Array(RING_SLOTS_MIN);
  #ringSeq = new Float64Array(RING_SLOTS_MIN);
  /** Slab ids count up for ever: doubles, where an `Int32Array` would wrap after 2^31 slabs. */
  #ringSlab = new Float64Array(RING_SLOTS_MIN);
  #ringOffset = new Int32Array(RING_SLOTS_MIN);
  #ringLength = new Int32Array(RING_SLOTS_MIN);
  #mask = RING_SLOTS_MIN - 1;
  #head = 0;
  #count = 0;
  /**
   * The slabs still referred to, oldest first: `#slabs[i]` has id `#slabBase + i`, and the last
   * is the one being filled (`#slabUsed` bytes of it). A slab is dropped once the oldest record
   * kept, or the slab being filled, has a later id.
   */
  readonly #slabs: Uint8Array[] = [];
  #slabBase = 0;
  #slabUsed = 0;
  #bytes = 0;
  evicted = 0;

  constructor(bytesMax: number) {
    assert(bytesMax > 0, "catch-up log needs a positive byte bound");
    this.#bytesMax = bytesMax;
    this.#slabBytes = Math.min(
      CATCHUP_SLAB_BYTES_MAX,
      Math.max(CATCHUP_SLAB_BYTES_MIN, Math.ceil(bytesMax / 16)),
    );
  }

  /** Bytes of the records held (what the bound counts). */
  get bytes(): number {
    return this.#bytes;
  }

  get records(): number {
    return this.#count;
  }

  /**
   * Bytes of the slabs still held: what the records cost the process, which is more than
   * `bytes` by the evicted records and unused tails of the slabs from the oldest record kept
   * to the one being filled.
   */
  get slabBytes(): number {
    let n = 0;
    for (const slab of this.#slabs) n += slab.length;
    return n;
  }

  /** Keeps a copy of `bytes` as (origin, seq); a repeat is ignored. */
  add(origin: string, seq: number, bytes: Uint8Array): void {
    if (seq <= (this.#floor.get(origin) ?? 0)) return;
    const number = this.#numberOf(origin);
    const index = this.#indexes[number]!;
    if (index.find(seq, this.#ringSeq) >= 0) return;
    const offset = this.#place(bytes);
    if (this.#count > this.#mask) this.#grow();
    const slot = (this.#head + this.#count) & this.#mask;
    this.#count++;
    this.#ringOrigin[slot] = number;
    this.#ringSeq[slot] = seq;
    this.#ringSlab[slot] = this.#slabBase + this.#slabs.length - 1;
    this.#ringOffset[slot] = offset;
    this.#ringLength[slot] = bytes.length;
    index.insert(seq, slot, this.#ringSeq);
    if (seq > (this.#max.get(origin) ?? 0)) this.#max.set(origin, seq);
    this.#bytes += bytes.length;
    while (this.#bytes > this.#bytesMax && this.#count > 0) this.#evictOne();
  }

  #numberOf(origin: string): number {
    let number = this.#originNumber.get(origin);
    if (number === undefined) {
      number = this.#originNames.length;
      this.#originNumber.set(origin, number);
      this.#originNames.push(origin);
      this.#indexes.push(new SeqSlotIndex());
    }
    return number;
  }

  /**
   * Copies `bytes` into the slab being filled (a new one when it does not fit) and returns its
   * offset there: the last of `#slabs` is then the slab that holds it.
   */
  #place(bytes: Uint8Array): number {
    let slab = this.#slabs[this.#slabs.length - 1];
    if (slab === undefined || this.#slabUsed + bytes.length > slab.length) {
      slab = new Uint8Array(Math.max(this.#slabBytes, bytes.length));
      this.#slabs.push(slab);
      this.#slabUsed = 0;
    }
    const offset = this.#slabUsed;
    slab.set(bytes, offset);
    this.#slabUsed += bytes.length;
    return offset;
  }

  /** Doubles the ring, moving its records to slots 0… in order, and re-indexes them. */
  #grow(): void {
    const capacity = (this.#mask + 1) * 2;
    const origin = new Int32Array(capacity);
    const seq = new Float64Array(capacity);
    const slab = new Float64Array(capacity);
    const offset = new Int32Array(capacity);
    const length = new Int32Array(capacity);
    for (let i = 0; i < this.#count; i++) {
      const from = (this.#head + i) & this.#mask;
      origin[i] = this.#ringOrigin[from]!;
      seq[i] = this.#ringSeq[from]!;
      slab[i] = this.#ringSlab[from]!;
      offset[i] = this.#ringOffset[from]!;
      length[i] = this.#ringLength[from]!;
    }
    this.#ringOrigin = origin;
    this.#ringSeq = seq;
    this.#ringSlab = slab;
    this.#ringOffset = offset;
    this.#ringLength = length;
    this.#mask = capacity - 1;
    this.#head = 0;
    for (const index of this.#indexes) index.clear();
    for (let slot = 0; slot < this.#count; slot++) {
      this.#indexes[origin[slot]!]!.insert(seq[slot]!, slot, seq);
    }
  }

  /** The record in ring slot `slot`, as a view into its slab. */
  #view(slot: number): Uint8Array {
    const slab = this.#slabs[this.#ringSlab[slot]! - this.#slabBase];
    if (slab === undefined) fail(`catch-up log: slot ${slot} refers to a dropped slab`);
    const offset = this.#ringOffset[slot]!;
    return slab.subarray(offset, offset + this.#ringLength[slot]!);
  }

  /** The record (a view: it stays valid, and keeps its slab alive while it is referenced). */
  get(origin: string, seq: number): Uint8Array | undefined {
    const number = this.#originNumber.get(origin);
    if (number === undefined) return undefined;
    const slot = this.#indexes[number]!.find(seq, this.#ringSeq);
    return slot < 0 ? undefined : this.#view(slot);
  }

  /**
   * The records of `origin` with a seq in [from, to], ascending by seq. Costs the smaller of
   * the span and the records held, plus the sort: a span may be a restart's voided seqs.
   */
  collectSorted(origin: string, from: number, to: number): Array<[number, Uint8Array]> {
    const out: Array<[number, Uint8Array]> = [];
    const number = this.#originNumber.get(origin);
    if (number === undefined || to < from) return out;
    const index = this.#indexes[number]!;
    const seqs = this.#ringSeq;
    if (to - from < index.size) {
      for (let seq = from; seq <= to; seq++) {
        const slot = index.find(seq, seqs);
        if (slot >= 0) out.push([seq, this.#view(slot)]);
      }
      return out;
    }
    index.forEach((slot) => {
      const seq = seqs[slot]!;
      if (seq >= from && seq <= to) out.push([seq, this.#view(slot)]);
    });
    return out.sort((x, y) => x[0] - y[0]);
  }

  /** Highest seq of `origin` this log has kept (0: none), durable here or still on its way. */
  max(origin: string): number {
    return this.#max.get(origin) ?? 0;
  }

  /** The origins this log has kept records of. */
  origins(): string[] {
    return [...this.#max.keys()];
  }

  /** Seqs of `origin` at or below this may have been dropped here: this log cannot serve them. */
  floor(origin: string): number {
    return this.#floor.get(origin) ?? 0;
  }

  /** Raises the floor of `origin` (a checkpoint covered everything up to `seq`). */
  raiseFloor(origin: string, seq: number): void {
    if (seq > (this.#floor.get(origin) ?? 0)) this.#floor.set(origin, seq);
  }

  #evictOne(): void {
    const slot = this.#head;
    const number = this.#ringOrigin[slot]!;
    const seq = this.#ringSeq[slot]!;
    const removed = this.#indexes[number]!.remove(seq, this.#ringSeq);
    assert(removed, "catch-up log: the oldest record was not indexed");
    this.#head = (slot + 1) & this.#mask;
    this.#count--;
    this.#bytes -= this.#ringLength[slot]!;
    this.evicted++;
    this.raiseFloor(this.#originNames[number]!, seq);
    // A slab goes once neither the oldest record kept nor the slab being filled is in it.
    const oldestKept = this.#count > 0
      ? this.#ringSlab[this.#head]!
      : this.#slabBase + this.#slabs.length - 1;
    while (this.#slabBase < oldestKept) {
      this.#slabs.shift();
      this.#slabBase++;
    }
  }
}
