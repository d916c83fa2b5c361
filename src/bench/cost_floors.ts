/**
 * The floors of the runtime primitives a job uses, measured on the machine this runs on: what
 * one UDP send or receive, one ChaCha20-Poly1305 seal or open of a full datagram, one small write +
 * fsync, one HTTP request served and fetched over a kept-alive connection, and one timer
 * wake-up cost, in CPU µs (user + system of this process) and wall µs. `hookd bench cost`
 * multiplies them by the operations a job needs to say what a job must cost.
 *
 * Owns only these measurements, each sequential in this one process (no parallelism to hide
 * behind). Must not start hookd processes or read the project's config beyond the datagram
 * size it is given.
 */

import process from "node:process";
import { ClusterKeyring, openDatagram, sealDatagram } from "../transport/datagram_crypto.ts";
import { round } from "../lib/round.ts";

/** One primitive's cost per operation. */
export interface Floor {
  /** What was measured, e.g. "udp_send". */
  readonly name: string;
  /** How, in a few words (sizes, sides). */
  readonly what: string;
  readonly ops: number;
  /** User + system CPU of this process per operation, µs. */
  readonly cpuUs: number;
  /** Wall time per operation, µs. */
  readonly wallUs: number;
}

export interface FloorOptions {
  /** Bytes of a datagram (sealed size), as the transport sends them. */
  readonly datagramBytes: number;
  /** Operations per primitive (fsyncs and HTTP requests take a tenth of it, at least 50). */
  readonly ops: number;
  /** A directory on the disk the WALs use, for the fsync floor (never a tmpfs). */
  readonly fsyncDir: string;
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

async function measure(
  name: string,
  what: string,
  ops: number,
  body: (ops: number) => Promise<void> | void,
): Promise<Floor> {
  const cpu0 = cpuUs();
  const wall0 = performance.now();
  await body(ops);
  const wallUs = (performance.now() - wall0) * 1000;
  const usedUs = cpuUs() - cpu0;
  return {
    name,
    what,
    ops,
    cpuUs: round(usedUs / ops, 2)!,
    wallUs: round(wallUs / ops, 2)!,
  };
}

/** UDP on loopback, one socket to another: sends alone, then receives of what was sent. */
async function udpFloors(options: FloorOptions): Promise<Floor[]> {
  const a = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const b = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const to = b.addr as Deno.NetAddr;
  const datagram = new Uint8Array(options.datagramBytes).fill(7);
  const buffer = new Uint8Array(65_536);
  // Bursts small enough for the receive buffer, so the receive side reads every one.
  const burst = 64;
  let sendCpu = 0;
  let sendWall = 0;
  let receiveCpu = 0;
  let receiveWall = 0;
  let received = 0;
  try {
    for (let done = 0; done < options.ops; done += burst) {
      const n = Math.min(burst, options.ops - done);
      let c = cpuUs();
      let w = performance.now();
      for (let i = 0; i < n; i++) await a.send(datagram, to);
      sendCpu += cpuUs() - c;
      sendWall += performance.now() - w;
      c = cpuUs();
      w = performance.now();
      for (let i = 0; i < n; i++) {
        await b.receive(buffer);
        received++;
      }
      receiveCpu += cpuUs() - c;
      receiveWall += performance.now() - w;
    }
  } finally {
    a.close();
    b.close();
  }
  const per = (x: number, n: number) => round(x / n, 2)!;
  return [
    {
      name: "udp_send",
      what: `DatagramConn.send of ${options.datagramBytes} bytes on loopback`,
      ops: options.ops,
      cpuUs: per(sendCpu, options.ops),
      wallUs: per(sendWall * 1000, options.ops),
    },
    {
      name: "udp_receive",
      what: `DatagramConn.receive into a reused buffer, ${options.datagramBytes} bytes waiting`,
      ops: received,
      cpuUs: per(receiveCpu, received),
      wallUs: per(receiveWall * 1000, received),
    },
  ];
}

async function aeadFloors(options: FloorOptions): Promise<Floor[]> {
  const keyring = new ClusterKeyring("bench-cost-cluster-key-0123456789");
  const key = keyring.derive(new Uint8Array(16).fill(3), 0);
  const datagram = new Uint8Array(options.datagramBytes).fill(9);
  const sealed: Uint8Array[] = [];
  const seal = await measure(
    "aead_seal",
    `ChaCha20-Poly1305 seal of a ${options.datagramBytes}-byte datagram (libsodium, WebAssembly)`,
    options.ops,
    (ops) => {
      for (let i = 0; i < ops; i++) {
        const d = datagram.slice();
        // A distinct nonce each time, as the transport's counter gives.
        new DataView(d.buffer).setUint32(20, i);
        sealDatagram(key, d);
        if (i < 256) sealed.push(d);
      }
    },
  );
  let failed = 0;
  const open = await measure(
    "aead_open",
    `ChaCha20-Poly1305 open of a ${options.datagramBytes}-byte datagram (libsodium, WebAssembly)`,
    options.ops,
    (ops) => {
      for (let i = 0; i < ops; i++) {
        if (openDatagram(key, sealed[i % sealed.length]!) === undefined) failed++;
      }
    },
  );
  if (failed > 0) throw new Error(`aead floor: ${failed} datagrams did not open`);
  return [seal, open];
}

async function fsyncFloor(options: FloorOptions, ops: number): Promise<Floor> {
  const dir = await Deno.makeTempDir({ dir: options.fsyncDir, prefix: "hookd-cost-fsync-" });
  const file = await Deno.open(`${dir}/floor.wal`, { create: true, write: true, append: true });
  const record = new Uint8Array(512).fill(1);
  try {
    return await measure(
      "fsync",
      `writeSync of 512 bytes + syncData (as the WAL writes a small batch), in ${options.fsyncDir}`,
      ops,
      async (n) => {
        for (let i = 0; i < n; i++) {
          file.writeSync(record);
          await file.syncData();
        }
      },
    );
  } finally {
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** A `Deno.serve` request answered 202, fetched over a kept-alive connection: both sides. */
async function httpFloor(ops: number): Promise<Floor> {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      await request.arrayBuffer();
      return new Response('{"id":"job_x"}', {
        status: 202,
        headers: { "content-type": "application/json" },
      });
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/v1/jobs`;
  const body = JSON.stringify({ url: "http://127.0.0.1:1/hook", payload: { n: 1, pad: "x" } });
  try {
    // The first requests open the connection and compile the paths; not measured.
    for (let i = 0; i < 20; i++) await (await fetch(url, { method: "POST", body })).arrayBuffer();
    return await measure(
      "http_request",
      "POST answered 202 by Deno.serve, sent by fetch (kept alive); client and server CPU",
      ops,
      async (n) => {
        for (let i = 0; i < n; i++) {
          const response = await fetch(url, {
            method: "POST",
            body,
            headers: { "content-type": "application/json" },
          });
          await response.arrayBuffer();
        }
      },
    );
  } finally {
    await server.shutdown();
  }
}

/** A chain of zero-delay timers: what one wake-up of the event loop by a timer costs. */
function timerFloor(ops: number): Promise<Floor> {
  return measure(
    "timer_wakeup",
    "setTimeout(0) fired, chained (each arms the next: the nesting clamp applies)",
    ops,
    (n) =>
      new Promise<void>((resolve) => {
        let left = n;
        const next = () => {
          if (--left <= 0) resolve();
          else setTimeout(next, 0);
        };
        setTimeout(next, 0);
      }),
  );
}

/** Every floor, in the order the cost table lists them. */
export async function measureFloors(options: FloorOptions): Promise<Floor[]> {
  const slowOps = Math.max(50, Math.floor(options.ops / 10));
  return [
    ...await udpFloors(options),
    ...await aeadFloors(options),
    await fsyncFloor(options, slowOps),
    await httpFloor(slowOps),
    await timerFloor(slowOps),
  ];
}
