/**
 * The membership packet codec: exact round trips, fast-check properties over arbitrary
 * messages, and hostile bytes (random, truncated, corrupted) that must give an error value and
 * never a throw.
 */

import { assert, assertEquals, assertThrows } from "../assert.ts";
import fc from "fast-check";
import {
  decodePacket,
  encodePacket,
  messageBytes,
  PACKET_HEADER_BYTES,
} from "../../src/membership/codec.ts";
import {
  ADDRESS_BYTES_MAX,
  type MemberRecord,
  NODE_ID_BYTES_MAX,
  type SwimMessage,
} from "../../src/membership/messages.ts";

const u32 = fc.integer({ min: 0, max: 0xffffffff });
// Strings whose UTF-8 length stays within the codec's limits. A grapheme can be several code
// points, so the limit is checked on the encoded bytes, not on the length in graphemes.
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;
const nodeId = fc.string({ unit: "grapheme", maxLength: 16 }).filter((s) =>
  utf8Bytes(s) <= NODE_ID_BYTES_MAX
);
const address = fc.string({ maxLength: 63 }).filter((s) => utf8Bytes(s) <= ADDRESS_BYTES_MAX);
const state = fc.constantFrom("alive", "suspect", "dead", "left") as fc.Arbitrary<
  MemberRecord["state"]
>;

const message: fc.Arbitrary<SwimMessage> = fc.oneof(
  fc.record({
    type: fc.constant("ping" as const),
    seq: u32,
    targetId: nodeId,
    targetIncarnation: u32,
    targetSuspect: fc.boolean(),
  }),
  fc.record({
    type: fc.constant("ping-req" as const),
    seq: u32,
    targetId: nodeId,
    targetAddress: address,
    targetIncarnation: u32,
    targetSuspect: fc.boolean(),
    wantNack: fc.boolean(),
  }),
  fc.record({ type: fc.constant("ack" as const), seq: u32 }),
  fc.record({ type: fc.constant("nack" as const), seq: u32 }),
  fc.record({ type: fc.constant("alive" as const), nodeId, address, incarnation: u32 }),
  fc.record({ type: fc.constant("suspect" as const), nodeId, incarnation: u32, fromId: nodeId }),
  fc.record({ type: fc.constant("dead" as const), nodeId, incarnation: u32, fromId: nodeId }),
  fc.record({
    type: fc.constant("sync" as const),
    isResponse: fc.boolean(),
    isJoin: fc.boolean(),
    members: fc.array(fc.record({ nodeId, address, incarnation: u32, state }), {
      maxLength: 8,
    }),
  }),
);

