// Bytes of V8 heap allocated, and ns, per decode of what a replica decodes per job: a replication
// message holding one SUBMIT, and a DONE record with an attempt. Allocation is V8's own count
// (`total_allocated_bytes`), the same from run to run once the code is optimized; the time is the
// best of 5 rounds. One process:
// deno run -A --config deno.json bench/results/session30/micro/alloc_per_op.ts
import v8 from "node:v8";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { decodeMessage, encodeMessage } from "../../../../src/jobs/job_messages.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";
import { randomId } from "../../../../src/jobs/submit_path.ts";
import { Sfc32 } from "../../../../src/lib/rng.ts";

/** What `randomId` replaced (submit_path.ts before session 30): hex pairs concatenated. */
const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
function concatenatedHex(rng: Sfc32, bytes: number): string {
  let out = "";
  for (let i = 0; i < bytes; i += 4) {
    const word = Math.floor(rng.next() * 0x1_0000_0000);
    out += HEX_BYTE[word >>> 24]! + HEX_BYTE[(word >>> 16) & 0xff]! +
      HEX_BYTE[(word >>> 8) & 0xff]! + HEX_BYTE[word & 0xff]!;
  }
  return out.slice(0, bytes * 2);
}

const origin = "127.0.0.1:7001";
const submit: JobRecord = {
  type: "submit",
  stamp: { origin, seq: 12345 },
  spec: {
    id: "job_1000000000a1b2c3d4e5f6",
    url: "http://127.0.0.1:9000/hook",
    payload: JSON.stringify({ bench: "x".repeat(116) }),
    headers: {},
    secrets: ["whsec_" + "A".repeat(32)],
    timeoutMs: 0,
    maxAttempts: 7,
    submittedAtMs: 1_800_000_000_123.5,
    bodyHash: "",
  },
};
const done: JobRecord = {
  type: "done",
  stamp: { origin, seq: 12346 },
  jobId: "job_1000000000a1b2c3d4e5f6",
  gen: 0,
  finishedAtMs: 1_800_000_000_130.25,
  attempt: {
    attempt: 1,
    startedAtMs: 1_800_000_000_125.5,
    latencyMs: 1.5,
    outcome: "success",
    status: 200,
    detail: "",
    node: origin,
  },
};
const message = encodeMessage({ kind: "repl", from: origin, records: [encodeRecord(submit)] });
const doneBytes = encodeRecord(done);

// Deno's node:v8 reports V8's count, which its types leave out.
const allocated = () =>
  (v8.getHeapStatistics() as unknown as { total_allocated_bytes: number }).total_allocated_bytes;
let sink: unknown;

function measure(name: string, f: () => unknown): void {
  const n = 200_000;
  let bestNs = Infinity;
  let bytes = 0;
  for (let round = 0; round < 5; round++) {
    const a0 = allocated();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) sink = f();
    bestNs = Math.min(bestNs, (performance.now() - t0) * 1e6 / n);
    bytes = (allocated() - a0) / n;
  }
  console.log(`${name}: ${bytes.toFixed(0)} bytes, ${bestNs.toFixed(0)} ns (last round's bytes, best ns)`);
}

measure("repl message with a SUBMIT", () => decodeMessage(message));
measure("DONE record with an attempt", () => decodeRecord(doneBytes));
// A minting try: an id drawn, then hashed for its owner (`ownerOf` reads every character,
// which flattens a concatenated string).
const rng = new Sfc32(1);
const lastChar = (id: string) => id.charCodeAt(id.length - 1);
measure("job id, hex pairs concatenated", () => lastChar("job_" + concatenatedHex(rng, 16)));
measure("job id, randomId", () => lastChar(randomId("job_", rng, 16)));
if (sink === undefined) console.log("");
