import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  applyWrite,
  type EndpointState,
  failingWindowStartMs,
  mergeEndpoint,
  nextVersion,
  secretsAt,
  wantsEvent,
} from "../../src/jobs/endpoint_model.ts";
import { EndpointTable } from "../../src/jobs/endpoint_table.ts";
import { endpointStateArb, SAMPLE_ENDPOINT } from "./arbitraries.ts";

const T0 = 1_700_000_000_000;

const FIELDS = SAMPLE_ENDPOINT;

Deno.test("mergeEndpoint is commutative, associative and idempotent", () => {
  const value = endpointStateArb();
  fc.assert(
    fc.property(value, value, value, (a, b, c) => {
      assertEquals(mergeEndpoint(a, b), mergeEndpoint(b, a));
      assertEquals(mergeEndpoint(mergeEndpoint(a, b), c), mergeEndpoint(a, mergeEndpoint(b, c)));
      assertEquals(mergeEndpoint(a, a), a);
      const ab = mergeEndpoint(a, b);
      assertEquals(mergeEndpoint(ab, b), ab);
    }),
    { numRuns: 500 },
  );
});

Deno.test("mergeEndpoint keeps the value with the greater version, whatever its content", () => {
  fc.assert(
    fc.property(endpointStateArb(), endpointStateArb(), (a, b) => {
      const older = { ...a, version: { atMs: T0, origin: "10.0.0.9:7000", seq: 5 } };
      const newer = { ...b, version: { atMs: T0 + 1, origin: "10.0.0.1:7000", seq: 1 } };
      // Whole, but for the success time: a max register beside the version's winner.
      const lastSuccessAtMs = Math.max(a.lastSuccessAtMs, b.lastSuccessAtMs);
      assertEquals(mergeEndpoint(older, newer), { ...newer, lastSuccessAtMs });
      assertEquals(mergeEndpoint(newer, older), { ...newer, lastSuccessAtMs });
    }),
    { numRuns: 100 },
  );
});

Deno.test("an endpoint's success time only rises, and never undoes a write (table and records)", () => {
  const v = (seq: number) => ({ atMs: T0 + seq, origin: "a:1", seq });
  const created = applyWrite(undefined, { kind: "create", fields: FIELDS }, v(1), "ep_1");
  assert(created.ok);
  const table = new EndpointTable({ endpointTombstoneMs: 1000 });
  table.apply(created.value);
  assertEquals(table.raiseLastSuccess("ep_1", T0 + 50), "changed");
  assertEquals(table.raiseLastSuccess("ep_1", T0 + 40), "unchanged");
  assertEquals(table.raiseLastSuccess("ep_9", T0 + 40), "unchanged");
  // A client's write built on the value before the success (an older success time) keeps
  // its fields and the newer success time.
  const rotated = applyWrite(
    created.value,
    { kind: "rotate", id: "ep_1", secret: "whsec_AAAA", overlapMs: 10 },
    v(2),
    "ep_1",
  );
  assert(rotated.ok);
  assertEquals(table.apply(rotated.value), "changed");
  assertEquals(table.get("ep_1")!.secret, "whsec_AAAA");
  assertEquals(table.get("ep_1")!.lastSuccessAtMs, T0 + 50);
});

Deno.test("applyWrite: a rotation keeps the old secret for the overlap; a second keeps only the last", () => {
  const v = (seq: number) => ({ atMs: T0 + seq, origin: "a:1", seq });
  const created = applyWrite(undefined, { kind: "create", fields: FIELDS }, v(1), "ep_1");
  assert(created.ok);
  const first = applyWrite(
    created.value,
    { kind: "rotate", id: "ep_1", secret: "whsec_AAAA", overlapMs: 1000 },
    v(10),
    "ep_1",
  );
  assert(first.ok);
  assertEquals(
    [first.value.secret, first.value.previousSecret, first.value.previousSecretUntilMs],
    ["whsec_AAAA", FIELDS.secret, T0 + 10 + 1000],
  );
  assertEquals(secretsAt(first.value, T0 + 500), ["whsec_AAAA", FIELDS.secret]);
  assertEquals(secretsAt(first.value, T0 + 1010), ["whsec_AAAA"]);
  const second = applyWrite(
    first.value,
    { kind: "rotate", id: "ep_1", secret: "whsec_BBBB", overlapMs: 1000 },
    v(20),
    "ep_1",
  );
  assert(second.ok);
  assertEquals(secretsAt(second.value, T0 + 500), ["whsec_BBBB", "whsec_AAAA"]);
  // A retry of that rotation (same secret) changes nothing but the version.
  const again = applyWrite(
    second.value,
    { kind: "rotate", id: "ep_1", secret: "whsec_BBBB", overlapMs: 1000 },
    v(25),
    "ep_1",
  );
  assert(again.ok);
  assertEquals({ ...again.value, version: second.value.version }, second.value);
  // A PATCH of the secret replaces it at once: no overlap.
  const patched = applyWrite(
    second.value,
    { kind: "update", id: "ep_1", patch: { secret: "whsec_CCCC" } },
    v(30),
    "ep_1",
  );
  assert(patched.ok);
  assertEquals(secretsAt(patched.value, T0 + 31), ["whsec_CCCC"]);
  const missing = applyWrite(
    undefined,
    { kind: "rotate", id: "ep_9", secret: "whsec_AAAA", overlapMs: 1 },
    v(3),
    "ep_9",
  );
  assertEquals(missing, { ok: false, reason: "not_found" });
});

