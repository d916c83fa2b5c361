// Bytes of V8 heap allocated, and ns, per decode of what a replica decodes per job: a replication
// message holding one SUBMIT, and a DONE record with an attempt. Allocation is V8's own count
// (`total_allocated_bytes`), the same from run to run once the code is optimized; the time is the
// best of 5 rounds. One process:
// deno run -A --config deno.json bench/results/session30/micro/alloc_per_op.ts
import { measureAlloc } from "./measure_alloc.ts";
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

measureAlloc("repl message with a SUBMIT", 200_000, () => decodeMessage(message));
measureAlloc("DONE record with an attempt", 200_000, () => decodeRecord(doneBytes));
// A minting try: an id drawn, then hashed for its owner (`ownerOf` reads every character,
// which flattens a concatenated string).
const rng = new Sfc32(1);
const lastChar = (id: string) => id.charCodeAt(id.length - 1);
measureAlloc("job id, hex pairs concatenated", 200_000, () => lastChar("job_" + concatenatedHex(rng, 16)));
measureAlloc("job id, randomId", 200_000, () => lastChar(randomId("job_", rng, 16)));
