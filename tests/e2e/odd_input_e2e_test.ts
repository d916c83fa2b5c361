/**
 * Issue 17's acceptance on real processes: two submits the API used to accept and the cluster
 * could not store — a URL of about 10,000 bytes of UTF-8 (5,000 × "é") and 300 small headers —
 * are each answered 400 naming the field (or stored, replicated and delivered), while 900
 * ordinary jobs go around them, a node is SIGKILLed and restarted meanwhile, and every
 * acknowledged job reaches the receiver. Before the fix both were answered 503 (retry!), every
 * peer dropped the replication messages that carried them, and their confirm rounds ran for
 * ever.
 */

import { assert, assertEquals } from "../assert.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";
import { postJson, ready, startCluster, startReceiver, submit } from "./store_cluster.ts";

Deno.test({
  name:
    "a submit the cluster cannot store is a 400 naming the field; the jobs around it, and a restarted node, are unharmed",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = startReceiver();
    const { cluster, ids } = await startCluster();
    try {
      const odd: Array<{ name: string; field: string; body: Record<string, unknown> }> = [
        {
          name: "a URL of 5,000 × é",
          field: "url",
          body: { url: `${receiver.url}?q=${"é".repeat(5_000)}`, payload: { odd: 1 } },
        },
        {
          name: "300 small headers",
          field: "headers",
          body: {
            url: receiver.url,
            payload: { odd: 2 },
            headers: Object.fromEntries(
              Array.from({ length: 300 }, (_, i) => [`x-h-${i}`, "v"]),
            ),
          },
        },
      ];
      const acked: string[] = [];
      const oddStored: string[] = [];
      let restartedAtMs = 0;
      for (let n = 0; n < 900; n++) {
        if (n === 300) await cluster.kill("n3");
        if (n === 600) {
          cluster.start("n3");
          restartedAtMs = performance.now();
        }
        if (n === 150 || n === 450) {
          // Each odd submit goes to a node that is up, between ordinary ones.
          const o = odd[n === 150 ? 0 : 1]!;
          const answer = await postJson(cluster.httpUrls.get(ids[n % 2]!)!, "/v1/jobs", o.body);
          if (answer.status === 202 && answer.id !== undefined) {
            oddStored.push(answer.id);
          } else {
            assertEquals(
              [answer.status, answer.code, answer.field],
              [400, "invalid", o.field],
              `${o.name}: ${JSON.stringify(answer)}`,
            );
            assert(/bytes|at most|limit/.test(answer.message ?? ""), answer.message);
          }
        }
        const node = ids[n % 5]!;
        if (!cluster.isRunning(node) || !cluster.httpUrls.has(node)) continue;
        const result = await submit(cluster, node, receiver.url, n);
        if (result.status === 202 && result.id !== undefined) acked.push(result.id);
      }
      assert(acked.length >= 700, `only ${acked.length} of ~900 acknowledged`);
      const everything = [...acked, ...oddStored];
      const all = await waitUntil(
        () => everything.every((id) => receiver.received.has(id)),
        60_000,
      );
      const missing = everything.filter((id) => !receiver.received.has(id));
      assert(all, `${missing.length} acknowledged jobs never delivered: ${missing.slice(0, 5)}`);
      assert(
        await waitUntil(
          () => ready(cluster, "n3"),
          Math.max(1, 60_000 - (performance.now() - restartedAtMs)),
        ),
        "the restarted node was not ready within 60 s",
      );
    } finally {
      await cluster.stopAll();
      await receiver.close();
    }
  },
});
