/**
 * A small direct-mapped cache of strings decoded from bytes, for fields that repeat across
 * records: a voter's address in every stamp, message and attempt, a job's URL.
 *
 * Why: the job table keeps a delivered job's metadata for `finishedRetentionMs` (1 h), and a
 * record decoded as it arrives brings its own copy of each such string. Held for an hour at
 * 200 jobs/s, the stamp's origin, the attempt's node and the URL were about 110 of the ~1,000
 * bytes a delivered job kept on each node (bench/results/session28/). With the cache, every
 * record from one voter shares one string.
 *
 * Owns the slots only. It never changes what a field decodes to: a hit is bytes equal to those
 * a string was decoded from, compared in full; a miss decodes as `ByteReader.str` would. Memory
 * is bounded by `slots` × `bytesMax`; a field longer than that is decoded afresh every time.
 */

import { fail } from "./assert.ts";
import { sameBytesAt } from "./same_bytes.ts";

export class StringCache {
  readonly #mask: number;
  readonly #keys: (Uint8Array | undefined)[];
  readonly #values: string[];
  /** Longest field cached, bytes. */
  readonly bytesMax: number;
  hits = 0;
  misses = 0;

  /** `slots` must be a power of two. */
  constructor(slots: number, bytesMax: number) {
    if (!(Number.isInteger(slots) && slots > 0 && (slots & (slots - 1)) === 0)) {
      fail(`a string cache's slots must be a power of two, got ${slots}`);
    }
    this.#mask = slots - 1;
    this.#keys = new Array<Uint8Array | undefined>(slots).fill(undefined);
    this.#values = new Array<string>(slots).fill("");
    this.bytesMax = bytesMax;
  }

  /**
   * The string that `source[start, start + n)` decodes to: the cached one when these exact
   * bytes were decoded before into the same slot, else `decode(source, start, n)`, which is
   * then kept (a copy of the bytes with it, so the input buffer is not pinned). Read in place:
   * a hit allocates nothing. `decode` may throw; nothing is kept then.
   */
  get(
    source: Uint8Array,
    start: number,
    n: number,
    decode: (source: Uint8Array, start: number, n: number) => string,
  ): string {
    if (n > this.bytesMax) return decode(source, start, n);
    // FNV-1a over the bytes: fields this short hash in tens of nanoseconds.
    let hash = 0x811c9dc5;
    for (let i = 0; i < n; i++) hash = Math.imul(hash ^ source[start + i]!, 0x01000193);
    const slot = (hash >>> 0) & this.#mask;
    const key = this.#keys[slot];
    if (key !== undefined && key.length === n && sameBytesAt(key, source, start)) {
      this.hits++;
      return this.#values[slot]!;
    }
    const value = decode(source, start, n);
    this.misses++;
    this.#keys[slot] = source.slice(start, start + n);
    this.#values[slot] = value;
    return value;
  }
}
