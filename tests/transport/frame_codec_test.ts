import { deepStrictEqual, equal, ok } from "node:assert/strict";
import fc from "fast-check";
import {
  DatagramWriter,
  decodeDatagram,
  encodeDatagram,
  encodeNodeId,
  FLAG_ACK_MAY_WAIT,
  type Frame,
  HEADER_FIXED_BYTES,
  type PacketRange,
  readOuterHeader,
  writeCounter,
} from "../../src/transport/frame_codec.ts";
import { HmacSha256Authenticator, MAC_TAG_BYTES } from "../../src/transport/auth.ts";

const u53 = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const channel = fc.integer({ min: 0, max: 255 });
const payload = (max: number) => fc.uint8Array({ minLength: 0, maxLength: max });

/** Descending, disjoint, non-adjacent ranges as the ack writer requires. */
const ackRanges: fc.Arbitrary<PacketRange[]> = fc
  .tuple(
    fc.integer({ min: 0, max: 1_000_000 }),
    fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 })), {
      minLength: 1,
      maxLength: 20,
    }),
  )
  .map(([base, steps]) => {
    // Build upwards from `base`, then reverse to get the highest range first.
    const ranges: PacketRange[] = [];
    let lo = base;
    for (const [len, gap] of steps) {
      ranges.push({ lo, hi: lo + len });
      lo = lo + len + gap + 2;
    }
    return ranges.reverse();
  });

const frame: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({
    type: fc.constant("ack" as const),
    ackEpoch: u32,
    ackDelayUs: u32,
    ranges: ackRanges,
  }),
  fc.record({ type: fc.constant("message" as const), channel, msgId: u53, bytes: payload(300) }),
  fc
    .record({
      channel,
      msgId: u53,
      bytes: fc.uint8Array({ minLength: 1, maxLength: 300 }),
      offset: fc.integer({ min: 0, max: 100_000 }),
      extra: fc.integer({ min: 0, max: 100_000 }),
    })
    .map(({ channel, msgId, bytes, offset, extra }): Frame => ({
      type: "fragment",
      channel,
      msgId,
      totalBytes: offset + bytes.length + extra,
      offset,
      bytes,
    })),
  fc.record({ type: fc.constant("unreliable" as const), channel, bytes: payload(300) }),
);

const header = fc.record({
  keyId: fc.uint8Array({ minLength: 16, maxLength: 16 }),
  counter: u53,
  nodeId: fc.string({ unit: "grapheme", minLength: 1, maxLength: 16 }).filter((s) =>
    new TextEncoder().encode(s).length <= 64
  ),
  epoch: fc.integer({ min: 1, max: 0xffffffff }),
  dstEpoch: u32,
  packetNumber: u53,
});

/** Frames as the decoder returns them: payloads compared by value. */
function normalize(frames: readonly Frame[]): unknown[] {
  return frames.map((f) =>
    "bytes" in f
      ? { ...f, bytes: [...f.bytes] }
      : { ...f, ranges: f.ranges.map((r) => ({ lo: r.lo, hi: r.hi })) }
  );
}

Deno.test("decodeDatagram round-trips every header and frame sequence encodeDatagram writes", () => {
  fc.assert(
    fc.property(header, fc.array(frame, { maxLength: 8 }), (h, frames) => {
      const bytes = encodeDatagram(h, frames, MAC_TAG_BYTES);
      const decoded = decodeDatagram(bytes, MAC_TAG_BYTES);
      ok(decoded.ok, decoded.ok ? "" : decoded.reason);
      deepStrictEqual([...decoded.value.keyId], [...h.keyId]);
      equal(decoded.value.counter, h.counter);
      equal(decoded.value.nodeId, h.nodeId);
      equal(decoded.value.epoch, h.epoch);
      equal(decoded.value.dstEpoch, h.dstEpoch);
      equal(decoded.value.packetNumber, h.packetNumber);
      deepStrictEqual(normalize(decoded.value.frames), normalize(frames));
    }),
    { numRuns: 500 },
  );
});

