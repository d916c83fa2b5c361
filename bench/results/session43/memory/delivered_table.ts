// A JobTable filled with `n` delivered jobs as a replica would hold them: each job's SUBMIT,
// COMMIT and DONE decoded from bytes (so its strings are its own), as session 33's
// delivered_gc.ts fills one. Shared by snapshot.ts and compact_store.ts.
import { JobTable } from "../../../../src/jobs/job_table.ts";
import { decodeRecord, encodeRecord } from "../../../../src/jobs/job_codec.ts";
import { jobsDefaults } from "../../../../src/config/jobs.ts";
import type { JobRecord } from "../../../../src/jobs/job_model.ts";

const origins = [7001, 7002, 7003, 7004, 7005].map((p) => `127.0.0.1:${p}`);

function decoded(r: JobRecord): JobRecord {
  const d = decodeRecord(encodeRecord(r));
  if (!d.ok) throw new Error(d.reason);
  return d.value;
}

export function deliveredTable(n: number): JobTable {
  const table = new JobTable(jobsDefaults);
  const t0 = Date.now();
  for (let i = 0; i < n; i++) {
    const origin = origins[i % 5]!;
    const id = "job_" + (0x1000000000 + i).toString(16) + "a1b2c3d4e5f6";
    const now = t0 + i;
    const spec = {
      id,
      url: "http://127.0.0.1:9000/hook",
      payload: "x".repeat(200),
      headers: { "content-type": "application/json" },
      secrets: ["whsec_" + "A".repeat(32)],
      timeoutMs: 0,
      maxAttempts: 8,
      submittedAtMs: now,
      bodyHash: "",
    };
    const stamp = (k: number) => ({ origin, seq: 3 * i + k });
    table.apply(decoded({ type: "submit", stamp: stamp(1), spec }), now);
    table.apply(decoded({ type: "commit", stamp: stamp(2), jobId: id, bodyHash: "" }), now);
    const attempt = {
      attempt: 1,
      startedAtMs: now + 1,
      latencyMs: 1.5,
      outcome: "success" as const,
      status: 200,
      detail: "",
      node: origin,
    };
    table.apply(
      decoded({ type: "done", stamp: stamp(3), jobId: id, gen: 0, finishedAtMs: now + 3, attempt }),
      now,
    );
  }
  return table;
}
