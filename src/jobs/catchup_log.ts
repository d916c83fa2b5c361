/**
 * The records this node holds, by origin and seq, kept in memory (as their encoded bytes) up
 * to a byte bound, so anti-entropy can ship a peer exactly the records it lacks.
 *
 * Owns the bounded record store only. The oldest records are evicted first; `floor(origin)`
 * says below which seq this log can no longer serve that origin (the peer then gets a
 * snapshot of the table instead). After a restart the log holds what the WAL replayed since
 * the last checkpoint, and the floor is the checkpoint's coverage.
 */

import { assert } from "../lib/assert.ts";

interface Evictable {
  readonly origin: string;
  readonly seq: number;
  readonly sizeBytes: number;
}

export class CatchupLog {
  readonly #bytesMax: number;
  readonly #byOrigin = new Map<string, Map<number, Uint8Array>>();
  readonly #floor = new Map<string, number>();
  /** Highest seq ever kept per origin (kept past eviction: the floor covers what went). */
  readonly #max = new Map<string, number>();
  /** Insertion order, for eviction; a consumed prefix is dropped in chunks. */
  #fifo: Evictable[] = [];
  #fifoHead = 0;
  #bytes = 0;
  evicted = 0;

  constructor(bytesMax: number) {
    assert(bytesMax > 0, "catch-up log needs a positive byte bound");
    this.#bytesMax = bytesMax;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get records(): number {
    let n = 0;
    for (const m of this.#byOrigin.values()) n += m.size;
    return n;
  }

  /** Keeps `bytes` as (origin, seq); a repeat is ignored. */
  add(origin: string, seq: number, bytes: Uint8Array): void {
    let m = this.#byOrigin.get(origin);
    if (m === undefined) {
      m = new Map();
      this.#byOrigin.set(origin, m);
    }
    if (m.has(seq) || seq <= (this.#floor.get(origin) ?? 0)) return;
    m.set(seq, bytes);
    if (seq > (this.#max.get(origin) ?? 0)) this.#max.set(origin, seq);
    this.#fifo.push({ origin, seq, sizeBytes: bytes.length });
    this.#bytes += bytes.length;
    while (this.#bytes > this.#bytesMax && this.#fifoHead < this.#fifo.length) this.#evictOne();
    if (this.#fifoHead > 4096 && this.#fifoHead * 2 > this.#fifo.length) {
      this.#fifo = this.#fifo.slice(this.#fifoHead);
      this.#fifoHead = 0;
    }
  }

  get(origin: string, seq: number): Uint8Array | undefined {
    return this.#byOrigin.get(origin)?.get(seq);
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
        const bytes = m.get(seq);
        if (bytes !== undefined) out.push(bytes);
      }
      return;
    }
    for (const [seq, bytes] of m) if (seq >= from && seq <= to) out.push(bytes);
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
        const bytes = m.get(seq);
        if (bytes !== undefined) out.push([seq, bytes]);
      }
      return out;
    }
    for (const [seq, bytes] of m) if (seq >= from && seq <= to) out.push([seq, bytes]);
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
    const item = this.#fifo[this.#fifoHead++]!;
    const m = this.#byOrigin.get(item.origin);
    if (m?.delete(item.seq)) {
      this.#bytes -= item.sizeBytes;
      this.evicted++;
      this.raiseFloor(item.origin, item.seq);
    }
  }
}