Deno.test("applyWrite: an owner's disable writes once; the window restarts on any write", () => {
  const v = (seq: number) => ({ atMs: T0 + seq, origin: "a:1", seq });
  const created = applyWrite(undefined, { kind: "create", fields: FIELDS }, v(1), "ep_1");
  assert(created.ok);
  assertEquals(failingWindowStartMs(created.value), T0 + 1);
  const disable = { kind: "disable", id: "ep_1", reason: "gone" } as const;
  const gone = applyWrite(created.value, disable, v(5), "ep_1");
  assert(gone.ok);
  assertEquals([gone.value.disabled, gone.value.disabledReason], [true, "gone"]);
  assertEquals(
    applyWrite(gone.value, { ...disable, reason: "failing" }, v(6), "ep_1"),
    { ok: false, reason: "unchanged" },
  );
  const enabled = applyWrite(
    gone.value,
    { kind: "update", id: "ep_1", patch: { disabled: false } },
    v(7),
    "ep_1",
  );
  assert(enabled.ok);
  assertEquals(failingWindowStartMs(enabled.value), T0 + 7);
  assertEquals(failingWindowStartMs({ ...enabled.value, lastSuccessAtMs: T0 + 99 }), T0 + 99);
});

Deno.test("mergeEndpoint: a deleted mark at a live value's own version wins, in either order", () => {
  // The mark a snapshot's requester writes over an endpoint its server dropped
  // (catchup_client.ts): it must win over the live value a WAL replay brings back.
  fc.assert(
    fc.property(endpointStateArb(), (v) => {
      const live: EndpointState = { ...v, deleted: false };
      const mark: EndpointState = { ...live, deleted: true };
      assertEquals(mergeEndpoint(live, mark), mark);
      assertEquals(mergeEndpoint(mark, live), mark);
    }),
    { numRuns: 200 },
  );
});

Deno.test("EndpointTable converges: any order and any repeats of an endpoint's values", () => {
  fc.assert(
    fc.property(
      fc.array(endpointStateArb(fc.constantFrom("ep_1", "ep_2")), { minLength: 1, maxLength: 8 })
        .chain((values) =>
          fc.tuple(
            fc.constant(values),
            fc.shuffledSubarray([...values, ...values], { minLength: 2 * values.length }),
          )
        ),
      ([values, shuffledTwice]) => {
        const a = new EndpointTable({ endpointTombstoneMs: 1000 });
        const b = new EndpointTable({ endpointTombstoneMs: 1000 });
        for (const v of values) a.apply(v);
        for (const v of shuffledTwice) b.apply(v);
        assertEquals([...b.values()].sort(byId), [...a.values()].sort(byId));
        assertEquals(b.size, a.size);
        // Applying everything again changes nothing.
        for (const v of values) assertEquals(a.apply(v), "unchanged");
      },
    ),
    { numRuns: 300 },
  );
});

function byId(x: EndpointState, y: EndpointState): number {
  return x.id < y.id ? -1 : x.id > y.id ? 1 : 0;
}

