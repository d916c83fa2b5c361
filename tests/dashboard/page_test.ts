/**
 * The dashboard page as the node serves it, without a browser: `GET /` and every file it
 * loads, found by following the page's own references (link, script, module imports), are
 * served with their type and the content security policy; nothing refers to another origin;
 * the page stays open when the node has an API token while its data routes do not. And the
 * page's pure modules (chart geometry, formatting) do what the page relies on.
 */

import { assert, assertEquals } from "../assert.ts";
import { BASE, call, get, makeApi, TOKEN } from "../api/harness.ts";
import { dashboardAssetNames } from "../../src/dashboard/assets.ts";
import { chartPaths, niceCeiling } from "../../src/dashboard/static/chart.js";
import {
  attemptNumber,
  attemptsLabel,
  endpointDeliveryLabel,
  endpointHealth,
  endpointHealthLabel,
  endpointStateLabel,
  formatMs,
  formatPercent,
  formatRate,
  formatRelative,
  formatSpan,
  memberLabel,
  ratesOf,
  receiverHealth,
} from "../../src/dashboard/static/format.js";

/** Same-origin paths a file refers to: href/src attributes and JS module specifiers. */
function references(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\b(?:href|src)="([^"]+)"/g)) out.push(m[1]!);
  for (const m of text.matchAll(/\bfrom\s+"([^"]+)"/g)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*"([^"]+)"/g)) out.push(m[1]!);
  return out;
}

