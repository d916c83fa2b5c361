/**
 * Rotation, disabling and recover against five real `hookd node` processes (docs/endpoints.md,
 * "Secret rotation", "Disabling, recovering"), through the CLI: after `hookd endpoint rotate`,
 * deliveries verify with `standardwebhooks` under the old and under the new secret; an
 * endpoint answering 410 is disabled ("gone") on every node and gets nothing after; once it is
 * enabled again and answers, `hookd endpoint recover --since` brings its dead jobs back and
 * they are delivered.
 */

import { Webhook } from "standardwebhooks";
import { assert, assertEquals } from "../assert.ts";
import { runHookd } from "./hookd_process.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";
import { startCluster } from "./store_cluster.ts";

const hookd = (...args: string[]) => runHookd(args, { limitMs: 30_000 });

function secretOf(seed: number): string {
  return "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(seed)));
}

interface Receiver {
  readonly url: string;
  /** Every request's body and headers, in arrival order. */
  readonly requests: Array<{ body: string; headers: Record<string, string> }>;
  /** What it answers now. */
  status: number;
  close(): Promise<void>;
}

function startReceiver(status: number): Receiver {
  const requests: Receiver["requests"] = [];
  const receiver = { requests, status };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      requests.push({
        body: await request.text(),
        headers: Object.fromEntries(request.headers.entries()),
      });
      return new Response(null, { status: receiver.status });
    },
  );
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    close: () => server.shutdown(),
  });
}

function verifies(secret: string, r: { body: string; headers: Record<string, string> }): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name:
    "a rotated endpoint's deliveries verify under both secrets; a 410 disables; recover revives",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const live = startReceiver(204);
    const gone = startReceiver(410);
    const { cluster, ids } = await startCluster();
    try {
      const url = (id: string) => cluster.httpUrls.get(id)!;
      const add = async (r: Receiver, secret: string): Promise<string> => {
        const added = await hookd(
          "endpoint",
          "add",
          "--node",
          url(ids[0]!),
          "--url",
          r.url,
          "--event-type",
          "invoice.paid",
          "--secret",
          secret,
          "--json",
        );
        assertEquals(added.code, 0, added.stderr);
        return (JSON.parse(added.stdout) as { id: string }).id;
      };
      const liveId = await add(live, secretOf(1));
      const goneId = await add(gone, secretOf(2));
      const send = async (node: string, n: number): Promise<string> => {
        const response = await fetch(`${url(node)}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ type: "invoice.paid", payload: { n } }),
        });
        const answer = await response.json();
        assertEquals(response.status, 202, JSON.stringify(answer));
        return answer.jobs;
      };
      for (const node of ids) {
        assert(
          await waitUntil(async () => {
            const page = await (await fetch(`${url(node)}/v1/endpoints`)).json();
            return (page.items as unknown[]).length === 2;
          }, 10_000),
          `${node} holds the endpoints`,
        );
      }

      // Rotation through another node; then every delivery verifies under either secret.
      const rotated = await hookd(
        "endpoint",
        "rotate",
        liveId,
        "--node",
        url(ids[1]!),
        "--secret",
        secretOf(3),
        "--json",
      );
      assertEquals(rotated.code, 0, rotated.stderr);
      const view = JSON.parse(rotated.stdout) as Record<string, unknown>;
      assertEquals([view.secret, view.previous_secret], [secretOf(3), secretOf(1)]);
      const sinceMs = Date.now();
      for (const [i, node] of ids.entries()) {
        assert(
          await waitUntil(async () => {
            const e = await (await fetch(`${url(node)}/v1/endpoints/${liveId}/secret`)).json();
            return e.secret === secretOf(3);
          }, 10_000),
          `${node} holds the rotation`,
        );
        await send(node, i);
      }
      assert(await waitUntil(() => live.requests.length >= ids.length, 20_000), "delivered");
      for (const r of live.requests) {
        assert(verifies(secretOf(3), r), "verifies under the new secret");
        assert(verifies(secretOf(1), r), "verifies under the old secret");
      }

      // The 410 endpoint: disabled, gone, on every node; new events no longer go to it.
      for (const node of ids) {
        assert(
          await waitUntil(async () => {
            const e = await (await fetch(`${url(node)}/v1/endpoints/${goneId}`)).json();
            return e.disabled === true && e.disabled_reason === "gone";
          }, 20_000),
          `${node} holds the endpoint disabled (gone)`,
        );
      }
      const before = gone.requests.length;
      assertEquals(await send(ids[2]!, 99), 1, "a new event fans out to the live endpoint only");
      const dead = await (await fetch(`${url(ids[0]!)}/v1/dead-letters`)).json();
      const goneDead = (dead.items as Array<{ id: string }>).filter((j) => j.id.endsWith(goneId));
      assert(goneDead.length >= 1, "its jobs are dead letters");

      // Enabled again and answering: recover revives its dead jobs since the rotation.
      gone.status = 204;
      const enabled = await hookd("endpoint", "enable", goneId, "--node", url(ids[3]!));
      assertEquals(enabled.code, 0, enabled.stderr);
      assert(
        await waitUntil(async () => {
          const e = await (await fetch(`${url(ids[4]!)}/v1/endpoints/${goneId}`)).json();
          return e.disabled === false;
        }, 10_000),
        "enabled everywhere",
      );
      const bad = await hookd(
        "endpoint",
        "recover",
        goneId,
        "--node",
        url(ids[4]!),
        "--since",
        "x",
      );
      assertEquals(bad.code, 1, "a bad time is refused");
      const recovered = await hookd(
        "endpoint",
        "recover",
        goneId,
        "--node",
        url(ids[4]!),
        "--since",
        String(sinceMs),
      );
      assertEquals(recovered.code, 0, recovered.stderr);
      const count = Number(/recovered (\d+)/.exec(recovered.stdout)?.[1]);
      assert(count >= 1 && count <= ids.length, recovered.stdout);
      assert(
        await waitUntil(() => gone.requests.length >= before + count, 20_000),
        "the revived jobs are delivered",
      );
      for (const r of gone.requests.slice(before)) assert(verifies(secretOf(2), r));
    } finally {
      await cluster.stopAll();
      await live.close();
      await gone.close();
    }
  },
});
