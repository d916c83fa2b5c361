/**
 * Simulation tests: whole clusters of SWIM cores over the seeded lossy network, every message
 * encoded to bytes. Each failure names its seed; `new SimCluster({ seed, ... })` with the same
 * arguments replays it exactly.
 */

import { assert, assertEquals } from "../assert.ts";
import { membershipDefaults } from "../../src/config/membership.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { encodePacket } from "../../src/membership/codec.ts";
import { suspect } from "../../src/membership/messages.ts";
import { SimCluster } from "../../src/sim/swim_cluster.ts";
import { detectionBoundMs } from "../../src/membership/suspicion_math.ts";

function falseDeaths(cluster: SimCluster): string[] {
  return cluster.events
    .filter((e) => e.type === "member-dead" && cluster.isUp(e.nodeId))
    .map((e) => `${e.observer} declared live ${e.nodeId} dead at ${e.atMs.toFixed(0)} ms`);
}

/** Crashes `crashes` random nodes one after another; checks each is confirmed within the bound. */
function crashAndDetect(seed: number, nodes: number, loss: number, crashes: number): void {
  const cluster = new SimCluster({ seed, nodes, lossProbability: loss });
  const where = `seed ${seed}, ${nodes} nodes, loss ${loss}`;
  assert(cluster.runUntil(() => cluster.converged(), 30_000), `${where}: never converged`);
  const bound = detectionBoundMs(nodes, membershipDefaults);
  const rng = new Sfc32(seed);
  for (let i = 0; i < crashes; i++) {
    const ids = cluster.upNodeIds();
    const victim = ids[rng.int(ids.length)]!;
    const crashedAt = cluster.nowMs;
    cluster.crash(victim);
    assert(
      cluster.runUntil(() => cluster.allSeeDead(victim), bound),
      `${where}: ${victim} crashed at ${
        crashedAt.toFixed(0)
      } ms not dead everywhere within ${bound} ms`,
    );
    cluster.runFor(1_000);
  }
  assertEquals(falseDeaths(cluster), [], where);
}

Deno.test("SimCluster of 5 confirms a crashed node dead everywhere within the bound (40 seeds)", () => {
  for (let seed = 1; seed <= 40; seed++) crashAndDetect(seed, 5, seed % 2 === 0 ? 0.2 : 0, 3);
});

Deno.test("SimCluster of 50 confirms crashed nodes dead everywhere within the bound (8 seeds)", () => {
  for (let seed = 1; seed <= 8; seed++) crashAndDetect(seed, 50, seed % 2 === 0 ? 0.2 : 0.05, 3);
});

Deno.test("SimCluster with 20% loss and no crash declares nobody dead in 10 minutes (6 seeds)", () => {
  for (let seed = 1; seed <= 6; seed++) {
    const cluster = new SimCluster({ seed, nodes: 5, lossProbability: 0.2 });
    cluster.runFor(10 * 60_000);
    assertEquals(falseDeaths(cluster), [], `seed ${seed}`);
    const suspicions = cluster.events.filter((e) => e.type === "member-suspect").length;
    // The test is only meaningful if loss did cause suspicions that had to be refuted.
    assert(suspicions > 0, `seed ${seed}: 20 % loss raised no suspicion at all`);
  }
});

Deno.test("SimCluster of 50 with 20% loss and no crash declares nobody dead in 2 minutes", () => {
  // Ten minutes at 50 nodes take ~45 s of CPU here; the 5-node test above runs the full ten.
  const seed = 3;
  const cluster = new SimCluster({ seed, nodes: 50, lossProbability: 0.2 });
  cluster.runFor(2 * 60_000);
  assertEquals(falseDeaths(cluster), [], `seed ${seed}`);
  assert(
    cluster.events.some((e) => e.type === "member-suspect"),
    `seed ${seed}: 20 % loss raised no suspicion at all`,
  );
  // At 20 % loss some view holds a passing suspicion (refuted within a few hundred ms) at any
  // instant; what must not happen is a view that stays split.
  assert(
    cluster.runUntil(() => cluster.converged(), 5_000),
    `seed ${seed}: views not whole within 5 s of the end`,
  );
});

Deno.test("SimCluster: a restarted node rejoins everywhere with a higher incarnation (10 seeds)", () => {
  const bound = detectionBoundMs(5, membershipDefaults);
  for (let seed = 1; seed <= 10; seed++) {
    const cluster = new SimCluster({ seed, nodes: 5, lossProbability: seed % 2 === 0 ? 0.2 : 0 });
    assert(cluster.runUntil(() => cluster.converged(), 30_000), `seed ${seed}: no convergence`);
    // A seed node and a plain one in turn.
    const victim = seed % 4 < 2 ? "n2" : "n4";
    const before = cluster.core(victim).incarnation;
    cluster.crash(victim);
    assert(
      cluster.runUntil(() => cluster.allSeeDead(victim), bound),
      `seed ${seed}: ${victim} not dead everywhere`,
    );
    // Odd seeds restart at the old incarnation (a clock that went back): the node must refute
    // its own death, learnt from the join's state sync, to be let back in.
    const eventsBefore = cluster.events.length;
    cluster.start(victim, seed % 2 === 1 ? before : before + 1);
    assert(
      cluster.runUntil(() => cluster.converged(), 20_000),
      `seed ${seed}: ${victim} did not rejoin everywhere`,
    );
    for (const id of cluster.upNodeIds()) {
      const m = cluster.core(id).member(victim);
      assert(m !== undefined && m.incarnation > before, `seed ${seed}: ${id} holds an old life`);
    }
    cluster.runFor(10_000);
    const falseAfter = cluster.events.slice(eventsBefore).filter((e) => e.type === "member-dead");
    assertEquals(falseAfter, [], `seed ${seed}`);
  }
});

