// The dashboard page: polls this node's API once per sample interval and draws the cluster,
// the node's throughput and latency, its jobs, its receivers and its dead letters. Everything
// it shows comes from the node that served it; nothing is loaded from anywhere else.
//
// Every value from the node reaches the page through textContent or an SVG attribute, never
// as markup: job URLs, errors, receivers' answers, endpoints' URLs and descriptions and event
// ids are untrusted text. No endpoint secret reaches the page: it reads
// /v1/endpoint-health, which carries none (nor any header's value).

import { ApiError, NodeApi, Unauthorized } from "./api.js";
import { chartPaths } from "./chart.js";
import {
  attemptNumber,
  attemptResult,
  attemptsLabel,
  breakerLabel,
  endpointDeliveryLabel,
  endpointHealth,
  endpointHealthLabel,
  endpointStateLabel,
  formatClock,
  formatMs,
  formatPercent,
  formatRate,
  formatRelative,
  formatSpan,
  healthLabel,
  jobStateLabel,
  memberLabel,
  ratesOf,
  receiverHealth,
} from "./format.js";

const RECENT_JOBS = 20;
const DEAD_LETTERS_PER_PAGE = 10;
const ENDPOINTS_PER_PAGE = 20;
/** Points a chart's "now" figure averages over, so one quiet second does not read as zero. */
const NOW_POINTS = 5;
/** The shortest time a chart spans, ms, so a young node's first points do not fill it. */
const MIN_WINDOW_MS = 60_000;
const SVG_NS = "http://www.w3.org/2000/svg";
const CHART_BOX = { width: 300, height: 100 };

const api = new NodeApi();

const page = {
  running: false,
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  timer: undefined,
  intervalMs: 1000,
  /** Transport address → node id, from the latest cluster view. */
  names: new Map(),
  selfAddress: "",
  /** @type {string | undefined} */
  deadCursor: undefined,
  /** @type {string | undefined} */
  deadNext: undefined,
  deadPageNo: 1,
  /** Dead letters whose Retry was pressed, until they leave the list. */
  retried: new Set(),
  /** @type {string | undefined} */
  endpointsCursor: undefined,
  /** @type {string | undefined} */
  endpointsNext: undefined,
  endpointsPageNo: 1,
  lastOkMs: 0,
};

/** @param {string} id @returns {HTMLElement} */
function $(id) {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element;
}

/**
 * A table row of plain-text cells; a cell is a string, or [text or Node, className], or a Node
 * (built from text nodes by the caller).
 * @param {(string | number | [string | number | Node, string] | Node)[]} cells
 */
function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) {
      td.append(cell);
    } else if (Array.isArray(cell)) {
      if (cell[0] instanceof Node) td.append(cell[0]);
      else td.textContent = String(cell[0]);
      td.className = cell[1];
    } else {
      td.textContent = String(cell);
    }
    tr.append(td);
  }
  return tr;
}

/** @param {HTMLElement} table @param {HTMLTableRowElement[]} rows @param {string} empty */
function fillTable(table, rows, empty) {
  const body = table.querySelector("tbody");
  if (body === null) return;
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = table.querySelectorAll("thead th").length;
    td.className = "empty";
    td.textContent = empty;
    tr.append(td);
    rows = [tr];
  }
  body.replaceChildren(...rows);
}

/** A transport address as a person knows the node: its id, or the address itself. */
function nodeName(/** @type {string} */ address) {
  return page.names.get(address) ?? address;
}

/** A job id that opens the job's details when pressed. @param {string} id */
function jobLink(id) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "link";
  button.textContent = id;
  button.title = "Show this job's attempts";
  button.addEventListener("click", () => lookUp(id));
  return button;
}

// ---------------------------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------------------------

