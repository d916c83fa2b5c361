/**
 * Unit tests of the SWIM core driven by hand: each test feeds packets and ticks at chosen
 * times and checks the datagrams and events that come out.
 */

import { assert, assertEquals } from "../assert.ts";
import { isDeepStrictEqual } from "node:util";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { decodePacket, encodePacket } from "../../src/membership/codec.ts";
import {
  ack,
  alive,
  dead,
  ping,
  suspect,
  type SwimMessage,
} from "../../src/membership/messages.ts";
import { type MemberEvent, SwimCore, type SwimInput } from "../../src/membership/swim_core.ts";

const A = "10.0.0.1:7946";
const B = "10.0.0.2:7946";
const C = "10.0.0.3:7946";

interface Sent {
  to: string;
  messages: SwimMessage[];
}

function makeCore(metrics?: MetricsRegistry): SwimCore {
  return new SwimCore({
    nodeId: "n1",
    address: A,
    rng: new Sfc32(42),
    nowMs: 0,
    ...(metrics ? { metrics } : {}),
  });
}

function step(
  core: SwimCore,
  nowMs: number,
  input: SwimInput,
): { sent: Sent[]; events: MemberEvent[] } {
  const sent: Sent[] = [];
  const events: MemberEvent[] = [];
  for (const out of core.step(nowMs, input)) {
    if (out.type === "send") {
      const decoded = decodePacket(out.bytes);
      assert(decoded.ok, "the core sends packets that decode");
      sent.push({ to: out.toAddress, messages: decoded.value });
    } else {
      events.push(out.event);
    }
  }
  return { sent, events };
}

function deliver(core: SwimCore, nowMs: number, from: string, messages: SwimMessage[]) {
  return step(core, nowMs, { type: "packet", fromAddress: from, bytes: encodePacket(messages) });
}

/** A core that knows n2 (at B) and n3 (at C) as alive at incarnation 1. */
function coreWithPeers(metrics?: MetricsRegistry): SwimCore {
  const core = makeCore(metrics);
  deliver(core, 0, B, [alive("n2", B, 1), alive("n3", C, 1)]);
  return core;
}

function has(sent: Sent[], to: string, type: SwimMessage["type"]): boolean {
  return sent.some((s) => s.to === to && s.messages.some((m) => m.type === type));
}

Deno.test("SwimCore answers a ping for itself and ignores one for another node id", () => {
  const core = makeCore();
  const mine = deliver(core, 1, B, [ping(9, "n1", 0, false)]);
  assertEquals(mine.sent, [{ to: B, messages: [ack(9)] }]);
  const other = deliver(core, 2, B, [ping(10, "n7", 0, false)]);
  assertEquals(other.sent, []);
});

Deno.test("SwimCore learns members from alive messages and emits member-alive once", () => {
  const core = makeCore();
  const { events } = deliver(core, 0, B, [alive("n2", B, 1), alive("n2", B, 1)]);
  assertEquals(events, [{ type: "member-alive", nodeId: "n2", address: B, incarnation: 1 }]);
  assertEquals(core.member("n2")?.state, "alive");
  assert(core.isAlive("n2") && !core.isDead("n2"));
  assertEquals(core.members().map((m) => m.nodeId).sort(), ["n1", "n2"]);
});

Deno.test("SwimCore refutes a suspicion of itself with a higher incarnation pushed to live members", () => {
  const core = coreWithPeers();
  const { sent } = deliver(core, 5, B, [suspect("n1", 0, "n2")]);
  assertEquals(core.incarnation, 1);
  const refutation = alive("n1", A, 1);
  for (const to of [B, C]) {
    assert(
      sent.some((s) => s.to === to && s.messages.some((m) => isDeepStrictEqual(m, refutation))),
      `refutation sent to ${to}`,
    );
  }
  assertEquals(core.awarenessScore, 1, "being suspected raises our own health score");
});

Deno.test("SwimCore answers a ping that holds it suspect with the refutation in the ack", () => {
  const core = makeCore();
  const { sent } = deliver(core, 1, B, [ping(3, "n1", 0, true)]);
  assertEquals(sent[0], { to: B, messages: [ack(3), alive("n1", A, 1)] });
  // A prober with an old incarnation is corrected too, without a new refutation.
  const stale = deliver(core, 2, C, [ping(4, "n1", 0, false)]);
  assertEquals(stale.sent[0], { to: C, messages: [ack(4), alive("n1", A, 1)] });
  assertEquals(core.incarnation, 1);
});

