/**
 * The delivery core under the simulator: random receivers (slow, failing, timing out,
 * answering 410 or Retry-After), a store that persists after a random delay, and random
 * cancels, across many seeds. A failing seed is printed and replays exactly.
 */

import { assert } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import type { AttemptResult } from "../../src/delivery/types.ts";
import { job, makeCore } from "./core_harness.ts";

const SEEDS = 300;
const JOBS = 60;
const ORIGIN_MAX = 3;
const LIMIT_MS = 10_000_000;

interface Origin {
  url: string;
  failP: number;
  timeoutP: number;
  goneP: number;
  latencyMs: number;
}

function runSeed(seed: number): void {
  const rng = new Sfc32(seed);
  const sim = new SimScheduler();
  const { core } = makeCore(
    { originConcurrencyMax: ORIGIN_MAX, concurrentDeliveriesMax: 5, maxAttemptsDefault: 5 },
    seed,
  );
  const origins: Origin[] = Array.from({ length: 1 + rng.int(4) }, (_, i) => ({
    url: `http://o${i}.test`,
    failP: rng.next() * 0.9,
    timeoutP: rng.next() * 0.2,
    goneP: rng.next() * 0.05,
    latencyMs: 1 + rng.int(200),
  }));
  const ended = new Map<string, string>();
  const cancelled = new Set<string>();
  const attemptsSeen = new Map<string, number>();
  const dueAt = new Map<string, number>();
  const inflightPerOrigin = new Map<string, number>();
  let wakeHandle: { cancel(): void } | undefined;

  const flush = (): void => {
    for (const out of core.takeOutputs()) {
      if (out.type === "attempt") {
        const id = out.job.id;
        const n = (attemptsSeen.get(id) ?? 0) + 1;
        assert(out.attempt === n, `seed ${seed}: ${id} attempt ${out.attempt}, expected ${n}`);
        attemptsSeen.set(id, n);
        assert(
          sim.nowMs >= (dueAt.get(id) ?? 0),
          `seed ${seed}: ${id} started before its due time`,
        );
        const origin = origins.find((o) => out.job.url.startsWith(o.url))!;
        const inflight = (inflightPerOrigin.get(origin.url) ?? 0) + 1;
        assert(inflight <= ORIGIN_MAX, `seed ${seed}: origin limit exceeded`);
        inflightPerOrigin.set(origin.url, inflight);
        const roll = rng.next();
        let result: AttemptResult;
        let latency = origin.latencyMs * (0.5 + rng.next());
        if (roll < origin.timeoutP) {
          latency = out.timeoutMs;
          result = { kind: "timeout", latencyMs: latency };
        } else if (roll < origin.timeoutP + origin.goneP) {
          result = { kind: "response", status: 410, body: "", latencyMs: latency };
        } else if (roll < origin.timeoutP + origin.goneP + origin.failP) {
          const retryAfter = rng.next() < 0.2 ? { retryAfter: String(rng.int(5)) } : {};
          result = { kind: "response", status: 503, body: "", latencyMs: latency, ...retryAfter };
        } else {
          result = { kind: "response", status: 200, body: "ok", latencyMs: latency };
        }
        sim.after(latency, () => {
          inflightPerOrigin.set(origin.url, inflightPerOrigin.get(origin.url)! - 1);
          core.attemptDone(sim.nowMs, id, result);
          flush();
        });
      } else {
        const report = out.report;
        assert(!ended.has(report.jobId), `seed ${seed}: ${report.jobId} ended twice`);
        if (report.kind === "retry") {
          assert(report.attemptsMade < 5, `seed ${seed}: retry after maxAttemptsDefault`);
          dueAt.set(report.jobId, report.nextAttemptAtMs);
          // The store takes a while to make the retry durable.
          sim.after(rng.int(50), () => {
            core.persisted(sim.nowMs, report.jobId, true);
            flush();
          });
        } else {
          ended.set(report.jobId, report.kind);
        }
      }
    }
    wakeHandle?.cancel();
    const wake = core.nextWakeMs();
    wakeHandle = wake === Infinity ? undefined : sim.at(wake, () => {
      core.tick(sim.nowMs);
      flush();
    });
  };

  for (let i = 0; i < JOBS; i++) {
    const origin = origins[rng.int(origins.length)]!;
    sim.at(rng.int(5_000), () => {
      assert(core.schedule(sim.nowMs, job(`j${i}`, origin.url)).ok, `seed ${seed}: refused`);
      flush();
    });
    if (rng.next() < 0.1) {
      sim.at(rng.int(20_000), () => {
        if (core.cancel(sim.nowMs, `j${i}`)) cancelled.add(`j${i}`);
        flush();
      });
    }
  }
  sim.runUntil(LIMIT_MS);
  assert(core.jobCount === 0, `seed ${seed}: ${core.jobCount} jobs still held`);
  assert(core.inflight === 0, `seed ${seed}: attempts still in flight`);
  for (let i = 0; i < JOBS; i++) {
    const id = `j${i}`;
    if (!cancelled.has(id)) {
      assert(ended.has(id), `seed ${seed}: ${id} neither delivered nor dead`);
    }
    if (ended.get(id) === "dead" && (attemptsSeen.get(id) ?? 0) < 5) {
      // Only a 410 (or a refusal) ends a job early; the simulated receivers never refuse.
      assert(attemptsSeen.has(id), `seed ${seed}: ${id} dead without an attempt`);
    }
  }
}

Deno.test("DeliveryCore delivers or dead-letters every job across seeds, within its limits", () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    try {
      runSeed(seed);
    } catch (error) {
      console.error(
        `delivery core simulation failed at seed ${seed}; replay with runSeed(${seed})`,
      );
      throw error;
    }
  }
});
