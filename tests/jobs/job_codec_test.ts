import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  decodeRecord,
  decodeWalBatch,
  encodeRecord,
  encodeWalBatch,
  encodeWalSingleInto,
} from "../../src/jobs/job_codec.ts";
import { ByteWriter } from "../../src/lib/bytes.ts";
import { decodeMessage, encodeMessage } from "../../src/jobs/job_messages.ts";
import {
  anyRecordArb,
  endpointStateArb,
  jobRecordArb,
  ORIGINS,
  plainSpec,
  stampArb,
} from "./arbitraries.ts";
import {
  type AttemptEntry,
  type JobRecord,
  newEntry,
  snapshotOf,
} from "../../src/jobs/job_model.ts";

Deno.test("job records round-trip through the codec", () => {
  fc.assert(
    fc.property(anyRecordArb, (record) => {
      const decoded = decodeRecord(encodeRecord(record));
      assert(decoded.ok, decoded.ok ? "" : decoded.reason);
      assertEquals(decoded.value, record);
    }),
    { numRuns: 500 },
  );
});

Deno.test("WAL batches round-trip and keep each record's exact bytes", () => {
  fc.assert(
    fc.property(fc.array(anyRecordArb, { maxLength: 20 }), (records) => {
      const bytes = records.map(encodeRecord);
      const decoded = decodeWalBatch(encodeWalBatch(bytes));
      assert(decoded.ok);
      assertEquals(decoded.value.map((d) => d.record), records);
      assertEquals(decoded.value.map((d) => d.bytes), bytes);
    }),
    { numRuns: 200 },
  );
});

Deno.test("a checkpoint's record written into a reused writer is the one-record WAL batch, byte for byte", () => {
  fc.assert(
    fc.property(fc.array(anyRecordArb, { minLength: 1, maxLength: 20 }), (records) => {
      // One writer for the whole list, as a checkpoint uses it: a long record then a short one
      // must not leave the long one's tail, nor a stale length, in the short one's bytes.
      const writer = new ByteWriter(16);
      for (const record of records) {
        const view = encodeWalSingleInto(writer, record);
        assertEquals([...view], [...encodeWalBatch([encodeRecord(record)])]);
        const decoded = decodeWalBatch(view);
        assert(decoded.ok, decoded.ok ? "" : decoded.reason);
        assertEquals(decoded.value.map((d) => d.record), [record]);
      }
    }),
    { numRuns: 300 },
  );
});

