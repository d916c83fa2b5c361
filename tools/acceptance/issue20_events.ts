/**
 * Issue 20's acceptance, run from outside: five real `hookd node` processes on loopback, driven
 * only through their HTTP API (as curl would), with receivers in this process that verify every
 * delivery's signature with the `standardwebhooks` package.
 *
 *   deno run -A tools/acceptance/issue20_events.ts [--events 1000] [--out FILE]
 *
 * Checks, each printed PASS or FAIL with its counts (exit 1 if any fails):
 * 1. Two endpoints take `invoice.paid`, one `user.created`: every `invoice.paid` event reaches
 *    both matching endpoints once each, signed under each one's secret, and none the third.
 * 2. An ordered endpoint whose receiver fails the first 20 attempts of one job, then recovers,
 *    gets all its events in the order they were sent (each sent after the previous 202), while
 *    the endpoint's owner is killed (SIGKILL) and restarted during those failures; no job is
 *    attempted before every earlier one was delivered.
 * 3. An endpoint answering 410 is disabled (`disabled_reason: "gone"`) and gets nothing after.
 * 4. After a rotation, deliveries verify under the old and under the new secret.
 *
 * Owns nothing the service uses: a script, not part of `deno task test` (it takes minutes).
 */

import { Webhook } from "standardwebhooks";
import {
  freeUdpPortRange,
  LocalCluster,
  localNodeSpecs,
  waitUntil,
} from "../../src/cluster/local_cluster.ts";
import { preferredOwner } from "../../src/jobs/preference.ts";

const args = Deno.args;
const flag = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const EVENTS = Number(flag("events") ?? 1000);
const OUT = flag("out");
const ORDERED_EVENTS = 10;
/** The ordered endpoint's receiver fails this job's first attempts (1-based event number). */
const ORDERED_FAILING_EVENT = 3;
const ORDERED_FAILURES = 20;

const lines: string[] = [];
function say(line: string): void {
  lines.push(line);
  console.log(line);
}

interface Check {
  readonly name: string;
  readonly pass: boolean;
  readonly detail: string;
}
const checks: Check[] = [];
function check(name: string, pass: boolean, detail: string): void {
  checks.push({ name, pass, detail });
  say(`${pass ? "PASS" : "FAIL"} ${name}: ${detail}`);
}

function secretOf(seed: number): string {
  return "whsec_" + btoa(String.fromCharCode(...new Uint8Array(24).fill(seed)));
}

/** One delivery as a receiver saw it. */
interface Seen {
  readonly webhookId: string;
  readonly status: number;
  readonly atMs: number;
  readonly verified: boolean;
}

interface Receiver {
  readonly url: string;
  readonly seen: Seen[];
  close(): Promise<void>;
}

/**
 * A receiver that answers `answer(webhookId, attemptOfThisId)`, after checking the signature
 * under every secret in `verifyWith` (a delivery that fails any of them is answered 401 and
 * counted unverified).
 */
function startReceiver(
  verifyWith: () => readonly string[],
  answer: (webhookId: string, attempt: number) => number = () => 204,
): Receiver {
  const seen: Seen[] = [];
  const attempts = new Map<string, number>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const body = await request.text();
      const headers = Object.fromEntries(request.headers.entries());
      const webhookId = request.headers.get("webhook-id") ?? "";
      let verified = true;
      for (const secret of verifyWith()) {
        try {
          new Webhook(secret).verify(body, headers);
        } catch {
          verified = false;
        }
      }
      const attempt = (attempts.get(webhookId) ?? 0) + 1;
      attempts.set(webhookId, attempt);
      const status = verified ? answer(webhookId, attempt) : 401;
      seen.push({ webhookId, status, atMs: Date.now(), verified });
      return new Response(status === 204 ? null : "no", { status });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    seen,
    close: () => server.shutdown(),
  };
}

async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return { status: response.status, json: text === "" ? {} : JSON.parse(text) };
  } catch (error) {
    return { status: 0, json: { error: String(error) } };
  }
}

