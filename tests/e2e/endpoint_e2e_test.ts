/**
 * Endpoints against five real `hookd node` processes, through `hookd endpoint` as a user runs
 * it: a create on one node is read back from every node, survives a kill -9 and restart of
 * the node that took it, and an update and a disable taken on other nodes reach every node.
 */

import { assert, assertEquals } from "../assert.ts";
import { runHookd } from "./hookd_process.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";
import { ready, startCluster } from "./store_cluster.ts";

/** `hookd <args>`, bounded in time (runHookd kills it past its limit). */
const hookd = (...args: string[]) => runHookd(args, { limitMs: 30_000 });

Deno.test({
  name: "an endpoint created on one node is read from every node and outlives a restart",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const { cluster, ids } = await startCluster();
    try {
      const url = (id: string) => cluster.httpUrls.get(id)!;
      const added = await hookd(
        "endpoint",
        "add",
        "--node",
        url("n1"),
        "--url",
        "http://127.0.0.1:9/hook",
        "--event-type",
        "invoice.paid",
        "--ordered",
        "--json",
      );
      assertEquals(added.code, 0, added.stderr);
      const created = JSON.parse(added.stdout) as Record<string, unknown>;
      const id = created.id as string;
      assert(typeof created.secret === "string" && created.secret.startsWith("whsec_"));

      const readEverywhere = async (expect: (e: Record<string, unknown>) => boolean) => {
        for (const node of ids) {
          const ok = await waitUntil(async () => {
            const r = await fetch(`${url(node)}/v1/endpoints/${id}`);
            const body = await r.json();
            return r.status === 200 && expect(body);
          }, 10_000);
          assert(ok, `${node} reads the endpoint as expected`);
        }
      };
      await readEverywhere((e) => e.url === "http://127.0.0.1:9/hook" && e.ordered === true);

      // The node that took the create dies without a word and comes back from its disk.
      await cluster.kill("n1");
      cluster.start("n1");
      assert(await waitUntil(() => ready(cluster, "n1"), 30_000), "n1 ready again");
      const shown = await hookd("endpoint", "show", "--node", url("n1"), id, "--json");
      assertEquals(shown.code, 0, shown.stderr);
      // A read leaves the secrets out (`hookd endpoint secret` shows them); the rest is the same.
      const { secret, previous_secret: _previous, ...readable } = created;
      assertEquals(JSON.parse(shown.stdout), readable);
      const secrets = await hookd("endpoint", "secret", "--node", url("n1"), id, "--json");
      assertEquals(secrets.code, 0, secrets.stderr);
      assertEquals(JSON.parse(secrets.stdout).secret, secret);

      const updated = await hookd(
        "endpoint",
        "update",
        "--node",
        url("n3"),
        id,
        "--all-event-types",
        "--description",
        "billing",
      );
      assertEquals(updated.code, 0, updated.stderr);
      const disabled = await hookd("endpoint", "disable", "--node", url("n5"), id);
      assertEquals(disabled.code, 0, disabled.stderr);
      await readEverywhere((e) =>
        e.disabled === true && e.disabled_reason === "manual" && e.description === "billing" &&
        Array.isArray(e.event_types) && e.event_types.length === 0
      );
      const listed = await hookd("endpoint", "list", "--node", url("n2"));
      assertEquals(listed.code, 0, listed.stderr);
      assert(listed.stdout.includes(`${id}  disabled:manual  *  http://127.0.0.1:9/hook`));

      // Exit codes as `hookd submit`'s: 1 refused (no such endpoint, invalid), 2 usage.
      assertEquals((await hookd("endpoint", "show", "--node", url("n2"), "ep_nope")).code, 1);
      const invalid = await hookd("endpoint", "add", "--node", url("n2"), "--url", "nope");
      assertEquals(invalid.code, 1);
      assert(invalid.stderr.includes("url"), invalid.stderr);
      assertEquals((await hookd("endpoint", "update", "--node", url("n2"), id)).code, 2);
      const unreachable = await hookd("endpoint", "list", "--node", "http://127.0.0.1:9");
      assertEquals(unreachable.code, 3);
    } finally {
      await cluster.stopAll();
    }
  },
});
