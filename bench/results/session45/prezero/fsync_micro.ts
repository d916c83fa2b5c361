// One process, sequential: 512-byte writes each followed by fdatasync, (a) appended to a
// growing file, (b) written over a file already zero-filled and synced, so fdatasync has
// no file-size change to journal. Prints wall and CPU (getrusage via Deno.resourceUsage? no:
// /proc/self/stat utime+stime) per write+fsync. deno run -A fsync_micro.ts DIR N ROUNDS
const [dir, nArg, roundsArg] = Deno.args;
const n = Number(nArg ?? 2000);
const rounds = Number(roundsArg ?? 3);
const block = new Uint8Array(512).fill(7);

function cpuMs(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10; // USER_HZ 100
}

function run(kind: "append" | "overwrite"): { wallUs: number; cpuUs: number } {
  const path = `${dir}/fsync-micro-${kind}-${crypto.randomUUID()}`;
  if (kind === "overwrite") {
    const f = Deno.openSync(path, { write: true, create: true });
    const zeros = new Uint8Array(1 << 20);
    for (let written = 0; written < n * 512; written += zeros.length) f.writeSync(zeros);
    f.syncSync();
    f.close();
  }
  const f = kind === "append"
    ? Deno.openSync(path, { append: true, create: true })
    : Deno.openSync(path, { write: true });
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    let off = 0;
    while (off < block.length) off += f.writeSync(block.subarray(off));
    f.syncDataSync();
  }
  const t1 = performance.now();
  const c1 = cpuMs();
  f.close();
  Deno.removeSync(path);
  return { wallUs: (t1 - t0) * 1000 / n, cpuUs: (c1 - c0) * 1000 / n };
}

for (let r = 0; r < rounds; r++) {
  for (const kind of ["append", "overwrite"] as const) {
    const { wallUs, cpuUs } = run(kind);
    console.log(`${kind.padEnd(9)} wall ${wallUs.toFixed(1)} µs, CPU ${cpuUs.toFixed(1)} µs a write+fdatasync`);
  }
}
