/**
 * The backlog bound on real processes: five nodes started with `--backlog-max 20` and a
 * receiver that answers 503 (an outage), so every job stays pending on every node. Submits
 * are taken until the backlog reaches the bound, then answered 503 `overloaded` with
 * Retry-After: 5, by every node, and counted in hookd_jobs_backlog_refusals_total; an endpoint
 * write is still taken (disabling a failing endpoint is how an operator drains a backlog).
 * Once the receiver heals, every acknowledged job is delivered and submits are taken again.
 */

import { assert, assertEquals } from "../assert.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";
import { type ApiAnswer, postJson, startCluster, startReceiver } from "./store_cluster.ts";

const BACKLOG_MAX = 20;
/** Submits offered while the receiver is down: the bound plus room to be refused. */
const OFFERED = BACKLOG_MAX + 15;

async function backlogRefusals(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) }))
    .text();
  const line = text.split("\n").find((l) => l.startsWith("hookd_jobs_backlog_refusals_total"));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

Deno.test({
  name:
    "past --backlog-max pending jobs every node answers submits 503 with Retry-After, still takes endpoint writes, and takes submits again once the backlog drains",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = startReceiver();
    receiver.failing = true;
    const { cluster, ids } = await startCluster([
      "--allow-private-targets",
      "--retry-schedule",
      "200,500",
      "--max-attempts",
      "100",
      "--backlog-max",
      String(BACKLOG_MAX),
    ]);
    const url = (id: string) => cluster.httpUrls.get(id)!;
    try {
      const acked: string[] = [];
      const refused: ApiAnswer[] = [];
      for (let n = 0; n < OFFERED; n++) {
        const answer = await postJson(url(ids[n % 5]!), "/v1/jobs", {
          url: receiver.url,
          payload: { n },
        });
        if (answer.status === 202 && answer.id !== undefined) acked.push(answer.id);
        else refused.push(answer);
      }
      // Each node counts what it holds; one a replication message behind may take a few more.
      assert(
        acked.length >= BACKLOG_MAX && acked.length <= BACKLOG_MAX + 5,
        `${acked.length} acknowledged against --backlog-max ${BACKLOG_MAX}`,
      );
      assert(refused.length >= OFFERED - BACKLOG_MAX - 5, `${refused.length} refused`);
      for (const answer of refused) {
        assertEquals(
          [answer.status, answer.code, answer.retryAfter],
          [503, "overloaded", "5"],
          JSON.stringify(answer),
        );
        assert(/backlogJobsMax 20/.test(answer.message ?? ""), answer.message);
      }
      let counted = 0;
      for (const id of ids) counted += await backlogRefusals(url(id));
      assertEquals(counted, refused.length, "every refusal counted by the node that made it");

      const endpoint = await postJson(url(ids[2]!), "/v1/endpoints", { url: receiver.url });
      assertEquals(endpoint.status, 201, JSON.stringify(endpoint));

      receiver.failing = false;
      assert(
        await waitUntil(() => acked.every((id) => receiver.received.has(id)), 30_000),
        `${
          acked.filter((id) => !receiver.received.has(id)).length
        } acknowledged jobs never delivered`,
      );
      // The DONEs reach every node within a lazy batch and a retry's wait: then it takes more.
      let again: ApiAnswer | undefined;
      assert(
        await waitUntil(async () => {
          again = await postJson(url(ids[4]!), "/v1/jobs", { url: receiver.url, payload: "again" });
          return again.status === 202;
        }, 10_000),
        `not taken again: ${JSON.stringify(again)}`,
      );
    } finally {
      await cluster.stopAll();
      await receiver.close();
    }
  },
});
