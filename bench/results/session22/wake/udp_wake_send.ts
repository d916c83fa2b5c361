/**
 * What one UDP send costs the sender when it wakes a peer that sleeps in receive, against sends
 * back to back to a peer that is busy: `deno run -A --unstable-net udp_wake_send.ts`.
 * A one-off probe for issue 19's cost model (session 22). The receiver is a second process that
 * loops on `DatagramConn.receive`. The sender times its own CPU (getrusage via process.cpuUsage)
 * around each `send` only, so its waits between sends are not counted.
 */
import process from "node:process";

const role = Deno.args[0] ?? "main";
if (role === "receiver") {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: Number(Deno.args[1]) });
  for (;;) await conn.receive();
}
if (role === "silent") {
  // Bound, never reading: a datagram to it wakes nobody (queued, then dropped once the buffer fills).
  Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: Number(Deno.args[1]) });
  setInterval(() => {}, 60_000);
  await new Promise<void>(() => {});
}

const port = 20_000 + Math.floor(Math.random() * 40_000);
const spawn = (mode: string, at: number) =>
  new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-net", import.meta.filename!, mode, String(at)],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
const receiver = spawn("receiver", port);
const silent = spawn("silent", port + 1);
await new Promise((r) => setTimeout(r, 1500));
const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
let to = { transport: "udp" as const, hostname: "127.0.0.1", port };
const bytes = new Uint8Array(1200);

async function run(label: string, sends: number, gapMs: number, spin = false): Promise<void> {
  let cpuUs = 0;
  let wallUs = 0;
  for (let i = 0; i < sends; i++) {
    if (gapMs > 0 && spin) {
      const until = performance.now() + gapMs;
      while (performance.now() < until) { /* stay on the CPU */ }
    } else if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await conn.send(bytes, to);
    wallUs += (performance.now() - t0) * 1000;
    const c = process.cpuUsage(c0);
    cpuUs += c.user + c.system;
  }
  console.log(
    `${label}: ${sends} sends of ${bytes.length} bytes, ${(cpuUs / sends).toFixed(1)} µs CPU and ` +
      `${(wallUs / sends).toFixed(1)} µs wall per send`,
  );
}

for (let round = 0; round < 2; round++) {
  to = { transport: "udp", hostname: "127.0.0.1", port };
  await run("back to back (peer busy)", 20_000, 0);
  await run("one every 2 ms (peer asleep in receive)", 1_000, 2);
  await run("one every 2 ms, sender spinning between (peer asleep in receive)", 1_000, 2, true);
  to = { transport: "udp", hostname: "127.0.0.1", port: port + 1 };
  await run("one every 2 ms (socket nobody reads: no wake-up)", 1_000, 2);
}
for (const child of [receiver, silent]) {
  child.kill("SIGKILL");
  await child.status;
}