/** fast-check builds records with a null prototype; compare as plain objects. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}

Deno.test("encodePacket round-trips one message of every type exactly", () => {
  const messages: SwimMessage[] = [
    { type: "ping", seq: 7, targetId: "n2", targetIncarnation: 3, targetSuspect: true },
    {
      type: "ping-req",
      seq: 0xffffffff,
      targetId: "n3",
      targetAddress: "10.0.0.3:7946",
      targetIncarnation: 0,
      targetSuspect: false,
      wantNack: true,
    },
    { type: "ack", seq: 1 },
    { type: "nack", seq: 2 },
    { type: "alive", nodeId: "n1", address: "127.0.0.1:7001", incarnation: 1796062823 },
    // A leading U+FEFF is part of the id (a default TextDecoder drops it).
    { type: "alive", nodeId: "\ufeffn1", address: "127.0.0.1:7001", incarnation: 2 },
    { type: "suspect", nodeId: "n1", incarnation: 5, fromId: "n2" },
    { type: "dead", nodeId: "n1", incarnation: 5, fromId: "n1" },
    {
      type: "sync",
      isResponse: true,
      isJoin: false,
      members: [{ nodeId: "nø", address: "[::1]:7000", incarnation: 9, state: "left" }],
    },
  ];
  for (const m of messages) {
    const bytes = encodePacket([m]);
    assertEquals(bytes.length, PACKET_HEADER_BYTES + messageBytes(m));
    assertEquals(decodePacket(bytes), { ok: true, value: [m] });
  }
  assertEquals(decodePacket(encodePacket(messages)), { ok: true, value: messages });
});

Deno.test("encodePacket round-trips arbitrary packets (property)", () => {
  fc.assert(
    fc.property(fc.array(message, { minLength: 1, maxLength: 12 }), (messages) => {
      const bytes = encodePacket(messages);
      let expected = PACKET_HEADER_BYTES;
      for (const m of messages) expected += messageBytes(m);
      assertEquals(bytes.length, expected);
      assertEquals(decodePacket(bytes), { ok: true, value: plain(messages) });
    }),
    { numRuns: 500 },
  );
});

Deno.test("decodePacket returns an error for every truncation of a valid packet (property)", () => {
  fc.assert(
    fc.property(fc.array(message, { minLength: 1, maxLength: 4 }), (messages) => {
      const bytes = encodePacket(messages);
      for (let cut = 0; cut < bytes.length; cut++) {
        const result = decodePacket(bytes.subarray(0, cut));
        assert(!result.ok, `a ${cut}-byte prefix of ${bytes.length} bytes decoded`);
      }
    }),
    { numRuns: 200 },
  );
});

Deno.test("decodePacket never throws on random or corrupted bytes (property)", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      decodePacket(bytes);
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(
      fc.array(message, { minLength: 1, maxLength: 4 }),
      fc.nat(),
      fc.integer({ min: 0, max: 255 }),
      (messages, at, value) => {
        const bytes = encodePacket(messages);
        bytes[at % bytes.length] = value;
        const result = decodePacket(bytes);
        // A flipped byte may still decode (e.g. inside a seq); if so it must re-encode to itself.
        if (result.ok) assertEquals(encodePacket(result.value), bytes);
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("decodePacket rejects bad magic, version, count, flags and trailing bytes", () => {
  const good = encodePacket([{ type: "ack", seq: 5 }]);
  const cases: Array<[string, (b: Uint8Array) => void, string]> = [
    ["magic", (b) => (b[0] = 0), "bad magic"],
    ["version", (b) => (b[1] = 9), "unsupported version 9"],
    ["count", (b) => (b[2] = 0), "empty packet"],
    ["type", (b) => (b[3] = 99), "unknown message type 99"],
  ];
  for (const [what, corrupt, reason] of cases) {
    const b = good.slice();
    corrupt(b);
    assertEquals(decodePacket(b), { ok: false, reason }, what);
  }
  const trailing = new Uint8Array(good.length + 1);
  trailing.set(good);
  assertEquals(decodePacket(trailing), { ok: false, reason: "trailing bytes" });
  const ping = encodePacket([{
    type: "ping",
    seq: 1,
    targetId: "n1",
    targetIncarnation: 1,
    targetSuspect: false,
  }]);
  ping[8] = 2;
  assertEquals(decodePacket(ping), { ok: false, reason: "bad ping flags" });
  const utf8 = encodePacket([{
    type: "ping",
    seq: 1,
    targetId: "ab",
    targetIncarnation: 1,
    targetSuspect: false,
  }]);
  utf8[utf8.length - 1] = 0xff;
  assertEquals(decodePacket(utf8), { ok: false, reason: "targetId is not UTF-8" });
});

Deno.test("encodePacket refuses over-long ids and out-of-range numbers", () => {
  assertThrows(() =>
    encodePacket([{ type: "alive", nodeId: "x".repeat(65), address: "a:1", incarnation: 1 }])
  );
  assertThrows(() => encodePacket([{ type: "ack", seq: -1 }]));
  assertThrows(() => encodePacket([{ type: "ack", seq: 2 ** 32 }]));
  assertThrows(() => encodePacket([]));
});