Deno.test("SwimCore orders updates: higher incarnation wins, dead beats suspect beats alive", () => {
  const core = coreWithPeers();
  assertEquals(deliver(core, 1, B, [alive("n3", C, 1)]).events, []);
  assertEquals(deliver(core, 2, B, [suspect("n3", 0, "n2")]).events, [], "stale suspicion");
  assertEquals(deliver(core, 3, B, [suspect("n3", 1, "n2")]).events.map((e) => e.type), [
    "member-suspect",
  ]);
  assertEquals(deliver(core, 4, B, [alive("n3", C, 1)]).events, [], "same-incarnation alive loses");
  assertEquals(deliver(core, 5, C, [alive("n3", C, 2)]).events.map((e) => e.type), [
    "member-alive",
  ]);
  assertEquals(core.member("n3")?.incarnation, 2);
  assertEquals(deliver(core, 6, B, [dead("n3", 1, "n2")]).events, [], "stale death");
  assertEquals(deliver(core, 7, B, [dead("n3", 2, "n2")]).events.map((e) => e.type), [
    "member-dead",
  ]);
  assert(core.isDead("n3"));
  assertEquals(
    deliver(core, 8, B, [suspect("n3", 2, "n2")]).events,
    [],
    "no suspicion of the dead",
  );
  assertEquals(
    deliver(core, 9, C, [alive("n3", C, 3)]).events.map((e) => e.type),
    ["member-alive"],
    "a restart rejoins",
  );
});

Deno.test("SwimCore marks a member that announces its own death as left", () => {
  const core = coreWithPeers();
  const { events } = deliver(core, 1, B, [dead("n2", 1, "n2")]);
  assertEquals(events, [{ type: "member-left", nodeId: "n2", address: B, incarnation: 1 }]);
  assert(core.isDead("n2"));
});

Deno.test("SwimCore probes, goes indirect, suspects and declares dead after the suspicion timeout", () => {
  const metrics = new MetricsRegistry();
  const core = coreWithPeers(metrics);
  const cfg = core.config;
  let now = 0;
  let target: string | undefined;
  let targetAddress = "";
  // Run ticks until the first probe goes out.
  for (let i = 0; i < 100 && target === undefined; i++) {
    now = core.nextWakeMs();
    for (const s of step(core, now, { type: "tick" }).sent) {
      const p = s.messages.find((m) => m.type === "ping");
      if (p?.type === "ping") [target, targetAddress] = [p.targetId, s.to];
    }
  }
  assert(target !== undefined, "a probe was sent");
  const probeAt = now;
  const relay = targetAddress === B ? C : B;
  // No ack: after probeTimeoutMs a ping-req goes to the other member, plus a second ping.
  const indirect = step(core, probeAt + cfg.probeTimeoutMs, { type: "tick" });
  assert(has(indirect.sent, relay, "ping-req"), "ping-req to the relay");
  assert(has(indirect.sent, targetAddress, "ping"), "second direct ping");
  // No ack by the end of the period: suspect.
  const end = step(core, probeAt + cfg.probeIntervalMs, { type: "tick" });
  assertEquals(end.events.map((e) => e.type), ["member-suspect"]);
  assert(has(end.sent, targetAddress, "suspect"), "the suspect is told at once");
  // Three members: one could confirm, nobody does, so the longest timeout applies.
  const suspectedAt = probeAt + cfg.probeIntervalMs;
  const timeoutMs = 4 * 1 * cfg.probeIntervalMs * cfg.suspicionMaxTimeoutMult;
  let deadAt: number | undefined;
  while (deadAt === undefined) {
    now = core.nextWakeMs();
    assert(now <= suspectedAt + timeoutMs, `no death by ${now}`);
    const r = step(core, now, { type: "tick" });
    if (r.events.some((e) => e.type === "member-dead" && e.nodeId === target)) deadAt = now;
  }
  assertEquals(deadAt, suspectedAt + timeoutMs);
  const snap = metrics.snapshot();
  assert((snap["hookd_membership_probes_total"] as number) >= 1);
  assertEquals(snap["hookd_membership_indirect_probes_total"], 1);
  assertEquals(snap["hookd_membership_dead_declared_total"], 1);
});

