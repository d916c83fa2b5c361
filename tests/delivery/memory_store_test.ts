import { assertEquals } from "../assert.ts";
import { MemoryDeliveryStore } from "../../src/delivery/memory_store.ts";
import type { DeliveryJob } from "../../src/delivery/types.ts";

const job = (id: string): DeliveryJob => ({
  id,
  url: "http://a.test/",
  payload: "{}",
  secrets: [],
});
const dead = (id: string) => ({ kind: "dead" as const, jobId: id, attemptsMade: 1, reason: "x" });

Deno.test("MemoryDeliveryStore keeps at most deadLettersMax, dropping the oldest", async () => {
  const store = new MemoryDeliveryStore({ deadLettersMax: 2 });
  for (const id of ["a", "b", "c"]) await store.recordDead(job(id), dead(id));
  assertEquals(store.listDead(10).map((l) => l.job.id), ["b", "c"]);
  // The same job dead again replaces its letter and evicts nobody.
  await store.recordDead(job("c"), dead("c"));
  assertEquals(store.listDead(10).map((l) => l.job.id), ["b", "c"]);
});
