/**
 * A growable big-endian byte writer and a bounds-checked reader, for versioned binary codecs.
 *
 * Owns byte layout primitives only. The reader never reads past its input: a short or
 * malformed field throws `DecodeError`, which a codec catches at its boundary and turns into
 * an error value (decoders never throw on hostile bytes).
 */

import { fail } from "./assert.ts";
import type { StringCache } from "./string_cache.ts";

const encoder = new TextEncoder();
/**
 * Both decoders keep a leading U+FEFF: it is part of the string that was encoded (by default a
 * TextDecoder strips it, and a string beginning with one lost it in a round trip). The lax one
 * is Deno's fast path, 3-10× cheaper than the fatal one at every length
 * (bench/results/session29/micro/decode_ascii.ts); `decodeUtf8` says why it is enough.
 */
const laxDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * ASCII strings up to this many bytes are decoded by `String.fromCharCode` over a reused array
 * of their bytes, read in place: the string is all they allocate. A TextDecoder call needs a
 * view of the bytes (about 100 bytes of garbage each) and costs more up to about this length
 * (bench/results/session30/micro/). Not through a typed array: `apply` copies one into a
 * fresh argument list of 8 bytes a byte.
 */
const ASCII_FAST_BYTES_MAX = 64;

/** `ASCII_CODES[n]`: an array of n character codes, refilled by each short decode. */
const ASCII_CODES: number[][] = Array.from(
  { length: ASCII_FAST_BYTES_MAX + 1 },
  (_, n) => new Array<number>(n).fill(0),
);

/** Largest integer the u64-style fields carry: JavaScript numbers are exact up to 2^53. */
const SAFE_U53_MAX = Number.MAX_SAFE_INTEGER;

/** Thrown by `ByteReader` on truncated or malformed input; codecs turn it into a value. */
export class DecodeError extends Error {
  override name = "DecodeError";
}

export class ByteWriter {
  #bytes: Uint8Array;
  #view: DataView;
  #offset = 0;

  constructor(initialBytes = 256) {
    this.#bytes = new Uint8Array(Math.max(16, initialBytes));
    this.#view = new DataView(this.#bytes.buffer);
  }

  get length(): number {
    return this.#offset;
  }

  #room(n: number): void {
    if (this.#offset + n <= this.#bytes.length) return;
    let size = this.#bytes.length * 2;
    while (size < this.#offset + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#bytes.subarray(0, this.#offset));
    this.#bytes = next;
    this.#view = new DataView(next.buffer);
  }

  u8(v: number): this {
    this.#room(1);
    this.#view.setUint8(this.#offset, v);
    this.#offset += 1;
    return this;
  }

  u16(v: number): this {
    this.#room(2);
    this.#view.setUint16(this.#offset, v, false);
    this.#offset += 2;
    return this;
  }

  u32(v: number): this {
    this.#room(4);
    this.#view.setUint32(this.#offset, v, false);
    this.#offset += 4;
    return this;
  }

  /** An unsigned integer up to 2^53 - 1 (seqs, counters), as 8 bytes. */
  u53(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > SAFE_U53_MAX) {
      throw new RangeError(`u53 field must be an integer in [0, 2^53), got ${v}`);
    }
    this.#room(8);
    this.#view.setUint32(this.#offset, Math.floor(v / 0x1_0000_0000), false);
    this.#view.setUint32(this.#offset + 4, v >>> 0, false);
    this.#offset += 8;
    return this;
  }

  /** A finite float64 (wall-clock times with sub-ms parts, latencies). */
  f64(v: number): this {
    this.#room(8);
    this.#view.setFloat64(this.#offset, v, false);
    this.#offset += 8;
    return this;
  }

  bool(v: boolean): this {
    return this.u8(v ? 1 : 0);
  }

  /** Raw bytes with a u32 length prefix. */
  bytes(v: Uint8Array): this {
    this.u32(v.length);
    this.#room(v.length);
    this.#bytes.set(v, this.#offset);
    this.#offset += v.length;
    return this;
  }

  /** Raw bytes with no prefix (the reader must know the length). */
  raw(v: Uint8Array): this {
    this.#room(v.length);
    this.#bytes.set(v, this.#offset);
    this.#offset += v.length;
    return this;
  }

