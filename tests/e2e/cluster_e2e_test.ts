/**
 * `hookd cluster` as a user runs it: five real node processes on loopback converge, and a
 * SIGTERM stops every one of them (each leaves gracefully) with exit code 0.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { freeUdpPortRange } from "../../src/cluster/local_cluster.ts";
import { readLines } from "../../src/lib/lines.ts";

Deno.test("hookd cluster starts five nodes that converge and stops them all on SIGTERM", async () => {
  const basePort = freeUdpPortRange(5);
  const child = hookdCommand(["cluster", "--base-port", String(basePort)], { stderr: "inherit" })
    .spawn();
  const events: Array<{ event: string; observer?: string; node?: string }> = [];
  let sawReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (sawReady = resolve));
  const reading = (async () => {
    for await (const line of readLines(child.stdout, { unterminatedLine: "drop" })) {
      const event = JSON.parse(line);
      events.push(event);
      if (event.event === "cluster-ready") sawReady();
    }
  })();
  const timeout = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    await Promise.race([ready, child.status]);
    assert(events.some((e) => e.event === "cluster-ready"), "the cluster never became ready");
    child.kill("SIGTERM");
    const status = await child.status;
    await reading;
    assertEquals(status.code, 0);
    assertEquals(events.at(-1)?.event, "cluster-stopped");
    const stopped = new Set(events.filter((e) => e.event === "stopped").map((e) => e.observer));
    assertEquals(stopped.size, 5, "every node printed its own stop");
  } finally {
    clearTimeout(timeout);
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await child.status;
    await reading;
  }
});
