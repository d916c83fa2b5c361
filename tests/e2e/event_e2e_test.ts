/**
 * Events against five real `hookd node` processes (docs/endpoints.md, "Events and fan-out"):
 * two endpoints take `invoice.paid`, one `user.created`; `invoice.paid` events sent to every
 * node (through the API and through `hookd send`) reach both matching receivers once each, with
 * signatures the `standardwebhooks` package verifies under each endpoint's own secret and the
 * same `webhook-id` (the event's id) at both, and none reaches the third.
 */

import { Webhook } from "standardwebhooks";
import { assert, assertEquals } from "../assert.ts";
import { runHookd } from "./hookd_process.ts";
import { waitUntil } from "../../src/cluster/local_cluster.ts";
import { startCluster } from "./store_cluster.ts";

/** `hookd <args>`, bounded in time (runHookd kills it past its limit). */
const hookd = (...args: string[]) => runHookd(args, { limitMs: 30_000 });

const EVENTS = 30;

/** A receiver that takes a delivery only once its signature verifies under `secret`. */
interface VerifyingReceiver {
  readonly url: string;
  /** webhook-id → verified deliveries. */
  readonly received: Map<string, number>;
  /** webhook-id → the body delivered. */
  readonly bodies: Map<string, string>;
  /** Deliveries whose signature did not verify (answered 401). */
  badSignatures: number;
  /** Deliveries without the endpoint's own header. */
  missingHeader: number;
  close(): Promise<void>;
}

function startVerifyingReceiver(secret: string, header: [string, string]): VerifyingReceiver {
  const verifier = new Webhook(secret);
  const receiver: Omit<VerifyingReceiver, "url" | "close"> = {
    received: new Map(),
    bodies: new Map(),
    badSignatures: 0,
    missingHeader: 0,
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const body = await request.text();
      const headers = Object.fromEntries(request.headers.entries());
      try {
        verifier.verify(body, headers);
      } catch {
        receiver.badSignatures++;
        return new Response("bad signature", { status: 401 });
      }
      if (request.headers.get(header[0]) !== header[1]) receiver.missingHeader++;
      const id = request.headers.get("webhook-id")!;
      receiver.received.set(id, (receiver.received.get(id) ?? 0) + 1);
      receiver.bodies.set(id, body);
      return new Response(null, { status: 204 });
    },
  );
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    close: () => server.shutdown(),
  });
}

/** A `whsec_` secret of its own per receiver. */
function secretOf(seed: number): string {
  return "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(seed)));
}

Deno.test({
  name: "invoice.paid events reach both subscribed endpoints once each, signed, same webhook-id",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const receivers = [1, 2, 3].map((i) => startVerifyingReceiver(secretOf(i), [`x-r${i}`, "1"]));
    const { cluster, ids } = await startCluster();
    try {
      const url = (id: string) => cluster.httpUrls.get(id)!;
      const types = ["invoice.paid", "invoice.paid", "user.created"];
      const endpointIds: string[] = [];
      for (const [i, r] of receivers.entries()) {
        const added = await hookd(
          "endpoint",
          "add",
          "--node",
          url(ids[i]!),
          "--url",
          r.url,
          "--event-type",
          types[i]!,
          "--secret",
          secretOf(i + 1),
          "--header",
          `x-r${i + 1}:1`,
          "--json",
        );
        assertEquals(added.code, 0, added.stderr);
        endpointIds.push((JSON.parse(added.stdout) as { id: string }).id);
      }
      // Every node holds the three endpoints before it takes an event (a fan-out reads the
      // table of the node that takes the event).
      for (const node of ids) {
        assert(
          await waitUntil(async () => {
            const page = await (await fetch(`${url(node)}/v1/endpoints`)).json();
            return (page.items as unknown[]).length === 3;
          }, 10_000),
          `${node} holds the endpoints`,
        );
      }

      const paid: string[] = [];
      for (let i = 0; i < EVENTS; i++) {
        const node = url(ids[i % ids.length]!);
        const response = await fetch(`${node}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ type: "invoice.paid", payload: { invoice: i } }),
        });
        const answer = await response.json();
        assertEquals(response.status, 202, JSON.stringify(answer));
        assertEquals(answer.jobs, 2);
        paid.push(answer.id);
      }
      // Through the CLI too, following every job to delivered.
      const sent = await hookd(
        "send",
        "--node",
        url("n3"),
        "--type",
        "invoice.paid",
        "--data",
        '{"invoice":"cli"}',
        "--wait",
      );
      assertEquals(sent.code, 0, sent.stderr);
      const lines = sent.stdout.trim().split("\n");
      paid.push(lines[0]!);
      assertEquals(lines.length, 3, sent.stdout);
      for (const line of lines.slice(1)) assert(line.includes(": delivered after"), line);
      const user = await hookd("send", "--node", url("n4"), "--type", "user.created");
      assertEquals(user.code, 0, user.stderr);
      const userEvent = user.stdout.trim();

      const [a, b, c] = receivers as [VerifyingReceiver, VerifyingReceiver, VerifyingReceiver];
      assert(
        await waitUntil(
          () => paid.every((id) => a.received.has(id) && b.received.has(id)),
          30_000,
        ),
        `every event reached both: ${a.received.size} and ${b.received.size} of ${paid.length}`,
      );
      assert(await waitUntil(() => c.received.has(userEvent), 30_000), "user.created arrived");
      // Once each, verified, with the endpoint's own header, the event's id as webhook-id.
      for (const r of [a, b]) {
        assertEquals([...r.received.keys()].sort(), [...paid].sort());
        assert([...r.received.values()].every((n) => n === 1), "each event once");
        assertEquals(r.badSignatures, 0);
        assertEquals(r.missingHeader, 0);
      }
      assertEquals(a.bodies.get(paid[7]!), '{"invoice":7}');
      assertEquals(b.bodies.get(paid[7]!), '{"invoice":7}');
      assertEquals([...c.received.keys()], [userEvent], "no invoice.paid reached the third");
      assertEquals(c.badSignatures, 0);

      // The event, read back from a node that did not take it, names each endpoint's job.
      const event = await (await fetch(`${url("n2")}/v1/events/${paid[0]}`)).json();
      assertEquals(
        (event.jobs as { endpoint_id: string }[]).map((j) => j.endpoint_id),
        [endpointIds[0]!, endpointIds[1]!].sort(),
      );
    } finally {
      await cluster.stopAll();
      for (const r of receivers) await r.close();
    }
  },
});