function renderCluster(/** @type {any} */ view) {
  page.selfAddress = view.address;
  page.names = new Map(view.members.map((/** @type {any} */ m) => [m.address, m.nodeId]));
  $("node-name").textContent = `· node ${view.nodeId}`;
  document.title = `hookd ${view.nodeId}`;
  const majority = view.votersReachable >= view.quorum
    ? "a majority is reachable"
    : "⚠ NO MAJORITY: submits are refused";
  $("cluster-summary").textContent = `Role ${view.role}. ${view.votersReachable} of ` +
    `${view.voters} voters reachable, ${view.quorum} needed: ${majority}.`;
  const members = [...view.members].sort((/** @type {any} */ a, /** @type {any} */ b) =>
    a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : a.address < b.address ? -1 : 1
  );
  fillTable(
    $("members"),
    members.map((/** @type {any} */ m) => {
      const tr = row([
        m.address === view.address ? `${m.nodeId} (this node)` : m.nodeId,
        [memberLabel(m.state), "state"],
        [m.incarnation, "num"],
        [m.address, "id"],
        m.voter ? "yes" : "no",
      ]);
      tr.dataset.node = m.nodeId;
      tr.dataset.state = m.state;
      return tr;
    }),
    "No members known yet.",
  );
  const counts = $("job-counts");
  counts.replaceChildren(
    ...["pending", "delivering", "delivered", "dead"].map((state) => {
      const box = document.createElement("div");
      box.dataset.state = state;
      const dt = document.createElement("dt");
      dt.textContent = jobStateLabel(state);
      const dd = document.createElement("dd");
      dd.textContent = String(view.jobs[state]);
      box.append(dt, dd);
      return box;
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Charts
// ---------------------------------------------------------------------------------------------

/**
 * @param {string} figureId
 * @param {string[]} names the lines' names, for the legend
 * @param {string} title for the chart's text alternative
 */
function makeChart(figureId, names, title) {
  const plot = /** @type {HTMLElement} */ ($(figureId).querySelector(".plot"));
  const legend = /** @type {HTMLElement} */ ($(figureId).querySelector(".legend"));
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${CHART_BOX.width} ${CHART_BOX.height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  for (const fraction of [0.25, 0.5, 0.75]) {
    const line = document.createElementNS(SVG_NS, "line");
    line.setAttribute("class", "grid");
    line.setAttribute("x1", "0");
    line.setAttribute("x2", String(CHART_BOX.width));
    line.setAttribute("y1", String(CHART_BOX.height * fraction));
    line.setAttribute("y2", String(CHART_BOX.height * fraction));
    svg.append(line);
  }
  const paths = names.map((_, i) => {
    const path = document.createElementNS(SVG_NS, "path");
    if (i > 0) path.setAttribute("class", "second");
    svg.append(path);
    return path;
  });
  const axis = (/** @type {string} */ className, /** @type {string} */ text) => {
    const span = document.createElement("span");
    span.className = `axis ${className}`;
    span.textContent = text;
    return span;
  };
  const yMax = axis("y-max", "");
  const xStart = axis("x-start", "");
  plot.replaceChildren(svg, yMax, xStart, axis("x-end", "now"));
  const items = names.map((_, i) => {
    const li = document.createElement("li");
    if (i > 0) li.className = "second";
    return li;
  });
  legend.replaceChildren(...items);
  return {
    /**
     * @param {{atMs: number}[]} points
     * @param {(number | null)[][]} lines
     * @param {string[]} nowTexts one per line
     * @param {(v: number) => string} format axis values
     * @param {number} windowMs
     */
    update(points, lines, nowTexts, format, windowMs) {
      const endMs = points.length > 0 ? points[points.length - 1].atMs : Date.now();
      const geometry = chartPaths(points, lines, { ...CHART_BOX, windowMs, endMs });
      geometry.paths.forEach((d, i) => paths[i].setAttribute("d", d === "" ? "M0 0" : d));
      yMax.textContent = format(geometry.yMax);
      xStart.textContent = `−${formatSpan(windowMs)}`;
      items.forEach((li, i) => (li.textContent = `${names[i]}: ${nowTexts[i]}`));
      svg.setAttribute(
        "aria-label",
        `${title}, axis top ${format(geometry.yMax)}: ` +
          names.map((n, i) => `${n} ${nowTexts[i]}`).join(", "),
      );
    },
  };
}

/** @type {ReturnType<typeof makeChart>[]} */
let charts = [];

function makeCharts() {
  charts = [
    makeChart("chart-submits", ["accepted", "rejected"], "Submits per second"),
    makeChart("chart-deliveries", ["delivered", "failed attempts"], "Deliveries per second"),
    makeChart("chart-latency", ["p50", "p99"], "Submit to delivery latency"),
  ];
}

/** Mean of the last few values; the series' now. @param {number[]} values */
function recent(values) {
  const tail = values.slice(-NOW_POINTS);
  return tail.length === 0 ? 0 : tail.reduce((a, b) => a + b, 0) / tail.length;
}

/** The newest non-null value. @param {(number | null)[]} values */
function latest(values) {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}

function renderSeries(/** @type {any} */ series) {
  page.intervalMs = Math.max(250, series.intervalMs);
  const points = series.points;
  // A young node's few points would huddle at the right edge of five minutes: the window
  // grows with the series, from a minute up to all the node keeps.
  const keptMs = series.intervalMs * series.pointsMax;
  const spanMs = points.length > 0 ? points[points.length - 1].atMs - points[0].atMs : 0;
  const grown = Math.max(MIN_WINDOW_MS, Math.ceil(spanMs / 60_000) * 60_000);
  const windowMs = Math.max(series.intervalMs, Math.min(keptMs, grown));
  $("series-note").textContent = `This node, last ${formatSpan(windowMs)}, one point per ` +
    `${formatSpan(series.intervalMs)}; "now" is the mean of the last ${NOW_POINTS} points.`;
  const [submits, deliveries, latency] = charts;
  const accepted = ratesOf(points, "accepted");
  const rejected = ratesOf(points, "rejected");
  submits.update(
    points,
    [accepted, rejected],
    [formatRate(recent(accepted)), formatRate(recent(rejected))],
    formatRate,
    windowMs,
  );
  const delivered = ratesOf(points, "delivered");
  const failed = ratesOf(points, "failedAttempts");
  deliveries.update(
    points,
    [delivered, failed],
    [formatRate(recent(delivered)), formatRate(recent(failed))],
    formatRate,
    windowMs,
  );
  const p50 = points.map((/** @type {any} */ p) => p.p50Ms);
  const p99 = points.map((/** @type {any} */ p) => p.p99Ms);
  latency.update(
    points,
    [p50, p99],
    [formatMs(latest(p50)), formatMs(latest(p99))],
    formatMs,
    windowMs,
  );
}

// ---------------------------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------------------------

function renderRecentJobs(/** @type {any} */ list) {
  const now = Date.now();
  fillTable(
    $("recent-jobs"),
    list.items.map((/** @type {any} */ job) => {
      const tr = row([
        jobLink(job.id),
        [jobStateLabel(job.state), "job-state"],
        [`${job.attemptsMade}/${job.maxAttempts}`, "num"],
        formatRelative(job.submittedAtMs, now),
        [job.url, "url"],
      ]);
      tr.dataset.job = job.id;
      tr.dataset.state = job.state;
      return tr;
    }),
    "No jobs on this node yet.",
  );
}

/** @param {string} id */
function jobPath(id) {
  return `/v1/jobs/${encodeURIComponent(id)}`;
}

/**
 * A lookup by id (a job, an event): its form's input, a detail box with a title, fields and a
 * table, the route it reads, and what a 404 says. It keeps the id open and reads it again on
 * every poll until the box is closed.
 * @param {{input: string, box: string, title: string, fields: string, table: string,
 *   what: string, path: (id: string) => string, render: (value: any) => void,
 *   missing: (id: string) => string}} spec
 */
function makeLookup(spec) {
  /** @type {string | undefined} */
  let current;
  async function refresh() {
    const id = current;
    if (id === undefined) return;
    try {
      const value = await api.get(spec.path(id));
      if (current === id) spec.render(value);
    } catch (error) {
      if (current !== id) return;
      if (error instanceof Unauthorized) throw error;
      $(spec.fields).replaceChildren();
      const message = error instanceof ApiError && error.status === 404
        ? spec.missing(id)
        : `Could not read the ${spec.what}: ${error instanceof Error ? error.message : error}`;
      fillTable($(spec.table), [], message);
    }
  }
  return {
    refresh,
    /** @param {string} id */
    open(id) {
      current = id;
      /** @type {HTMLInputElement} */ ($(spec.input)).value = id;
      $(spec.box).hidden = false;
      $(spec.title).textContent = `${spec.what[0].toUpperCase()}${spec.what.slice(1)} ${id}`;
      $(spec.fields).replaceChildren();
      fillTable($(spec.table), [], "Looking it up…");
      refresh().catch((error) => {
        if (error instanceof Unauthorized) askForToken("The node refused this token.");
      });
    },
    close() {
      current = undefined;
      $(spec.box).hidden = true;
    },
  };
}

/** A detail box's name/value list, as text. @param {string} id @param {[string, string][]} fields */
function fillFields(id, fields) {
  $(id).replaceChildren(
    ...fields.flatMap(([name, value]) => {
      const dt = document.createElement("dt");
      dt.textContent = name;
      const dd = document.createElement("dd");
      dd.textContent = value;
      return [dt, dd];
    }),
  );
}

const jobLookup = makeLookup({
  input: "lookup-input",
  box: "job-detail",
  title: "job-detail-title",
  fields: "job-detail-fields",
  table: "job-attempts",
  what: "job",
  path: jobPath,
  render: (job) => renderJob(job),
  missing: (id) => `No job ${id} on this node or the peers it asked.`,
});

/** @param {string} id */
function lookUp(id) {
  jobLookup.open(id);
}

function renderJob(/** @type {any} */ job) {
  const now = Date.now();
  $("job-detail").dataset.state = job.state;
  /** @type {[string, string][]} */
  const fields = [
    ["State", jobStateLabel(job.state)],
    ["URL", job.url],
    ["Owner", job.owner === "" ? "–" : job.owner],
    ["Submitted", `${formatClock(job.submittedAtMs)} (${formatRelative(job.submittedAtMs, now)})`],
    ["Attempts", attemptsLabel(job)],
  ];
  if (job.finishedAtMs !== undefined) {
    fields.push([
      "Finished",
      `${formatClock(job.finishedAtMs)} (${formatRelative(job.finishedAtMs, now)})`,
    ]);
  }
  if (job.nextAttemptAtMs !== undefined) {
    fields.push(["Next attempt", formatRelative(job.nextAttemptAtMs, now)]);
  }
  if (job.deadReason !== undefined) fields.push(["Why dead", job.deadReason]);
  if (job.idempotencyKey !== undefined) fields.push(["Idempotency key", job.idempotencyKey]);
  fillFields("job-detail-fields", fields);
  fillTable(
    $("job-attempts"),
    job.attempts.map((/** @type {any} */ a) => {
      const tr = row([
        [attemptNumber(a), "num"],
        formatClock(a.startedAtMs),
        [attemptResult(a), "result"],
        [formatMs(a.latencyMs), "num"],
        nodeName(a.node),
        [a.detail, "detail"],
      ]);
      tr.dataset.outcome = a.outcome;
      return tr;
    }),
    "No attempt yet.",
  );
}

// ---------------------------------------------------------------------------------------------
// Receivers
// ---------------------------------------------------------------------------------------------

function renderReceivers(/** @type {any} */ view) {
  const now = Date.now();
  const windowText = formatSpan(view.windowMs);
  $("receivers-note").textContent = `Failed: attempts in the last ${windowText} that did ` +
    "not deliver. Backlog: jobs this node holds for the receiver. FAILING: its circuit " +
    "breaker is open, or at least half its attempts failed.";
  fillTable(
    $("receivers"),
    view.items.map((/** @type {any} */ r) => {
      const health = receiverHealth(r);
      const breaker = r.reopenAtMs !== undefined
        ? `${breakerLabel(r.breaker)}, trial ${formatRelative(r.reopenAtMs, now)}`
        : breakerLabel(r.breaker);
      const lastFailure = r.lastFailure === undefined
        ? "–"
        : `${attemptResult(r.lastFailure)}, ${
          formatRelative(r.lastFailure.atMs, now)
        }: ${r.lastFailure.detail}`;
      const tr = row([
        [r.origin, "origin"],
        [healthLabel(health), "health"],
        [breaker, "breaker"],
        [r.inflight, "num"],
        [r.jobsHeld, "num"],
        [`${r.failures} of ${r.attempts} (${formatPercent(r.failureRate)})`, "num"],
        [lastFailure, "detail"],
      ]);
      tr.dataset.origin = r.origin;
      tr.dataset.health = health;
      return tr;
    }),
    "No receiver attempted recently.",
  );
}

// ---------------------------------------------------------------------------------------------
// Endpoints and events
// ---------------------------------------------------------------------------------------------

function endpointsPath() {
  const cursor = page.endpointsCursor === undefined
    ? ""
    : `&cursor=${encodeURIComponent(page.endpointsCursor)}`;
  return `/v1/endpoint-health?limit=${ENDPOINTS_PER_PAGE}${cursor}`;
}

/** An endpoint's id with its description under it, both as text. @param {any} e */
function endpointCell(e) {
  const cell = document.createDocumentFragment();
  const id = document.createElement("span");
  id.className = "id";
  id.textContent = e.id;
  cell.append(id);
  if (e.description !== "") {
    const description = document.createElement("span");
    description.className = "description";
    description.textContent = e.description;
    cell.append(description);
  }
  return cell;
}

function renderEndpoints(/** @type {any} */ view) {
  if (view.items.length === 0 && page.endpointsPageNo > 1) {
    // The page emptied (endpoints deleted): back to the first.
    page.endpointsCursor = undefined;
    page.endpointsPageNo = 1;
  }
  page.endpointsNext = view.nextCursor;
  const now = Date.now();
  $("endpoints-note").textContent = `Failed: attempts to the endpoint that started in the ` +
    `last ${formatSpan(view.windowMs)} and did not deliver, by any node, as this node has ` +
    "applied their records. Backlog: the pending jobs of an ordered endpoint this node holds " +
    "in its queue. FAILING: at least half of its recent attempts failed.";
  fillTable(
    $("endpoints"),
    view.items.map((/** @type {any} */ e) => {
      const health = endpointHealth(e);
      const h = e.health;
      const lastFailure = h.lastFailure === undefined
        ? "–"
        : `${attemptResult(h.lastFailure)}, ${
          formatRelative(h.lastFailure.atMs, now)
        }: ${h.lastFailure.detail}`;
      const lastSuccess = h.lastSuccessAtMs === undefined
        ? "no success known"
        : `last success ${formatRelative(h.lastSuccessAtMs, now)}`;
      const tr = row([
        [endpointCell(e), "endpoint"],
        [e.url, "url"],
        e.eventTypes.length === 0 ? "all types" : e.eventTypes.join(", "),
        [healthLabelCell(endpointHealthLabel(health), lastSuccess), "health"],
        [
          h.attempts === 0
            ? "0 of 0"
            : `${h.failures} of ${h.attempts} (${formatPercent(h.failures / h.attempts)})`,
          "num",
        ],
        [lastFailure, "detail"],
        endpointDeliveryLabel(e),
        [endpointStateLabel(e), "state"],
      ]);
      tr.dataset.endpoint = e.id;
      tr.dataset.health = health;
      tr.dataset.disabled = String(e.disabled);
      return tr;
    }),
    page.endpointsPageNo === 1 ? "No endpoints yet." : "No more endpoints.",
  );
  $("endpoints-page").textContent = `page ${page.endpointsPageNo}`;
  /** @type {HTMLButtonElement} */ ($("endpoints-first")).disabled = page.endpointsPageNo === 1;
  /** @type {HTMLButtonElement} */ ($("endpoints-next")).disabled =
    page.endpointsNext === undefined;
}

/** A health label with a second, quieter line. @param {string} label @param {string} note */
function healthLabelCell(label, note) {
  const cell = document.createDocumentFragment();
  const main = document.createElement("span");
  main.textContent = label;
  const sub = document.createElement("span");
  sub.className = "description";
  sub.textContent = note;
  cell.append(main, sub);
  return cell;
}

const eventLookup = makeLookup({
  input: "event-lookup-input",
  box: "event-detail",
  title: "event-detail-title",
  fields: "event-detail-fields",
  table: "event-jobs",
  what: "event",
  path: (id) => `/v1/events/${encodeURIComponent(id)}`,
  render: (event) => renderEvent(event),
  missing: (id) =>
    `No event ${id} on this node (a node that missed it answers once anti-entropy brings it).`,
});

function renderEvent(/** @type {any} */ event) {
  const now = Date.now();
  const createdMs = Date.parse(event.created_at);
  /** @type {[string, string][]} */
  const fields = [
    ["Type", event.type],
    ["Submitted", `${formatClock(createdMs)} (${formatRelative(createdMs, now)})`],
    ["Jobs", String(event.jobs.length)],
  ];
  fillFields("event-detail-fields", fields);
  fillTable(
    $("event-jobs"),
    event.jobs.map((/** @type {any} */ j) => {
      const state = j.state ?? "compacted";
      const tr = row([
        [j.endpoint_id, "id"],
        jobLink(j.job_id),
        [j.state === null ? "– no longer held here" : jobStateLabel(j.state), "job-state"],
        [j.attempts, "num"],
      ]);
      tr.dataset.job = j.job_id;
      tr.dataset.state = state;
      return tr;
    }),
    "It went to no endpoint (none took its type when it was sent).",
  );
}

// ---------------------------------------------------------------------------------------------
// Dead letters
// ---------------------------------------------------------------------------------------------

function deadPath() {
  const cursor = page.deadCursor === undefined
    ? ""
    : `&cursor=${encodeURIComponent(page.deadCursor)}`;
  return `/v1/dead-letters?limit=${DEAD_LETTERS_PER_PAGE}${cursor}`;
}

function renderDeadLetters(/** @type {any} */ dead) {
  if (dead.items.length === 0 && page.deadPageNo > 1) {
    // The page emptied (retried or expired): back to the first.
    page.deadCursor = undefined;
    page.deadPageNo = 1;
  }
  page.deadNext = dead.nextCursor;
  const now = Date.now();
  const listed = new Set(dead.items.map((/** @type {any} */ j) => j.id));
  for (const id of page.retried) if (!listed.has(id)) page.retried.delete(id);
  fillTable(
    $("dead-letters"),
    dead.items.map((/** @type {any} */ job) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "retry";
      const retried = page.retried.has(job.id);
      button.textContent = retried ? "Retry requested" : "Retry";
      button.disabled = retried;
      button.setAttribute("aria-label", `Retry job ${job.id}`);
      button.addEventListener("click", () => retry(job.id, button));
      const tr = row([
        jobLink(job.id),
        [`${job.attemptsMade}/${job.maxAttempts}`, "num"],
        [job.deadReason ?? "", "detail"],
        job.finishedAtMs !== undefined ? formatRelative(job.finishedAtMs, now) : "–",
        button,
      ]);
      tr.dataset.job = job.id;
      return tr;
    }),
    page.deadPageNo === 1 ? "No dead letters." : "No more dead letters.",
  );
  $("dead-page").textContent = `page ${page.deadPageNo}`;
  /** @type {HTMLButtonElement} */ ($("dead-first")).disabled = page.deadPageNo === 1;
  /** @type {HTMLButtonElement} */ ($("dead-next")).disabled = page.deadNext === undefined;
}

/** @param {string} id @param {HTMLButtonElement} button */
async function retry(id, button) {
  button.disabled = true;
  button.textContent = "Retrying…";
  try {
    await api.post(`${jobPath(id)}/retry`);
    page.retried.add(id);
    button.textContent = "Retry requested";
    $("dead-message").textContent = `Retry of ${id} requested: it is pending again.`;
    void refreshSoon();
  } catch (error) {
    if (error instanceof Unauthorized) {
      askForToken("The node refused the token.");
      return;
    }
    if (error instanceof ApiError && error.code === "not_dead_letter") {
      // Retried or delivered meanwhile (another click, another node): nothing to try again;
      // the list drops it on the refresh.
      button.textContent = "Not a dead letter";
      $("dead-message").textContent = `Retry of ${id} not needed: ${error.message}`;
      void refreshSoon();
      return;
    }
    button.disabled = false;
    button.textContent = "Retry";
    $("dead-message").textContent = `Retry of ${id} failed: ${
      error instanceof Error ? error.message : error
    }`;
  }
}

// ---------------------------------------------------------------------------------------------
// The poll loop, the status line and the token
// ---------------------------------------------------------------------------------------------

async function refresh() {
  const [cluster, series, receivers, jobs, dead, job, endpoints, event] = await Promise
    .allSettled([
      api.get("/v1/cluster"),
      api.get("/v1/series"),
      api.get("/v1/receivers"),
      api.get(`/v1/jobs?limit=${RECENT_JOBS}`),
      api.get(deadPath()),
      jobLookup.refresh(),
      api.get(endpointsPath()),
      eventLookup.refresh(),
    ]);
  const all = [cluster, series, receivers, jobs, dead, job, endpoints, event];
  if (all.some((r) => r.status === "rejected" && r.reason instanceof Unauthorized)) {
    askForToken(api.hasToken ? "The node refused this token." : "");
    return;
  }
  if (cluster.status === "fulfilled") {
    renderCluster(cluster.value);
    $("main").hidden = false;
  }
  if (series.status === "fulfilled") renderSeries(series.value);
  if (receivers.status === "fulfilled") renderReceivers(receivers.value);
  if (jobs.status === "fulfilled") renderRecentJobs(jobs.value);
  if (dead.status === "fulfilled") renderDeadLetters(dead.value);
  if (endpoints.status === "fulfilled") renderEndpoints(endpoints.value);
  const failure = all.find((r) => r.status === "rejected");
  const status = $("status");
  if (failure === undefined) {
    page.lastOkMs = Date.now();
    status.className = "";
    status.textContent = `live · updated ${formatClock(page.lastOkMs)}`;
  } else {
    const reason = /** @type {PromiseRejectedResult} */ (failure).reason;
    status.className = "stale";
    status.textContent =
      `⚠ this node is not answering (${reason instanceof Error ? reason.message : reason})` +
      (page.lastOkMs > 0 ? `; last update ${formatClock(page.lastOkMs)}` : "");
  }
}

async function tick() {
  clearTimeout(page.timer);
  try {
    await refresh();
  } finally {
    if (page.running) page.timer = setTimeout(tick, page.intervalMs);
  }
}

/** Refreshes now instead of at the next interval (after a user's action). */
function refreshSoon() {
  if (page.running) return tick();
}

/** @param {string} message */
function askForToken(message) {
  page.running = false;
  clearTimeout(page.timer);
  api.clearToken();
  $("main").hidden = true;
  $("forget-token").hidden = true;
  $("token-panel").hidden = false;
  $("token-error").textContent = message;
  $("status").className = "";
  $("status").textContent = "waiting for an API token";
  $("token-input").focus();
}

function start() {
  $("token-panel").hidden = true;
  $("forget-token").hidden = !api.hasToken;
  page.running = true;
  void tick();
}

function wire() {
  makeCharts();
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = /** @type {HTMLInputElement} */ ($("token-input"));
    const token = input.value.trim();
    input.value = "";
    if (token === "") return;
    api.setToken(token);
    start();
  });
  $("forget-token").addEventListener("click", () => askForToken(""));
  $("lookup-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = /** @type {HTMLInputElement} */ ($("lookup-input")).value.trim();
    if (id !== "") lookUp(id);
  });
  $("job-detail-close").addEventListener("click", () => jobLookup.close());
  $("event-lookup-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = /** @type {HTMLInputElement} */ ($("event-lookup-input")).value.trim();
    if (id !== "") eventLookup.open(id);
  });
  $("event-detail-close").addEventListener("click", () => eventLookup.close());
  $("endpoints-first").addEventListener("click", () => {
    page.endpointsCursor = undefined;
    page.endpointsPageNo = 1;
    void refreshSoon();
  });
  $("endpoints-next").addEventListener("click", () => {
    if (page.endpointsNext === undefined) return;
    page.endpointsCursor = page.endpointsNext;
    page.endpointsPageNo++;
    void refreshSoon();
  });
  $("dead-first").addEventListener("click", () => {
    page.deadCursor = undefined;
    page.deadPageNo = 1;
    void refreshSoon();
  });
  $("dead-next").addEventListener("click", () => {
    if (page.deadNext === undefined) return;
    page.deadCursor = page.deadNext;
    page.deadPageNo++;
    void refreshSoon();
  });
  start();
}

wire();
