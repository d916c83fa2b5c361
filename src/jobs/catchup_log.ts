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
 * them was evicted), and the order of eviction is kept in arrays of numbers: no object per
 * record. Kept as objects — a view per record, an entry object per record — every record of
 * the last 64 MiB survived the young generation and had to be marked and moved by the major GCs,
 * which at 200 jobs/s came every few seconds, on all five nodes at the same job count (their heaps
 * grow alike: bench/results/session26/). A record received was also a view into its datagram, so
 * it kept the whole datagram alive: the bound counted the record, not the memory.
 *
 * Why the index is still a `Map` and arrays of numbers (82 bytes of JavaScript heap a record):
 * a ring of typed arrays with an open-addressing index in an `Int32Array` held none of it on
 * the heap and added in half the time, but the nodes then ran more mark-compacts, not fewer
 * (297 against 205 over ten paired runs at 200/s), and no latency figure improved. A smaller
 * live heap gives V8 lower limits, and V8 mostly started marking with some 35 MB still left
 * below them (bench/results/session33/, commits f56e009 and fc4f172).
 */

import { assert } from "../lib/assert.ts";

/** Bytes of a slab (a record larger than the bound's slab gets one of its own size). */
export const CATCHUP_SLAB_BYTES_MAX = 1 << 20;
/** Smallest slab: a tiny bound (tests, `catchupLogBytesMax: 1`) still copies into one. */
const CATCHUP_SLAB_BYTES_MIN = 4096;
/** Evicted entries at the head of the eviction order before the arrays are compacted. */
const FIFO_COMPACT_MIN = 4096;

const NO_SLAB = new Uint8Array(0);

export class CatchupLog {
  readonly #bytesMax: number;
  readonly #slabBytes: number;
  /** Per origin: seq → the record's position in the eviction order (see `#fifoBase`). */
  readonly #byOrigin = new Map<string, Map<number, number>>();
  readonly #floor = new Map<string, number>();
  /** Highest seq ever kept per origin (kept past eviction: the floor covers what went). */
  readonly #max = new Map<string, number>();
  // The eviction order, oldest first: one index across these arrays per record kept. An entry
  // at index i has position `#fifoBase + i`; the entries before `#fifoHead` were evicted.
  #fifoOrigin: string[] = [];
  #fifoSeq: number[] = [];
  #fifoSlab: Uint8Array[] = [];
  #fifoOffset: number[] = [];
  #fifoLength: number[] = [];
  #fifoHead = 0;
  #fifoBase = 0;
  /** The slab being filled, and how much of it is. */
  #slab: Uint8Array = NO_SLAB;
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
    let n = 0;
    for (const m of this.#byOrigin.values()) n += m.size;
    return n;
  }

  /** Keeps a copy of `bytes` as (origin, seq); a repeat is ignored. */
  add(origin: string, seq: number, bytes: Uint8Array): void {
    let m = this.#byOrigin.get(origin);
    if (m === undefined) {
      m = new Map();
      this.#byOrigin.set(origin, m);
    }
    if (m.has(seq) || seq <= (this.#floor.get(origin) ?? 0)) return;
    const offset = this.#place(bytes);
    m.set(seq, this.#fifoBase + this.#fifoSeq.length);
    this.#fifoOrigin.push(origin);
    this.#fifoSeq.push(seq);
    this.#fifoSlab.push(this.#slab);
    this.#fifoOffset.push(offset);
    this.#fifoLength.push(bytes.length);
    if (seq > (this.#max.get(origin) ?? 0)) this.#max.set(origin, seq);
    this.#bytes += bytes.length;
    while (this.#bytes > this.#bytesMax && this.#fifoHead < this.#fifoSeq.length) {
      this.#evictOne();
    }
    if (this.#fifoHead > FIFO_COMPACT_MIN && this.#fifoHead * 2 > this.#fifoSeq.length) {
      const head = this.#fifoHead;
      this.#fifoOrigin = this.#fifoOrigin.slice(head);
      this.#fifoSeq = this.#fifoSeq.slice(head);
      this.#fifoSlab = this.#fifoSlab.slice(head);
      this.#fifoOffset = this.#fifoOffset.slice(head);
      this.#fifoLength = this.#fifoLength.slice(head);
      this.#fifoBase += head;
      this.#fifoHead = 0;
    }
  }

  /**
   * Copies `bytes` into the slab being filled (a new one when it does not fit) and returns its
   * offset there: `#slab` is then the slab that holds it.
   */
  #place(bytes: Uint8Array): number {
    if (this.#slabUsed + bytes.length > this.#slab.length) {
      this.#slab = new Uint8Array(Math.max(this.#slabBytes, bytes.length));
      this.#slabUsed = 0;
    }
    const offset = this.#slabUsed;
    this.#slab.set(bytes, offset);
    this.#slabUsed += bytes.length;
    return offset;
  }

  /** The record at position `position` of the eviction order, as a view into its slab. */
  #view(position: number): Uint8Array {
    const i = position - this.#fifoBase;
    assert(i >= this.#fifoHead && i < this.#fifoSeq.length, "catch-up log: stale position");
    const offset = this.#fifoOffset[i]!;
    return this.#fifoSlab[i]!.subarray(offset, offset + this.#fifoLength[i]!);
  }

  /** The record (a view: it stays valid, and keeps its slab alive while it is referenced). */
  get(origin: string, seq: number): Uint8Array | undefined {
    const position = this.#byOrigin.get(origin)?.get(seq);
    return position === undefined ? undefined : this.#view(position);
  }

  /**
   * Appends to `out` the records of `origin` with a seq in [from, to], in no set order. Costs
   * the smaller of the span and the records held: a span may be a restart's voided seqs.
   */
  collect(origin: string, from: number, to: number, out: Uint8Array[]): void {
    const m = this.#byOrigin.get(origin);
    if (m === undefined || to < from) return;
    if (to - from < m.size) {
      for (let seq = from; seq <= to; seq++) {
        const position = m.get(seq);
        if (position !== undefined) out.push(this.#view(position));
      }
      return;
    }
    for (const [seq, position] of m) {
      if (seq >= from && seq <= to) out.push(this.#view(position));
    }
  }

  /**
   * The records of `origin` with a seq in [from, to], ascending by seq. Costs the smaller of
   * the span and the records held, plus the sort: a span may be a restart's voided seqs.
   */
  collectSorted(origin: string, from: number, to: number): Array<[number, Uint8Array]> {
    const out: Array<[number, Uint8Array]> = [];
    const m = this.#byOrigin.get(origin);
    if (m === undefined || to < from) return out;
    if (to - from < m.size) {
      for (let seq = from; seq <= to; seq++) {
        const position = m.get(seq);
        if (position !== undefined) out.push([seq, this.#view(position)]);
      }
      return out;
    }
    for (const [seq, position] of m) {
      if (seq >= from && seq <= to) out.push([seq, this.#view(position)]);
    }
    return out.sort((a, b) => a[0] - b[0]);
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
    const i = this.#fifoHead++;
    const origin = this.#fifoOrigin[i]!;
    const seq = this.#fifoSeq[i]!;
    // The slab goes once no entry refers to it (and it is not the one being filled).
    this.#fifoSlab[i] = NO_SLAB;
    const m = this.#byOrigin.get(origin);
    if (m?.delete(seq)) {
      this.#bytes -= this.#fifoLength[i]!;
      this.evicted++;
      this.raiseFloor(origin, seq);
    }
  }
}