Deno.test("SwimCore relays an indirect probe: forwards the ack, or nacks when the target is silent", () => {
  const core = coreWithPeers();
  const req = (seq: number): SwimMessage => ({
    type: "ping-req",
    seq,
    targetId: "n3",
    targetAddress: C,
    targetIncarnation: 1,
    targetSuspect: false,
    wantNack: true,
  });
  const relayed = deliver(core, 10, B, [req(77)]);
  const probe = relayed.sent.find((s) => s.to === C)?.messages[0];
  assert(probe?.type === "ping", "the relay pings the target");
  const forwarded = deliver(core, 11, C, [ack(probe.seq)]);
  assertEquals(forwarded.sent[0]?.to, B);
  assertEquals(forwarded.sent[0]?.messages[0], ack(77));
  // Second request: the target never answers; a nack goes back before the requester gives up.
  deliver(core, 20, B, [req(78)]);
  const later = step(core, 20 + core.config.probeTimeoutMs, { type: "tick" });
  assert(later.sent.some((s) => s.to === B && s.messages[0]?.type === "nack"), "nack sent");
});

Deno.test("SwimCore counts undecodable packets and changes nothing", () => {
  const metrics = new MetricsRegistry();
  const core = makeCore(metrics);
  const r = step(core, 1, { type: "packet", fromAddress: B, bytes: new Uint8Array([1, 2, 3]) });
  assertEquals(r, { sent: [], events: [] });
  assertEquals(metrics.snapshot()["hookd_membership_decode_errors_total"], 1);
  assertEquals(core.members().length, 1);
});

Deno.test("SwimCore leave tells live members at once and answers later pings with the notice", () => {
  const core = coreWithPeers();
  const { sent } = step(core, 1, { type: "leave" });
  const notice = dead("n1", 0, "n1");
  for (const to of [B, C]) {
    assert(
      sent.some((s) => s.to === to && isDeepStrictEqual(s.messages[0], notice)),
    );
  }
  const answer = deliver(core, 2, B, [ping(5, "n1", 0, false)]);
  assertEquals(answer.sent[0]?.messages.slice(0, 2), [ack(5), notice]);
  // A suspicion of a leaving node is not refuted.
  deliver(core, 3, B, [suspect("n1", 0, "n2")]);
  assertEquals(core.incarnation, 0);
});

Deno.test("SwimCore reaps the dead after deadReapMs and its tombstone blocks a stale alive", () => {
  const core = coreWithPeers();
  deliver(core, 0, B, [dead("n3", 1, "n2")]);
  step(core, core.config.deadReapMs, { type: "tick" });
  assertEquals(core.member("n3"), undefined);
  assert(core.isDead("n3"), "a reaped member stays dead in the view");
  assertEquals(deliver(core, core.config.deadReapMs + 1, B, [alive("n3", C, 1)]).events, []);
  assertEquals(
    deliver(core, core.config.deadReapMs + 2, C, [alive("n3", C, 2)]).events.map((e) => e.type),
    ["member-alive"],
  );
});

Deno.test("SwimCore joins through seeds with a state sync and answers syncs in kind", () => {
  const core = new SwimCore({
    nodeId: "n1",
    address: A,
    seeds: [B, A],
    rng: new Sfc32(1),
    nowMs: 0,
  });
  assertEquals(core.joined, false);
  const first = step(core, 0, { type: "tick" });
  const syncs = first.sent.filter((s) => s.messages[0]?.type === "sync");
  assertEquals(syncs.map((s) => s.to), [B], "our own address is skipped");
  const response: SwimMessage = {
    type: "sync",
    isResponse: true,
    isJoin: false,
    members: [
      { nodeId: "n2", address: B, incarnation: 4, state: "alive" },
      { nodeId: "n3", address: C, incarnation: 2, state: "dead" },
      { nodeId: "n4", address: "10.0.0.4:7946", incarnation: 3, state: "left" },
      { nodeId: "n1", address: A, incarnation: 7, state: "dead" },
    ],
  };
  const r = deliver(core, 5, B, [response]);
  assert(core.joined);
  assertEquals(r.events.map((e) => `${e.type} ${e.nodeId}`), ["member-alive n2"]);
  assert(core.isDead("n3"), "a dead member we never knew is remembered as dead");
  assert(core.isDead("n4"), "so is one that left");
  assertEquals(
    deliver(core, 5, B, [alive("n3", C, 2), alive("n4", "10.0.0.4:7946", 3)]).events,
    [],
    "stale alives do not bring them back",
  );
  assertEquals(core.incarnation, 8, "our own death from a previous life is refuted");
  // A sync request is answered with our table.
  const req = deliver(core, 6, C, [{ type: "sync", isResponse: false, isJoin: true, members: [] }]);
  const answer = req.sent.find((s) => s.to === C)?.messages[0];
  assert(answer?.type === "sync" && answer.isResponse);
  // Tombstones travel as rows too, so a side that reaped us can learn it and let us back in.
  assertEquals(answer.members.map((m) => `${m.nodeId} ${m.state} ${m.incarnation}`).sort(), [
    "n1 alive 8",
    "n2 alive 4",
    "n3 dead 2",
    "n4 left 3",
  ]);
});