Deno.test("decodeDatagram never throws on arbitrary bytes", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 400 }),
      fc.integer({ min: 0, max: 32 }),
      (bytes, tag) => {
        const result = decodeDatagram(bytes, tag);
        ok(typeof result.ok === "boolean");
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("decodeDatagram never throws on valid datagrams with bytes flipped, cut or appended", () => {
  fc.assert(
    fc.property(
      header,
      fc.array(frame, { minLength: 1, maxLength: 4 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
      fc.nat(),
      payload(20),
      (h, frames, flips, cut, tail) => {
        const bytes = encodeDatagram(h, frames, 0);
        for (const [at, value] of flips) bytes[at % bytes.length] = value;
        const mutated = new Uint8Array([...bytes.subarray(0, cut % (bytes.length + 1)), ...tail]);
        const result = decodeDatagram(mutated, 0);
        if (result.ok) {
          for (const f of result.value.frames) {
            if (f.type === "fragment") ok(f.offset + f.bytes.length <= f.totalBytes);
            if (f.type === "ack") { for (const r of f.ranges) ok(r.lo >= 0 && r.lo <= r.hi); }
          }
        }
      },
    ),
    { numRuns: 1000 },
  );
});

/** A plain header for datagrams with no frames. */
const HEADER = {
  keyId: new Uint8Array(16),
  counter: 3,
  nodeId: "n1",
  epoch: 5,
  dstEpoch: 0,
  packetNumber: 1,
} as const;

Deno.test("decodeDatagram rejects a bad magic, version, flags, counter, packet number, epoch and id length", () => {
  const good = encodeDatagram(
    HEADER,
    [],
    0,
  );
  ok(decodeDatagram(good, 0).ok);
  for (
    const [at, value, reason] of [
      [0, 0, "bad magic"],
      [1, 0, "bad magic"],
      [2, 1, "unsupported version 1"],
      [3, 2, "reserved flags set"],
      [3, 0x81, "reserved flags set"],
      // The top bytes of the u64 counter and packet number: past 2^53 - 1.
      [27, 0xff, "counter out of range"],
      [43, 0xff, "packet number out of range"],
      [28, 0, "epoch 0"],
      [44, 0, "bad node id length"],
    ] as const
  ) {
    const bad = good.slice();
    bad[at] = value;
    const result = decodeDatagram(bad, 0);
    equal(result.ok, false);
    if (!result.ok) equal(result.reason, reason);
  }
  equal(decodeDatagram(good.subarray(0, HEADER_FIXED_BYTES), 0).ok, false);
});

Deno.test("HmacSha256Authenticator verifies its own tags and rejects other keys and changed bytes", () => {
  const a = new HmacSha256Authenticator("cluster-key-one-0123456789");
  const b = new HmacSha256Authenticator("cluster-key-two-0123456789");
  const data = new TextEncoder().encode("some datagram body");
  const tag = a.sign(data);
  equal(tag.length, MAC_TAG_BYTES);
  ok(a.verify(data, tag));
  equal(b.verify(data, tag), false);
  const changed = data.slice();
  changed[0]! ^= 1;
  equal(a.verify(changed, tag), false);
  equal(a.verify(data, tag.subarray(0, 8)), false);
});

Deno.test("HmacSha256Authenticator refuses a cluster key shorter than 16 bytes", () => {
  let error: unknown;
  try {
    new HmacSha256Authenticator("short");
  } catch (e) {
    error = e;
  }
  ok(error instanceof RangeError);
});

Deno.test("writeCounter writes the whole u53 counter, both words, as readOuterHeader reads it", () => {
  const datagram = encodeDatagram(
    { keyId: new Uint8Array(16), counter: 0, nodeId: "n1", epoch: 5, dstEpoch: 0, packetNumber: 1 },
    [],
    0,
  );
  for (const counter of [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 5, Number.MAX_SAFE_INTEGER]) {
    writeCounter(datagram, counter);
    const outer = readOuterHeader(datagram, 0);
    ok(outer.ok);
    if (outer.ok) equal(outer.value.counter, counter);
  }
});

Deno.test("decodeDatagram reads each node id afresh from its bytes, and refuses one that is not UTF-8", () => {
  const datagramOf = (nodeId: string) =>
    encodeDatagram(
      { keyId: new Uint8Array(16), counter: 1, nodeId, epoch: 5, dstEpoch: 0, packetNumber: 1 },
      [],
      0,
    );
  // Ids of one length, alternating: a decoded id is never an earlier datagram's.
  // A leading U+FEFF is part of the id (a default TextDecoder drops it).
  for (
    const nodeId of ["10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.1:7000", "é0.0.0.1:700", "\ufeffn1"]
  ) {
    const decoded = decodeDatagram(datagramOf(nodeId), 0);
    ok(decoded.ok);
    if (decoded.ok) equal(decoded.value.nodeId, nodeId);
  }
  const bad = datagramOf("10.0.0.1:7000");
  bad[HEADER_FIXED_BYTES] = 0xff;
  const result = decodeDatagram(bad, 0);
  equal(result.ok, false);
  if (!result.ok) equal(result.reason, "node id is not UTF-8");
  // UTF-8 has no form for an unpaired surrogate: such an id is refused, not changed.
  const lone = encodeNodeId("n\ud800");
  equal(lone.ok, false);
  if (!lone.ok) equal(lone.reason, "node id has an unpaired UTF-16 surrogate");
});

Deno.test("DatagramWriter.finish without a seal ends in zeros where the tag goes, whatever came before", () => {
  // One writer for every datagram, as a session has: a long datagram first leaves its bytes
  // in the writer's buffer, a short one follows.
  const w = new DatagramWriter(400, 16);
  const nodeId = new TextEncoder().encode("n1");
  w.begin(nodeId, 5, 0, 1);
  w.writeUnreliable(1, new Uint8Array(300).fill(0xee));
  w.finish();
  w.begin(nodeId, 5, 0, 2);
  w.writeUnreliable(1, new Uint8Array(3));
  const short = w.finish();
  deepStrictEqual(short.subarray(short.length - 16), new Uint8Array(16));
  ok(decodeDatagram(short, 16).ok);
});

Deno.test("the ack-may-wait flag survives encoding and decoding, and only it is known", () => {
  for (const ackMayWait of [true, false]) {
    const bytes = encodeDatagram({ ...HEADER, ackMayWait }, [], 0);
    equal(bytes[3], ackMayWait ? FLAG_ACK_MAY_WAIT : 0);
    const decoded = decodeDatagram(bytes, 0);
    ok(decoded.ok);
    if (decoded.ok) equal(decoded.value.ackMayWait, ackMayWait);
  }
});
