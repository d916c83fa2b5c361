/**
 * The transport bench's sender gives up on a receiver that never acknowledges: the fixed-rate
 * phase is bounded in time and reports what it could not send, instead of spinning forever.
 */

import { assert } from "../assert.ts";
import { FIXED_RATE_PHASE, runSenderPhase } from "../../src/bench/transport_sender.ts";
import { UdpTransport } from "../../src/transport/mod.ts";

Deno.test("runSenderPhase gives up on a receiver that never acknowledges, and counts what it could not send", async () => {
  // A socket that receives and never answers: every send stays unacknowledged.
  const silent = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const peer = `127.0.0.1:${(silent.addr as Deno.NetAddr).port}`;
  // A small send queue, so it fills within the phase.
  const transport = UdpTransport.start({
    nodeId: "bench-sender-test",
    clusterKey: "k".repeat(32),
    config: { sendQueueBytesMax: 64 * 1024, messageBytesMax: 16 * 1024 },
  });
  try {
    const result = await runSenderPhase(transport, peer, FIXED_RATE_PHASE, {
      seconds: 0.2,
      ratePerS: 20_000,
      messageBytes: 100,
      waitMsMax: 300,
    });
    assert(result.unsent > 0, JSON.stringify(result));
    assert(result.sent + result.unsent === 4_000, JSON.stringify(result));
    assert(!result.idle, "nothing was acknowledged");
  } finally {
    await transport.close();
    silent.close();
  }
});