Deno.test("SwimCore ignores a claim about itself at the last incarnation instead of throwing", () => {
  const MAX = 0xffffffff;
  const hostile: SwimMessage[][] = [
    [alive("n1", B, MAX)],
    [suspect("n1", MAX, "n2")],
    [dead("n1", MAX, "n2")],
    [ping(1, "n1", MAX, true)],
    [{
      type: "sync",
      isResponse: true,
      isJoin: false,
      members: [{ nodeId: "n1", address: A, incarnation: MAX, state: "dead" }],
    }],
    // After a ping whose ack is already queued, so a throw would also wedge the next step.
    [ping(2, "n1", 0, false), alive("n1", B, MAX)],
  ];
  for (const messages of hostile) {
    const metrics = new MetricsRegistry();
    const core = coreWithPeers(metrics);
    deliver(core, 1, B, messages);
    assertEquals(core.incarnation, 0, `${messages.at(-1)?.type} moved our incarnation`);
    assertEquals(metrics.snapshot()["hookd_membership_refutations_refused_total"], 1);
    // Still working: a later ping is answered.
    assertEquals(deliver(core, 2, C, [ping(9, "n1", 0, false)]).sent[0]?.messages[0], ack(9));
  }
  // One below the limit is refuted normally, to the limit itself.
  const core = coreWithPeers();
  deliver(core, 1, B, [suspect("n1", MAX - 1, "n2")]);
  assertEquals(core.incarnation, MAX);
});

Deno.test("SwimCore queues a member suspected again and again for one probe, not one per suspicion", () => {
  const core = coreWithPeers();
  // A stream of suspicions of n2 at ever newer incarnations (each a fresh suspicion that asks
  // for n2 to be probed next).
  for (let batch = 0; batch < 20; batch++) {
    const messages: SwimMessage[] = [];
    for (let i = 0; i < 50; i++) messages.push(suspect("n2", 2 + batch * 50 + i, "n3"));
    deliver(core, 0, C, messages);
  }
  const probed: string[] = [];
  for (let i = 0; i < 200 && probed.length < 3; i++) {
    const now = core.nextWakeMs();
    for (const s of step(core, now, { type: "tick" }).sent) {
      for (const m of s.messages) {
        if (m.type === "ping" && !probed.includes(`${m.seq} ${m.targetId}`)) {
          probed.push(`${m.seq} ${m.targetId}`);
        }
      }
    }
  }
  const targets = probed.map((p) => p.split(" ")[1]);
  assertEquals(targets[0], "n2", "the suspect is probed first");
  assert(targets.includes("n3"), `n3 starved of probes: ${targets.join(", ")}`);
});

Deno.test("SwimCore refuses an empty or over-long node id or address with a RangeError", () => {
  const make = (nodeId: string, address: string) => () =>
    new SwimCore({ nodeId, address, rng: new Sfc32(1), nowMs: 0 });
  const bad: Array<[string, string]> = [
    ["", A],
    ["x".repeat(65), A],
    ["n1", ""],
    ["n1", "a".repeat(256)],
  ];
  for (const [nodeId, address] of bad) {
    let error: unknown;
    try {
      make(nodeId, address)();
    } catch (e) {
      error = e;
    }
    assert(error instanceof RangeError, `no RangeError for ${nodeId.length}/${address.length}`);
  }
  make("x".repeat(64), "a".repeat(255))();
});