Deno.test("SimCluster: a suspected but alive node refutes and stays alive everywhere (10 seeds)", () => {
  for (let seed = 1; seed <= 10; seed++) {
    const cluster = new SimCluster({ seed, nodes: 5, lossProbability: seed % 2 === 0 ? 0.2 : 0 });
    assert(cluster.runUntil(() => cluster.converged(), 30_000), `seed ${seed}: no convergence`);
    const before = cluster.core("n3").incarnation;
    // A forged accusation from n2 reaches everyone but n3.
    for (const id of ["n1", "n2", "n4", "n5"]) {
      cluster.network.send(
        cluster.address("n2"),
        cluster.address(id),
        encodePacket([suspect("n3", before, "n2")]),
      );
    }
    const refuted = () =>
      cluster.upNodeIds().every((id) => {
        const m = cluster.core(id).member("n3");
        return m?.state === "alive" && m.incarnation > before;
      });
    assert(cluster.runUntil(refuted, 5_000), `seed ${seed}: n3 did not refute within 5 s`);
    assert(
      cluster.events.some((e) => e.type === "member-suspect" && e.nodeId === "n3"),
      `seed ${seed}: the accusation was not believed, so nothing was tested`,
    );
    cluster.runFor(10_000);
    assertEquals(falseDeaths(cluster), [], `seed ${seed}`);
  }
});

Deno.test("SimCluster: after a partition heals the views converge (6 seeds)", () => {
  for (let seed = 1; seed <= 6; seed++) {
    const cluster = new SimCluster({ seed, nodes: 5, lossProbability: seed % 2 === 0 ? 0.1 : 0 });
    assert(cluster.runUntil(() => cluster.converged(), 30_000), `seed ${seed}: no convergence`);
    cluster.network.partition([cluster.address("n1"), cluster.address("n2")]);
    cluster.runFor(15_000);
    assert(
      cluster.core("n1").isDead("n4") && cluster.core("n4").isDead("n1"),
      `seed ${seed}: sides did not split`,
    );
    cluster.network.heal();
    assert(
      cluster.runUntil(() => cluster.converged(), 60_000),
      `seed ${seed}: views did not converge after heal`,
    );
  }
});

Deno.test("SimCluster: after a partition longer than deadReapMs heals the views converge (4 seeds)", () => {
  // Each side reaps the other and keeps tombstones that refuse the other side's alives at the
  // same incarnation: the views meet again only through a state sync carrying the tombstones,
  // from which each member learns of its own death and refutes it.
  for (let seed = 1; seed <= 4; seed++) {
    const cluster = new SimCluster({ seed, nodes: 5, lossProbability: seed % 2 === 0 ? 0.1 : 0 });
    assert(cluster.runUntil(() => cluster.converged(), 30_000), `seed ${seed}: no convergence`);
    cluster.network.partition([cluster.address("n1"), cluster.address("n2")]);
    cluster.runFor(membershipDefaults.deadReapMs + 15_000);
    assertEquals(cluster.core("n1").member("n4"), undefined, `seed ${seed}: n4 not reaped by n1`);
    assert(cluster.core("n1").isDead("n4"), `seed ${seed}: n1 forgot n4's death`);
    cluster.network.heal();
    assert(
      cluster.runUntil(() => cluster.converged(), 6 * membershipDefaults.syncIntervalMs),
      `seed ${seed}: views did not converge after heal`,
    );
  }
});

Deno.test("SimCluster: joins and a graceful leave propagate to every node", () => {
  for (let seed = 1; seed <= 5; seed++) {
    const cluster = new SimCluster({ seed, nodes: 6, startAll: false, lossProbability: 0.1 });
    // Nodes come up one by one; n1..n3 are everyone's seeds, any subset of them is enough.
    for (const id of ["n4", "n1", "n5", "n2", "n3"]) {
      cluster.start(id);
      cluster.runFor(300);
    }
    assert(
      cluster.runUntil(() => cluster.converged(), 20_000),
      `seed ${seed}: first five did not converge`,
    );
    cluster.start("n6");
    // Gossip spreads a join in well under a second; a member that missed every retransmission
    // learns it at the latest from a periodic state sync.
    assert(
      cluster.runUntil(() => cluster.converged(), 2 * membershipDefaults.syncIntervalMs),
      `seed ${seed}: n6 did not join everywhere`,
    );
    cluster.leave("n4");
    const leftAt = cluster.nowMs;
    const allSeeLeft = () =>
      cluster.upNodeIds().every((id) =>
        id === "n4" || cluster.core(id).member("n4")?.state === "left"
      );
    assert(
      cluster.runUntil(allSeeLeft, 2_000),
      `seed ${seed}: the leave did not reach everyone in 2 s`,
    );
    cluster.crash("n4");
    // Nobody suspects or declares dead a node that left.
    cluster.runFor(10_000);
    assert(
      !cluster.events.some((e) =>
        e.nodeId === "n4" && e.atMs >= leftAt && e.type !== "member-left"
      ),
      `seed ${seed}: a left node was suspected or declared dead`,
    );
  }
});

Deno.test("SimCluster replays a seed exactly", () => {
  const run = () => {
    const cluster = new SimCluster({ seed: 77, nodes: 5, lossProbability: 0.2 });
    cluster.runFor(20_000);
    cluster.crash("n2");
    cluster.runFor(20_000);
    return cluster.events.map((e) =>
      `${e.atMs} ${e.observer} ${e.type} ${e.nodeId} ${e.incarnation}`
    );
  };
  const first = run();
  assert(first.length > 20);
  assertEquals(run(), first);
});
