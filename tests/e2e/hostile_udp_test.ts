/**
 * Hostile UDP, proven from outside against a live five-node cluster under load. Thousands of
 * datagrams reach n1 from two attacker sockets and from the address of a legitimate client:
 * random bytes, random bytes behind a valid clear header, every truncation and random bit
 * flips of datagrams the client really sent, exact replays of them (from the client's own
 * address and from others), datagrams sealed under a wrong cluster key, and oversized ones.
 *
 * Each must be dropped and counted (the transport's drop counters rise by at least what each
 * kind sent, less what the kernel may drop), never crash a node, never change state: no
 * member is suspected or declared dead, the wrong-key client's submits are never
 * acknowledged, and a replayed client submit creates no job (every job a node holds is one a
 * legitimate client had acknowledged). No acknowledged job is lost.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  type NodeEventLine,
  waitUntil,
} from "../../src/cluster/local_cluster.ts";
import { UdpJobsClient } from "../../src/jobs/udp_client.ts";
import { udpSocketDrops } from "../../src/bench/udp_drops.ts";
import { bindUdpSocket, type DatagramSocket } from "../../src/transport/datagram_socket.ts";
import type { HostPort } from "../../src/transport/address.ts";

const CLUSTER_KEY = "hostile-udp-test-cluster-key-0123456789";
const WRONG_KEY = "some-other-cluster-key-0123456789abcdef";

/**
 * A socket that keeps a copy of every datagram it sends (an attacker's capture), and a way to
 * send raw bytes from its address (an attacker on the client's host replaying them).
 */
function capturingSocket(captured: Uint8Array[]): {
  socket: DatagramSocket;
  sendRaw: (bytes: Uint8Array, to: HostPort) => Promise<unknown>;
} {
  const socket = bindUdpSocket({ hostname: "127.0.0.1", port: 0 });
  return {
    socket: {
      localAddress: socket.localAddress,
      receive: (buffer) => socket.receive(buffer),
      send: (bytes, to) => {
        if (captured.length < 5_000) captured.push(bytes.slice());
        return socket.send(bytes, to);
      },
      close: () => socket.close(),
    },
    sendRaw: (bytes, to) => socket.send(bytes, to),
  };
}

async function metrics(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line === "") continue;
    const space = line.lastIndexOf(" ");
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

const sum = (m: Map<string, number>, prefix: string) =>
  [...m].filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);