Deno.test("nextVersion stamps a write past the value it replaces, even from a clock behind", () => {
  const created = applyWrite(
    undefined,
    { kind: "create", fields: FIELDS },
    nextVersion(undefined, { origin: "a:1", seq: 1 }, T0 + 60_000),
    "ep_1",
  );
  assert(created.ok);
  // Another node, its clock a minute behind, updates what it holds: the update must win.
  const version = nextVersion(created.value, { origin: "b:1", seq: 9 }, T0);
  assertEquals(version, { atMs: T0 + 60_001, origin: "b:1", seq: 9 });
  const updated = applyWrite(
    created.value,
    { kind: "update", id: "ep_1", patch: { url: "https://b.test/" } },
    version,
    "ep_1",
  );
  assert(updated.ok);
  assertEquals(mergeEndpoint(created.value, updated.value), updated.value);
  assertEquals(updated.value.url, "https://b.test/");
  assertEquals(updated.value.createdAtMs, T0 + 60_000);
  assertEquals(updated.value.eventTypes, ["invoice.paid"]);
});

Deno.test("applyWrite: a disable gets a reason, an enable clears it, a delete is a tombstone", () => {
  const v = (seq: number) => ({ atMs: T0 + seq, origin: "a:1", seq });
  const created = applyWrite(undefined, { kind: "create", fields: FIELDS }, v(1), "ep_1");
  assert(created.ok);
  const disabled = applyWrite(
    created.value,
    { kind: "update", id: "ep_1", patch: { disabled: true } },
    v(2),
    "ep_1",
  );
  assert(disabled.ok);
  assertEquals([disabled.value.disabled, disabled.value.disabledReason], [true, "manual"]);
  assert(!wantsEvent(disabled.value, "invoice.paid"));
  const enabled = applyWrite(
    disabled.value,
    { kind: "update", id: "ep_1", patch: { disabled: false } },
    v(3),
    "ep_1",
  );
  assert(enabled.ok);
  assertEquals([enabled.value.disabled, enabled.value.disabledReason], [false, ""]);
  assert(wantsEvent(enabled.value, "invoice.paid"));
  assert(!wantsEvent(enabled.value, "user.created"));
  const deleted = applyWrite(enabled.value, { kind: "delete", id: "ep_1" }, v(4), "ep_1");
  assert(deleted.ok && deleted.value.deleted);
  assert(!wantsEvent(deleted.value, "invoice.paid"));
  const again = applyWrite(deleted.value, { kind: "update", id: "ep_1", patch: {} }, v(5), "ep_1");
  assertEquals(again, { ok: false, reason: "not_found" });
  assertEquals(
    applyWrite(undefined, { kind: "delete", id: "ep_9" }, v(6), "ep_9"),
    { ok: false, reason: "not_found" },
  );
});

Deno.test("EndpointTable: a tombstone beats older writes until its horizon, then goes", () => {
  const table = new EndpointTable({ endpointTombstoneMs: 10_000 });
  const v = (seq: number) => ({ atMs: T0 + seq, origin: "a:1", seq });
  const created = applyWrite(undefined, { kind: "create", fields: FIELDS }, v(1), "ep_1");
  assert(created.ok);
  const deleted = applyWrite(created.value, { kind: "delete", id: "ep_1" }, v(2), "ep_1");
  assert(deleted.ok);
  assertEquals(table.apply(deleted.value), "changed");
  assertEquals(table.apply(created.value), "unchanged");
  assertEquals(table.get("ep_1"), undefined);
  assertEquals(table.size, 0);
  assertEquals(table.expire(T0 + 2 + 9_999), 0);
  assertEquals(table.held, 1);
  assertEquals(table.expire(T0 + 2 + 10_000), 1);
  assertEquals(table.held, 0);
});

Deno.test("EndpointTable.list pages in id order and skips tombstones", () => {
  const table = new EndpointTable({ endpointTombstoneMs: 10_000 });
  for (let i = 0; i < 7; i++) {
    const made = applyWrite(
      undefined,
      { kind: "create", fields: FIELDS },
      { atMs: T0, origin: "a:1", seq: i + 1 },
      `ep_${i}`,
    );
    assert(made.ok);
    table.apply(i === 3 ? { ...made.value, deleted: true } : made.value);
  }
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const { items, nextCursor } = table.list(2, cursor);
    seen.push(...items.map((s) => s.id));
    if (nextCursor === undefined) break;
    cursor = nextCursor;
  }
  assertEquals(seen, ["ep_0", "ep_1", "ep_2", "ep_4", "ep_5", "ep_6"]);
});