/** Retries a call answered 503 or not at all (a node restarting), a bounded number of times. */
async function apiRetrying(
  bases: () => string[],
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  let last = { status: 0, json: {} as Record<string, unknown> };
  for (let attempt = 0; attempt < 20; attempt++) {
    const all = bases();
    const base = all[attempt % all.length]!;
    last = await api(base, method, path, body);
    if (last.status !== 0 && last.status !== 503) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  return last;
}

const firstOk = (seen: readonly Seen[]) => {
  const order: string[] = [];
  const done = new Set<string>();
  for (const s of seen) {
    if (s.status >= 200 && s.status < 300 && !done.has(s.webhookId)) {
      done.add(s.webhookId);
      order.push(s.webhookId);
    }
  }
  return order;
};

async function main(): Promise<number> {
  const commit = new TextDecoder().decode(
    (await new Deno.Command("git", { args: ["rev-parse", "--short", "HEAD"] }).output()).stdout,
  ).trim();
  say(`issue 20 acceptance on ${commit}, ${new Date().toISOString()}, events ${EVENTS}`);
  say(`load average before: ${Deno.loadavg().join(" ")}`);

  // Secrets: fixed, so the receivers know them before the endpoints exist.
  let rotationSecrets: string[] = [secretOf(6)];
  const paidA = startReceiver(() => [secretOf(1)]);
  const paidB = startReceiver(() => [secretOf(2)]);
  const userC = startReceiver(() => [secretOf(3)]);
  const orderedFailing = new Set<string>();
  const ordered = startReceiver(
    () => [secretOf(4)],
    (id, attempt) => orderedFailing.has(id) && attempt <= ORDERED_FAILURES ? 500 : 204,
  );
  const gone = startReceiver(() => [secretOf(5)], () => 410);
  const rotated = startReceiver(() => rotationSecrets);
  const receivers = [paidA, paidB, userC, ordered, gone, rotated];

  const specs = localNodeSpecs(5, "127.0.0.1", freeUdpPortRange(5));
  const cluster = new LocalCluster({
    nodes: specs,
    clusterKey: "issue20-acceptance-cluster-key-0123456789",
    extraArgs: () => [
      "--allow-private-targets",
      "--retry-schedule",
      "100,200,400,800,1000",
      "--max-attempts",
      "40",
      // The ordered receiver fails 20 attempts in a row on purpose: with the default breaker
      // (5 s, doubling to 5 min) they would take most of an hour.
      "--breaker-open-ms",
      "200,1000",
    ],
    onStderr: () => {},
  });
  const ids = specs.map((s) => s.id);
  const bases = () =>
    ids.filter((id) => cluster.isRunning(id)).map((id) => cluster.httpUrls.get(id))
      .filter((u) => u !== undefined);
  try {
    cluster.startAll();
    const up = await waitUntil(async () => {
      if (!ids.every((id) => cluster.httpUrls.has(id))) return false;
      for (const id of ids) {
        const r = await fetch(`${cluster.httpUrls.get(id)}/readyz`).catch(() => undefined);
        await r?.body?.cancel();
        if (r?.status !== 200) return false;
      }
      return true;
    }, 60_000);
    if (!up) throw new Error("the cluster did not turn ready in 60 s");
    say(`cluster ready: ${ids.join(", ")}`);

    const create = async (body: Record<string, unknown>) => {
      const r = await apiRetrying(bases, "POST", "/v1/endpoints", body);
      if (r.status !== 201) throw new Error(`create ${JSON.stringify(body)}: ${JSON.stringify(r)}`);
      return String(r.json.id);
    };
    const epA = await create({
      url: paidA.url,
      event_types: ["invoice.paid"],
      secret: secretOf(1),
    });
    const epB = await create({
      url: paidB.url,
      event_types: ["invoice.paid"],
      secret: secretOf(2),
    });
    const epC = await create({
      url: userC.url,
      event_types: ["user.created"],
      secret: secretOf(3),
    });
    const epOrdered = await create({
      url: ordered.url,
      event_types: ["order.updated"],
      secret: secretOf(4),
      ordered: true,
    });
    const epGone = await create({
      url: gone.url,
      event_types: ["account.closed"],
      secret: secretOf(5),
    });
    const epRotated = await create({
      url: rotated.url,
      event_types: ["report.ready"],
      secret: secretOf(6),
    });
    say(
      `endpoints: A ${epA}, B ${epB}, C ${epC}, ordered ${epOrdered}, gone ${epGone}, rotated ${epRotated}`,
    );
    // Each node answers fan-outs from its own table: wait until every node lists all six.
    const everywhere = await waitUntil(async () => {
      for (const base of bases()) {
        const r = await api(base, "GET", "/v1/endpoints?limit=100");
        if (((r.json.items ?? []) as unknown[]).length < 6) return false;
      }
      return true;
    }, 20_000);
    if (!everywhere) throw new Error("not every node listed the six endpoints within 20 s");

    // 1. invoice.paid fan-out.
    const paidIds: string[] = [];
    const started = Date.now();
    let refusedPaid = 0;
    const concurrency = 16;
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < EVENTS) {
        const n = next++;
        const base = bases()[n % bases().length]!;
        const r = await api(base, "POST", "/v1/events", { type: "invoice.paid", payload: { n } });
        if (r.status === 202 && r.json.jobs === 2) paidIds.push(String(r.json.id));
        else refusedPaid++;
      }
    }));
    say(
      `invoice.paid: ${paidIds.length} accepted with jobs=2, ${refusedPaid} not, in ${
        Date.now() - started
      } ms`,
    );
    const delivered = (r: Receiver, id: string) =>
      r.seen.some((s) => s.webhookId === id && s.status === 204);
    await waitUntil(
      () => paidIds.every((id) => delivered(paidA, id) && delivered(paidB, id)),
      120_000,
    );
    const onceEach = (r: Receiver) => {
      const counts = new Map<string, number>();
      for (const s of r.seen) {
        if (s.status === 204) counts.set(s.webhookId, (counts.get(s.webhookId) ?? 0) + 1);
      }
      const missing = paidIds.filter((id) => !counts.has(id)).length;
      const dupes = [...counts.values()].filter((c) => c > 1).length;
      const unverified = r.seen.filter((s) => !s.verified).length;
      return { missing, dupes, unverified, total: r.seen.length };
    };
    const a = onceEach(paidA), b = onceEach(paidB);
    check(
      "invoice.paid reaches both subscribed endpoints once each, signed",
      refusedPaid === 0 && paidIds.length === EVENTS && a.missing === 0 && b.missing === 0 &&
        a.dupes === 0 && b.dupes === 0 && a.unverified === 0 && b.unverified === 0,
      `accepted ${paidIds.length}/${EVENTS}; A: ${JSON.stringify(a)}; B: ${JSON.stringify(b)}`,
    );
    check(
      "no invoice.paid reaches the user.created endpoint",
      userC.seen.length === 0,
      `user.created receiver saw ${userC.seen.length} requests`,
    );

    // 2. The ordered endpoint, its owner killed and restarted during the head's failures.
    const voters = specs.map((s) => s.address).sort();
    const ownerAddress = preferredOwner(epOrdered, voters);
    const owner = specs.find((s) => s.address === ownerAddress)!.id;
    const orderedIds: string[] = [];
    for (let i = 1; i <= ORDERED_EVENTS; i++) {
      const others = ids.filter((id) => id !== owner && cluster.isRunning(id));
      const base = cluster.httpUrls.get(others[i % others.length]!)!;
      const r = await api(base, "POST", "/v1/events", { type: "order.updated", payload: { i } });
      if (r.status !== 202) throw new Error(`ordered event ${i}: ${JSON.stringify(r)}`);
      const id = String(r.json.id);
      if (i === ORDERED_FAILING_EVENT) orderedFailing.add(id);
      orderedIds.push(id);
    }
    const failingId = orderedIds[ORDERED_FAILING_EVENT - 1]!;
    const attemptsOf = (id: string) => ordered.seen.filter((s) => s.webhookId === id).length;
    await waitUntil(() => attemptsOf(failingId) >= 5, 60_000);
    say(
      `ordered: head ${failingId} failed ${
        attemptsOf(failingId)
      } times; killing its owner ${owner}`,
    );
    await cluster.kill(owner);
    await new Promise((r) => setTimeout(r, 3_000));
    cluster.start(owner);
    say(`ordered: ${owner} restarted`);
    const orderedWaitStartMs = Date.now();
    await waitUntil(() => orderedIds.every((id) => delivered(ordered, id)), 240_000);
    say(`ordered: waited ${Date.now() - orderedWaitStartMs} ms after the restart`);
    const order = firstOk(ordered.seen);
    const inOrder = JSON.stringify(order) === JSON.stringify(orderedIds);
    // No attempt of a later job before the head (and every earlier one) was delivered.
    let early = 0;
    for (let k = 0; k < orderedIds.length; k++) {
      const okAt = ordered.seen.find((s) =>
        s.webhookId === orderedIds[k] && s.status === 204
      )?.atMs ??
        Infinity;
      for (const later of orderedIds.slice(k + 1)) {
        early += ordered.seen.filter((s) => s.webhookId === later && s.atMs < okAt).length;
      }
    }
    check(
      "an ordered endpoint gets its events in order across its owner's kill and restart",
      inOrder && early === 0 && attemptsOf(failingId) > ORDERED_FAILURES,
      `first 2xx order ${
        inOrder ? "matches" : "differs from"
      } send order (${order.length}/${orderedIds.length}); ` +
        `head attempts ${
          attemptsOf(failingId)
        }; attempts of a later job before an earlier one's 2xx: ${early}; ` +
        `requests ${ordered.seen.length}`,
    );

    // 3. 410 disables.
    const goneFirst = await apiRetrying(bases, "POST", "/v1/events", {
      type: "account.closed",
      payload: {},
    });
    await waitUntil(() => gone.seen.length >= 1, 30_000);
    let reason = "";
    await waitUntil(async () => {
      const r = await api(bases()[0]!, "GET", `/v1/endpoints/${epGone}`);
      reason = String(r.json.disabled_reason ?? "");
      return r.json.disabled === true;
    }, 30_000);
    await waitUntil(async () => {
      for (const base of bases()) {
        const r = await api(base, "GET", `/v1/endpoints/${epGone}`);
        if (r.json.disabled !== true) return false;
      }
      return true;
    }, 30_000);
    const seenAtDisable = gone.seen.length;
    const after: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await apiRetrying(bases, "POST", "/v1/events", {
        type: "account.closed",
        payload: { i },
      });
      after.push(Number(r.json.jobs ?? -1));
    }
    await new Promise((r) => setTimeout(r, 3_000));
    check(
      "an endpoint answering 410 is disabled and gets nothing after",
      goneFirst.status === 202 && reason === "gone" && gone.seen.length === seenAtDisable &&
        after.every((n) => n === 0),
      `first event ${goneFirst.status}; disabled_reason ${
        JSON.stringify(reason)
      }; requests ${seenAtDisable} at disable, ` +
        `${gone.seen.length} after; jobs of the 5 later events: ${after.join(",")}`,
    );

    // 4. Rotation.
    const before = await apiRetrying(bases, "POST", "/v1/events", {
      type: "report.ready",
      payload: {},
    });
    await waitUntil(() => rotated.seen.some((s) => s.status === 204), 30_000);
    const rot = await apiRetrying(bases, "POST", `/v1/endpoints/${epRotated}/secret/rotate`, {});
    const newSecret = String(rot.json.secret ?? "");
    rotationSecrets = [secretOf(6), newSecret];
    const afterIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const base = bases()[i % bases().length]!;
      // Every node must hold the rotation before its events are made: wait for its GET.
      await waitUntil(async () => {
        const r = await api(base, "GET", `/v1/endpoints/${epRotated}/secret`);
        return r.json.secret === newSecret;
      }, 20_000);
      const r = await api(base, "POST", "/v1/events", { type: "report.ready", payload: { i } });
      afterIds.push(String(r.json.id));
    }
    await waitUntil(() => afterIds.every((id) => delivered(rotated, id)), 30_000);
    const afterSeen = rotated.seen.filter((s) => afterIds.includes(s.webhookId));
    check(
      "after a rotation, deliveries verify under the old and the new secret",
      before.status === 202 && rot.status === 200 && newSecret.startsWith("whsec_") &&
        newSecret !== secretOf(6) && afterSeen.length >= 5 && afterSeen.every((s) => s.verified),
      `rotate ${rot.status}; deliveries after: ${afterSeen.length}, verified under both: ${
        afterSeen.filter((s) => s.verified).length
      }`,
    );
  } catch (error) {
    check("the run completed", false, String(error));
  } finally {
    await cluster.stopAll();
    for (const r of receivers) await r.close();
    await Deno.remove(cluster.dataRoot, { recursive: true }).catch(() => {});
  }
  say(`load average after: ${Deno.loadavg().join(" ")}`);
  const failed = checks.filter((c) => !c.pass).length;
  say(`${checks.length - failed} of ${checks.length} checks passed`);
  if (OUT !== undefined) await Deno.writeTextFile(OUT, lines.join("\n") + "\n");
  return failed === 0 ? 0 : 1;
}

Deno.exit(await main());
