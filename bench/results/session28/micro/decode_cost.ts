// CPU of decoding a replication message holding one SUBMIT (as a replica does per job), and a
// DONE record with an attempt: ns per decode, best of 5 rounds of 200,000.
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { decodeMessage, encodeMessage } from "../../../../src/jobs/job_messages.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";

const origin = "127.0.0.1:7001";
const submit: JobRecord = {
  type: "submit",
  stamp: { origin, seq: 12345 },
  spec: {
    id: "job_1000000000a1b2c3d4e5f6", url: "http://127.0.0.1:9000/hook",
    payload: JSON.stringify({ bench: "x".repeat(116) }), headers: {}, secrets: ["whsec_" + "A".repeat(32)],
    timeoutMs: 0, maxAttempts: 7, submittedAtMs: 1_800_000_000_123.5, bodyHash: "",
  },
};
const done: JobRecord = {
  type: "done", stamp: { origin, seq: 12346 }, jobId: "job_1000000000a1b2c3d4e5f6", gen: 0,
  finishedAtMs: 1_800_000_000_130.25,
  attempt: { attempt: 1, startedAtMs: 1_800_000_000_125.5, latencyMs: 1.5, outcome: "success", status: 200, detail: "", node: origin },
};
const message = encodeMessage({ kind: "repl", from: origin, records: [encodeRecord(submit)] });
const doneBytes = encodeRecord(done);
function time(name: string, f: () => unknown): void {
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const t0 = performance.now();
    for (let i = 0; i < 200_000; i++) f();
    best = Math.min(best, (performance.now() - t0) * 1e6 / 200_000);
  }
  console.log(`${name}: ${best.toFixed(0)} ns`);
}
time("repl message with a SUBMIT", () => decodeMessage(message));
time("DONE record with an attempt", () => decodeRecord(doneBytes));