Deno.test("SwimCore Lifeguard: missing nacks raise its health score and stretch its next probe", () => {
  const D = "10.0.0.4:7946";
  const run = (relaysNack: boolean) => {
    const metrics = new MetricsRegistry();
    const core = makeCore(metrics);
    deliver(core, 0, B, [alive("n2", B, 1), alive("n3", C, 1), alive("n4", D, 1)]);
    /** Ticks until a new probe goes out; returns its seq, target address and time. */
    const nextProbe = (afterSeq: number, firstTickMs = core.nextWakeMs()) => {
      for (let i = 0; i < 100; i++) {
        const now = i === 0 ? firstTickMs : core.nextWakeMs();
        for (const s of step(core, now, { type: "tick" }).sent) {
          const p = s.messages[0];
          if (p?.type === "ping" && p.seq > afterSeq) return { seq: p.seq, to: s.to, now };
        }
      }
      throw new Error("no probe");
    };
    const first = nextProbe(0);
    const cfg = core.config;
    const indirect = step(core, first.now + cfg.probeTimeoutMs, { type: "tick" });
    const relays = indirect.sent.filter((s) => s.messages[0]?.type === "ping-req");
    assertEquals(relays.length, 2, "both other members are asked");
    if (relaysNack) {
      for (const r of relays) {
        deliver(core, first.now + 150, r.to, [{ type: "nack", seq: first.seq }]);
      }
    }
    // The tick that ends the first probe may start the second one.
    const second = nextProbe(first.seq, first.now + cfg.probeIntervalMs);
    // Awareness multiplies the probe timeout: does the second probe go indirect on time?
    const atTimeout = step(core, second.now + cfg.probeTimeoutMs, { type: "tick" });
    const indirectOnTime = atTimeout.sent.some((s) => s.messages[0]?.type === "ping-req");
    return {
      score: core.awarenessScore,
      indirectOnTime,
      nacks: metrics.snapshot()["hookd_membership_nacks_total"],
    };
  };
  const withNacks = run(true);
  assertEquals(withNacks.nacks, 2);
  assertEquals(withNacks.score, 0, "nacks prove our own links work: no penalty");
  const silent = run(false);
  assertEquals(silent.nacks, 0);
  assertEquals(silent.score, 2, "one point per missing nack");
  assert(withNacks.indirectOnTime, "a healthy node goes indirect after probeTimeoutMs");
  assert(!silent.indirectOnTime, "a slow node waits (score + 1) times longer");
});

Deno.test("SwimCore shrinks a suspicion by each independent confirmation, to the shortest timeout", () => {
  const D = "10.0.0.4:7946";
  const E = "10.0.0.5:7946";
  /** Time n5 is declared dead after suspicions from `fromIds`, all at 1000 ms. */
  const deadAtMs = (fromIds: string[]): number => {
    const core = makeCore();
    deliver(core, 0, B, [
      alive("n2", B, 1),
      alive("n3", C, 1),
      alive("n4", D, 1),
      alive("n5", E, 1),
    ]);
    for (const from of fromIds) deliver(core, 1000, B, [suspect("n5", 1, from)]);
    let now = 1000;
    for (let i = 0; i < 1000 && !core.isDead("n5"); i++) {
      now = core.nextWakeMs();
      // n5 acks our own probes (without refuting), so only the given suspicions count.
      for (const s of step(core, now, { type: "tick" }).sent) {
        const p = s.messages[0];
        if (s.to === E && p?.type === "ping") deliver(core, now, E, [ack(p.seq)]);
      }
    }
    return now - 1000;
  };
  // Five live members: minMs = 4 · 1 · 200 = 800, maxMs = 5 · 800 = 4000, k = 2.
  assertEquals(deadAtMs(["n2"]), 4000, "a lone suspicion: the longest timeout");
  assertEquals(deadAtMs(["n2", "n2"]), 4000, "the same suspector twice counts once");
  // One of two: 4000 − 3200 · log 2 / log 3 = 1981.6, floored.
  assertEquals(deadAtMs(["n2", "n3"]), 1981);
  assertEquals(deadAtMs(["n2", "n3", "n4"]), 800, "k confirmations: the shortest timeout");
});

