import { assert, assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { SimNetwork } from "../../src/sim/network.ts";
import { SimRuntime } from "../../src/sim/sim_runtime.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";
import { SimSocket } from "../../src/sim/sim_socket.ts";
import { UdpTransport } from "../../src/transport/udp_transport.ts";
import { UdpJobsClient, type UdpSubmitOutcome } from "../../src/jobs/udp_client.ts";
import {
  type ClientOutcome,
  decodeMessage,
  encodeMessage,
  JOBS_CHANNEL,
} from "../../src/jobs/job_messages.ts";

const KEY = "udp-client-test-cluster-key-0123456789";
const NODE = "10.0.0.1:7000";

/**
 * A stand-in node on the simulator: answers each `client-submit` after `delayMs` with one
 * outcome per submit (`answer` decides it), or not at all while `silent`.
 */
function fakeNode(
  scheduler: SimScheduler,
  network: SimNetwork<Uint8Array>,
  answer: (url: string, index: number) => ClientOutcome,
) {
  const runtime = new SimRuntime(scheduler);
  const transport = UdpTransport.start({
    nodeId: "n1",
    clusterKey: KEY,
    socket: new SimSocket(network, NODE),
    runtime,
    rng: new Sfc32(7),
  });
  const state = { messages: 0, submits: 0, silent: false, delayMs: 2, wrongCount: false };
  transport.onMessage((m) => {
    if (m.channel !== JOBS_CHANNEL) return;
    const decoded = decodeMessage(m.bytes);
    if (!decoded.ok || decoded.value.kind !== "client-submit") return;
    const request = decoded.value;
    state.messages++;
    state.submits += request.submits.length;
    if (state.silent) return;
    const outcomes = request.submits.map((s, i) => answer(s.request.url, i));
    if (state.wrongCount) outcomes.pop();
    runtime.setTimer(state.delayMs, () => {
      transport.send(
        m.fromAddress,
        JOBS_CHANNEL,
        encodeMessage({ kind: "client-result", requestId: request.requestId, outcomes }),
      );
    });
  });
  return { transport, state };
}

function setup(config: Parameters<typeof UdpJobsClient.start>[0]["config"] = {}) {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<Uint8Array>(scheduler, new Sfc32(1), {});
  const node = fakeNode(
    scheduler,
    network,
    (url, i) =>
      url.endsWith("/refuse")
        ? { ok: false, code: "overloaded", message: "full" }
        : { ok: true, id: `job_${i}`, existing: false },
  );
  const client = UdpJobsClient.start({
    nodeId: "client",
    clusterKey: KEY,
    socket: new SimSocket(network, "10.0.0.9:9000"),
    runtime: new SimRuntime(scheduler),
    config,
  });
  return { scheduler, node, client };
}

Deno.test("UdpJobsClient sends one turn's submits to a node as one message and resolves each in order", async () => {
  const { scheduler, node, client } = setup();
  const results: UdpSubmitOutcome[] = [];
  const all = Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      client.submit(NODE, {
        url: i === 3 ? "http://h/refuse" : "http://h/ok",
        payload: `{"n":${i}}`,
      }).then((o) => results[i] = o)),
  );
  assertEquals(client.submitsOutstanding, 10);
  await scheduler.runUntilAsync(1_000, () => results.filter(Boolean).length === 10);
  await all;
  assertEquals(node.state.messages, 1, "ten submits in one turn share one message");
  assertEquals(node.state.submits, 10);
  for (let i = 0; i < 10; i++) {
    const o = results[i]!;
    if (i === 3) assertEquals(o, { ok: false, code: "overloaded", message: "full" });
    else assertEquals(o, { ok: true, id: `job_${i}`, existing: false });
  }
  assertEquals(client.submitsOutstanding, 0);
  await client.close();
  await node.transport.close();
});

Deno.test("UdpJobsClient splits a turn's submits into messages of at most batchSubmitsMax", async () => {
  const { scheduler, node, client } = setup({ batchSubmitsMax: 4 });
  const all = Promise.all(
    Array.from({ length: 10 }, () => client.submit(NODE, { url: "http://h/ok", payload: "{}" })),
  );
  let done = false;
  all.then(() => done = true);
  await scheduler.runUntilAsync(1_000, () => done);
  assertEquals(node.state.messages, 3);
  assert((await all).every((o) => o.ok));
  await client.close();
  await node.transport.close();
});

Deno.test("UdpJobsClient resolves a submit with no answer as timeout, and counts the late answer", async () => {
  const { scheduler, node, client } = setup({ requestTimeoutMs: 100 });
  node.state.delayMs = 300;
  let outcome: UdpSubmitOutcome | undefined;
  client.submit(NODE, { url: "http://h/ok", payload: "{}" }).then((o) => outcome = o);
  await scheduler.runUntilAsync(150);
  assertEquals(outcome?.ok, false);
  assertEquals(outcome !== undefined && !outcome.ok ? outcome.code : "", "timeout");
  assertEquals(client.submitsOutstanding, 0);
  await scheduler.runUntilAsync(1_000, () => client.lateAnswers === 1);
  assertEquals(client.lateAnswers, 1, "the answer after the timeout is counted, not applied");
  await client.close();
  await node.transport.close();
});

Deno.test("UdpJobsClient refuses past submitsOutstandingMax at once, without sending", async () => {
  const { scheduler, node, client } = setup({ submitsOutstandingMax: 3 });
  node.state.silent = true;
  const outcomes = Array.from(
    { length: 5 },
    () => client.submit(NODE, { url: "http://h/ok", payload: "{}" }),
  );
  const fourth = await outcomes[3]!;
  assertEquals(!fourth.ok && fourth.code, "client_busy");
  await scheduler.runUntilAsync(50);
  assertEquals(node.state.submits, 3, "only the three within the bound were sent");
  await client.close();
  const first = await outcomes[0]!;
  assertEquals(!first.ok && first.code, "closed", "close answers what was still waiting");
  await node.transport.close();
});

Deno.test("UdpJobsClient treats an answer with the wrong number of outcomes as bad, not as acks", async () => {
  const { scheduler, node, client } = setup();
  node.state.wrongCount = true;
  const all = Promise.all(
    Array.from({ length: 3 }, () => client.submit(NODE, { url: "http://h/ok", payload: "{}" })),
  );
  let done = false;
  all.then(() => done = true);
  await scheduler.runUntilAsync(1_000, () => done);
  assert(
    (await all).every((o) => !o.ok),
    "no submit of a mismatched answer counts as acknowledged",
  );
  assertEquals(client.badAnswers, 1);
  await client.close();
  await node.transport.close();
});

Deno.test("UdpJobsClient answers a submit past the job limits bad_request at once and sends nothing", async () => {
  const { scheduler, node, client } = setup();
  const headers = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`x-h${i}`, "v"]));
  const outcomes = await Promise.all([
    client.submit(NODE, { url: "https://host/?q=" + "\u00e9".repeat(5000), payload: "{}" }),
    client.submit(NODE, { url: "https://h.test/", payload: "{}", headers }),
  ]);
  for (const o of outcomes) {
    assert(!o.ok && o.code === "bad_request", JSON.stringify(o));
  }
  assert(!outcomes[0]!.ok && outcomes[0]!.message.startsWith("url: "));
  assert(!outcomes[1]!.ok && outcomes[1]!.message.startsWith("headers: "));
  await scheduler.runUntilAsync(100, () => false);
  assertEquals(node.state.messages, 0);
  assertEquals(client.submitsOutstanding, 0);
  await client.close();
  await node.transport.close();
});
