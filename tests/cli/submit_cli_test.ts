/**
 * `hookd submit` as a real subprocess against small fake nodes on 127.0.0.1 (Deno.serve), so
 * the request it sends and the exit code it ends with are what a user's shell sees.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { fakeNode } from "./fake_node.ts";

const ACCEPTED = { status: 202, body: '{"id":"job_1","existing":false}' };

async function submit(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = hookdCommand(["submit", ...args], {
    env: { HOOKD_API_TOKEN: "", HOOKD_NODE: "", HOOKD_WEBHOOK_SECRET: "" },
  }).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const output = await child.output();
  clearTimeout(guard);
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

Deno.test("hookd submit sends the payload's numbers as written: a 64-bit id, 1e400, 1.10", async () => {
  const node = fakeNode(ACCEPTED);
  try {
    const payload = '{"id": 12345678901234567890, "big": 1e400, "price": 1.10}';
    const run = await submit([
      "--node",
      node.url,
      "--url",
      "https://receiver.example/hook",
      "--data",
      payload,
    ]);
    assertEquals(run.code, 0, run.stderr);
    assertEquals(run.stdout.trim(), "job_1");
    assertEquals(node.bodies.length, 1);
    const sent = node.bodies[0]!;
    assertEquals(JSON.parse(sent).url, "https://receiver.example/hook");
    for (const number of ["12345678901234567890", "1e400", "1.10"]) {
      assert(sent.includes(number), `${number} reaches the node as written: ${sent}`);
    }
  } finally {
    await node.close();
  }
});

Deno.test("hookd submit takes a proxy's 502 or 504 (its node down or slow) as unavailable: the next node is tried, and exit 3 when none took it", async () => {
  const badGateway = fakeNode({
    status: 502,
    body: "<html><body>502 Bad Gateway</body></html>",
    contentType: "text/html",
  });
  const gatewayTimeout = fakeNode({
    status: 504,
    body: "upstream timed out",
    contentType: "text/plain",
  });
  const good = fakeNode(ACCEPTED);
  try {
    const target = ["--url", "https://receiver.example/hook"];
    const next = await submit(["--node", `${badGateway.url},${good.url}`, ...target]);
    assertEquals(next.code, 0, next.stderr);
    assertEquals(next.stdout.trim(), "job_1");
    assertEquals(good.bodies.length, 1);
    // The same key went to both, so the second cannot make a second job.
    assertEquals(badGateway.keys.length, 1);
    assert(good.keys[0]?.startsWith("hookd-cli-"), String(good.keys[0]));
    assertEquals(badGateway.keys[0], good.keys[0]);

    const none = await submit(["--node", `${badGateway.url},${gatewayTimeout.url}`, ...target]);
    assertEquals(none.code, 3, none.stderr);
    assert(none.stderr.includes("safe to try again"), none.stderr);
  } finally {
    await badGateway.close();
    await gatewayTimeout.close();
    await good.close();
  }
});
