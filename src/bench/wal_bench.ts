/**
 * `hookd bench wal`: group commit against one-fsync-per-append, in one run.
 *
 * Owns the WAL benchmark only: C concurrent appenders each append a record, wait for it to be
 * durable, and append the next, for S seconds in each mode on a fresh directory. Figures are
 * measured here, never assumed.
 *
 * The figures are fsync costs, so they belong to the filesystem the log ran on: the bench
 * prints it and puts it in the JSON, and refuses to run on a memory filesystem (tmpfs, where
 * fsync is free and both modes measure only the CPU) unless `--allow-tmpfs` says to, and then
 * warns before and after.
 */

import type { ParsedArgs } from "../process/args.ts";
import { booleanFlag, numberFlag, stringFlag } from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import type { WalSyncMode } from "../config/wal.ts";
import { Histogram } from "../metrics/histogram.ts";
import { round } from "../lib/round.ts";
import { Wal } from "../wal/mod.ts";
import { memoryFilesystemRefusal, probeWalFilesystem } from "./filesystem.ts";

export interface WalModeResult {
  mode: WalSyncMode;
  appends: number;
  seconds: number;
  appendsPerS: number;
  fsyncs: number;
  fsyncsPerAppend: number;
  meanBatchRecords: number;
  p50AppendMs: number;
  p99AppendMs: number;
  maxAppendMs: number;
}

export async function runWalMode(
  dir: string,
  mode: WalSyncMode,
  seconds: number,
  concurrency: number,
  recordBytes: number,
): Promise<WalModeResult> {
  const { wal } = await Wal.open(dir, { config: { syncMode: mode } });
  const latency = new Histogram();
  const payload = new Uint8Array(recordBytes);
  crypto.getRandomValues(payload);
  let appends = 0;
  const started = performance.now();
  const endAt = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < endAt) {
        const t0 = performance.now();
        await wal.append(payload);
        latency.record(performance.now() - t0);
        appends++;
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  await wal.close();
  const fsyncs = wal.metrics.fsyncs.value;
  const s = latency.summary();
  return {
    mode,
    appends,
    seconds: elapsedS,
    appendsPerS: appends / elapsedS,
    fsyncs,
    fsyncsPerAppend: fsyncs / Math.max(1, appends),
    meanBatchRecords: wal.metrics.batchRecords.summary().mean,
    p50AppendMs: s.p50,
    p99AppendMs: s.p99,
    maxAppendMs: s.max,
  };
}

export const walBench: LeafCommand = {
  spec: {
    name: "bench wal",
    summary: "WAL appends/s with group commit vs one fsync per append",
    flags: {
      seconds: { type: "string", valueName: "S", default: "5", help: "Seconds per mode" },
      concurrency: { type: "string", valueName: "C", default: "256", help: "Concurrent appenders" },
      "record-bytes": {
        type: "string",
        valueName: "B",
        default: "300",
        help: "Record payload size",
      },
      dir: {
        type: "string",
        valueName: "DIR",
        help: "Parent directory for the WAL (default: system temp)",
      },
      "allow-tmpfs": {
        type: "boolean",
        help: "Run even on tmpfs/ramfs, where fsync is free and the figures mean nothing",
      },
      json: { type: "boolean", help: "Print one JSON object as the last line" },
    },
  },
  async run(args: ParsedArgs): Promise<number> {
    const seconds = numberFlag(args.values, "seconds", 5, { min: 0.1, max: 3600 });
    const concurrency = numberFlag(args.values, "concurrency", 256, {
      min: 1,
      max: 100_000,
      integer: true,
    });
    const recordBytes = numberFlag(args.values, "record-bytes", 300, {
      min: 1,
      max: 1 << 20,
      integer: true,
    });
    const parent = stringFlag(args.values, "dir");
    const placement = await probeWalFilesystem(parent);
    console.error(`wal bench: ${placement.description}`);
    if (placement.memory !== undefined && !booleanFlag(args.values, "allow-tmpfs")) {
      console.error(
        `wal bench: ${
          memoryFilesystemRefusal(placement, "Give --dir a directory on a disk-backed filesystem")
        }`,
      );
      return EXIT_FAILURE;
    }
    const filesystem = placement.info;
    const tmpfsWarning = placement.warning !== undefined
      ? `WARNING: ${placement.warning}`
      : undefined;
    if (tmpfsWarning !== undefined) console.error(`wal bench: ${tmpfsWarning}`);
    const results: WalModeResult[] = [];
    for (const mode of ["batched", "per-append"] as const) {
      const dir = await Deno.makeTempDir({
        prefix: `hookd-bench-wal-${mode}-`,
        ...(parent ? { dir: parent } : {}),
      });
      try {
        console.error(
          `wal bench: ${mode}, ${concurrency} appenders, ${recordBytes}-byte records, ${seconds} s in ${dir}`,
        );
        const result = await runWalMode(dir, mode, seconds, concurrency, recordBytes);
        console.error(
          `  ${round(result.appendsPerS, 0)} appends/s, ${result.fsyncs} fsyncs ` +
            `(${round(result.meanBatchRecords, 1)} records/batch), p50 ${
              round(result.p50AppendMs, 3)
            } ms, ` +
            `p99 ${round(result.p99AppendMs, 3)} ms`,
        );
        results.push(result);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }
    const [batched, unbatched] = results as [WalModeResult, WalModeResult];
    const summary = {
      batched_appends_per_s: round(batched.appendsPerS, 0),
      unbatched_appends_per_s: round(unbatched.appendsPerS, 0),
      speedup: round(batched.appendsPerS / unbatched.appendsPerS, 1),
      fsyncs_per_append_batched: round(batched.fsyncsPerAppend, 5),
      p99_append_ms_batched: round(batched.p99AppendMs, 3),
      p50_append_ms_batched: round(batched.p50AppendMs, 3),
      mean_batch_records: round(batched.meanBatchRecords, 1),
      p99_append_ms_unbatched: round(unbatched.p99AppendMs, 3),
      concurrency,
      record_bytes: recordBytes,
      filesystem: placement.fsType,
      filesystem_mount_point: filesystem.known ? filesystem.mountPoint : null,
      filesystem_source: filesystem.known ? filesystem.source : null,
      filesystem_via: filesystem.known ? filesystem.via : null,
      ...(tmpfsWarning !== undefined ? { warning: tmpfsWarning } : {}),
    };
    if (booleanFlag(args.values, "json")) console.log(JSON.stringify(summary));
    else console.log(summary);
    // Said again last: the figures above are what a reader copies.
    if (tmpfsWarning !== undefined) console.error(`wal bench: ${tmpfsWarning}`);
    return EXIT_OK;
  },
};