  /**
   * UTF-8 with a u32 length prefix. With `bytesMax` (the bound the matching `ByteReader.str`
   * decodes with), asserts the string fits: bytes every reader would refuse are a bug where
   * they are made, not a message every peer drops.
   */
  str(v: string, bytesMax?: number): this {
    // Room for one byte per UTF-16 unit first (ASCII, the usual case); only a string that did
    // not fit gets the worst case (3 bytes per unit), so a large payload is not tripled.
    this.#room(4 + v.length);
    let { read, written } = encoder.encodeInto(v, this.#bytes.subarray(this.#offset + 4));
    if (read < v.length) {
      this.#room(4 + v.length * 3);
      ({ read, written } = encoder.encodeInto(v, this.#bytes.subarray(this.#offset + 4)));
    }
    if (!(bytesMax === undefined || written <= bytesMax)) {
      fail(`a string of ${written} UTF-8 bytes exceeds its field's ${bytesMax}`);
    }
    this.#view.setUint32(this.#offset, written, false);
    this.#offset += 4 + written;
    return this;
  }

  /** An optional string: a presence byte, then `str` (with its `bytesMax`). */
  optStr(v: string | undefined, bytesMax?: number): this {
    if (v === undefined) return this.u8(0);
    this.u8(1);
    return this.str(v, bytesMax);
  }

  /**
   * Starts over at offset 0, keeping the buffer: a writer reused for many short-lived encodings
   * (a checkpoint's records, drawn and copied one at a time) allocates nothing per encoding.
   */
  reset(): this {
    this.#offset = 0;
    return this;
  }

  /** Overwrites the u32 at `at` (a length written before what it measures was known). */
  setU32(at: number, v: number): this {
    if (!(Number.isInteger(at) && at >= 0 && at + 4 <= this.#offset)) {
      fail(`setU32 at ${at} outside the ${this.#offset} bytes written`);
    }
    this.#view.setUint32(at, v, false);
    return this;
  }

  /**
   * The bytes written so far as a view of the writer's buffer, never a copy: valid until the
   * next write or `reset`.
   */
  view(): Uint8Array {
    return this.#bytes.subarray(0, this.#offset);
  }

  /**
   * The bytes written so far. A view when the buffer is at most a quarter larger (no copy);
   * otherwise a copy sized exactly, so a kept result never pins much spare memory.
   */
  finish(): Uint8Array {
    if (this.#offset * 5 >= this.#bytes.length * 4) return this.#bytes.subarray(0, this.#offset);
    return this.#bytes.slice(0, this.#offset);
  }
}

export class ByteReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #offset: number;
  /** Where this reader's input starts and ends in `#bytes` (a `lastRead` reader's: a part). */
  readonly #start: number;
  readonly #end: number;

  /**
   * A reader of `bytes`. (`view`, `start` and `end` are `lastRead`'s, for a part of them: a
   * view of all of `bytes`, and bounds within them.)
   */
  constructor(bytes: Uint8Array, view?: DataView, start = 0, end = bytes.length) {
    this.#bytes = bytes;
    if (view === undefined) {
      this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } else {
      if (
        !(view.buffer === bytes.buffer && view.byteOffset === bytes.byteOffset &&
          view.byteLength === bytes.byteLength)
      ) fail("a reader's view is of its bytes");
      this.#view = view;
    }
    if (!(Number.isInteger(start) && 0 <= start && start <= end && end <= bytes.length)) {
      fail(`a reader's part [${start}, ${end}) is within its ${bytes.length} bytes`);
    }
    this.#offset = start;
    this.#start = start;
    this.#end = end;
  }

  /**
   * A reader of the `n` bytes this reader just read (`bytes`, `raw`: a record in a list, read
   * on its own). It shares this reader's input and view, so a part costs no view of its own;
   * its `offset` counts from the start of this reader's input.
   */
  lastRead(n: number): ByteReader {
    if (!(Number.isInteger(n) && n >= 0 && n <= this.#offset - this.#start)) {
      fail(`lastRead(${n}) past the ${this.#offset - this.#start} bytes this reader read`);
    }
    return new ByteReader(this.#bytes, this.#view, this.#offset - n, this.#offset);
  }

  get offset(): number {
    return this.#offset;
  }

  get remaining(): number {
    return this.#end - this.#offset;
  }

  #need(n: number): void {
    if (this.#offset + n > this.#end) throw new DecodeError("truncated");
  }

  u8(): number {
    this.#need(1);
    return this.#view.getUint8(this.#offset++);
  }

  u16(): number {
    this.#need(2);
    const v = this.#view.getUint16(this.#offset, false);
    this.#offset += 2;
    return v;
  }

  u32(): number {
    this.#need(4);
    const v = this.#view.getUint32(this.#offset, false);
    this.#offset += 4;
    return v;
  }

  u53(): number {
    this.#need(8);
    const hi = this.#view.getUint32(this.#offset, false);
    const lo = this.#view.getUint32(this.#offset + 4, false);
    this.#offset += 8;
    if (hi > 0x1f_ffff) throw new DecodeError("u53 field out of range");
    return hi * 0x1_0000_0000 + lo;
  }

  f64(): number {
    this.#need(8);
    const v = this.#view.getFloat64(this.#offset, false);
    this.#offset += 8;
    if (!Number.isFinite(v)) throw new DecodeError("non-finite number");
    return v;
  }

  bool(): boolean {
    const v = this.u8();
    if (v > 1) throw new DecodeError(`bad boolean ${v}`);
    return v === 1;
  }

  /** Length-prefixed bytes, at most `max`; a view into the input (copy it to keep it). */
  bytes(max: number): Uint8Array {
    const n = this.u32();
    if (n > max) throw new DecodeError(`field of ${n} bytes exceeds ${max}`);
    this.#need(n);
    const v = this.#bytes.subarray(this.#offset, this.#offset + n);
    this.#offset += n;
    return v;
  }

  raw(n: number): Uint8Array {
    this.#need(n);
    const v = this.#bytes.subarray(this.#offset, this.#offset + n);
    this.#offset += n;
    return v;
  }

  str(max: number): string {
    const n = this.#strLength(max);
    const start = this.#offset;
    this.#offset += n;
    return decodeUtf8(this.#bytes, start, n);
  }

  /**
   * `str` through a `StringCache`, for fields that repeat (addresses, URLs): the same string,
   * shared instead of decoded afresh.
   */
  strCached(max: number, cache: StringCache): string {
    const n = this.#strLength(max);
    const start = this.#offset;
    this.#offset += n;
    return cache.get(this.#bytes, start, n, decodeUtf8);
  }

  /** A string field's length prefix, checked against `max` and the input left. */
  #strLength(max: number): number {
    const n = this.u32();
    if (n > max) throw new DecodeError(`field of ${n} bytes exceeds ${max}`);
    this.#need(n);
    return n;
  }

  optStr(max: number): string | undefined {
    return this.bool() ? this.str(max) : undefined;
  }

  /** Asserts the input was consumed exactly (trailing bytes are a malformed message). */
  end(): void {
    if (this.#offset !== this.#end) {
      throw new DecodeError(`${this.#end - this.#offset} trailing bytes`);
    }
  }
}

/**
 * `source[start, start + n)`, UTF-8, as a string; `DecodeError` when it is not UTF-8. Short
 * ASCII is decoded in place (`ASCII_FAST_BYTES_MAX`). Otherwise the lax decoder: it turns every
 * malformed sequence into U+FFFD and decodes valid UTF-8 exactly as the fatal one does, so a
 * result without U+FFFD is the answer; only one with it (malformed, or a real U+FFFD) goes
 * through the fatal decoder, which throws or confirms it.
 */
function decodeUtf8(source: Uint8Array, start: number, n: number): string {
  if (n <= ASCII_FAST_BYTES_MAX) {
    const codes = ASCII_CODES[n]!;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      const c = source[start + i]!;
      if (c >= 0x80) {
        ascii = false;
        break;
      }
      codes[i] = c;
    }
    if (ascii) return String.fromCharCode.apply(null, codes);
  }
  const bytes = source.subarray(start, start + n);
  const decoded = laxDecoder.decode(bytes);
  if (decoded.indexOf("\uFFFD") < 0) return decoded;
  try {
    return fatalDecoder.decode(bytes);
  } catch {
    throw new DecodeError("string is not UTF-8");
  }
}
