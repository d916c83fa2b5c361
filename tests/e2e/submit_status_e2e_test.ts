/**
 * `hookd submit` and `hookd status` as real processes against a real node (quorum of one, an
 * API token) and a real `hookd sink` that verifies signatures: every exit code the README
 * documents, `--wait` to delivered and to dead, failover to the next `--node`, idempotency,
 * and both views of `status` in text and JSON.
 */

import { assert, assertEquals } from "../assert.ts";
import { freeUdpPorts, LocalCluster } from "../../src/cluster/local_cluster.ts";
import {
  closedTcpPort,
  clusterReady,
  pollUntil,
  runHookd,
  startSinkChild,
} from "./hookd_process.ts";

const TOKEN = "submit-status-e2e-token-0123456789";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const WRONG_SECRET = "whsec_AAAA9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

Deno.test({
  name: "hookd submit and status: exit codes, --wait to delivered and to dead, failover, views",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn() {
    const sink = await startSinkChild(SECRET);
    const [udpPort] = freeUdpPorts(1);
    const cluster = new LocalCluster({
      nodes: [{ id: "n1", address: `127.0.0.1:${udpPort}` }],
      clusterKey: "submit-status-e2e-cluster-key-0123456789",
      extraArgs: () => [
        "--allow-private-targets",
        "--api-token",
        TOKEN,
        "--retry-schedule",
        "200",
      ],
    });
    try {
      cluster.startAll();
      assert(await pollUntil(() => clusterReady(cluster, ["n1"]), 30_000), "the node is ready");
      const node = cluster.httpUrls.get("n1")!;
      const env = { HOOKD_API_TOKEN: TOKEN };
      const target = `${sink.url}/hook`;

      // Delivered: the id, then the final state; the sink verified the signature.
      const delivered = await runHookd([
        "submit",
        "--node",
        node,
        "--url",
        target,
        "--secret",
        SECRET,
        "--data",
        '{"hello":"e2e"}',
        "--header",
        "X-Trace: a,b",
        "--wait",
      ], { env });
      assertEquals(delivered.code, 0, delivered.stderr);
      assertEquals(delivered.lines.length, 2, delivered.stdout);
      const id = delivered.lines[0]!;
      assert(/^job_[0-9a-z]+$/.test(id), `a job id: ${id}`);
      assert(delivered.lines[1]!.startsWith("delivered after 1 attempt"), delivered.lines[1]);
      const stats = await sink.stats();
      assertEquals(stats.received, 1);
      assertEquals(stats.signature_failures, 0);

      // Dead: the receiver refuses the signature (401) on both attempts; exit 1.
      const dead = await runHookd([
        "submit",
        "--node",
        node,
        "--url",
        target,
        "--secret",
        WRONG_SECRET,
        "--max-attempts",
        "2",
        "--wait",
        "--json",
      ], { env });
      assertEquals(dead.code, 1, dead.stderr);
      const final = JSON.parse(dead.lines.at(-1)!);
      assertEquals(final.state, "dead");
      assertEquals(final.attempts.map((a: { status: number }) => a.status), [401, 401]);

      // Still going when --wait-timeout ends: exit 4, and the job is accepted.
      const pending = await runHookd([
        "submit",
        "--node",
        node,
        "--url",
        `http://127.0.0.1:${closedTcpPort()}/`,
        "--max-attempts",
        "100",
        "--wait",
        "--wait-timeout",
        "0.5",
      ], { env });
      assertEquals(pending.code, 4, pending.stderr);
      assert(/^job_/.test(pending.lines[0]!));
      assert(pending.stderr.includes("is accepted and goes on"), pending.stderr);

      // Refused by the node (400 names the field): exit 1 with one line.
      const refused = await runHookd(
        ["submit", "--node", node, "--url", target, "--max-attempts", "1000"],
        { env },
      );
      assertEquals(refused.code, 1);
      assertEquals(refused.stdout, "");
      assertEquals(refused.stderr.trim().split("\n").length, 1, refused.stderr);
      assert(refused.stderr.includes("maxAttempts"), refused.stderr);

      // No token: 401 is a refusal (exit 1) with a hint, not a reason to try other nodes.
      const noToken = await runHookd(["submit", "--node", node, "--url", target]);
      assertEquals(noToken.code, 1);
      assert(noToken.stderr.includes("unauthorized") && noToken.stderr.includes("--api-token"));

      // Unreachable: exit 3; with a live node listed next, the submit goes there.
      const closed = `http://127.0.0.1:${closedTcpPort()}`;
      const unreachable = await runHookd(["submit", "--node", closed, "--url", target], { env });
      assertEquals(unreachable.code, 3);
      assert(unreachable.stderr.includes("connection refused"), unreachable.stderr);
      const failover = await runHookd(
        ["submit", "--node", `${closed},${node}`, "--url", target, "--secret", SECRET],
        { env },
      );
      assertEquals(failover.code, 0, failover.stderr);

      // Same idempotency key and body: the same id, said so on stderr.
      const keyed = ["submit", "--node", node, "--url", target, "--idempotency-key", "k-1"];
      const first = await runHookd([...keyed, "--secret", SECRET], { env });
      const again = await runHookd([...keyed, "--secret", SECRET], { env });
      assertEquals(first.code, 0);
      assertEquals(again.code, 0);
      assertEquals(again.lines, first.lines);
      assert(again.stderr.includes("matched an earlier job"), again.stderr);
      const conflict = await runHookd([...keyed, "--data", '{"other":1}'], { env });
      assertEquals(conflict.code, 1);
      assert(conflict.stderr.includes("idempotency_conflict"), conflict.stderr);

      // Usage errors: exit 2, one line.
      for (
        const args of [
          ["submit", "--node", node],
          ["submit", "--node", node, "--url", target, "--data", "{nope"],
          ["submit", "--node", node, "--url", target, "--header", "novalue"],
          ["submit", "--url", target],
          ["status", "--node", "ftp://x"],
        ]
      ) {
        const usage = await runHookd(args, { env });
        assertEquals(usage.code, 2, `hookd ${args.join(" ")}: ${usage.stderr}`);
        assertEquals(usage.stderr.trim().split("\n").length, 1, usage.stderr);
      }

      // status JOB_ID: the job in detail, as text and as JSON.
      const job = await runHookd(["status", "--node", node, id], { env });
      assertEquals(job.code, 0, job.stderr);
      assert(job.stdout.includes(`job`) && job.stdout.includes(id), job.stdout);
      assert(/state\s+delivered/.test(job.stdout), job.stdout);
      assert(/STARTED \(UTC\)/.test(job.stdout) && job.stdout.includes("204"), job.stdout);
      const jobJson = await runHookd(["status", "--node", node, "--json", id], { env });
      assertEquals(JSON.parse(jobJson.stdout).attempts[0].status, 204);
      const missing = await runHookd(["status", "--node", node, "job_nope"], { env });
      assertEquals(missing.code, 1);
      assert(missing.stderr.includes("not_found"), missing.stderr);

      // status: the cluster view, as text and as JSON (the figures are the node's own).
      const view = await runHookd(["status", "--node", node, "--window", "0.2"], { env });
      assertEquals(view.code, 0, view.stderr);
      for (const heading of ["MEMBER", "INCARNATION", "SUBMITS/S", "DELIVERY P99", "n1"]) {
        assert(view.stdout.includes(heading), `${heading} in:\n${view.stdout}`);
      }
      const viewJson = JSON.parse(
        (await runHookd(["status", "--node", node, "--json", "--window", "0.2"], { env })).stdout,
      );
      assertEquals(viewJson.view.members[0].state, "alive");
      assert(viewJson.nodes[0].acceptedTotal >= 5, JSON.stringify(viewJson.nodes));
      assert(viewJson.totals.deliveries >= 1, JSON.stringify(viewJson.totals));
      assert(viewJson.totals.deliveryP99MsMax > 0, JSON.stringify(viewJson.totals));
      const down = await runHookd(["status", "--node", closed], { env });
      assertEquals(down.code, 3);
    } finally {
      await cluster.stopAll();
      await sink.stop();
    }
  },
});
