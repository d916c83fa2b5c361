/**
 * SWIM over the real transport in the simulator: every node is a `SimNodeStack` (the real
 * `UdpTransport` adapter with framing, MAC, sessions, acks and piggybacked gossip, and the real
 * `MembershipService`), on a seeded lossy network, with event-loop stalls. The cases are
 * Lifeguard's: a degraded node (heavy ingress loss, or repeated stalls) must not get healthy
 * nodes declared dead by anyone.
 *
 * Each case runs many seeds; a failure names its seed and the command that replays it.
 * `HOOKD_SIM_SEED=S` runs only seed S; `HOOKD_SIM_SEEDS=N` runs seeds 1..N (a longer soak).
 */

import { assert, assertEquals } from "../assert.ts";
import { membershipDefaults } from "../../src/config/membership.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { detectionBoundMs } from "../../src/membership/suspicion_math.ts";
import { SimStackCluster } from "../../src/sim/sim_stack_cluster.ts";

const FILE = "tests/membership/stack_sim_test.ts";

function seeds(count: number): number[] {
  const only = Deno.env.get("HOOKD_SIM_SEED");
  if (only !== undefined) return [Number(only)];
  const n = Number(Deno.env.get("HOOKD_SIM_SEEDS") ?? count);
  return Array.from({ length: n }, (_, i) => i + 1);
}

function replay(test: string, seed: number): string {
  return `replay: HOOKD_SIM_SEED=${seed} deno test --allow-all ${FILE} --filter "${test}"`;
}

/** Runs `body` for every seed; a failure is reported with the command that replays it. */
async function forSeeds(
  test: string,
  count: number,
  body: (seed: number) => Promise<void>,
): Promise<void> {
  for (const seed of seeds(count)) {
    try {
      await body(seed);
    } catch (error) {
      throw new Error(`seed ${seed} failed (${replay(test, seed)})`, { cause: error });
    }
  }
}

/** Member-dead events about `subjects` (any observer). */
function deathsOf(cluster: SimStackCluster, subjects: readonly string[]): string[] {
  return cluster.events
    .filter((e) => e.type === "member-dead" && subjects.includes(e.nodeId))
    .map((e) => `${e.observer} declared ${e.nodeId} dead at ${e.atMs.toFixed(0)} ms`);
}

/**
 * Collects every member-dead event about a node that was up when it was declared (any
 * observer, the node's own restarted life included).
 */
function watchFalseDeaths(cluster: SimStackCluster): string[] {
  const found: string[] = [];
  cluster.onEvent = (e) => {
    if (e.type === "member-dead" && cluster.isUp(e.nodeId)) {
      found.push(`${e.observer} declared live ${e.nodeId} dead at ${e.atMs.toFixed(0)} ms`);
    }
  };
  return found;
}

async function converge(cluster: SimStackCluster): Promise<void> {
  assert(await cluster.runUntil(() => cluster.converged(), 30_000), "never converged");
}

const CRASH = "real transport: crashed nodes are confirmed dead within the bound";
Deno.test(`SimStackCluster ${CRASH}, and rejoin; no false deaths (12 seeds)`, async () => {
  await forSeeds(CRASH, 12, async (seed) => {
    const loss = seed % 2 === 0 ? 0.2 : 0;
    const cluster = new SimStackCluster({ seed, nodes: 5, lossProbability: loss });
    const falseDeaths = watchFalseDeaths(cluster);
    try {
      await converge(cluster);
      const bound = detectionBoundMs(5, membershipDefaults);
      const rng = new Sfc32(seed);
      for (let i = 0; i < 3; i++) {
        const ids = cluster.upNodeIds();
        const victim = ids[rng.int(ids.length)]!;
        const incarnation = cluster.core(victim).incarnation;
        cluster.crash(victim);
        assert(
          await cluster.runUntil(() => cluster.allSeeDead(victim), bound),
          `${victim} not dead everywhere within ${bound} ms`,
        );
        cluster.start(victim, incarnation + 1);
        assert(
          await cluster.runUntil(() => cluster.converged(), 30_000),
          `${victim} did not rejoin everywhere`,
        );
      }
      await cluster.runFor(10_000);
      assertEquals(falseDeaths, []);
    } finally {
      await cluster.close();
    }
  });
});

/**
 * Stalls `nodeId` again and again for `stallMs()` with `gapMs()` of normal running between
 * stalls, until `untilMs`; returns the stalls made.
 */
async function stallRepeatedly(
  cluster: SimStackCluster,
  pick: () => string,
  stallMs: () => number,
  gapMs: () => number,
  untilMs: number,
): Promise<number> {
  let stalls = 0;
  while (cluster.nowMs < untilMs) {
    const id = pick();
    const stack = cluster.stack(id);
    if (!stack.stalled) {
      stack.stall(stallMs());
      stalls++;
    }
    await cluster.runFor(gapMs());
  }
  return stalls;
}

const SIM_MS = 2 * 60_000;
const HEALTHY = ["n1", "n2", "n3", "n4"];

