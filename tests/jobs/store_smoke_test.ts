import { assertEquals } from "../assert.ts";
import { cluster } from "./store_cluster.ts";

Deno.test("five job stores on the simulator commit and deliver every submit once", async () => {
  const { scheduler, stores, attempts } = await cluster({ networkSeed: 1, lossProbability: 0.05 });
  const delivered = new Map<string, number>();
  const count = () => {
    delivered.clear();
    for (const a of attempts) delivered.set(a.jobId, (delivered.get(a.jobId) ?? 0) + 1);
    return delivered.size;
  };
  const outcomes: Promise<unknown>[] = [];
  const ids: string[] = [];
  for (let i = 0; i < 100; i++) {
    scheduler.at(scheduler.nowMs + i, () => {
      outcomes.push(
        stores[i % 5]!.submit({ url: "http://10.1.1.1/hook", payload: `{"n":${i}}` }).then((o) => {
          if (o.ok) ids.push(o.id);
          else throw new Error(`submit ${i} refused: ${o.code} ${o.message}`);
        }),
      );
    });
  }
  await scheduler.runUntilAsync(
    scheduler.nowMs + 10_000,
    () => ids.length === 100 && count() === 100,
  );
  await Promise.all(outcomes);
  assertEquals(ids.length, 100);
  assertEquals(count(), 100);
  for (const id of ids) assertEquals(delivered.get(id), 1, `job ${id} delivered once`);
  // Every node ends up knowing every job as delivered.
  await scheduler.runUntilAsync(scheduler.nowMs + 5_000);
  for (const s of stores) assertEquals(s.core.table.counts.delivered, 100, `${s.nodeId} table`);
  for (const s of stores) await s.close();
});
