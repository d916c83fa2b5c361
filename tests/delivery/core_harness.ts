/**
 * Test helpers that drive `DeliveryCore` by hand: a config with short, jitter-free timings and
 * a function that collects outputs by type.
 */

import { deliveryDefaults } from "../../src/config/delivery.ts";
import type { EngineConfig } from "../../src/delivery/engine.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { DeliveryCore, type DeliveryOutput } from "../../src/delivery/delivery_core.ts";
import { DeliveryMetrics } from "../../src/delivery/metrics.ts";
import type { AttemptResult, DeliveryJob, DeliveryReport } from "../../src/delivery/types.ts";

export const testConfig: EngineConfig = {
  ...deliveryDefaults,
  retryScheduleMs: [100, 200, 400],
  retryJitterRatio: 0,
  maxAttemptsDefault: 4,
  retryAfterMinMs: 10,
  retryAfterMaxMs: 10_000,
  attemptTimeoutMs: 1_000,
  breakerFailureThreshold: 3,
  breakerOpenMs: 1_000,
  breakerOpenMaxMs: 4_000,
  allowPrivateTargets: true,
};

export function makeCore(
  overrides: Partial<EngineConfig> = {},
  seed = 1,
): { core: DeliveryCore; registry: MetricsRegistry } {
  const registry = new MetricsRegistry();
  const core = new DeliveryCore(
    { ...testConfig, ...overrides },
    new Sfc32(seed),
    new DeliveryMetrics(registry),
  );
  return { core, registry };
}

export function job(
  id: string,
  origin = "http://a.test",
  extra: Partial<DeliveryJob> = {},
): DeliveryJob {
  return { id, url: `${origin}/hook`, payload: "{}", secrets: [], ...extra };
}

export function split(outputs: DeliveryOutput[]): {
  attempts: Array<Extract<DeliveryOutput, { type: "attempt" }>>;
  reports: DeliveryReport[];
} {
  const attempts: Array<Extract<DeliveryOutput, { type: "attempt" }>> = [];
  const reports: DeliveryReport[] = [];
  for (const o of outputs) {
    if (o.type === "attempt") attempts.push(o);
    else reports.push(o.report);
  }
  return { attempts, reports };
}

export const status = (code: number, retryAfter?: string): AttemptResult => ({
  kind: "response",
  status: code,
  body: `status ${code}`,
  latencyMs: 1,
  ...(retryAfter !== undefined ? { retryAfter } : {}),
});
