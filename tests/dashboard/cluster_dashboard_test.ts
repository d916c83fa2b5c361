/**
 * `hookd cluster --sink` prints a dashboard URL (on stderr for people, in `cluster-ready` for
 * scripts) that opens on a live page: the page itself, and its node's API answering with every
 * member alive. The browser test covers what the page then shows.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { readLines } from "../../src/lib/lines.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";

Deno.test("hookd cluster --sink prints a dashboard URL that serves a live page", async () => {
  const child = hookdCommand(["cluster", "--sink", "--nodes", "3", "--quiet"]).spawn();
  const stderr: string[] = [];
  const stderrDone = (async () => {
    for await (const line of readLines(child.stderr)) stderr.push(line);
  })();
  const ready = Promise.withResolvers<Record<string, unknown> | undefined>();
  const stdoutDone = (async () => {
    for await (const line of readLines(child.stdout, { unterminatedLine: "drop" })) {
      const event = JSON.parse(line);
      if (event.event === "cluster-ready") ready.resolve(event);
    }
    ready.resolve(undefined);
  })();
  const timeout = setTimeout(() => ready.resolve(undefined), 60_000);
  try {
    const event = await ready.promise;
    assert(event !== undefined, `no cluster-ready line:\n${stderr.join("\n")}`);
    const url = String(event.dashboard);
    assert(/^http:\/\/127\.0\.0\.1:\d+\/$/.test(url), url);
    // The block for people follows the JSON line, on the other stream.
    const named = await waitUntil(() => stderr.some((l) => l.includes(`dashboard  ${url}`)), 5000);
    assert(named, `the ready block names the dashboard:\n${stderr.join("\n")}`);
    const page = await fetch(url);
    assertEquals(page.status, 200);
    assert((page.headers.get("content-type") ?? "").startsWith("text/html"));
    assert((await page.text()).includes('<script type="module" src="/dashboard/app.js">'));
    const cluster = await (await fetch(new URL("/v1/cluster", url))).json();
    assertEquals(cluster.members.length, 3);
    assert(cluster.members.every((m: { state: string }) => m.state === "alive"));
  } finally {
    clearTimeout(timeout);
    try {
      child.kill("SIGTERM");
    } catch {
      // Already exited.
    }
    const killer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
    }, 15_000);
    await child.status;
    clearTimeout(killer);
    await stdoutDone;
    await stderrDone;
  }
});
