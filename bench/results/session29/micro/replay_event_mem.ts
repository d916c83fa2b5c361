// Heap a node holds after replaying a checkpoint of events whose jobs are pending: EVENTS
// events of PAYLOAD_CHARS characters, each fanned out to 8 endpoints, taken from a JobTable's
// `snapshotRecords`, encoded and decoded as a checkpoint is, and applied to a fresh table (the
// event's `event-state` first, then each job's `state`). Bytes per event after full GCs, and the
// table's own count of the backlog.
// deno run --v8-flags=--expose-gc --config deno.json bench/results/session29/micro/replay_event_mem.ts EVENTS PAYLOAD_CHARS
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import type { EventBody } from "../../../../src/jobs/event_model.ts";

const EVENTS = Number(Deno.args[0] ?? 20);
const PAYLOAD_CHARS = Number(Deno.args[1] ?? 100_000);
const gc = (globalThis as unknown as { gc: () => void }).gc;
const T0 = 1_800_000_000_000;
const source = new JobTable(jobsDefaults);
for (let e = 0; e < EVENTS; e++) {
  const body: EventBody = {
    event: {
      id: `evt_${e.toString(16).padStart(32, "0")}`,
      type: "invoice.paid",
      payload: `{"n":${e},"pad":"${"x".repeat(PAYLOAD_CHARS - 20)}"}`,
      submittedAtMs: T0,
      bodyHash: "",
    },
    jobs: Array.from({ length: 8 }, (_, i) => ({
      endpointId: `ep_${i}`,
      url: "http://127.0.0.1:9000/hook",
      headers: {},
      secrets: [],
      timeoutMs: 0,
      maxAttempts: 7,
    })),
  };
  source.apply({ type: "event", stamp: { origin: "127.0.0.1:7001", seq: e + 1 }, body }, T0);
}
const checkpoint = [...source.snapshotRecords()].map((r) => encodeRecord(r));
gc();
gc();
const before = Deno.memoryUsage().heapUsed;
const replayed = new JobTable(jobsDefaults);
for (const bytes of checkpoint) {
  const decoded = decodeRecord(bytes);
  if (!decoded.ok) throw new Error(decoded.reason);
  replayed.apply(decoded.value, T0);
}
gc();
gc();
const after = Deno.memoryUsage().heapUsed;
const counted = (replayed as unknown as { backlogBytes?: number }).backlogBytes;
console.log(JSON.stringify({
  events: EVENTS,
  payloadChars: PAYLOAD_CHARS,
  pendingJobs: replayed.counts.pending,
  heapBytesPerEvent: Math.round((after - before) / EVENTS),
  countedBacklogBytesPerEvent: counted === undefined ? null : Math.round(counted / EVENTS),
}));
