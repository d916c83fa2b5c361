/**
 * The dashboard as a person uses it, in headless Chromium driven over the DevTools Protocol:
 * three real `hookd node` processes with an API token, a sink that takes every job and a
 * receiver that fails until the test lets it recover. The test submits jobs to both, opens
 * n1's page and checks what is on screen: the page asks for the token (and never puts it in a
 * URL), every member alive, the submitted jobs listed, a job's attempts with the node that made
 * them, the failing receiver marked FAILING, dead letters that the Retry button brings back and
 * that are then delivered, a page that fits a phone's width, and a member shown DEAD after its
 * process is killed. Endpoints and events too: two endpoints created through n2 (one at the
 * sink, one ordered at a receiver that keeps failing) and events sent through n3 show on n1's
 * page with the attempts every node made (n1 applies their delivery records), the failing one
 * FAILING with its ordered backlog; an event looked up by id lists its two jobs, and no
 * endpoint secret is anywhere on the page.
 *
 * Bounded: every wait has a limit; the browser, the nodes, the receivers and the temporary
 * directory go in `finally`. With HOOKD_DASHBOARD_SCREENSHOT=path it also runs a short load and
 * saves a screenshot of the page under it there (docs/dashboard.png comes from this).
 */

import { assert, assertEquals } from "../assert.ts";
import { startSink } from "../../src/process/sink.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  waitUntil,
} from "../../src/cluster/local_cluster.ts";
import { encodeHex } from "../../src/lib/hex.ts";
import { Browser, findChromium, type Page } from "./cdp.ts";

const TOKEN = "dashboard-test-token-0123456789";
const NODES = 3;
const GOOD_JOBS = 8;
const BAD_JOBS = 3;
/** `invoice.paid` events sent to the two endpoints (each also a job the sink receives). */
const EVENTS = 3;
const CHROMIUM = findChromium();
const IN_CI = Deno.env.get("CI") === "true";
const SCREENSHOT_PATH = Deno.env.get("HOOKD_DASHBOARD_SCREENSHOT");

/** A receiver that answers 500 until `healthy` is set, then 204. */
function flakyReceiver() {
  const state = { healthy: false, failures: 0, successes: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.body?.cancel();
    if (state.healthy) {
      state.successes++;
      return new Response(null, { status: 204 });
    }
    state.failures++;
    return new Response("receiver down for maintenance", { status: 500 });
  });
  return { state, server, url: `http://127.0.0.1:${server.addr.port}` };
}

