/**
 * A Ctrl-C reaches every process of the terminal's group, so a node under `hookd cluster` or
 * `deno task` gets a second signal while it drains (the supervisor's SIGTERM, the task
 * runner's forwarded SIGINT). The node must still finish its graceful stop: exit 0 and print
 * its `stopped` line, with a delivery in flight when the signals arrive.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { freeUdpPorts } from "../../src/cluster/local_cluster.ts";
import { readLines } from "../../src/lib/lines.ts";
import { pollUntil } from "./hookd_process.ts";

Deno.test({
  name:
    "hookd node runs with hookd's V8 flags, and stops gracefully when a second signal arrives while it drains",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn() {
    let releaseReceiver: () => void = () => {};
    const held = new Promise<void>((resolve) => (releaseReceiver = resolve));
    let arrived = 0;
    const receiver = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (r) => {
        await r.arrayBuffer();
        arrived++;
        // Held until the node has had both signals: the attempt is in flight throughout.
        await held;
        return new Response(null, { status: 204 });
      },
    );
    const dir = await Deno.makeTempDir({ prefix: "hookd-node-signal-" });
    const [port] = freeUdpPorts(1);
    const child = hookdCommand([
      "node",
      "--id",
      "n1",
      "--listen",
      `127.0.0.1:${port}`,
      "--peers",
      `127.0.0.1:${port}`,
      "--data",
      `${dir}/n1`,
      "--cluster-key",
      "node-signal-e2e-cluster-key-0123456789",
      "--allow-private-targets",
    ]).spawn();
    const lines: Array<{ event: string; http?: string }> = [];
    const reading = (async () => {
      for await (const line of readLines(child.stdout, { unterminatedLine: "drop" })) {
        lines.push(JSON.parse(line));
      }
    })();
    const stderr = child.stderr.pipeTo(new WritableStream());
    const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
    try {
      assert(await pollUntil(() => lines.some((l) => l.event === "listening"), 30_000));
      const http = lines.find((l) => l.event === "listening")!.http!;
      // Started as every hookd process is (self_command.ts), it runs with HOOKD_V8_FLAGS: a
      // young generation of 16-MiB semi-spaces from the start, not V8's 1 MB.
      const scraped = await (await fetch(`${http}/metrics`)).text();
      const young = Number(/^hookd_v8_young_generation_bytes (\S+)$/m.exec(scraped)?.[1]);
      assert(young >= 8 * 1024 * 1024, `young generation ${young} bytes`);
      const submitted = await fetch(`${http}/v1/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: `http://127.0.0.1:${receiver.addr.port}/`, payload: {} }),
      });
      assertEquals(submitted.status, 202, await submitted.text());
      assert(await pollUntil(() => arrived === 1, 10_000), "the attempt reached the receiver");
      child.kill("SIGINT");
      await new Promise((resolve) => setTimeout(resolve, 100));
      child.kill("SIGTERM");
      await new Promise((resolve) => setTimeout(resolve, 100));
      releaseReceiver();
      const status = await child.status;
      await reading;
      assertEquals(status.code, 0, `exit ${status.code} signal ${status.signal}`);
      assertEquals(lines.at(-1)?.event, "stopped");
    } finally {
      clearTimeout(guard);
      releaseReceiver();
      try {
        child.kill("SIGKILL");
      } catch {
        // Exited.
      }
      await child.status;
      await reading.catch(() => {});
      await stderr.catch(() => {});
      await receiver.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
