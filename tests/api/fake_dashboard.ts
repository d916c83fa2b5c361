/**
 * Dashboard sources for API tests: one with a few real intervals and receivers recorded by
 * `DashboardStats` (so the API serves what the recorder really produces), and one that throws.
 */

import { DashboardStats } from "../../src/dashboard/stats.ts";
import type { DashboardSource } from "../../src/dashboard/view.ts";

const T0 = 1_800_000_000_000;

export function sampleDashboard(): DashboardSource {
  const stats = new DashboardStats(T0, { accepted: 0, rejected: 0 });
  stats.attempt(T0 + 100, {
    origin: "https://ok.example",
    delivered: true,
    outcome: "success",
    status: 204,
    detail: "",
  });
  stats.delivered(12.5);
  stats.attempt(T0 + 200, {
    origin: "https://down.example",
    delivered: false,
    outcome: "http_error",
    status: 500,
    detail: "internal error",
  });
  stats.attempt(T0 + 300, {
    origin: "https://down.example",
    delivered: false,
    outcome: "network_error",
    detail: "connection refused",
  });
  stats.closeInterval(T0 + 1000, { accepted: 3, rejected: 1 });
  // An interval with no delivery: its latency figures are null.
  stats.closeInterval(T0 + 2000, { accepted: 3, rejected: 1 });
  return {
    series: () => stats.series(),
    receivers: () =>
      stats.receivers(T0 + 2000, [
        {
          origin: "https://down.example",
          inflight: 1,
          jobsHeld: 2,
          breaker: "open",
          reopenAtMs: T0 + 5000,
        },
      ]),
  };
}

export const throwingDashboard: DashboardSource = {
  series: () => {
    throw new Error("recorder bug");
  },
  receivers: () => {
    throw new Error("recorder bug");
  },
};
