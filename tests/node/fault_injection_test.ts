/**
 * The test-only fault injector: ingress filtering below the transport (partitions, loss
 * bursts, both ending by themselves), failing WAL writes and fsyncs through the real WAL, the
 * control port, and a decoder that never throws on hostile control bodies.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import {
  decodeFaultCommand,
  FaultInjector,
  InjectedDiskError,
} from "../../src/node/fault_injection.ts";
import { serveFaultControl } from "../../src/node/fault_control.ts";
import type { DatagramSocket } from "../../src/transport/datagram_socket.ts";
import type { HostPort } from "../../src/transport/address.ts";
import type { Runtime } from "../../src/lib/runtime.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { Wal, WalFailedError } from "../../src/wal/wal.ts";
import { denoWalFs } from "../../src/wal/wal_fs.ts";

/** A runtime whose clock the test moves by hand; no timer is ever armed by the injector. */
function manualRuntime(): Runtime & { advance(ms: number): void } {
  let now = 0;
  return {
    nowMs: () => now,
    wallMs: () => 1_700_000_000_000 + now,
    setTimer: () => () => {},
    defer: () => {},
    advance(ms: number) {
      now += ms;
    },
  };
}

/** A socket that hands out a scripted list of datagrams, then reports itself closed. */
function scriptedSocket(script: Array<[string, HostPort]>): DatagramSocket {
  let next = 0;
  return {
    localAddress: { hostname: "127.0.0.1", port: 9000 },
    receive(buffer) {
      const item = script[next++];
      if (item === undefined) return Promise.reject(new Error("closed"));
      const bytes = new TextEncoder().encode(item[0]);
      buffer.set(bytes);
      return Promise.resolve([buffer.subarray(0, bytes.length), item[1]]);
    },
    send: () => Promise.resolve(),
    close: () => {},
  };
}

async function drain(socket: DatagramSocket): Promise<string[]> {
  const out: string[] = [];
  const buffer = new Uint8Array(64);
  for (let i = 0; i < 1000; i++) {
    try {
      const [bytes] = await socket.receive(buffer);
      out.push(new TextDecoder().decode(bytes));
    } catch {
      break;
    }
  }
  return out;
}

const A: HostPort = { hostname: "127.0.0.1", port: 7101 };
const B: HostPort = { hostname: "127.0.0.1", port: 7102 };

Deno.test("FaultInjector drops ingress only from the partitioned addresses, until the partition ends", async () => {
  const runtime = manualRuntime();
  const injector = new FaultInjector({ runtime, rng: new Sfc32(1) });
  const script: Array<[string, HostPort]> = [["a1", A], ["b1", B], ["a2", A], ["b2", B]];
  injector.apply({ op: "partition", from: ["127.0.0.1:7101"], ms: 1_000 });
  assertEquals(await drain(injector.wrapSocket(scriptedSocket(script))), ["b1", "b2"]);
  assertEquals(injector.state().dropped.partition, 2);
  assertEquals(injector.state().partitionRemainingMs, 1_000);
  runtime.advance(1_000);
  assertEquals(await drain(injector.wrapSocket(scriptedSocket(script))), ["a1", "b1", "a2", "b2"]);
  assertEquals(injector.state().partitionFrom, []);
  // Without a duration it lasts until healed.
  injector.apply({ op: "partition", from: ["127.0.0.1:7102"] });
  runtime.advance(3_600_000);
  assertEquals(await drain(injector.wrapSocket(scriptedSocket(script))), ["a1", "a2"]);
  injector.apply({ op: "heal" });
  assertEquals((await drain(injector.wrapSocket(scriptedSocket(script)))).length, 4);
});

Deno.test("FaultInjector loss bursts drop about the asked fraction, from every source, then end", async () => {
  const runtime = manualRuntime();
  const injector = new FaultInjector({ runtime, rng: new Sfc32(7) });
  const script: Array<[string, HostPort]> = Array.from(
    { length: 1000 },
    (_, i) => [`d${i}`, i % 2 === 0 ? A : B],
  );
  injector.apply({ op: "loss", probability: 0.3, ms: 500 });
  const kept = await drain(injector.wrapSocket(scriptedSocket(script)));
  assert(kept.length > 620 && kept.length < 780, `kept ${kept.length} of 1000 at 30 % loss`);
  assertEquals(injector.state().dropped.loss, 1000 - kept.length);
  runtime.advance(500);
  assertEquals((await drain(injector.wrapSocket(scriptedSocket(script)))).length, 1000);
  assertEquals(injector.state().lossProbability, 0);
});

