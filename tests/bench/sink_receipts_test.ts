/**
 * The sink's POST /receipts, which the sweeps join their accepted ids with: the first arrival of
 * each id and the duplicates after it, null for an id never received, and `ids_reset` when the
 * sink had to forget ids (then no receipt can be trusted).
 */

import { assert, assertEquals } from "../assert.ts";
import { startSink } from "../../src/process/sink.ts";

async function deliver(port: number, id: string): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${port}/hook`, {
    method: "POST",
    headers: { "webhook-id": id },
    body: "{}",
  });
  await response.body?.cancel();
  assertEquals(response.status, 204);
}

async function receipts(port: number, ids: string[]) {
  const response = await fetch(`http://127.0.0.1:${port}/receipts`, {
    method: "POST",
    body: JSON.stringify({ ids }),
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