/** A POST with the token; retries a 503 (a node still catching up) a bounded number of times. */
async function postRetrying(
  url: string,
  body: Record<string, unknown>,
  want: number,
): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (response.status === want) return answer;
    if (response.status !== 503) {
      throw new Error(`POST ${url}: ${response.status} ${JSON.stringify(answer)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`POST ${url}: the node kept answering 503`);
}

const ENDPOINT_SECRET = "whsec_ZGFzaGJvYXJkLW5ldmVyLXNob3dzLXRoaXMtc2VjcmV0";

/** POST /v1/jobs with the token; retries a 503 (a node still catching up) a bounded number of times. */
async function submit(api: string, job: Record<string, unknown>): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const response = await fetch(`${api}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(job),
    });
    const body = await response.json();
    if (response.status === 202) return body.id as string;
    if (response.status !== 503) {
      throw new Error(`submit: ${response.status} ${JSON.stringify(body)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("submit: the node kept answering 503");
}

Deno.test({
  name:
    "dashboard in headless Chromium: token, members, jobs, attempts, receivers, retry, a dead member",
  ignore: CHROMIUM === undefined && !IN_CI,
  async fn() {
    if (CHROMIUM === undefined) {
      throw new Error("no Chromium found (HOOKD_CHROMIUM, or Debian's chromium-headless-shell)");
    }
    const root = await Deno.makeTempDir({ prefix: "hookd-dashboard-test-" });
    const nodeStderr: string[] = [];
    const unexpected: string[] = [];
    const sink = await startSink({ hostname: "127.0.0.1", port: 0 });
    const flaky = flakyReceiver();
    // The ordered endpoint's receiver: failing for the whole test.
    const broken = flakyReceiver();
    const specs = localNodeSpecs(NODES, "127.0.0.1", freeUdpPortRange(NODES));
    const ids = specs.map((s) => s.id);
    const cluster = new LocalCluster({
      nodes: specs,
      clusterKey: encodeHex(crypto.getRandomValues(new Uint8Array(32))),
      dataRoot: `${root}/data`,
      extraArgs: () => [
        "--allow-private-targets",
        "--retry-schedule",
        "200,200",
        "--api-token",
        TOKEN,
      ],
      onStderr: (id, line) => {
        nodeStderr.push(`[${id}] ${line}`);
        if (nodeStderr.length > 200) nodeStderr.shift();
      },
      onUnexpectedExit: (id, status) => unexpected.push(`${id} exited with ${status.code}`),
    });
    let browser: Browser | undefined;
    let page: Page | undefined;
    try {
      cluster.startAll();
      const ready = await waitUntil(
        async () =>
          cluster.everyViewHolds(ids, ids, "member-alive") &&
          ids.every((id) => cluster.httpUrls.has(id)) &&
          (await fetch(`${cluster.httpUrls.get("n1")}/readyz`).then(async (r) => {
            await r.body?.cancel();
            return r.status === 200;
          })),
        60_000,
        100,
      );
      assert(ready, `the cluster did not become ready:\n${nodeStderr.join("\n")}`);
      const api = cluster.httpUrls.get("n1")!;
      const sinkUrl = `http://127.0.0.1:${sink.port}`;

      const good: string[] = [];
      for (let i = 0; i < GOOD_JOBS; i++) {
        good.push(await submit(api, { url: `${sinkUrl}/hook`, payload: { order: i } }));
      }
      const bad: string[] = [];
      for (let i = 0; i < BAD_JOBS; i++) {
        bad.push(
          await submit(api, { url: `${flaky.url}/hook`, payload: { refund: i }, maxAttempts: 2 }),
        );
      }

      browser = await Browser.launch(CHROMIUM, {
        userDataDir: `${root}/chromium`,
        width: 1280,
        height: 1000,
      });
      page = await browser.newPage();
      await page.setViewport(1280, 1000);
      await page.goto(`${api}/`);

      // The node has a token: the page asks for it before it shows anything.
      await page.waitFor(`!document.getElementById("token-panel").hidden`, {
        what: "the token form",
      });
      // Nothing of the node's shows before the token: the main panels take no room on screen.
      assertEquals(
        await page.evaluate<number>(`document.getElementById("main").getClientRects().length`),
        0,
        "the panels are not shown before the token is given",
      );
      await page.type("#token-input", TOKEN);
      await page.click("#token-submit");

      // Every member alive, as n1 sees it.
      const members = await page.waitFor<string[]>(
        `(() => {
          const rows = [...document.querySelectorAll("#members tbody tr")];
          return rows.length === ${NODES} && rows.every((r) => r.innerText.includes("alive")) &&
            rows.map((r) => r.innerText);
        })()`,
        { what: "three members alive" },
      );
      assertEquals(members.map((r) => r.split("\t")[0]), ["n1 (this node)", "n2", "n3"]);

      // The submitted jobs are listed; the sink's are delivered.
      const recent = await page.waitFor<string[]>(
        `(() => {
          const rows = [...document.querySelectorAll("#recent-jobs tbody tr")];
          const byId = new Map(rows.map((r) => [r.dataset.job, r.innerText]));
          const good = ${JSON.stringify(good)}, bad = ${JSON.stringify(bad)};
          return good.every((id) => (byId.get(id) ?? "").includes("delivered")) &&
            bad.every((id) => byId.has(id)) && rows.map((r) => r.innerText);
        })()`,
        { what: "the submitted jobs listed, the sink's delivered" },
      );
      assert(recent.length >= GOOD_JOBS + BAD_JOBS);

      await checkEndpointsAndEvents(page, cluster, sinkUrl, broken.url);

      // A job's attempts: clicked from the list like a person would.
      await page.click(`#recent-jobs tr[data-job="${good[0]}"] button.link`);
      const attempts = await page.waitFor<string[]>(
        `(() => {
          const rows = [...document.querySelectorAll("#job-attempts tbody tr")];
          return rows.length > 0 && rows[0].dataset.outcome === "success" &&
            rows.map((r) => r.innerText);
        })()`,
        { what: "the delivered job's attempt" },
      );
      assertEquals(attempts.length, 1);
      assert(/^1\t.*\t204 success\t.*\tn1\t/.test(attempts[0]!), attempts[0]);

      // The failing receiver stands out, and its jobs became dead letters after two attempts.
      const origin = flaky.url;
      await page.waitFor(
        `document.querySelector('#receivers tr[data-origin="${origin}"]')?.dataset.health === "failing"`,
        { what: "the failing receiver marked failing" },
      );
      const receiverRow = await page.evaluate<string>(
        `document.querySelector('#receivers tr[data-origin="${origin}"]').innerText`,
      );
      assert(
        receiverRow.includes("FAILING") && receiverRow.includes("500 http_error"),
        receiverRow,
      );
      assertEquals(
        await page.evaluate<string>(
          `document.querySelector('#receivers tr[data-origin="${sinkUrl}"]')?.dataset.health`,
        ),
        "ok",
      );
      const deadRows = await page.waitFor<string[]>(
        `(() => {
          const ids = [...document.querySelectorAll("#dead-letters tbody tr")].map((r) => r.dataset.job);
          return ${JSON.stringify(bad)}.every((id) => ids.includes(id)) && ids;
        })()`,
        { what: "three dead letters" },
      );
      assertEquals(deadRows.length, BAD_JOBS);

      // The full attempt history of a dead letter: typed into the lookup form.
      await page.type("#lookup-input", bad[1]!);
      await page.click("#lookup-submit");
      const history = await page.waitFor<string[]>(
        `(() => {
          const rows = [...document.querySelectorAll("#job-attempts tbody tr")];
          return document.getElementById("job-detail-title").innerText.includes(${
          JSON.stringify(bad[1])
        }) && rows.length === 2 && rows.map((r) => r.innerText);
        })()`,
        { what: "the dead letter's two attempts" },
      );
      for (const row of history) {
        assert(/\t500 http_error\t.*\tn1\treceiver down for maintenance$/.test(row), row);
      }

      // Retry from the button once the receiver is back: the job leaves the dead letters and
      // is delivered.
      flaky.state.healthy = true;
      const retried = bad[0]!;
      await page.click(`#dead-letters tr[data-job="${retried}"] button.retry`);
      await page.waitFor(
        `document.getElementById("dead-message").innerText.includes("Retry of ${retried} requested")`,
        { what: "the retry acknowledged" },
      );
      // It may leave the list at once; follow it in the job panel.
      await page.type("#lookup-input", retried);
      await page.click("#lookup-submit");
      await page.waitFor(
        `document.getElementById("job-detail").dataset.state === "delivered" &&
          document.getElementById("job-detail-title").innerText.includes("${retried}")`,
        { what: "the retried job delivered", timeoutMs: 20_000 },
      );
      await page.waitFor(
        `![...document.querySelectorAll("#dead-letters tbody tr")].some((r) => r.dataset.job === "${retried}")`,
        { what: "the retried job gone from the dead letters" },
      );
      assertEquals(flaky.state.successes, 1, "the receiver got the retried job once");
      // Its attempts count on across the retry, and the retry's attempt says so.
      const retriedAttempts = await page.evaluate<string[]>(
        `[...document.querySelectorAll("#job-attempts tbody tr")].map((r) => r.cells[0].innerText)`,
      );
      assertEquals(retriedAttempts, ["1", "2", "3 (retry 1)"]);
      const attemptsField = await page.evaluate<string>(
        `document.getElementById("job-detail-fields").innerText`,
      );
      assert(attemptsField.includes("3 (retry 1: 1 of 2)"), attemptsField);
      assertEquals(sink.stats().unique, GOOD_JOBS + EVENTS);

      // The charts drew the deliveries (a line, not a flat start).
      await page.waitFor(
        `/L/.test(document.querySelector("#chart-deliveries path").getAttribute("d"))`,
        { what: "a delivery line on the chart" },
      );

      if (SCREENSHOT_PATH !== undefined) {
        // The receiver fails again, so the screenshot shows a failing one beside the sink.
        flaky.state.healthy = false;
        await screenshotUnderLoad(page, api, sinkUrl, flaky.url);
      }

      // A phone's width: everything stacks; only tables scroll, inside their panels.
      await page.setViewport(390, 844, true);
      const overflow = await page.waitFor<number>(
        `new Promise((r) => requestAnimationFrame(() => r(document.documentElement.scrollWidth)))`,
        { what: "layout at phone width" },
      );
      assert(overflow <= 390, `the page is ${overflow} px wide on a 390 px screen`);
      // For a person checking the phone layout by eye: the page in screen-high slices.
      const phonePrefix = Deno.env.get("HOOKD_DASHBOARD_PHONE_PNG_PREFIX");
      for (let i = 0; phonePrefix !== undefined && i < 8; i++) {
        const slice = await page.screenshot({ y: i * 844, height: 844 }).catch(() => undefined);
        if (slice === undefined) break;
        await Deno.writeFile(`${phonePrefix}${i}.png`, slice);
      }
      await page.setViewport(1280, 1000);

      // A member killed: n1's page shows it dead.
      await cluster.kill("n3");
      await page.waitFor(
        `document.querySelector('#members tr[data-node="n3"]')?.innerText.includes("DEAD")`,
        { what: "n3 shown dead", timeoutMs: 30_000, pollMs: 250 },
      );

      const png = await page.screenshot();
      assertEquals([...png.slice(1, 4)], [0x50, 0x4e, 0x47], "a PNG screenshot");
      await Deno.writeFile(`${root}/dashboard.png`, png);

      // The token went in headers only.
      assert(page.requests.length > 0);
      const leaked = page.requests.filter((u) => u.includes(TOKEN));
      assertEquals(leaked, [], "no request URL carries the token");
      assert(page.requests.every((u) => u.startsWith(api) || u.startsWith("data:")), "same origin");
      assertEquals(page.exceptions, [], "no uncaught exception in the page");
      assertEquals(unexpected, [], "no node died by itself");
    } catch (error) {
      // Where the page was when it went wrong, for whoever reads the failure.
      const failurePng = Deno.env.get("HOOKD_DASHBOARD_FAILURE_PNG");
      if (failurePng !== undefined && page !== undefined) {
        await page.screenshot().then((png) => Deno.writeFile(failurePng, png)).catch(() => {});
      }
      throw error;
    } finally {
      await browser?.close();
      await cluster.stopAll();
      await sink.close();
      await flaky.server.shutdown();
      await broken.server.shutdown();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});