Deno.test("SwimCore woken long after its deadline (a stall) reads its backlog before declaring dead", () => {
  for (const refuted of [true, false]) {
    const metrics = new MetricsRegistry();
    const core = coreWithPeers(metrics);
    const suspected = deliver(core, 10, B, [suspect("n3", 1, "n2")]);
    assertEquals(suspected.events.map((e) => e.type), ["member-suspect"]);
    // Nothing runs for 5 s (a stalled event loop): the suspicion expired meanwhile, and n3's
    // refutation waits in the socket, to be read right after this first, late, tick.
    const lateAt = 5_000;
    const late = step(core, lateAt, { type: "tick" });
    assertEquals(late.events.filter((e) => e.type === "member-dead"), [], `refuted ${refuted}`);
    assertEquals(metrics.snapshot()["hookd_membership_late_wakes_total"], 1);
    assertEquals(core.awarenessScore >= 1, true, "a stalled node counts itself unhealthy");
    if (refuted) {
      const back = deliver(core, lateAt + 1, C, [alive("n3", C, 2)]);
      assertEquals(back.events.map((e) => e.type), ["member-alive"]);
      const later = step(core, lateAt + core.config.probeTimeoutMs, { type: "tick" });
      assertEquals(later.events.filter((e) => e.type === "member-dead"), []);
    } else {
      // Nothing came: the death follows probeTimeoutMs later, on time.
      const wake = core.nextWakeMs();
      assert(wake <= lateAt + core.config.probeTimeoutMs, `next wake ${wake}`);
      const dead = step(core, lateAt + core.config.probeTimeoutMs, { type: "tick" });
      assert(dead.events.some((e) => e.type === "member-dead" && e.nodeId === "n3"));
      assertEquals(metrics.snapshot()["hookd_membership_late_wakes_total"], 1);
    }
  }
});

Deno.test("SwimCore pushes a notice to noticeFanout members, not to every member, and only once", () => {
  const core = makeCore();
  const peers = Array.from({ length: 30 }, (_, i) => `n${i + 2}`);
  const addressOf = (id: string) => `10.0.1.${id.slice(1)}:7946`;
  deliver(core, 0, B, peers.map((id) => alive(id, addressOf(id), 1)));
  const fanout = core.config.noticeFanout;
  assert(fanout < peers.length - 2, "the cluster is larger than the fanout");
  const carrying = (sent: Sent[], m: SwimMessage) =>
    new Set(
      sent.filter((s) => s.messages.some((x) => isDeepStrictEqual(x, m))).map((s) => s.to),
    );

  // A refutation: the accuser is answered, and fanout others are told at once.
  const accused = deliver(core, 1, addressOf("n2"), [suspect("n1", 0, "n2")]);
  const refutation = alive("n1", A, 1);
  const told = carrying(accused.sent, refutation);
  assert(told.has(addressOf("n2")), "the accuser hears the refutation");
  assert(told.size <= fanout + 1, `refutation sent to ${told.size} members`);

  // A death learnt for the first time is pushed on to fanout members (never to its subject)...
  const notice = dead("n9", 1, "n2");
  const first = deliver(core, 2, addressOf("n2"), [notice]);
  const pushed = carrying(first.sent, notice);
  assertEquals(pushed.size, fanout);
  assert(!pushed.has(addressOf("n9")));
  // ... and not again when it comes back.
  const again = deliver(core, 3, addressOf("n3"), [notice]);
  assertEquals(carrying(again.sent, notice).size, 0);
});

Deno.test("SwimCore probes a member others suspect next, unless it refuted before that probe", () => {
  const firstProbeTarget = (refute: boolean): string | undefined => {
    const core = makeCore();
    const peers = Array.from({ length: 30 }, (_, i) => `n${i + 2}`);
    const addressOf = (id: string) => `10.0.1.${id.slice(1)}:7946`;
    deliver(core, 0, B, peers.map((id) => alive(id, addressOf(id), 1)));
    deliver(core, 1, addressOf("n2"), [suspect("n17", 1, "n2")]);
    if (refute) deliver(core, 2, addressOf("n17"), [alive("n17", addressOf("n17"), 2)]);
    for (let i = 0; i < 100; i++) {
      const now = core.nextWakeMs();
      for (const s of step(core, now, { type: "tick" }).sent) {
        const p = s.messages.find((m) => m.type === "ping");
        if (p?.type === "ping") return p.targetId;
      }
    }
    return undefined;
  };
  assertEquals(firstProbeTarget(false), "n17", "a suspected member is probed next");
  const after = firstProbeTarget(true);
  assert(after !== undefined && after !== "n17", `probed ${after} first after the refutation`);
});

/**
 * Drives `core` for `durationMs` with every timer firing `lateMs` after the deadline the core
 * asked for (an event loop that is always that busy), answering for n2 (alive: acks its pings,
 * nacks ping-reqs for the silent n3). Returns the events.
 */