Deno.test("replication, ack and sync messages round-trip", () => {
  fc.assert(
    fc.property(
      fc.array(jobRecordArb(), { maxLength: 10 }),
      fc.array(
        fc.record({
          stamp: stampArb,
          status: fc.constantFrom(
            "ok" as const,
            "conflict" as const,
            "conflict_committed" as const,
            "finished" as const,
          ),
          bodyHash: fc.string({ maxLength: 10 }),
        }, { noNullPrototype: true }),
        { maxLength: 10 },
      ),
      fc.nat(0xffff_ffff),
      (records, acks, requestId) => {
        const from = ORIGINS[1]!;
        const repl = decodeMessage(
          encodeMessage({ kind: "repl", from, records: records.map(encodeRecord) }),
        );
        assert(repl.ok && repl.value.kind === "repl");
        assertEquals(repl.value.records.map((r) => r.record), records);
        const ack = decodeMessage(encodeMessage({ kind: "ack", from, entries: acks }));
        assert(ack.ok && ack.value.kind === "ack");
        assertEquals(ack.value.entries, acks);
        const held = [{
          origin: ORIGINS[0]!,
          contiguous: 3,
          above: [[5, 6]] as Array<[number, number]>,
        }];
        const cursor = { kind: "records" as const, origin: ORIGINS[2]!, seq: requestId + 7 };
        const syncReq = {
          kind: "sync-req" as const,
          from,
          requestId,
          catchup: true,
          page: 3,
          cursor,
          ask: 2 ** 40 + 1,
          held,
        };
        const req = decodeMessage(encodeMessage(syncReq));
        assert(req.ok);
        assertEquals(req.value, syncReq);
        const reply = decodeMessage(encodeMessage({
          kind: "sync-reply",
          from,
          requestId,
          page: 3,
          ask: 2 ** 40,
          part: 1,
          parts: 2,
          snapshot: false,
          more: true,
          cursor: { kind: "snapshot", session: 9 },
          yourSeqMax: 12,
          held,
          records: records.map(encodeRecord),
        }));
        assert(reply.ok && reply.value.kind === "sync-reply");
        assertEquals(
          [reply.value.page, reply.value.ask, reply.value.more, reply.value.cursor],
          [3, 2 ** 40, true, { kind: "snapshot", session: 9 }],
        );
        assertEquals(reply.value.records.map((r) => r.record), records);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("client submit and result messages round-trip", () => {
  const submit = {
    kind: "client-submit" as const,
    requestId: 7,
    submits: [
      { request: { url: "http://a.test/", payload: "{}" } },
      {
        request: {
          url: "http://b.test/",
          payload: "[1]",
          headers: { "x-a": "1" },
          secret: "whsec_abc",
          maxAttempts: 3,
          timeoutMs: 500,
          idempotencyKey: "k",
        },
      },
    ],
  };
  const decoded = decodeMessage(encodeMessage(submit));
  assert(decoded.ok);
  assertEquals(decoded.value, submit);
  const result = {
    kind: "client-result" as const,
    requestId: 7,
    outcomes: [
      { ok: true as const, id: "job_1", existing: false },
      { ok: false as const, code: "no_quorum" as const, message: "no" },
    ],
  };
  const back = decodeMessage(encodeMessage(result));
  assert(back.ok);
  assertEquals(back.value, result);
});

Deno.test("endpoint read messages round-trip, with and without a value", () => {
  fc.assert(
    fc.property(
      endpointStateArb(),
      fc.boolean(),
      fc.integer({ min: 0, max: 0xffff_ffff }),
      (state, held, roundId) => {
        const read = {
          kind: "endpoint-read" as const,
          from: ORIGINS[1]!,
          roundId,
          endpointId: state.id,
        };
        const back = decodeMessage(encodeMessage(read));
        assert(back.ok);
        assertEquals(back.value, read);
        const reply = {
          kind: "endpoint-read-reply" as const,
          from: ORIGINS[2]!,
          roundId,
          state: held ? state : undefined,
        };
        const answer = decodeMessage(encodeMessage(reply));
        assert(answer.ok);
        assertEquals(answer.value, reply);
        // Cut short, it is an error value, never a throw.
        const bytes = encodeMessage(reply);
        assert(!decodeMessage(bytes.subarray(0, bytes.length - 1)).ok);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("pending checks and their answers round-trip; an answer carries only ends", () => {
  const keyArb = anyRecordArb.filter((r) => r.type === "key");
  fc.assert(
    fc.property(
      fc.array(fc.string({ minLength: 1, maxLength: 40 }), { maxLength: 20 }),
      fc.array(keyArb, { maxLength: 3 }),
      fc.integer({ min: 0, max: 3 }),
      (jobIds, keys, gen) => {
        const check = { kind: "pending-check" as const, from: ORIGINS[1]!, jobIds };
        const back = decodeMessage(encodeMessage(check));
        assert(back.ok);
        assertEquals(back.value, check);
        const records: JobRecord[] = [
          ...keys,
          { type: "gone", gone: { jobId: "job_1", gen, expiresAtMs: 1_800_000_000_000 } },
          { type: "state", state: { ...snapshotOf(newEntry("job_2")), phase: "delivered", gen } },
        ];
        const reply = decodeMessage(encodeMessage({
          kind: "pending-check-reply",
          from: ORIGINS[2]!,
          records: records.map(encodeRecord),
        }));
        assert(reply.ok && reply.value.kind === "pending-check-reply");
        assertEquals(reply.value.records.map((r) => r.record), records);
        // Cut short, it is an error value, never a throw.
        const bytes = encodeMessage(check);
        if (jobIds.length > 0) assert(!decodeMessage(bytes.subarray(0, bytes.length - 1)).ok);
      },
    ),
    { numRuns: 200 },
  );
  // A record that is not an end (a DONE, a SUBMIT...) makes the answer undecodable.
  const done = encodeRecord({
    type: "done",
    stamp: { origin: ORIGINS[0]!, seq: 1 },
    jobId: "job_1",
    gen: 0,
    finishedAtMs: 1,
    attempt: {
      attempt: 1,
      startedAtMs: 1,
      latencyMs: 1,
      outcome: "success",
      status: 200,
      detail: "",
      node: ORIGINS[0]!,
    },
  });
  const bad = decodeMessage(
    encodeMessage({ kind: "pending-check-reply", from: ORIGINS[0]!, records: [done] }),
  );
  assert(!bad.ok && bad.reason.includes("not answered with a done"), JSON.stringify(bad));
});

Deno.test("a state carries the REVIVE that claimed its generation; one without keeps the bytes it had before the field", () => {
  const base = { ...snapshotOf(newEntry("job_1")), gen: 2 };
  const stamp = { origin: ORIGINS[1]!, seq: 77 };
  const withRevive: JobRecord = { type: "state", state: { ...base, reviveOf: { gen: 2, stamp } } };
  const without: JobRecord = { type: "state", state: base };
  const back = decodeRecord(encodeRecord(withRevive));
  assert(back.ok);
  assertEquals(back.value, withRevive);
  const bare = encodeRecord(without);
  assertEquals(encodeRecord(withRevive).length, bare.length + encodeStampBytes(stamp));
  const plain = decodeRecord(bare);
  assert(plain.ok && plain.value.type === "state");
  assertEquals(plain.value.state.reviveOf, undefined);
  // A state of generation 0 has no REVIVE to name: bytes that do are refused, not read.
  const zero = encodeRecord({ type: "state", state: { ...base, gen: 0 } });
  const withTrailer = new Uint8Array(zero.length + encodeStampBytes(stamp));
  withTrailer.set(zero);
  withTrailer.set(encodeStampBytesOf(stamp), zero.length);
  assert(!decodeRecord(withTrailer).ok, "a generation-0 state's trailer is an error");
  // In a query's answer too (the state is its last field).
  const reply = decodeMessage(encodeMessage({
    kind: "query-reply",
    from: ORIGINS[0]!,
    requestId: 5,
    state: (withRevive as Extract<JobRecord, { type: "state" }>).state,
  }));
  assert(reply.ok && reply.value.kind === "query-reply");
  assertEquals(reply.value.state?.reviveOf, { gen: 2, stamp });
});

/** A stamp as a record writes it (its origin, length-prefixed, and its seq). */
function encodeStampBytesOf(stamp: { origin: string; seq: number }): Uint8Array {
  const w = new ByteWriter(64);
  w.str(stamp.origin, 64).u53(stamp.seq);
  return w.finish();
}

function encodeStampBytes(stamp: { origin: string; seq: number }): number {
  return encodeStampBytesOf(stamp).length;
}

Deno.test("the decoders never throw on hostile bytes: random, truncated or bit-flipped", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
      decodeMessage(bytes);
      decodeRecord(bytes);
      decodeWalBatch(bytes);
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(
      fc.array(jobRecordArb(), { minLength: 1, maxLength: 4 }),
      fc.nat(),
      fc.nat(),
      (records, cut, flip) => {
        const bytes = encodeMessage({
          kind: "repl",
          from: ORIGINS[0]!,
          records: records.map(encodeRecord),
        });
        decodeMessage(bytes.subarray(0, cut % bytes.length));
        const flipped = bytes.slice();
        flipped[flip % flipped.length]! ^= 1 << (flip % 8);
        decodeMessage(flipped);
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("decodeMessage rejects wrong magic, versions, trailing bytes and non-replicable records", () => {
  const good = encodeMessage({ kind: "ack", from: ORIGINS[0]!, entries: [] });
  assert(decodeMessage(good).ok);
  const badMagic = good.slice();
  badMagic[0] = 0;
  assert(!decodeMessage(badMagic).ok);
  const badVersion = good.slice();
  badVersion[1] = 99;
  assert(!decodeMessage(badVersion).ok);
  const trailing = new Uint8Array(good.length + 1);
  trailing.set(good);
  assert(!decodeMessage(trailing).ok);
  // A `state` record inside a replication message is refused: only stamped records replicate.
  const state = encodeRecord({
    type: "key",
    key: { key: "k", jobId: "j", bodyHash: "", expiresAtMs: 1 },
  });
  assert(!decodeMessage(encodeMessage({ kind: "repl", from: ORIGINS[0]!, records: [state] })).ok);
});

Deno.test("an attempt's retry round round-trips; a first-round attempt keeps the bytes it had before the field", () => {
  const attempt: AttemptEntry = {
    attempt: 1,
    startedAtMs: 1_800_000_000_000,
    latencyMs: 4,
    outcome: "http_error",
    status: 500,
    detail: "down",
    node: ORIGINS[0]!,
  };
  const dead = (a: AttemptEntry): JobRecord => ({
    type: "dead",
    stamp: { origin: ORIGINS[0]!, seq: 7 },
    jobId: "job_1",
    gen: 2,
    attemptsMade: 1,
    finishedAtMs: 1_800_000_000_100,
    reason: "attempts exhausted",
    attempt: a,
  });
  const retried = dead({ ...attempt, retry: 2 });
  const decoded = decodeRecord(encodeRecord(retried));
  assert(decoded.ok, decoded.ok ? "" : decoded.reason);
  assertEquals(decoded.value, retried);
  // Round 0: no retry field and the same layout as records written before it existed (the
  // outcome byte is the outcome's index, no flag, no u32 after it).
  const first = encodeRecord(dead(attempt));
  assertEquals(first.length, encodeRecord(retried).length - 4);
  const back = decodeRecord(first);
  assert(back.ok);
  assertEquals(back.value, dead(attempt));
  assertEquals("retry" in (back.value as { attempt: AttemptEntry }).attempt, false);
});

Deno.test("a bare REVIVE and a key of generation 0 keep the bytes they had before their trailers", () => {
  // Both fields are trailers, so WALs and checkpoints written before them read the same: the
  // older bytes are a prefix of the newer ones, and decode to the record without the field.
  const stamp = { origin: ORIGINS[0]!, seq: 9 };
  const bare: JobRecord = { type: "revive", stamp, jobId: "job_1", gen: 2 };
  const spec = plainSpec("job_1", 1_800_000_000_000);
  const full: JobRecord = { ...bare, spec, submitStamp: { origin: ORIGINS[1]!, seq: 4 } };
  const bareBytes = encodeRecord(bare);
  const fullBytes = encodeRecord(full);
  assertEquals([...fullBytes.subarray(0, bareBytes.length)], [...bareBytes]);
  const back = decodeRecord(bareBytes);
  assert(back.ok);
  assertEquals(back.value, bare);

  const key0: JobRecord = {
    type: "key",
    key: { key: "k", jobId: "job_k1", bodyHash: "h", expiresAtMs: 1 },
  };
  const key2: JobRecord = { type: "key", key: { ...key0.key, gen: 2 } };
  const key0Bytes = encodeRecord(key0);
  const key2Bytes = encodeRecord(key2);
  assertEquals(key2Bytes.length, key0Bytes.length + 4);
  const zeroTrailer = new Uint8Array(key2Bytes.length);
  zeroTrailer.set(key0Bytes);
  assert(!decodeRecord(zeroTrailer).ok, "generation 0 has one encoding: none");
});