Deno.test({
  name:
    "hostile datagrams at a live node are dropped and counted, crash nothing, change nothing, lose nothing",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const received = new Map<string, number>();
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
      await r.arrayBuffer();
      const id = r.headers.get("webhook-id") ?? "";
      received.set(id, (received.get(id) ?? 0) + 1);
      return new Response(null, { status: 204 });
    });
    const jobUrl = `http://127.0.0.1:${server.addr.port}/hook`;
    const events: NodeEventLine[] = [];
    const exits: string[] = [];
    const specs = localNodeSpecs(5, "127.0.0.1", freeUdpPortRange(5));
    const cluster = new LocalCluster({
      nodes: specs,
      clusterKey: CLUSTER_KEY,
      extraArgs: () => ["--allow-private-targets"],
      onEvent: (line) => events.push(line),
      onStderr: () => {},
      onUnexpectedExit: (id, status) => exits.push(`${id} exited (code ${status.code})`),
    });
    const captured: Uint8Array[] = [];
    let client: UdpJobsClient | undefined;
    let stranger: UdpJobsClient | undefined;
    const attackers = [0, 1].map(() =>
      Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 })
    );
    try {
      cluster.startAll();
      const ids = specs.map((s) => s.id);
      assert(await waitUntil(() => ids.every((id) => cluster.httpUrls.has(id)), 30_000));
      const ready = async (id: string) => {
        const r = await fetch(`${cluster.httpUrls.get(id)}/readyz`).catch(() => undefined);
        await r?.body?.cancel();
        return r?.status === 200;
      };
      for (const id of ids) assert(await waitUntil(() => ready(id), 30_000), `${id} ready`);
      const n1 = specs[0]!.address;
      const n1Url = cluster.httpUrls.get("n1")!;
      const n1Port = Number(n1.split(":")[1]);
      const target = { transport: "udp" as const, hostname: "127.0.0.1", port: n1Port };

      // Legitimate traffic: a UDP client whose datagrams the attacker captures, and HTTP load.
      const capture = capturingSocket(captured);
      client = UdpJobsClient.start({
        nodeId: "client-1",
        clusterKey: CLUSTER_KEY,
        socket: capture.socket,
      });
      const acked: string[] = [];
      for (let n = 0; n < 100; n++) {
        const outcome = await client.submit(n1, { url: jobUrl, payload: `{"udp":${n}}` });
        assert(outcome.ok, `udp submit ${n}: ${JSON.stringify(outcome)}`);
        acked.push(outcome.id);
      }
      assert(captured.length >= 20, `captured ${captured.length} datagrams`);
      let loading = true;
      const loadFailures: string[] = [];
      const load = (async () => {
        for (let n = 0; loading && n < 10_000; n++) {
          try {
            const response = await fetch(`${cluster.httpUrls.get(ids[n % 5]!)}/v1/jobs`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ url: jobUrl, payload: { http: n } }),
              signal: AbortSignal.timeout(10_000),
            });
            const body = await response.json();
            if (response.status === 202) acked.push(body.id);
            else loadFailures.push(`${response.status} ${JSON.stringify(body)}`);
          } catch (error) {
            loadFailures.push(String(error));
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      })();

      const before = await metrics(n1Url);
      const kernelDropsBefore = udpSocketDrops(n1Port) ?? 0;
      const sent: Record<string, number> = {};
      const send = async (kind: string, bytes: Uint8Array, from = attackers[0]!) => {
        sent[kind] = (sent[kind] ?? 0) + 1;
        await from.send(bytes, target).catch(() => {});
        // Paced: what is measured is the node, not the kernel's receive buffer.
        if ((sent[kind]! % 50) === 0) await new Promise((r) => setTimeout(r, 5));
      };
      const rng = fc.sample(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { numRuns: 1, seed: 11 })[0]!;
      let state = rng;
      const random = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
      const valid = captured.slice(0, 200);
      const header = valid[0]!.slice(0, 4);

      for (
        const bytes of fc.sample(fc.uint8Array({ maxLength: 1_500 }), { numRuns: 1_000, seed: 1 })
      ) {
        await send("random", bytes);
      }
      for (
        const tail of fc.sample(fc.uint8Array({ maxLength: 1_400 }), { numRuns: 1_000, seed: 2 })
      ) {
        const bytes = new Uint8Array(4 + tail.length);
        bytes.set(header);
        bytes.set(tail, 4);
        await send("forged_header", bytes);
      }
      for (const datagram of valid.slice(0, 20)) {
        for (let cut = 0; cut < datagram.length; cut += Math.max(1, datagram.length >> 5)) {
          await send("truncated", datagram.subarray(0, cut));
        }
      }
      for (let i = 0; i < 1_000; i++) {
        const bytes = valid[i % valid.length]!.slice();
        for (let flips = 1 + Math.floor(random() * 3); flips > 0; flips--) {
          const bit = Math.floor(random() * bytes.length * 8);
          bytes[bit >> 3]! ^= 1 << (bit & 7);
        }
        await send("bit_flipped", bytes);
      }
      for (const datagram of valid) await send("replayed_elsewhere", datagram, attackers[1]!);
      // Exact replays from the client's own address (its socket, outside its transport).
      for (const datagram of valid) {
        sent.replayed_same_source = (sent.replayed_same_source ?? 0) + 1;
        await capture.sendRaw(datagram, { hostname: "127.0.0.1", port: n1Port });
        if ((sent.replayed_same_source % 50) === 0) await new Promise((r) => setTimeout(r, 5));
      }
      for (const size of [1_401, 2_000, 9_000, 30_000, 60_000]) {
        for (let i = 0; i < 20; i++) {
          const bytes = new Uint8Array(size);
          crypto.getRandomValues(bytes.subarray(0, Math.min(size, 65_536)));
          bytes.set(header);
          await send("oversized", bytes);
        }
      }
      // A stranger with another key: every datagram fails to open, nothing is acknowledged.
      stranger = UdpJobsClient.start({
        nodeId: "stranger",
        clusterKey: WRONG_KEY,
        config: { requestTimeoutMs: 1_500 },
      });
      const strangerOutcomes = await Promise.all(
        Array.from(
          { length: 20 },
          (_, n) => stranger!.submit(n1, { url: jobUrl, payload: `{"x":${n}}` }),
        ),
      );
      assert(strangerOutcomes.every((o) => !o.ok), "a wrong-key submit was acknowledged");

      loading = false;
      await load;
      await new Promise((r) => setTimeout(r, 500));
      const after = await metrics(n1Url);
      const delta = (name: string) => sum(after, name) - sum(before, name);
      const hostile = Object.values(sent).reduce((a, b) => a + b, 0);
      console.log(`sent ${hostile} hostile datagrams: ${JSON.stringify(sent)}`);
      const drops = {
        decode: delta("hookd_transport_decode_errors_total"),
        auth: delta("hookd_transport_auth_failures_total"),
        replays: delta("hookd_transport_replays_total"),
        mismatches: delta("hookd_transport_address_mismatches_total"),
        derivations: delta("hookd_transport_key_derivations_refused_total"),
        stale: delta("hookd_transport_stale_epoch_drops_total"),
      };
      // What n1's socket dropped with its receive buffer full never reached the node. One
      // fresh-clone CI run counted 3,445 of 3,993, none of the 105 same-source replays, every
      // counter low alike: most likely such drops while n1's event loop stalled in a burst,
      // which that run did not measure.
      const kernelDrops = (udpSocketDrops(n1Port) ?? 0) - kernelDropsBefore;
      console.log(`n1 drop counters: ${JSON.stringify(drops)}; kernel drops at n1 ${kernelDrops}`);
      const counted = Object.values(drops).reduce((a, b) => a + b, 0);
      assert(hostile > 3_500, `only ${hostile} hostile datagrams`);
      // Every hostile datagram that reached the node is counted by one of them (the kernel's
      // drops at n1's socket are measured; a little is left for the client's own datagrams in
      // those drops, which are not hostile).
      assert(
        counted + kernelDrops >= 0.95 * hostile,
        `${counted} counted and ${kernelDrops} dropped by the kernel of ${hostile} sent`,
      );
      assert(kernelDrops < 0.5 * hostile, `the kernel dropped ${kernelDrops} of ${hostile}`);
      assert(
        drops.replays + kernelDrops >= 0.9 * sent.replayed_same_source!,
        "same-source replays counted",
      );
      assert(
        drops.mismatches + kernelDrops >= 0.9 * sent.replayed_elsewhere!,
        "replays from elsewhere counted",
      );

      // Nothing crashed, nobody was suspected, no job appeared that no client was told of.
      assertEquals(exits, []);
      assertEquals(loadFailures, [], "legitimate submits failed during the attack");
      const suspicions = events.filter((e) =>
        e.event === "member-suspect" || e.event === "member-dead"
      );
      assertEquals(suspicions.map((e) => `${e.observer}: ${e.event} ${e.node}`), []);
      const ackedSet = new Set(acked);
      assert(
        await waitUntil(() => acked.every((id) => received.has(id)), 30_000),
        `${acked.filter((id) => !received.has(id)).length} acknowledged jobs not delivered`,
      );
      const unknown = [...received.keys()].filter((id) => !ackedSet.has(id));
      assertEquals(unknown, [], "deliveries of jobs no client was acknowledged");
      for (const id of ids) {
        const view = await (await fetch(`${cluster.httpUrls.get(id)}/v1/cluster`)).json();
        const held = Object.values(view.jobs as Record<string, number>).reduce((a, b) => a + b, 0);
        assertEquals(
          held,
          acked.length,
          `${id} holds ${held} jobs, clients were told of ${acked.length}`,
        );
      }
    } finally {
      for (const a of attackers) a.close();
      await client?.close();
      await stranger?.close();
      await cluster.stopAll();
      await server.shutdown();
    }
  },
});