/**
 * Endpoints made through n2 and events sent through n3, seen on n1's page: the sink's endpoint
 * healthy with every event's attempt, the ordered one at a failing receiver FAILING with a
 * backlog, an event's jobs by its id, and no secret on the page.
 */
async function checkEndpointsAndEvents(
  page: Page,
  cluster: LocalCluster,
  sinkUrl: string,
  brokenUrl: string,
): Promise<void> {
  const n2 = cluster.httpUrls.get("n2")!;
  const n3 = cluster.httpUrls.get("n3")!;
  const good = await postRetrying(`${n2}/v1/endpoints`, {
    url: `${sinkUrl}/ep/good`,
    event_types: ["invoice.paid"],
    description: "billing at the sink",
    secret: ENDPOINT_SECRET,
    headers: { "x-tenant": "t-7" },
  }, 201);
  const bad = await postRetrying(`${n2}/v1/endpoints`, {
    url: `${brokenUrl}/ep/bad`,
    event_types: ["invoice.paid"],
    description: "ordered, failing",
    secret: ENDPOINT_SECRET,
    ordered: true,
  }, 201);
  const goodId = String(good.id);
  const badId = String(bad.id);
  // n3 fans out from its own table: it must hold both before the events.
  const listed = await waitUntil(async () => {
    const r = await fetch(`${n3}/v1/endpoints`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const ids = ((await r.json()).items ?? []).map((e: { id: string }) => e.id);
    return ids.includes(goodId) && ids.includes(badId);
  }, 20_000);
  assert(listed, "n3 lists both endpoints");
  const events: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const sent = await postRetrying(
      `${n3}/v1/events`,
      { type: "invoice.paid", payload: { invoice: i } },
      202,
    );
    assertEquals(sent.jobs, 2);
    events.push(String(sent.id));
  }
  // n1's page: every event's delivery to the sink counted, whichever node made it; the
  // ordered one failing, its jobs queued behind its head.
  const rows = await page.waitFor<{ good: string; bad: string }>(
    `(() => {
      const row = (id) => document.querySelector('#endpoints tr[data-endpoint="' + id + '"]');
      const good = row(${JSON.stringify(goodId)}), bad = row(${JSON.stringify(badId)});
      return good?.dataset.health === "ok" && good.innerText.includes("0 of ${EVENTS}") &&
        bad?.dataset.health === "failing" && /ordered, backlog [1-9]/.test(bad.innerText) &&
        { good: good.innerText, bad: bad.innerText };
    })()`,
    { what: "both endpoints on n1's page with their health", timeoutMs: 30_000 },
  );
  assert(
    rows.good.includes("billing at the sink") && rows.good.includes("invoice.paid"),
    rows.good,
  );
  assert(rows.good.includes("last success"), rows.good);
  assert(rows.bad.includes("⚠ FAILING") && rows.bad.includes("500 http_error"), rows.bad);
  assert(rows.bad.includes("receiver down for maintenance"), rows.bad);
  // An event by its id: its two jobs; the sink's delivered, opened in the job panel.
  await page.type("#event-lookup-input", events[0]!);
  await page.click("#event-lookup-submit");
  const jobs = await page.waitFor<string[]>(
    `(() => {
      const rows = [...document.querySelectorAll("#event-jobs tbody tr[data-job]")];
      return rows.length === 2 && rows.some((r) => r.dataset.state === "delivered") &&
        rows.map((r) => r.dataset.job);
    })()`,
    { what: "the event's two jobs", timeoutMs: 20_000 },
  );
  const goodJob = `${events[0]}.${goodId}`;
  assertEquals(jobs.sort(), [goodJob, `${events[0]}.${badId}`].sort());
  await page.click(`#event-jobs tr[data-job="${goodJob}"] button.link`);
  await page.waitFor(
    `document.getElementById("job-detail-title").innerText.includes(${JSON.stringify(goodJob)}) &&
      document.querySelector("#job-attempts tbody tr")?.dataset.outcome === "success"`,
    { what: "the event's job with its attempt" },
  );
  const html = await page.evaluate<string>("document.documentElement.outerHTML");
  assert(!html.includes(ENDPOINT_SECRET) && !html.includes("t-7"), "a secret on the page");
}

