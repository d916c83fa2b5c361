/**
 * The SWIM core under hostile but well-formed packets (fast-check): any sequence of messages
 * from any sender, about this node, known members or strangers, at any incarnation, mixed with
 * ticks, must never throw, and must keep the table's invariants. Malformed bytes are the
 * codec's tests; these packets decode, so they reach the protocol logic.
 */

import { assert } from "../assert.ts";
import fc from "fast-check";
import { Sfc32 } from "../../src/lib/rng.ts";
import { encodePacket } from "../../src/membership/codec.ts";
import type { MemberRecord, SwimMessage } from "../../src/membership/messages.ts";
import { SwimCore } from "../../src/membership/swim_core.ts";

const SELF = "n1";
const SELF_ADDRESS = "10.0.0.1:7946";
// Few ids and addresses, so messages land on this node and on members it knows.
const nodeId = fc.constantFrom(SELF, "n2", "n3", "n4", "stranger");
const address = fc.constantFrom(SELF_ADDRESS, "10.0.0.2:7946", "10.0.0.3:7946", "bad address");
const incarnation = fc.oneof(
  fc.integer({ min: 0, max: 5 }),
  fc.constantFrom(0xfffffffe, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const seq = fc.integer({ min: 0, max: 8 });
const state = fc.constantFrom("alive", "suspect", "dead", "left") as fc.Arbitrary<
  MemberRecord["state"]
>;

const message: fc.Arbitrary<SwimMessage> = fc.oneof(
  fc.record({
    type: fc.constant("ping" as const),
    seq,
    targetId: nodeId,
    targetIncarnation: incarnation,
    targetSuspect: fc.boolean(),
  }),
  fc.record({
    type: fc.constant("ping-req" as const),
    seq,
    targetId: nodeId,
    targetAddress: address,
    targetIncarnation: incarnation,
    targetSuspect: fc.boolean(),
    wantNack: fc.boolean(),
  }),
  fc.record({ type: fc.constant("ack" as const), seq }),
  fc.record({ type: fc.constant("nack" as const), seq }),
  fc.record({ type: fc.constant("alive" as const), nodeId, address, incarnation }),
  fc.record({ type: fc.constant("suspect" as const), nodeId, incarnation, fromId: nodeId }),
  fc.record({ type: fc.constant("dead" as const), nodeId, incarnation, fromId: nodeId }),
  fc.record({
    type: fc.constant("sync" as const),
    isResponse: fc.boolean(),
    isJoin: fc.boolean(),
    members: fc.array(fc.record({ nodeId, address, incarnation, state }), { maxLength: 6 }),
  }),
);

type Input =
  | { kind: "packet"; from: string; messages: SwimMessage[] }
  | { kind: "tick"; advanceMs: number }
  | { kind: "leave" };

const input: fc.Arbitrary<Input> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("packet" as const),
      from: address,
      messages: fc.array(message, { minLength: 1, maxLength: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      advanceMs: fc.integer({ min: 0, max: 5_000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "leave" as const }) },
);

Deno.test("SwimCore never throws on well-formed hostile packets and keeps its table sound (property)", () => {
  fc.assert(
    fc.property(fc.array(input, { maxLength: 40 }), fc.integer(), (inputs, rngSeed) => {
      const core = new SwimCore({
        nodeId: SELF,
        address: SELF_ADDRESS,
        seeds: ["10.0.0.2:7946"],
        rng: new Sfc32(rngSeed),
        nowMs: 0,
        config: { membersMax: 4, tombstonesMax: 2, relayPendingMax: 2, gossipQueueMax: 3 },
      });
      let now = 0;
      for (const i of inputs) {
        if (i.kind === "packet") {
          core.step(now, { type: "packet", fromAddress: i.from, bytes: encodePacket(i.messages) });
        } else if (i.kind === "tick") {
          now += i.advanceMs;
          core.step(now, { type: "tick" });
        } else {
          core.step(now, { type: "leave" });
        }
        const self = core.member(SELF);
        assert(self !== undefined, "this node left its own table");
        assert(
          self.state === (core.leaving ? "left" : "alive"),
          `self is ${self.state}, leaving ${core.leaving}`,
        );
        assert(core.members().length <= 4, "membersMax exceeded");
        assert(core.gossipQueued <= 3, "gossipQueueMax exceeded");
        assert(Number.isFinite(core.nextWakeMs()), "the core must always ask to be woken");
        for (const m of core.members()) {
          assert(Number.isInteger(m.incarnation) && m.incarnation >= 0, "bad incarnation");
          assert(m.incarnation <= 0xffffffff, "incarnation beyond u32");
        }
      }
    }),
    { numRuns: 300 },
  );
});
