/**
 * The sink's POST /receipts, which the sweeps join their accepted ids with: the first arrival of
 * each id and the duplicates after it, null for an id never received, and `ids_reset` when the
 * sink had to forget ids (then no receipt can be trusted).
 */

import { assert, assertEquals } from "../assert.ts";
import { startSink } from "../../src/process/sink.ts";

async function deliver(port: number, id: string, path = "/hook"): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { "webhook-id": id },
    body: "{}",
  });
  await response.body?.cancel();
  assertEquals(response.status, 204);
}

async function receipts(port: number, ids: string[], path?: string) {
  const response = await fetch(`http://127.0.0.1:${port}/receipts`, {
    method: "POST",
    body: JSON.stringify(path === undefined ? { ids } : { ids, path }),
  });
  return await response.json() as {
    receipts: Array<{ at: number; duplicates: number } | null>;
    ids_reset: number;
  };
}

Deno.test("sink /receipts: first arrival and duplicates per id, null for one never received", async () => {
  const sink = await startSink({ hostname: "127.0.0.1", port: 0 });
  try {
    const before = performance.timeOrigin + performance.now();
    await deliver(sink.port, "a");
    const between = performance.timeOrigin + performance.now();
    await deliver(sink.port, "b");
    await deliver(sink.port, "a");
    await deliver(sink.port, "a");
    const answer = await receipts(sink.port, ["a", "b", "c"]);
    assertEquals(answer.ids_reset, 0);
    const [a, b, c] = answer.receipts;
    assertEquals([a?.duplicates, b?.duplicates, c], [2, 0, null]);
    // The first arrival, not a later one.
    assert(a !== null && a !== undefined && a.at >= before && a.at <= between, JSON.stringify(a));
    const stats = sink.stats();
    assertEquals([stats.received, stats.unique, stats.duplicates], [4, 2, 2]);
  } finally {
    await sink.close();
  }
});

Deno.test("sink /receipts says when it had to forget ids", async () => {
  const sink = await startSink({ hostname: "127.0.0.1", port: 0, idsMax: 2 });
  try {
    for (const id of ["a", "b", "c"]) await deliver(sink.port, id);
    assertEquals((await receipts(sink.port, ["c"])).ids_reset, 1);
  } finally {
    await sink.close();
  }
});

Deno.test("sink /receipts: one event's deliveries to K endpoint paths are K receipts, a repeat on one path a duplicate", async () => {
  const sink = await startSink({ hostname: "127.0.0.1", port: 0 });
  try {
    // Every endpoint of an event gets the event's id as webhook-id (docs/endpoints.md).
    for (const path of ["/hook/1", "/hook/2", "/hook/3"]) await deliver(sink.port, "evt_a", path);
    await deliver(sink.port, "evt_a", "/hook/2");
    const dups = (r: { at: number; duplicates: number } | null | undefined) =>
      r === null || r === undefined ? null : r.duplicates;
    const per = await Promise.all(
      ["/hook/1", "/hook/2", "/hook/3", "/hook/4"].map((p) => receipts(sink.port, ["evt_a"], p)),
    );
    assertEquals(per.map((a) => dups(a.receipts[0])), [0, 1, 0, null]);
    // Without a path the question is about /hook, where no delivery of evt_a went.
    assertEquals((await receipts(sink.port, ["evt_a"])).receipts, [null]);
    const stats = sink.stats();
    assertEquals([stats.received, stats.unique, stats.duplicates], [4, 3, 1]);
    const bad = await fetch(`http://127.0.0.1:${sink.port}/receipts`, {
      method: "POST",
      body: JSON.stringify({ ids: ["evt_a"], path: 7 }),
    });
    await bad.body?.cancel();
    assertEquals(bad.status, 400);
  } finally {
    await sink.close();
  }
});
