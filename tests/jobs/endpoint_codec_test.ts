import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  decodeEndpointState,
  encodeEndpointState,
  writeEndpointState,
} from "../../src/jobs/endpoint_codec.ts";
import { decodeRecord, encodeRecord, writeStamp } from "../../src/jobs/job_codec.ts";
import { ByteWriter } from "../../src/lib/bytes.ts";
import { endpointRecordArb, endpointStateArb } from "./arbitraries.ts";
import type { EndpointState } from "../../src/jobs/endpoint_model.ts";

Deno.test("endpoint values round-trip through the codec", () => {
  fc.assert(
    fc.property(endpointStateArb(fc.string({ minLength: 1, maxLength: 64 })), (state) => {
      const decoded = decodeEndpointState(encodeEndpointState(state));
      assert(decoded.ok, decoded.ok ? "" : decoded.reason);
      assertEquals(decoded.value, state);
    }),
    { numRuns: 300 },
  );
});

Deno.test("endpoint records round-trip inside the job codec", () => {
  fc.assert(
    fc.property(endpointRecordArb, (record) => {
      const decoded = decodeRecord(encodeRecord(record));
      assert(decoded.ok, decoded.ok ? "" : decoded.reason);
      assertEquals(decoded.value, record);
    }),
    { numRuns: 300 },
  );
});

Deno.test("the endpoint decoders return an error, never throw, on hostile bytes", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      const state = decodeEndpointState(bytes);
      const record = decodeRecord(Uint8Array.of(8, ...bytes));
      const local = decodeRecord(Uint8Array.of(24, ...bytes));
      // Random bytes almost never make a value; either way the answer is a Result.
      for (const r of [state, record, local]) assert(typeof r.ok === "boolean");
    }),
    { numRuns: 1000 },
  );
});

Deno.test("a valid endpoint record cut short or with a byte changed decodes or errs, never throws", () => {
  fc.assert(
    fc.property(
      endpointRecordArb,
      fc.nat(),
      fc.nat(255),
      fc.boolean(),
      (record, at, value, truncate) => {
        const bytes = encodeRecord(record);
        const i = at % bytes.length;
        const hostile = truncate ? bytes.slice(0, i) : bytes.slice();
        if (!truncate) hostile[i] = value;
        const decoded = decodeRecord(hostile);
        if (truncate) assert(!decoded.ok, "a truncated record must not decode");
        else assert(typeof decoded.ok === "boolean");
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("an endpoint record whose version is not its stamp is refused", () => {
  fc.assert(
    fc.property(endpointStateArb(), (state) => {
      const w = new ByteWriter();
      w.u8(8);
      writeStamp(w, { origin: state.version.origin, seq: state.version.seq + 1 });
      writeEndpointState(w, state);
      const decoded = decodeRecord(w.finish());
      assert(!decoded.ok);
      assert(decoded.reason.includes("stamp"), decoded.reason);
    }),
    { numRuns: 50 },
  );
});

Deno.test("the endpoint decoder refuses a format version it does not know", () => {
  fc.assert(
    fc.property(endpointStateArb(), fc.integer({ min: 3, max: 255 }), (state, version) => {
      const bytes = encodeEndpointState(state);
      bytes[0] = version;
      const decoded = decodeEndpointState(bytes);
      assert(!decoded.ok && decoded.reason.includes("format version"));
    }),
    { numRuns: 50 },
  );
});

Deno.test("the endpoint decoder refuses a reason without the disabled flag, and the reverse", () => {
  fc.assert(
    fc.property(endpointStateArb(), (state) => {
      const bytes = encodeEndpointState(state);
      // The reason byte sits before the two f64 times, the origin and the u53 seq (and the
      // version-2 tail).
      const reasonAt = bytes.length - tailBytes(state) - 8 - 8 - 8 - (4 + new TextEncoder().encode(
        state.version.origin,
      ).length) - 1;
      bytes[reasonAt] = state.disabled ? 0 : 2;
      assert(!decodeEndpointState(bytes).ok);
    }),
    { numRuns: 50 },
  );
});

Deno.test("the endpoint decoder refuses NaN and infinite times (the merge's order needs finite ones)", () => {
  fc.assert(
    fc.property(
      endpointStateArb(),
      fc.constantFrom(NaN, Infinity, -Infinity),
      fc.boolean(),
      (state, bad, created) => {
        const bytes = encodeEndpointState(state);
        // The two f64 times sit before the origin (u32 length, bytes) and the u53 seq.
        const originBytes = 4 + new TextEncoder().encode(state.version.origin).length;
        const atMsAt = bytes.length - tailBytes(state) - 8 - originBytes - 8;
        const at = created ? atMsAt - 8 : atMsAt;
        new DataView(bytes.buffer, bytes.byteOffset).setFloat64(at, bad, false);
        const decoded = decodeEndpointState(bytes);
        assert(!decoded.ok, `a ${created ? "createdAtMs" : "version.atMs"} of ${bad} decoded`);
        // Inside a record too (the WAL's and the wire's form).
        const record = encodeRecord({
          type: "endpoint-state",
          state,
        });
        const at2 = record.length - bytes.length + at;
        new DataView(record.buffer, record.byteOffset).setFloat64(at2, bad, false);
        assert(!decodeRecord(record).ok);
      },
    ),
    { numRuns: 60 },
  );
});

/** The bytes version 2 appended: the previous secret, its end and the last success time. */
function tailBytes(state: EndpointState): number {
  return 4 + new TextEncoder().encode(state.previousSecret).length + 8 + 8;
}

Deno.test("the endpoint decoder still reads version 1 (no rotation, no success yet)", () => {
  fc.assert(
    fc.property(endpointStateArb(), (state) => {
      const v2 = encodeEndpointState(state);
      const v1 = v2.slice(0, v2.length - tailBytes(state));
      v1[0] = 1;
      const decoded = decodeEndpointState(v1);
      assert(decoded.ok, decoded.ok ? "" : decoded.reason);
      assertEquals(decoded.value, {
        ...state,
        previousSecret: "",
        previousSecretUntilMs: 0,
        lastSuccessAtMs: 0,
      });
      // A version-2 value cut to version 1's length is refused, not read short.
      assert(!decodeEndpointState(v2.slice(0, v2.length - tailBytes(state))).ok);
    }),
    { numRuns: 100 },
  );
});
