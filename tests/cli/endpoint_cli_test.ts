/**
 * `hookd endpoint add` as a real subprocess against small fake nodes on 127.0.0.1: after a
 * `no_quorum` answer (the create may be stored there) it tries the next node with the same
 * Idempotency-Key and the same body, secret included, so that node finds the first try's
 * endpoint by the key instead of making a second one.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { fakeNode } from "./fake_node.ts";

const NO_QUORUM = JSON.stringify({ error: { code: "no_quorum", message: "no majority" } });
const CREATED = JSON.stringify({
  id: "ep_0123456789abcdef01234567",
  url: "https://receiver.example/hook",
  event_types: [],
  secret: "whsec_AAAA",
  description: "",
  headers: {},
  rate_limit_per_s: 0,
  ordered: false,
  disabled: false,
  disabled_reason: null,
  created_at: "2026-12-02T00:00:00.000Z",
  updated_at: "2026-12-02T00:00:00.000Z",
});

async function hookd(args: string[]): Promise<{ code: number; stderr: string }> {
  const child = hookdCommand(args, { env: { HOOKD_API_TOKEN: "", HOOKD_NODE: "" } }).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const output = await child.output();
  clearTimeout(guard);
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}

Deno.test("hookd endpoint add tries the next node after no_quorum with the same key and body", async () => {
  const first = fakeNode({ status: 503, body: NO_QUORUM });
  const second = fakeNode({ status: 201, body: CREATED });
  try {
    for (const keyArgs of [[], [], ["--idempotency-key", "customer-42"]]) {
      const run = await hookd([
        "endpoint",
        "add",
        "--node",
        `${first.url},${second.url}`,
        "--url",
        "https://receiver.example/hook",
        ...keyArgs,
      ]);
      assertEquals(run.code, 0, run.stderr);
      const key = first.keys.at(-1);
      assert(key !== null && key !== undefined && key !== "", "the create carried a key");
      if (keyArgs.length > 0) assertEquals(key, "customer-42");
      else assert(key.startsWith("hookd-cli-"), key);
      assertEquals(second.keys.at(-1), key);
      // The same body on both, with a secret the CLI chose (a node's would differ per try).
      assertEquals(second.bodies.at(-1), first.bodies.at(-1));
      const sent = JSON.parse(first.bodies.at(-1)!) as Record<string, unknown>;
      assert(String(sent.secret).startsWith("whsec_"), String(sent.secret));
    }
    // Two runs without a key: two keys and two secrets (each run is its own create).
    assert(first.keys[0] !== first.keys[1]);
    assert(first.bodies[0] !== first.bodies[1]);
    const empty = await hookd([
      "endpoint",
      "add",
      "--node",
      second.url,
      "--url",
      "https://receiver.example/hook",
      "--idempotency-key",
      "",
    ]);
    assertEquals(empty.code, 2, empty.stderr);
  } finally {
    await first.close();
    await second.close();
  }
});
