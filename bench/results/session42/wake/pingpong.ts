// The runtime's floor for one wake-up by one datagram: an echo process sleeps in `receive`, is
// woken by one 1,400-byte datagram, and answers it with one. The driver sends one every
// `intervalMs` (as a node at 200 jobs/s is woken every few ms) and waits for the answer; the
// echo's CPU (user and kernel, /proc) over the run, divided by the datagrams, is the floor of a
// wake-up that receives one datagram and sends one, with no work between.
// Usage: deno run -A pingpong.ts [count] [intervalMs] [work: none|seal]
const count = Number(Deno.args[0] ?? 2000);
const intervalMs = Number(Deno.args[1] ?? 5);
const mode = Deno.args[2] ?? "none";

if (Deno.args[3] === "echo") {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 47201 });
  const buffer = new Uint8Array(65536);
  for (;;) {
    const [data, from] = await conn.receive(buffer);
    await conn.send(data, from);
  }
}

const echo = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", import.meta.filename!, String(count), String(intervalMs), mode, "echo"],
  stdout: "null",
  stderr: "inherit",
}).spawn();
await new Promise((r) => setTimeout(r, 1000));
const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 47202 });
const target = { transport: "udp" as const, hostname: "127.0.0.1", port: 47201 };
const payload = new Uint8Array(1400);
const buffer = new Uint8Array(65536);
function cpuTicks(pid: number): number {
  const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime, after the name
}
// Warm-up, not counted.
for (let i = 0; i < 200; i++) {
  await conn.send(payload, target);
  await conn.receive(buffer);
}
const t0 = cpuTicks(echo.pid);
const start = performance.now();
for (let i = 0; i < count; i++) {
  const due = start + i * intervalMs;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  await conn.send(payload, target);
  await conn.receive(buffer);
}
const t1 = cpuTicks(echo.pid);
const hz = 100;
const usPer = ((t1 - t0) / hz) * 1e6 / count;
console.log(
  `echo woken by ${count} datagrams, one every ${intervalMs} ms: ${usPer.toFixed(1)} µs of CPU ` +
    `(user and kernel) a wake-up that receives one datagram and sends one`,
);
echo.kill();
await echo.status;
conn.close();