/**
 * Load for the README's screenshot: jobs to the sink at a steady rate and a few to the failing
 * receiver (made failing again), for long enough that the charts have a shape.
 */
async function screenshotUnderLoad(
  page: Page,
  api: string,
  sinkUrl: string,
  flakyUrl: string,
): Promise<void> {
  const seconds = Number(Deno.env.get("HOOKD_DASHBOARD_LOAD_S") ?? "40");
  const ratePerS = Number(Deno.env.get("HOOKD_DASHBOARD_LOAD_RATE") ?? "150");
  const endMs = performance.now() + seconds * 1000;
  let sent = 0;
  const inFlight = new Set<Promise<unknown>>();
  const startMs = performance.now();
  let shot: Promise<Uint8Array> | undefined;
  while (performance.now() < endMs) {
    // Taken while the load still runs, a few seconds before it ends.
    if (shot === undefined && performance.now() > endMs - 3000) {
      shot = page.setViewport(1280, 1000).then(() => page.screenshot());
    }
    const due = Math.floor(((performance.now() - startMs) / 1000) * ratePerS);
    while (sent < due && inFlight.size < 256) {
      const toFlaky = sent % 50 === 0;
      const p = submit(api, {
        url: `${toFlaky ? flakyUrl : sinkUrl}/hook`,
        payload: { n: sent },
        ...(toFlaky ? { maxAttempts: 2 } : {}),
      }).catch(() => {}).finally(() => inFlight.delete(p));
      inFlight.add(p);
      sent++;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(inFlight);
  await Deno.writeFile(SCREENSHOT_PATH!, await (shot ?? page.screenshot()));
}
