/**
 * `hookd bench transport` end to end on real processes: one receiver, two senders, short
 * phases. Checks the report's shape (each phase its own figures, nothing summed across them),
 * never a speed.
 */

import { equal, ok } from "node:assert/strict";
import { runTransportBench } from "../../src/bench/transport_bench.ts";

Deno.test("bench transport reports each phase on its own, with two senders into one receiver", async () => {
  const result = await runTransportBench({
    seconds: 0.5,
    maxSeconds: 0.5,
    lossProbability: 0.1,
    ratePerS: 200,
    messageBytes: 100,
    senders: 2,
    config: {},
    log: () => {},
  });
  equal(result.datagram_bytes, 1400, "the LAN datagram size by default");
  equal(result.senders, 2);
  const fixed = result.fixed_rate;
  equal(fixed.sent, 2 * 100, "two senders offering 200 messages/s for 0.5 s");
  equal(fixed.delivered, fixed.sent);
  equal(fixed.lost, 0);
  equal(fixed.duplicates, 0);
  ok(fixed.p99_ms !== null && fixed.p99_ms >= 0);
  ok(fixed.receiver.drops_injected > 0, "the receiver injected loss");
  equal(fixed.receiver.auth_failures, 0);
  const max = result.max_rate;
  equal(max.per_sender.length, 2);
  equal(max.lost, 0);
  equal(max.delivered, max.per_sender[0]!.delivered + max.per_sender[1]!.delivered);
  ok(max.sent > fixed.sent, "the max-rate phase counts only its own messages");
  ok(max.messages_per_s !== null && max.messages_per_s > 0);
});
