// Pure formatting for the dashboard page: numbers, durations, times and the text labels that
// carry every state, so nothing on the page depends on colour alone. No DOM here, so Deno
// tests import this module as the browser does.

/** How a member's SWIM state reads: a shape and a word. */
const MEMBER_LABELS = {
  alive: "● alive",
  suspect: "◐ SUSPECT",
  dead: "✕ DEAD",
  left: "○ left",
};

/** @param {string} state */
export function memberLabel(state) {
  return MEMBER_LABELS[state] ?? `? ${state}`;
}

const BREAKER_LABELS = {
  closed: "closed",
  half_open: "HALF-OPEN (trial)",
  open: "OPEN",
};

/** @param {string} state */
export function breakerLabel(state) {
  return BREAKER_LABELS[state] ?? state;
}

/** Job states with a mark, so "dead" stands out in print and without colour. */
const JOB_LABELS = {
  pending: "… pending",
  delivering: "→ delivering",
  delivered: "✓ delivered",
  dead: "✕ DEAD",
};

/** @param {string} state */
export function jobStateLabel(state) {
  return JOB_LABELS[state] ?? state;
}

/**
 * How a receiver is doing: "failing" when its breaker is not closed or at least half of its
 * recent attempts failed, "degraded" when some failed, else "ok".
 * @param {{breaker: string, failureRate: number | null}} receiver
 * @returns {"failing" | "degraded" | "ok"}
 */
export function receiverHealth(receiver) {
  if (receiver.breaker !== "closed") return "failing";
  const rate = receiver.failureRate ?? 0;
  if (rate >= 0.5) return "failing";
  if (rate > 0) return "degraded";
  return "ok";
}

const HEALTH_LABELS = { failing: "⚠ FAILING", degraded: "! degraded", ok: "ok" };

/** @param {"failing" | "degraded" | "ok"} health */
export function healthLabel(health) {
  return HEALTH_LABELS[health];
}

/** A per-second rate with sensible precision: 0, 0.4, 12, 1.2k. @param {number} perS */
export function formatRate(perS) {
  if (!Number.isFinite(perS) || perS <= 0) return "0/s";
  if (perS >= 1000) return `${(perS / 1000).toFixed(perS >= 10_000 ? 0 : 1)}k/s`;
  if (perS >= 10) return `${Math.round(perS)}/s`;
  return `${perS.toFixed(1)}/s`;
}

/** A duration: 0.4 ms, 12 ms, 1.3 s, 4 min, 2.5 h. @param {number | null | undefined} ms */
export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A length of time without a needless ".0": 5 min, 1 s, 1.5 s. @param {number} ms */
export function formatSpan(ms) {
  return formatMs(ms).replace(/\.0 /, " ");
}

/** "12 s ago", "in 4 s", "just now". @param {number} atMs @param {number} nowMs */
export function formatRelative(atMs, nowMs) {
  const delta = nowMs - atMs;
  // The page's and the node's clocks differ a little; under a second is "now" either way.
  if (Math.abs(delta) < 1000) return "just now";
  const text = formatSpan(Math.abs(delta));
  return delta >= 0 ? `${text} ago` : `in ${text}`;
}