Deno.test("FaultInjector fails the real WAL on a write or an fsync, and the WAL stays failed", async () => {
  for (const kind of ["write", "fsync"] as const) {
    const dir = await Deno.makeTempDir({ prefix: "hookd-fault-wal-" });
    try {
      const injector = new FaultInjector({ runtime: manualRuntime(), rng: new Sfc32(1) });
      const { wal } = await Wal.open(dir, { fs: injector.wrapFs(denoWalFs) });
      await wal.append(new Uint8Array([1, 2, 3]));
      injector.apply({ op: "wal-fail", kind });
      let failure: unknown;
      await wal.append(new Uint8Array([4])).catch((e) => (failure = e));
      assert(failure instanceof WalFailedError, `${kind}: the append failed: ${failure}`);
      assert(String((failure as Error).cause ?? failure).includes(kind), String(failure));
      // A heal does not bring a failed disk back, and the WAL refuses every later append.
      injector.apply({ op: "heal" });
      let later: unknown;
      await wal.append(new Uint8Array([5])).catch((e) => (later = e));
      assert(later instanceof WalFailedError, `${kind}: a later append was refused`);
      assertEquals(injector.state().walFailures, 1);
      await wal.close().catch(() => {});
      // What was durable before the failure is still there.
      const replayed: number[] = [];
      const reopened = await Wal.open(dir, {
        replay: (r) => void replayed.push(r.payload.length),
      });
      assertEquals(replayed[0], 3, `${kind}: the acknowledged record survived`);
      await reopened.wal.close();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
  assert(new InjectedDiskError("x").name === "InjectedDiskError");
});

Deno.test("decodeFaultCommand accepts the four commands and never throws on hostile bodies", () => {
  assertEquals(decodeFaultCommand({ op: "partition", from: ["127.0.0.1:7101"], ms: 5 }), {
    ok: true,
    value: { op: "partition", from: ["127.0.0.1:7101"], ms: 5 },
  });
  assertEquals(decodeFaultCommand({ op: "heal" }).ok, true);
  assertEquals(decodeFaultCommand({ op: "wal-fail", kind: "fsync" }).ok, true);
  assertEquals(decodeFaultCommand({ op: "loss", probability: 0.5 }).ok, true);
  for (
    const bad of [
      null,
      [],
      "heal",
      { op: "nope" },
      { op: "loss", probability: 2 },
      { op: "loss", probability: "0.5" },
      { op: "partition", from: "127.0.0.1:1" },
      { op: "partition", from: ["not an address"] },
      { op: "partition", from: new Array(65).fill("127.0.0.1:1") },
      { op: "wal-fail", kind: "read" },
      { op: "heal", ms: -1 },
      { op: "heal", ms: Infinity },
    ]
  ) {
    assertEquals(decodeFaultCommand(bad).ok, false, JSON.stringify(bad));
  }
  // A huge duration is capped, not trusted.
  const capped = decodeFaultCommand({ op: "loss", probability: 0.1, ms: 1e15 });
  assert(capped.ok && capped.value.op === "loss" && capped.value.ms === 600_000);
  fc.assert(
    fc.property(fc.anything(), (value) => {
      const result = decodeFaultCommand(value);
      return typeof result.ok === "boolean";
    }),
    { numRuns: 2_000 },
  );
});

Deno.test("the fault control port applies commands, reports state and refuses bad requests", async () => {
  const injector = new FaultInjector({ runtime: manualRuntime(), rng: new Sfc32(1) });
  const control = serveFaultControl(injector);
  try {
    const post = async (body: string) => {
      const response = await fetch(`${control.url}/faults`, { method: "POST", body });
      return { status: response.status, body: await response.json() };
    };
    const partitioned = await post(JSON.stringify({ op: "partition", from: ["127.0.0.1:7101"] }));
    assertEquals(partitioned.status, 200);
    assertEquals(partitioned.body.partitionFrom, ["127.0.0.1:7101"]);
    assertEquals((await post("{not json")).status, 400);
    assertEquals((await post(JSON.stringify({ op: "loss", probability: 9 }))).status, 400);
    assertEquals((await post("x".repeat(70_000))).status, 400);
    const state = await (await fetch(`${control.url}/faults`)).json();
    assertEquals(state.partitionFrom, ["127.0.0.1:7101"]);
    const other = await fetch(`${control.url}/elsewhere`);
    await other.body?.cancel();
    assertEquals(other.status, 404);
  } finally {
    await control.shutdown();
  }
});
