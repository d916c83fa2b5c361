/**
 * Which jobs a stopped node's disk holds: the benches' check that every acknowledged job is
 * on a majority of disks after the run (`lost`).
 *
 * Owns a read-only pass over one WAL directory: the WAL's own recovery (`recoverWal`) on a
 * file system that refuses every write, so the check can never repair, truncate or extend
 * what it is checking (a directory needing repair fails the census instead), and the job
 * store's batch decoder. A job counts as held when its SUBMIT is there, or a checkpoint's
 * state record or a COMMIT carrying its spec: the records a replica can deliver it from.
 */

import { walDefaults } from "../config/wal.ts";
import { decodeWalBatch } from "../jobs/job_codec.ts";
import { recoverWal } from "../wal/recovery.ts";
import { denoWalFs, type WalFs } from "../wal/wal_fs.ts";

export interface WalCensus {
  /** Job ids whose spec is on this disk. */
  readonly jobIds: Set<string>;
  readonly dataRecords: number;
  readonly snapshotRecords: number;
  /** WAL payloads the job-store decoder refused (should be 0). */
  readonly undecodable: number;
}

function refuse(what: string): never {
  throw new Error(`read-only WAL census: ${what} refused`);
}

/** The real disk with every mutation refused. */
const readOnlyFs: WalFs = {
  async mkdirp(dir) {
    const info = await Deno.stat(dir);
    if (!info.isDirectory) refuse(`${dir} is not a directory`);
  },
  list: (dir) => denoWalFs.list(dir),
  readFile: (path) => denoWalFs.readFile(path),
  readRange: (path, offset, lengthBytes) => denoWalFs.readRange(path, offset, lengthBytes),
  openAppend: (path) => refuse(`opening ${path} for append`),
  truncate: (path) => refuse(`truncating ${path}`),
  remove: (path) => refuse(`removing ${path}`),
  syncDir: () => Promise.resolve(),
};

/** Reads `dir` (a stopped node's WAL) without changing it. */
export async function walCensus(dir: string): Promise<WalCensus> {
  const jobIds = new Set<string>();
  let undecodable = 0;
  const recovered = await recoverWal(readOnlyFs, dir, walDefaults.recordBytesMax, (record) => {
    const decoded = decodeWalBatch(record.payload);
    if (!decoded.ok) {
      undecodable++;
      return;
    }
    for (const { record: r } of decoded.value) {
      if (r.type === "submit") jobIds.add(r.spec.id);
      else if (r.type === "commit" && r.spec !== undefined) jobIds.add(r.spec.id);
      else if (r.type === "state" && r.state.spec !== undefined) jobIds.add(r.state.jobId);
    }
  });
  return {
    jobIds,
    dataRecords: recovered.report.dataRecords,
    snapshotRecords: recovered.report.snapshotRecords,
    undecodable,
  };
}
