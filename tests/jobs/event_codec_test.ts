/**
 * The event records' codec (event_codec.ts inside job_codec.ts): round trips, and a decoder
 * that answers hostile bytes with an error value, never a throw.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { decodeRecord, encodeRecord, writeStamp } from "../../src/jobs/job_codec.ts";
import { writeEventBody } from "../../src/jobs/event_codec.ts";
import { ByteWriter } from "../../src/lib/bytes.ts";
import { eventBodyArb, eventRecordArb, stampArb } from "./arbitraries.ts";

Deno.test("event records round-trip through the job codec", () => {
  fc.assert(
    fc.property(eventRecordArb, (record) => {
      const decoded = decodeRecord(encodeRecord(record));
      assert(decoded.ok, decoded.ok ? "" : decoded.reason);
      assertEquals(decoded.value, record);
    }),
    { numRuns: 300 },
  );
});

Deno.test("the event decoders return an error, never throw, on hostile bytes", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
      // event, event-commit, event-state: random bytes after each record code.
      for (const code of [9, 10, 25]) {
        const decoded = decodeRecord(Uint8Array.of(code, ...bytes));
        assert(typeof decoded.ok === "boolean");
      }
    }),
    { numRuns: 1000 },
  );
});

Deno.test("a valid event record cut short or with a byte changed decodes or errs, never throws", () => {
  fc.assert(
    fc.property(eventRecordArb, fc.nat(), fc.nat(255), fc.boolean(), (record, at, value, cut) => {
      const bytes = encodeRecord(record);
      const i = at % bytes.length;
      const hostile = cut ? bytes.slice(0, i) : bytes.slice();
      if (!cut) hostile[i] = value;
      const decoded = decodeRecord(hostile);
      if (cut) assert(!decoded.ok, "a truncated record must not decode");
      else assert(typeof decoded.ok === "boolean");
    }),
    { numRuns: 1000 },
  );
});

Deno.test("an event whose endpoints do not ascend, or repeat, is refused", () => {
  fc.assert(
    fc.property(stampArb, eventBodyArb, (stamp, body) => {
      fc.pre(body.jobs.length >= 1);
      const jobs = [...body.jobs, body.jobs[0]!];
      const bytes = encodeRecord({ type: "event", stamp, body: { ...body, jobs } });
      const decoded = decodeRecord(bytes);
      assert(!decoded.ok && decoded.reason.includes("ascend"), decoded.ok ? "" : decoded.reason);
    }),
    { numRuns: 100 },
  );
});

Deno.test("an event-commit whose body is another event's is refused", () => {
  fc.assert(
    fc.property(stampArb, eventBodyArb, (stamp, body) => {
      const w = new ByteWriter();
      w.u8(10);
      writeStamp(w, stamp);
      w.str("evt_other").str(body.event.bodyHash).bool(true);
      writeEventBody(w, body);
      const decoded = decodeRecord(w.finish());
      assert(!decoded.ok && decoded.reason.includes("its event"), decoded.ok ? "" : decoded.reason);
    }),
    { numRuns: 50 },
  );
});