/** Local wall time, HH:MM:SS. @param {number} epochMs */
export function formatClock(epochMs) {
  const d = new Date(epochMs);
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** A fraction as a percentage: 0 %, 3.5 %, 100 %; a dash for none. @param {number | null} f */
export function formatPercent(f) {
  if (f === null || !Number.isFinite(f)) return "–";
  const p = f * 100;
  return `${p === 0 || p === 100 || p >= 10 ? Math.round(p) : p.toFixed(1)} %`;
}

/**
 * One attempt's result as a person reads it: "204 success", "500 http_error", "timeout".
 * @param {{outcome: string, status?: number}} attempt
 */
export function attemptResult(attempt) {
  return attempt.status !== undefined ? `${attempt.status} ${attempt.outcome}` : attempt.outcome;
}

/**
 * A job's attempts: "1 of 2", or after a manual retry the count across retries and the
 * current round's own, "3 (retry 1: 1 of 2)": each retry gets a fresh `maxAttempts`, so "3 of
 * 2" would read as a broken budget. Fields absent (an older node): the round's count alone.
 * @param {{attemptsMade: number, maxAttempts: number, retry?: number, attemptsTotal?: number}} job
 */
export function attemptsLabel(job) {
  const round = `${job.attemptsMade} of ${job.maxAttempts}`;
  const retry = job.retry ?? 0;
  return retry > 0 ? `${job.attemptsTotal ?? job.attemptsMade} (retry ${retry}: ${round})` : round;
}

/**
 * An attempt's number, counted across manual retries; a retry's attempts say which retry
 * they belong to: "3 (retry 1)".
 * @param {{attempt: number, retry?: number}} attempt
 */
export function attemptNumber(attempt) {
  const retry = attempt.retry ?? 0;
  return retry > 0 ? `${attempt.attempt} (retry ${retry})` : String(attempt.attempt);
}

/**
 * Per-second rates of one series field, one per point (counts over each point's span).
 * @param {Record<string, number>[]} points each with its `spanMs` @param {string} field
 * @returns {number[]}
 */
export function ratesOf(points, field) {
  return points.map((p) => ((p[field] ?? 0) * 1000) / (p.spanMs ?? 1));
}

/**
 * How an endpoint is doing, from its recent attempts (every node's, as this node applied
 * their delivery records): "disabled" whatever its attempts, "idle" with none in the window,
 * "failing" when at least half of them failed, "degraded" when some did, else "ok".
 * @param {{disabled: boolean, health: {attempts: number, failures: number}}} endpoint
 * @returns {"disabled" | "idle" | "failing" | "degraded" | "ok"}
 */
export function endpointHealth(endpoint) {
  if (endpoint.disabled) return "disabled";
  const { attempts, failures } = endpoint.health;
  if (attempts === 0) return "idle";
  if (failures * 2 >= attempts) return "failing";
  if (failures > 0) return "degraded";
  return "ok";
}

const ENDPOINT_HEALTH_LABELS = {
  disabled: "✕ DISABLED",
  idle: "– no recent attempts",
  failing: "⚠ FAILING",
  degraded: "! degraded",
  ok: "ok",
};

/** @param {"disabled" | "idle" | "failing" | "degraded" | "ok"} health */
export function endpointHealthLabel(health) {
  return ENDPOINT_HEALTH_LABELS[health];
}

const DISABLED_REASONS = {
  manual: "by hand",
  gone: "it answered 410 Gone",
  failing: "every attempt failed for the failing window",
};

/**
 * An endpoint's state: "enabled", or "✕ DISABLED: why". A reason this page does not know
 * (a newer node's) is shown as it came.
 * @param {{disabled: boolean, disabledReason: string | null}} endpoint
 */
export function endpointStateLabel(endpoint) {
  if (!endpoint.disabled) return "enabled";
  const reason = String(endpoint.disabledReason ?? "");
  const why = Object.hasOwn(DISABLED_REASONS, reason) ? DISABLED_REASONS[reason] : reason;
  return why === "" ? "✕ DISABLED" : `✕ DISABLED: ${why}`;
}

/**
 * How an endpoint's jobs go out: ordered (with the jobs this node holds queued for it) or
 * not, and its rate limit.
 * @param {{ordered: boolean, backlog?: number, rateLimitPerS: number}} endpoint
 */
export function endpointDeliveryLabel(endpoint) {
  const order = endpoint.ordered ? `ordered, backlog ${endpoint.backlog ?? 0}` : "unordered";
  return endpoint.rateLimitPerS > 0 ? `${order}; at most ${endpoint.rateLimitPerS}/s` : order;
}
