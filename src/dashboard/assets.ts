/**
 * The dashboard page's files, embedded: imported as text so they are part of the module graph,
 * which `deno compile` bundles into the executable and `deno run` reads from src/ — no build
 * step, no path resolution at run time, nothing for a node to find on disk.
 *
 * Owns the list of files the page may load and how each is served (type, caching, the
 * content security policy that keeps the page to its own node). Must not hold page logic.
 */

import indexHtml from "./static/index.html" with { type: "text" };
import styleCss from "./static/style.css" with { type: "text" };
import appJs from "./static/app.js" with { type: "text" };
import apiJs from "./static/api.js" with { type: "text" };
import chartJs from "./static/chart.js" with { type: "text" };
import formatJs from "./static/format.js" with { type: "text" };

export interface DashboardAsset {
  readonly body: string;
  readonly contentType: string;
}

const JS = "text/javascript; charset=utf-8";

/** `GET /dashboard/<name>`: the page's stylesheet and modules. */
const ASSETS: ReadonlyMap<string, DashboardAsset> = new Map([
  ["style.css", { body: styleCss, contentType: "text/css; charset=utf-8" }],
  ["app.js", { body: appJs, contentType: JS }],
  ["api.js", { body: apiJs, contentType: JS }],
  ["chart.js", { body: chartJs, contentType: JS }],
  ["format.js", { body: formatJs, contentType: JS }],
]);

/** `GET /`: the page. */
export const DASHBOARD_PAGE: DashboardAsset = {
  body: indexHtml,
  contentType: "text/html; charset=utf-8",
};

export function dashboardAsset(name: string): DashboardAsset | undefined {
  return ASSETS.get(name);
}

export function dashboardAssetNames(): string[] {
  return [...ASSETS.keys()];
}

/**
 * Headers every dashboard file is served with. The policy allows this node's own scripts,
 * styles and API and nothing else: no inline script, no other origin, no framing, no form
 * posting anywhere. `no-cache` revalidates after an upgrade; the files are small.
 */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; " +
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; " +
    "frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
});
