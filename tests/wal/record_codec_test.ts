import { assert, assertEquals } from "../assert.ts";
import fc from "fast-check";
import {
  decodeRecord,
  decodeSegmentHeader,
  encodeRecord,
  encodeSegmentHeader,
  RecordType,
  SEGMENT_VERSION,
} from "../../src/wal/record_codec.ts";

const types = [
  RecordType.Data,
  RecordType.BatchEnd,
  RecordType.SnapshotBegin,
  RecordType.Snapshot,
  RecordType.SnapshotEnd,
] as const;

const SALT = 0x5eed;

Deno.test("decodeRecord round-trips every encoded frame", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...types),
      fc.uint8Array({ maxLength: 2000 }),
      fc.nat(0xffff_ffff),
      (type, payload, salt) => {
        const frame = encodeRecord(type, payload, salt);
        const decoded = decodeRecord(frame, 0, 1 << 20, salt);
        assert(decoded.ok);
        assertEquals(decoded.type, type);
        assertEquals([...decoded.payload], [...payload]);
        assertEquals(decoded.next, frame.length);
      },
    ),
  );
});

Deno.test("decodeRecord refuses a frame written under another salt", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 300 }),
      fc.nat(0xffff_ffff),
      fc.nat(0xffff_ffff),
      (payload, salt, other) => {
        fc.pre(salt !== other);
        const decoded = decodeRecord(
          encodeRecord(RecordType.Data, payload, salt),
          0,
          1 << 20,
          other,
        );
        assert(!decoded.ok);
        assertEquals(decoded.kind, "corrupt");
      },
    ),
  );
});

Deno.test("decodeRecord returns an error, never throws, on arbitrary bytes", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 600 }),
      fc.integer({ min: -2, max: 700 }),
      (bytes, at) => {
        const decoded = decodeRecord(bytes, at, 1 << 20, SALT);
        if (!decoded.ok) assert(decoded.kind === "short" || decoded.kind === "corrupt");
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("decodeRecord detects any single flipped bit", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 300 }),
      fc.nat(),
      fc.nat(7),
      (payload, pos, bit) => {
        const frame = encodeRecord(RecordType.Data, payload, SALT);
        const i = pos % frame.length;
        frame[i]! ^= 1 << bit;
        assert(!decodeRecord(frame, 0, 1 << 20, SALT).ok);
      },
    ),
  );
});

Deno.test("decodeRecord treats a truncated frame as short", () => {
  const frame = encodeRecord(RecordType.Data, new Uint8Array(50).fill(7), SALT);
  for (let cut = 0; cut < frame.length; cut++) {
    const decoded = decodeRecord(frame.subarray(0, cut), 0, 1 << 20, SALT);
    assert(!decoded.ok);
    if (cut >= 9) assertEquals(decoded.kind, "short");
  }
});

Deno.test("decodeRecord refuses a payload length over the limit", () => {
  const frame = encodeRecord(RecordType.Data, new Uint8Array(100), SALT);
  const decoded = decodeRecord(frame, 0, 99, SALT);
  assert(!decoded.ok);
  assertEquals(decoded.kind, "corrupt");
});

Deno.test("decodeSegmentHeader round-trips and rejects hostile bytes", () => {
  fc.assert(
    fc.property(
      fc.nat(0xffff),
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      fc.nat(0xffff_ffff),
      (flags, segmentIndex, firstLsn, salt) => {
        const header = { version: SEGMENT_VERSION, flags, segmentIndex, firstLsn, salt };
        const decoded = decodeSegmentHeader(encodeSegmentHeader(header));
        assert(decoded.ok);
        assertEquals(decoded.header, header);
      },
    ),
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      decodeSegmentHeader(bytes);
    }),
    { numRuns: 2000 },
  );
});