Deno.test("GET / and every file it loads are served, typed and locked to this node", async () => {
  const api = makeApi({ apiToken: TOKEN });
  const seen = new Map<string, string>();
  const queue = ["/"];
  while (queue.length > 0 && seen.size < 50) {
    const path = queue.shift()!;
    if (seen.has(path)) continue;
    const answer = await call(api, get(path));
    assertEquals(answer.status, 200, `${path} (the page refers to it)`);
    const type = answer.headers.get("content-type") ?? "";
    const expected = path === "/"
      ? "text/html"
      : path.endsWith(".js")
      ? "text/javascript"
      : path.endsWith(".css")
      ? "text/css"
      : "?";
    assert(type.startsWith(expected), `${path}: ${type}`);
    const csp = answer.headers.get("content-security-policy") ?? "";
    assert(csp.includes("default-src 'none'") && csp.includes("connect-src 'self'"), csp);
    assertEquals(answer.headers.get("x-content-type-options"), "nosniff");
    seen.set(path, answer.text);
    for (const ref of references(answer.text)) {
      if (ref.startsWith("data:")) continue;
      assert(!/^[a-z]+:|^\/\//i.test(ref), `${path} refers to another origin: ${ref}`);
      queue.push(new URL(ref, BASE + path).pathname);
    }
  }
  // Every embedded file is reachable from the page, so none is dead weight or forgotten.
  const loaded = [...seen.keys()].filter((p) => p !== "/").map((p) => p.replace("/dashboard/", ""));
  assertEquals(loaded.sort(), dashboardAssetNames().sort());
  // The page's text: no script or style inline (the policy would block it), no remote URL.
  const page = seen.get("/")!;
  assert(!/<script(?![^>]*\bsrc=)[^>]*>/.test(page), "no inline <script>");
  assert(!/\sstyle="/.test(page) && !/<style/.test(page), "no inline style");
  for (const [path, text] of seen) {
    const remote = [...text.matchAll(/https?:\/\/[^\s"'`)]+/g)].map((m) => m[0])
      .filter((u) => u !== "http://www.w3.org/2000/svg");
    assertEquals(remote, [], `${path} names no remote URL`);
  }
});

Deno.test("the page is open without a token; its data routes are not", async () => {
  const api = makeApi({ apiToken: TOKEN });
  assertEquals((await call(api, get("/"))).status, 200);
  assertEquals((await call(api, get("/dashboard/app.js"))).status, 200);
  for (const path of ["/v1/series", "/v1/receivers", "/v1/cluster"]) {
    assertEquals((await call(api, get(path))).status, 401, path);
    const authorized = await call(api, get(path, { authorization: `Bearer ${TOKEN}` }));
    assertEquals(authorized.status, 200, path);
  }
  const missing = await call(api, get("/dashboard/../openapi.json"));
  assertEquals(missing.status, 404);
});

Deno.test("chart geometry: x from time within the window, y against a round axis top, gaps break", () => {
  assertEquals([0, 0.3, 1, 3, 7, 10, 11, 450].map(niceCeiling), [1, 0.5, 1, 5, 10, 10, 20, 500]);
  const points = [0, 1000, 2000, 3000].map((t) => ({ atMs: 10_000 + t }));
  const { yMax, paths } = chartPaths(points, [[1, 4, null, 2], [0, 0, 0, 0]], {
    width: 300,
    height: 100,
    windowMs: 3000,
    endMs: 13_000,
  });
  assertEquals(yMax, 5);
  assertEquals(paths, ["M0 80 L100 20 M300 60", "M0 100 L100 100 L200 100 L300 100"]);
  // Points older than the window are left out, and do not set the axis.
  const late = chartPaths(points, [[50, 1, 1, 2]], {
    width: 300,
    height: 100,
    windowMs: 2000,
    endMs: 13_000,
  });
  assertEquals(late, { yMax: 2, paths: ["M0 50 L150 50 L300 0"] });
});

Deno.test("format: states read without colour, rates and durations at sensible precision", () => {
  assertEquals(
    ["alive", "suspect", "dead", "left", "odd"].map(memberLabel),
    ["● alive", "◐ SUSPECT", "✕ DEAD", "○ left", "? odd"],
  );
  assertEquals([0, 0.25, 12.4, 1234, 25_000].map(formatRate), [
    "0/s",
    "0.3/s",
    "12/s",
    "1.2k/s",
    "25k/s",
  ]);
  assertEquals([0.5, 4.25, 850, 1500, 120_000, null].map(formatMs), [
    "0.50 ms",
    "4.3 ms",
    "850 ms",
    "1.5 s",
    "2.0 min",
    "–",
  ]);
  assertEquals([0, 0.035, 0.5, 1, null].map(formatPercent), ["0 %", "3.5 %", "50 %", "100 %", "–"]);
  assertEquals([60_000, 1000, 1500].map(formatSpan), ["1 min", "1 s", "1.5 s"]);
  const now = 1_000_000;
  assertEquals(
    [now - 400, now - 12_000, now + 4_000, now - 90_000].map((t) => formatRelative(t, now)),
    ["just now", "12 s ago", "in 4 s", "1.5 min ago"],
  );
  assertEquals(
    [
      { breaker: "open", failureRate: 0 },
      { breaker: "closed", failureRate: 0.5 },
      { breaker: "closed", failureRate: 0.1 },
      { breaker: "closed", failureRate: null },
    ].map(receiverHealth),
    ["failing", "failing", "degraded", "ok"],
  );
  assertEquals(
    ratesOf([{ spanMs: 1000, delivered: 5 }, { spanMs: 2000, delivered: 5 }], "delivered"),
    [
      5,
      2.5,
    ],
  );
});

Deno.test("format: a retried job's attempts count across retries and show the retry", () => {
  assertEquals(
    attemptsLabel({ attemptsMade: 1, maxAttempts: 2, retry: 0, attemptsTotal: 1 }),
    "1 of 2",
  );
  // Two attempts, dead, retried by hand, one attempt of the retry: not "Attempts 1 of 2"
  // above three attempt rows.
  assertEquals(
    attemptsLabel({ attemptsMade: 1, maxAttempts: 2, retry: 1, attemptsTotal: 3 }),
    "3 (retry 1: 1 of 2)",
  );
  assertEquals(
    [{ attempt: 1, retry: 0 }, { attempt: 2, retry: 0 }, { attempt: 3, retry: 1 }].map(
      attemptNumber,
    ),
    ["1", "2", "3 (retry 1)"],
  );
});

Deno.test("an endpoint's health, state and delivery read as words", () => {
  const e = (attempts: number, failures: number, disabled = false) => ({
    disabled,
    health: { attempts, failures },
  });
  assertEquals(
    [e(0, 0), e(10, 0), e(10, 1), e(10, 5), e(10, 10), e(10, 0, true)].map(endpointHealth),
    ["idle", "ok", "degraded", "failing", "failing", "disabled"],
  );
  assertEquals(endpointHealthLabel("failing"), "⚠ FAILING");
  assertEquals(endpointStateLabel({ disabled: false, disabledReason: null }), "enabled");
  assertEquals(
    endpointStateLabel({ disabled: true, disabledReason: "gone" }),
    "✕ DISABLED: it answered 410 Gone",
  );
  assertEquals(
    endpointStateLabel({ disabled: true, disabledReason: "failing" }),
    "✕ DISABLED: every attempt failed for the failing window",
  );
  // A reason this page does not know is shown as it came, never looked up on a prototype.
  assertEquals(
    endpointStateLabel({ disabled: true, disabledReason: "__proto__" }),
    "✕ DISABLED: __proto__",
  );
  assertEquals(endpointStateLabel({ disabled: true, disabledReason: null }), "✕ DISABLED");
  assertEquals(
    endpointDeliveryLabel({ ordered: true, backlog: 3, rateLimitPerS: 0 }),
    "ordered, backlog 3",
  );
  assertEquals(
    endpointDeliveryLabel({ ordered: false, rateLimitPerS: 2.5 }),
    "unordered; at most 2.5/s",
  );
});
