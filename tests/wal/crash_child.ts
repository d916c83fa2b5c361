/**
 * Child process for the SIGKILL crash test: appends numbered records to a WAL from several
 * concurrent appenders and prints each number once its append is acknowledged (durable).
 * Usage: crash_child.ts <dir> <firstNumber> <concurrency>
 */

import { Wal } from "../../src/wal/mod.ts";
import { crashRecord } from "./crash_record.ts";

const [dir, first, concurrency] = Deno.args;
const { wal } = await Wal.open(dir!);
let next = Number(first);
const encoder = new TextEncoder();
// Acknowledgements are printed in chunks so stdout is not the bottleneck; a number is printed
// only after its append resolved, so everything printed is acknowledged.
let acked: number[] = [];
const flush = () => {
  if (acked.length === 0) return;
  Deno.stdout.writeSync(encoder.encode(acked.join("\n") + "\n"));
  acked = [];
};
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    for (;;) {
      const n = next++;
      await wal.append(crashRecord(n));
      acked.push(n);
      queueMicrotask(flush);
    }
  }),
);
