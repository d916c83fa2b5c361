/**
 * The dashboard shows attacker-influenced text as text: job URLs (any submitter), attempt
 * details and dead reasons (what a receiver answered), receiver origins and failures, endpoint
 * URLs, descriptions, event types and last failures, and an event's type and endpoints. Served
 * by an in-process API over a fake store that holds such jobs, the page is opened in headless
 * Chromium; no markup from that text may become an element, whatever the CSP would then do
 * with it (the policy is a second wall, checked by page_test.ts, not the first). An endpoint's
 * secret and its headers' values never reach the page at all.
 */

import { assert, assertEquals } from "../assert.ts";
import { serveApi } from "../../src/api/server.ts";
import type { DashboardSource } from "../../src/dashboard/view.ts";
import type { EventView, JobView } from "../../src/jobs/service.ts";
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

const ENDPOINT_SECRET = "whsec_c2VjcmV0LW5ldmVyLW9uLXRoZS1wYWdlLTEyMzQ=";
const HEADER_VALUE = "Bearer header-value-never-on-the-page";

/** An endpoint whose every free-text field carries markup, with a secret and a credential. */
async function hostileEndpoint(service: FakeJobService, ordered: boolean): Promise<string> {
  const created = await service.createEndpoint({
    url: `https://receiver.example/${MARK(ordered ? "ep-url-ordered" : "ep-url")}`,
    eventTypes: [MARK("ep-type")],
    secret: ENDPOINT_SECRET,
    description: MARK(ordered ? "ep-description-ordered" : "ep-description"),
    headers: { authorization: HEADER_VALUE },
    rateLimitPerS: ordered ? 0 : 5,
    ordered,
    disabled: !ordered,
    disabledReason: ordered ? "" : "gone",
  });
  assert(created.ok, "the fake store took the endpoint");
  return created.endpoint.id;
}

function hostileEvent(endpointId: string): EventView {
  return {
    id: "evt_hostile",
    type: MARK("event-type"),
    payload: "{}",
    createdAtMs: Date.now() - 5_000,
    jobs: [{
      endpointId: MARK("event-endpoint"),
      jobId: "job_dead",
      state: "dead",
      attemptsTotal: 1,
      attempts: [],
    }, {
      endpointId,
      jobId: `evt_hostile.${endpointId}`,
      attemptsTotal: 0,
      attempts: [],
    }],
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
  name:
    "dashboard in headless Chromium: hostile job, attempt, receiver, endpoint and event text stays text; no secret shown",
  ignore: CHROMIUM === undefined && !IN_CI,
  async fn() {
    if (CHROMIUM === undefined) {
      throw new Error("no Chromium found (HOOKD_CHROMIUM, or Debian's chromium-headless-shell)");
    }
    const service = new FakeJobService();
    service.put(hostileJob("job_dead", "dead"));
    service.put(hostileJob("job_pending", "pending"));
    const ordered = await hostileEndpoint(service, true);
    const gone = await hostileEndpoint(service, false);
    service.health.set(ordered, {
      attempts: 3,
      failures: 2,
      lastSuccessAtMs: Date.now() - 60_000,
      lastFailure: {
        atMs: Date.now() - 2_000,
        outcome: MARK("ep-failure-outcome"),
        status: 500,
        detail: MARK("ep-failure"),
      },
    });
    service.backlogs.set(ordered, 4);
    service.events.set("evt_hostile", { view: hostileEvent(ordered) });
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
         document.querySelectorAll("#receivers tbody tr[data-origin]").length === 1 &&
         document.querySelectorAll("#endpoints tbody tr[data-endpoint]").length === 2`,
        { what: "every panel filled", timeoutMs: 15_000 },
      );
      // A job's details: attempts, owner, dead reason, key.
      await page.click('#dead-letters tr[data-job="job_dead"] button.link');
      await page.waitFor(
        `document.querySelectorAll("#job-attempts tbody tr[data-outcome]").length === 1`,
        { what: "the job's attempts", timeoutMs: 15_000 },
      );
      // An event's jobs, looked up by id.
      await page.type("#event-lookup-input", "evt_hostile");
      await page.click("#event-lookup-submit");
      await page.waitFor(
        `document.querySelectorAll("#event-jobs tbody tr[data-job]").length === 2`,
        { what: "the event's jobs", timeoutMs: 15_000 },
      );
      // What each endpoint row says: health, delivery and state.
      const rows = await page.evaluate<Record<string, string>>(
        `Object.fromEntries([...document.querySelectorAll("#endpoints tbody tr")]
          .map((r) => [r.dataset.endpoint, r.dataset.health + "|" + r.innerText]))`,
      );
      assert(rows[ordered]!.startsWith("failing|"), rows[ordered]);
      assert(rows[ordered]!.includes("2 of 3 (67 %)"), rows[ordered]);
      assert(rows[ordered]!.includes("ordered, backlog 4"), rows[ordered]);
      assert(rows[gone]!.startsWith("disabled|"), rows[gone]);
      assert(rows[gone]!.includes("✕ DISABLED: it answered 410 Gone"), rows[gone]);
      assert(rows[gone]!.includes("unordered; at most 5/s"), rows[gone]);
      const injected = await page.evaluate<string[]>(
        `[...document.querySelectorAll(".xss")].map((e) => e.outerHTML.slice(0, 80))`,
      );
      assertEquals(injected, [], "markup from job or receiver text became elements");
      assertEquals(await page.evaluate<unknown>("window.xss ?? null"), null);
      // The text is there, as text, in each place it comes from.
      const text = await page.evaluate<string>("document.body.innerText");
      for (
        const where of [
          "url",
          "dead",
          "detail",
          "origin",
          "failure",
          "key",
          "ep-url",
          "ep-url-ordered",
          "ep-description",
          "ep-description-ordered",
          "ep-type",
          "ep-failure",
          "event-type",
          "event-endpoint",
        ]
      ) {
        assert(text.includes(MARK(where)), `${where}'s text is shown as text`);
      }
      // No secret anywhere: not in the text, the markup, nor any answer the page read.
      const html = await page.evaluate<string>("document.documentElement.outerHTML");
      for (const secret of [ENDPOINT_SECRET, HEADER_VALUE]) {
        assert(!text.includes(secret) && !html.includes(secret), "a secret on the page");
      }
      const read = await page.evaluate<string>(
        `fetch("/v1/endpoint-health").then((r) => r.text())`,
      );
      assert(read.includes(ordered) && !read.includes(ENDPOINT_SECRET), read.slice(0, 200));
      assert(!read.includes(HEADER_VALUE), "a header's value in the page's endpoint read");
      assertEquals(page.exceptions, []);
    } finally {
      await browser?.close();
      await server.shutdown();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});