const STALLS = "stalls of up to 700 ms on any node declare nobody dead";
Deno.test(`SimStackCluster: ${STALLS} (8 seeds)`, async () => {
  await forSeeds(STALLS, 8, async (seed) => {
    const cluster = new SimStackCluster({ seed, nodes: 5, lossProbability: (seed % 3) * 0.05 });
    try {
      await converge(cluster);
      const rng = new Sfc32(seed ^ 0x57a11);
      // One node at a time, each stall followed by at least a second of normal running before
      // the same node stalls again (back-to-back stalls are one long outage, a real death).
      const lastEnd = new Map<string, number>();
      let stalls = 0;
      const end = cluster.nowMs + SIM_MS;
      while (cluster.nowMs < end) {
        const id = `n${1 + rng.int(5)}`;
        if ((lastEnd.get(id) ?? -Infinity) + 1_000 <= cluster.nowMs) {
          const ms = 100 + rng.next() * 600;
          cluster.stall(id, ms);
          lastEnd.set(id, cluster.nowMs + ms);
          stalls++;
        }
        await cluster.runFor(300 + rng.next() * 1_200);
      }
      assertEquals(deathsOf(cluster, cluster.nodeIds()), []);
      const suspected = cluster.events.filter((e) => e.type === "member-suspect").length;
      assert(stalls > 50 && suspected > 0, `only ${stalls} stalls, ${suspected} suspicions`);
      await cluster.runFor(5_000);
      assert(cluster.converged(), "views not whole after the stalls");
    } finally {
      await cluster.close();
    }
  });
});

const DEGRADED_LOSS = "a node whose ingress loses 30-65 % gets no healthy node declared dead";
Deno.test(`SimStackCluster: ${DEGRADED_LOSS} (8 seeds)`, async () => {
  await forSeeds(DEGRADED_LOSS, 8, async (seed) => {
    // Healthy links at 0, 10 or 20 % ingress loss (the loss sweep's), the degraded node at more.
    const baseLoss = (seed % 3) * 0.1;
    const cluster = new SimStackCluster({ seed, nodes: 5, lossProbability: baseLoss });
    try {
      await converge(cluster);
      const rng = new Sfc32(seed ^ 0x1055);
      const degradedLoss = Math.max(0.3, baseLoss + 0.15) + 0.3 * rng.next();
      cluster.network.setIngressLoss(cluster.address("n5"), degradedLoss);
      const eventsBefore = cluster.events.length;
      await cluster.runFor(SIM_MS);
      const during = cluster.events.slice(eventsBefore);
      assertEquals(deathsOf(cluster, HEALTHY), [], `degraded loss ${degradedLoss.toFixed(2)}`);
      // The case is only tested if the degraded node did accuse healthy nodes.
      assert(
        during.some((e) => e.type === "member-suspect" && e.observer === "n5"),
        `n5 at loss ${degradedLoss.toFixed(2)} suspected nobody`,
      );
      cluster.network.setIngressLoss(cluster.address("n5"), baseLoss);
      assert(await cluster.runUntil(() => cluster.converged(), 30_000), "no recovery");
    } finally {
      await cluster.close();
    }
  });
});

const DEGRADED_STALLS = "a node that stalls for 200-700 ms again and again gets no healthy node";
Deno.test(`SimStackCluster: ${DEGRADED_STALLS} declared dead (8 seeds)`, async () => {
  await forSeeds(DEGRADED_STALLS, 8, async (seed) => {
    const cluster = new SimStackCluster({ seed, nodes: 5, lossProbability: (seed % 2) * 0.05 });
    try {
      await converge(cluster);
      const rng = new Sfc32(seed ^ 0x57a1);
      let lastEndMs = -Infinity;
      const stalls = await stallRepeatedly(
        cluster,
        () => "n5",
        () => {
          const ms = 200 + rng.next() * 500;
          lastEndMs = cluster.nowMs + ms;
          return ms;
        },
        // The next stall starts 300-1,500 ms after this one ends.
        () => lastEndMs - cluster.nowMs + 300 + rng.next() * 1_200,
        cluster.nowMs + SIM_MS,
      );
      assertEquals(deathsOf(cluster, HEALTHY), []);
      assert(stalls > 50, `only ${stalls} stalls`);
      assert(
        cluster.events.some((e) => e.type === "member-suspect" && e.nodeId === "n5"),
        "the stalls raised no suspicion of n5",
      );
      assert(await cluster.runUntil(() => cluster.converged(), 30_000), "no recovery");
    } finally {
      await cluster.close();
    }
  });
});

const REPLAY = "a seed replays exactly, stalls and loss included";
Deno.test(`SimStackCluster: ${REPLAY}`, async () => {
  const run = async () => {
    const cluster = new SimStackCluster({ seed: 77, nodes: 5, lossProbability: 0.2 });
    try {
      await cluster.runFor(10_000);
      cluster.stall("n3", 600);
      await cluster.runFor(5_000);
      cluster.crash("n2");
      await cluster.runFor(10_000);
      return cluster.events.map((e) =>
        `${e.atMs} ${e.observer} ${e.type} ${e.nodeId} ${e.incarnation}`
      );
    } finally {
      await cluster.close();
    }
  };
  const first = await run();
  assert(first.length > 20);
  assertEquals(await run(), first);
});
