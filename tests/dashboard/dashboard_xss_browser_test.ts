/**
 * The dashboard shows attacker-influenced text as text: job URLs (any submitter), attempt
 * details and dead reasons (what a receiver answered), receiver origins and failures. Served
 * by an in-process API over a fake store that holds such jobs, the page is opened in headless
 * Chromium; no markup from that text may become an element, whatever the CSP would then do
 * with it (the policy is a second wall, checked by page_test.ts, not the first).
 */

import { assert, assertEquals } from "../assert.ts";
import { serveApi } from "../../src/api/server.ts";
import type { DashboardSource } from "../../src/dashboard/view.ts";
import type { JobView } from "../../src/jobs/service.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { FakeJobService } from "../api/fake_service.ts";
import { Browser, findChromium, type Page } from "./cdp.ts";

const CHROMIUM = findChromium();
const IN_CI = Deno.env.get("CI") === "true";

/** Markup that, parsed as HTML, makes elements with a class the test looks for. */
const MARK = (where: string) =>
  `<img class="xss" src="/nope-${where}" onerror="window.xss='${where}'">` +
  `<b class="xss">${where}</b><svg class="xss"><script>window.xss='${where}'</script></svg>`;

function hostileJob(id: string, state: "dead" | "pending"): JobView {
  return {
    id,
    state,
    url: `https://receiver.example/${MARK("url")}`,
    submittedAtMs: Date.now() - 60_000,
    ...(state === "dead" ? { finishedAtMs: Date.now() - 1000, deadReason: MARK("dead") } : {}),
    attemptsMade: 1,
    maxAttempts: 1,
    retry: 0,
    attemptsTotal: 1,
    owner: MARK("owner"),
    attempts: [{
      attempt: 1,
      retry: 0,
      startedAtMs: Date.now() - 2000,
      latencyMs: 12,
      outcome: MARK("outcome"),
      status: 500,
      detail: MARK("detail"),
      node: MARK("node"),
    }],
    idempotencyKey: MARK("key"),
  };
}

const hostileDashboard: DashboardSource = {
  series: () => ({ intervalMs: 1000, pointsMax: 300, points: [] }),
  receivers: () => ({
    windowMs: 60_000,
    items: [{
      origin: `https://${MARK("origin")}`,
      breaker: "open",
      reopenAtMs: Date.now() + 5000,
      inflight: 0,
      jobsHeld: 1,
      attempts: 2,
      failures: 2,
      failureRate: 1,
      lastAttemptAtMs: Date.now() - 1000,
      lastFailure: {
        atMs: Date.now() - 1000,
        outcome: MARK("failure-outcome"),
        status: 500,
        detail: MARK("failure"),
      },
    }],
  }),
};

Deno.test({
  name: "dashboard in headless Chromium: hostile job, attempt and receiver text stays text",
  ignore: CHROMIUM === undefined && !IN_CI,
  async fn() {
    if (CHROMIUM === undefined) {
      throw new Error("no Chromium found (HOOKD_CHROMIUM, or Debian's chromium-headless-shell)");
    }
    const service = new FakeJobService();
    service.put(hostileJob("job_dead", "dead"));
    service.put(hostileJob("job_pending", "pending"));
    const registry = new MetricsRegistry();
    const server = serveApi({
      hostname: "127.0.0.1",
      port: 0,
      service,
      registry,
      metrics: () => registry.renderPrometheus(),
      dashboard: hostileDashboard,
      log: () => {},
    });
    const root = await Deno.makeTempDir({ prefix: "hookd-dashboard-xss-" });
    let browser: Browser | undefined;
    try {
      browser = await Browser.launch(CHROMIUM, {
        userDataDir: `${root}/chromium`,
        width: 1280,
        height: 1000,
      });
      const page: Page = await browser.newPage();
      await page.goto(`${server.url}/`);
      // Every panel filled from the hostile data.
      await page.waitFor(
        `document.querySelectorAll("#recent-jobs tbody tr[data-job]").length === 2 &&
         document.querySelectorAll("#dead-letters tbody tr[data-job]").length === 1 &&
         document.querySelectorAll("#receivers tbody tr[data-origin]").length === 1`,
        { what: "every panel filled", timeoutMs: 15_000 },
      );
      // A job's details: attempts, owner, dead reason, key.
      await page.click('#dead-letters tr[data-job="job_dead"] button.link');
      await page.waitFor(
        `document.querySelectorAll("#job-attempts tbody tr[data-outcome]").length === 1`,
        { what: "the job's attempts", timeoutMs: 15_000 },
      );
      const injected = await page.evaluate<string[]>(
        `[...document.querySelectorAll(".xss")].map((e) => e.outerHTML.slice(0, 80))`,
      );
      assertEquals(injected, [], "markup from job or receiver text became elements");
      assertEquals(await page.evaluate<unknown>("window.xss ?? null"), null);
      // The text is there, as text, in each place it comes from.
      const text = await page.evaluate<string>("document.body.innerText");
      for (const where of ["url", "dead", "detail", "origin", "failure", "key"]) {
        assert(text.includes(MARK(where)), `${where}'s text is shown as text`);
      }
      assertEquals(page.exceptions, []);
    } finally {
      await browser?.close();
      await server.shutdown();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});