function runLate(core: SwimCore, lateMs: number, durationMs: number): MemberEvent[] {
  const events: MemberEvent[] = [];
  let now = 0;
  for (let i = 0; i < 100_000 && now < durationMs; i++) {
    now = Math.max(now, core.nextWakeMs() + lateMs);
    const pending: Array<{ at: number; from: string; messages: SwimMessage[] }> = [];
    const record = (r: { sent: Sent[]; events: MemberEvent[] }) => {
      events.push(...r.events);
      for (const s of r.sent) {
        if (s.to !== B) continue; // n3 crashed: anything sent to C is lost
        for (const m of s.messages) {
          if (m.type === "ping" && m.targetId === "n2") {
            pending.push({ at: now, from: B, messages: [ack(m.seq)] });
          } else if (m.type === "ping-req") {
            pending.push({ at: now, from: B, messages: [{ type: "nack", seq: m.seq }] });
          }
        }
      }
    };
    record(step(core, now, { type: "tick" }));
    // Answers arrive at once, in the same turn (so they are not late themselves).
    for (let j = 0; j < pending.length && j < 100; j++) {
      const p = pending[j]!;
      record(deliver(core, p.at, p.from, p.messages));
    }
  }
  return events;
}

Deno.test("SwimCore whose every timer fires late (a busy event loop) still declares a crashed member dead", () => {
  const core = coreWithPeers();
  const lateMs = core.config.lateWakeToleranceMs + 10;
  // Probing both members at 60 ms lateness takes a little longer, and the longest suspicion at
  // three members is 4 s: 30 s is several times what detection needs.
  const events = runLate(core, lateMs, 30_000);
  assert(
    events.some((e) => e.type === "member-dead" && e.nodeId === "n3"),
    `n3 never declared dead; events: ${JSON.stringify(events.map((e) => [e.type, e.nodeId]))}`,
  );
  assertEquals(events.filter((e) => e.type === "member-dead" && e.nodeId === "n2"), []);
});

Deno.test("SwimCore arms no gossip timer while it has nothing to gossip, and keeps the gossip phase", () => {
  const core = coreWithPeers();
  const cfg = core.config;
  const gossipAtMs: number[] = [];
  let now = 0;
  let ticks = 0;
  let emptyTicks = 0;
  /** Ticks until `untilMs`, every probe acked 1 ms later; counts ticks that sent nothing. */
  const run = (untilMs: number) => {
    for (let i = 0; i < 10_000; i++) {
      const wake = core.nextWakeMs();
      if (wake > untilMs) break;
      now = Math.max(now, wake);
      const { sent } = step(core, now, { type: "tick" });
      ticks++;
      if (sent.length === 0) emptyTicks++;
      for (const s of sent) {
        const ping = s.messages.find((m) => m.type === "ping");
        if (ping?.type === "ping") {
          now += 1;
          deliver(core, now, s.to, [ack(ping.seq)]);
        } else if (s.messages.every((m) => m.type === "alive")) {
          gossipAtMs.push(now);
        }
      }
    }
  };
  // The joins of n2 and n3 are gossiped in dedicated rounds until their retransmissions run out.
  run(5_000);
  assert(gossipAtMs.length > 0, "the joins were gossiped");
  assertEquals(core.gossipQueued, 0);
  const phaseMs = gossipAtMs[0]! % cfg.gossipIntervalMs;
  // Idle: every wake-up has something to send (a probe, a sync); none is a round with nothing.
  ticks = 0;
  emptyTicks = 0;
  gossipAtMs.length = 0;
  run(15_000);
  assert(ticks >= 10_000 / cfg.probeIntervalMs, `${ticks} ticks in 10 s`);
  assertEquals(emptyTicks, 0);
  assertEquals(gossipAtMs, []);
  // News arrives between two rounds: it goes out at the next boundary of the old phase.
  const joinAtMs = now + 0.37 * cfg.gossipIntervalMs;
  now = joinAtMs;
  deliver(core, now, B, [alive("n4", "10.0.0.4:7946", 1)]);
  run(joinAtMs + 2 * cfg.gossipIntervalMs);
  assert(gossipAtMs.length > 0, "n4's join was gossiped");
  const firstMs = gossipAtMs[0]!;
  assert(firstMs > joinAtMs && firstMs <= joinAtMs + cfg.gossipIntervalMs, `gossip at ${firstMs}`);
  assertEquals(Math.abs((firstMs % cfg.gossipIntervalMs) - phaseMs) < 1e-6, true);
});
