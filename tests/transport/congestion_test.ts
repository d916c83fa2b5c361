/**
 * Congestion control and pacing: the model's parts on their own, then whole endpoints behind a
 * simulated bottleneck (a receiver that drains its bounded socket queue at a fixed rate), in
 * virtual time. Figures asserted are shares of the bottleneck the simulation defines, never
 * wall-clock speeds.
 */

import { equal, ok } from "node:assert/strict";
import { WindowedMax } from "../../src/transport/congestion.ts";
import { DeliveryRateEstimator } from "../../src/transport/delivery_rate.ts";
import { Pacer } from "../../src/transport/pacer.ts";
import { BottleneckNet, saturate } from "./bottleneck_harness.ts";

Deno.test("WindowedMax holds the largest value of the last N rounds", () => {
  const max = new WindowedMax(3);
  const steps: Array<[number, number, number]> = [
    // [value, round, expected max after]
    [10, 1, 10],
    [5, 2, 10],
    [7, 3, 10],
    [6, 4, 7], // 10 (round 1) has left the window
    [4, 5, 7],
    [3, 6, 6],
    [9, 6, 9],
  ];
  for (const [value, round, expected] of steps) {
    max.update(value, round);
    equal(max.value, expected, `after ${value} in round ${round}`);
  }
});

Deno.test("DeliveryRateEstimator measures the send rate, not a bunch of acks arriving at once", () => {
  const rate = new DeliveryRateEstimator();
  // Ten 1,000-byte packets sent 1 ms apart, all acknowledged together at 20 ms (the receiver's
  // event loop held the acks): 10,000 bytes over the 10 ms of sending at best, not over the
  // microsecond between the acks.
  const packets = Array.from({ length: 10 }, (_, i) => rate.onSent(i, i * 1000));
  for (const p of packets) rate.onAcked(20, p, 1000);
  const sample = rate.takeSample(0.1);
  ok(sample !== undefined);
  ok(sample.deliveryRateBytesPerMs <= 1000, `rate ${sample.deliveryRateBytesPerMs} bytes/ms`);
  equal(sample.appLimited, false);
  // Once the application leaves the window unused, samples say so until that data is acked.
  rate.markAppLimited(0);
  const p = rate.onSent(30, 0);
  equal(p.appLimited, true);
  rate.onAcked(31, p, 1000);
  equal(rate.takeSample(0.1)?.appLimited, true);
  const q = rate.onSent(32, 0);
  equal(q.appLimited, false);
});

Deno.test("Pacer spreads sends at its rate with bursts of at most burstMs of it", () => {
  const rateBytesPerMs = 1000;
  const pacer = new Pacer(2, 1000);
  let nowMs = 0;
  let sent = 0;
  let burstMax = 0;
  let burst = 0;
  // A sender with endless data that wakes when the pacer says, sending 500-byte datagrams.
  for (let wakeups = 0; wakeups < 10_000 && nowMs < 100; wakeups++) {
    burst = 0;
    while (pacer.canSend(nowMs, rateBytesPerMs)) {
      pacer.onSent(nowMs, rateBytesPerMs, 500);
      sent += 500;
      burst += 500;
    }
    burstMax = Math.max(burstMax, burst);
    const next = pacer.readyAtMs(rateBytesPerMs);
    ok(next > nowMs, "the next send lies in the future");
    nowMs = next;
  }
  // 100 ms at 1,000 bytes/ms, plus the first burst (2 ms) and one datagram of overdraft.
  ok(sent >= 100_000 && sent <= 100_000 + 2_000 + 500, `sent ${sent} bytes`);
  ok(burstMax <= 2_000 + 500, `largest burst ${burstMax} bytes`);
  // A late wake-up (a timer 10 ms late) sends only one burst's worth, not 10 ms of backlog.
  nowMs += 10;
  burst = 0;
  while (pacer.canSend(nowMs, rateBytesPerMs)) {
    pacer.onSent(nowMs, rateBytesPerMs, 500);
    burst += 500;
  }
  ok(burst <= 2_000 + 500, `burst after a late timer ${burst} bytes`);
});

/** Receiver drains 20 KB/ms (~14,000 datagrams/s of 1,400 bytes) from a 90-datagram queue. */
const DRAIN_BYTES_PER_MS = 20_000;
const QUEUE_DATAGRAMS = 90;
const MESSAGE_BYTES = 100;

interface Run {
  /** Message bytes per ms each sender got through, measured after the first 100 ms. */
  goodputBytesPerMs: number[];
  overflowShare: number;
  bytesInFlightMax: number[];
}

function run(
  seed: number,
  senders: number,
  lossProbability: number,
  durationMs = 600,
  config = {},
): Run {
  const net = new BottleneckNet({
    seed,
    drainBytesPerMs: DRAIN_BYTES_PER_MS,
    queueDatagramsMax: QUEUE_DATAGRAMS,
    lossProbability,
    config,
  });
  const rx = net.host("10.0.0.100:7000", "rx");
  const txs = Array.from({ length: senders }, (_, i) => net.host(`10.0.0.${i + 1}:7000`, `tx${i}`));
  for (const tx of txs) saturate(net, tx, rx, MESSAGE_BYTES, durationMs);
  const warmupMs = 100;
  net.scheduler.runUntil(warmupMs);
  const before = txs.map((tx) => rx.flowFrom(tx.address).goodputBytes);
  const linkBefore = { ...net.link };
  net.scheduler.runUntil(durationMs);
  for (const tx of txs) equal(rx.flowFrom(tx.address).duplicates, 0);
  return {
    goodputBytesPerMs: txs.map((tx, i) =>
      (rx.flowFrom(tx.address).goodputBytes - before[i]!) / (durationMs - warmupMs)
    ),
    overflowShare: (net.link.overflowDrops - linkBefore.overflowDrops) /
      Math.max(1, net.link.datagrams - linkBefore.datagrams),
    bytesInFlightMax: txs.map((tx) => tx.bytesInFlightMax),
  };
}

/**
 * Message bytes a saturated link can carry per ms: the drain rate times the share of a datagram
 * that is message (100-byte messages with 12 bytes of framing, plus header, ack and MAC),
 * times the share random loss leaves.
 */
const achievable = (lossProbability: number) => DRAIN_BYTES_PER_MS * 0.85 * (1 - lossProbability);

for (const loss of [0, 0.2]) {
  Deno.test(`congestion control fills a bottleneck alone at ${loss * 100} % random loss without overrunning it`, () => {
    for (const seed of [1, 2, 3]) {
      const r = run(seed, 1, loss);
      const share = r.goodputBytesPerMs[0]! / achievable(loss);
      // A loss-based controller halving its window on every loss would crawl at 20 % loss.
      ok(share >= 0.8, `seed ${seed}: ${(share * 100).toFixed(1)} % of what the link carries`);
      ok(r.overflowShare <= 0.005, `seed ${seed}: ${(r.overflowShare * 100).toFixed(2)} % overrun`);
    }
  });
}

Deno.test("congestion control shares a receiver between two senders, keeping its queue from overflowing", () => {
  for (const seed of [4, 5]) {
    for (const loss of [0, 0.2]) {
      const r = run(seed, 2, loss, 1000);
      const total = r.goodputBytesPerMs[0]! + r.goodputBytesPerMs[1]!;
      const what = `seed ${seed}, loss ${loss}`;
      ok(total >= 0.85 * achievable(loss), `${what}: together ${total.toFixed(0)} bytes/ms`);
      for (const g of r.goodputBytesPerMs) {
        ok(g >= 0.25 * total, `${what}: one sender got ${g.toFixed(0)} of ${total.toFixed(0)}`);
      }
      ok(r.overflowShare <= 0.01, `${what}: ${(r.overflowShare * 100).toFixed(2)} % overrun`);
    }
  }
});

Deno.test("congestion control follows a receiver that slows to a quarter of its rate", () => {
  const net = new BottleneckNet({
    seed: 9,
    drainBytesPerMs: DRAIN_BYTES_PER_MS,
    queueDatagramsMax: QUEUE_DATAGRAMS,
    lossProbability: 0.1,
  });
  const rx = net.host("10.0.0.100:7000", "rx");
  const tx = net.host("10.0.0.1:7000", "tx");
  saturate(net, tx, rx, MESSAGE_BYTES, 1000);
  net.scheduler.runUntil(400);
  net.setDrain(DRAIN_BYTES_PER_MS / 4);
  const linkBefore = { ...net.link };
  const before = rx.flowFrom(tx.address).goodputBytes;
  net.scheduler.runUntil(1000);
  const goodput = (rx.flowFrom(tx.address).goodputBytes - before) / 600;
  ok(goodput >= 0.7 * achievable(0.1) / 4, `goodput ${goodput.toFixed(0)} bytes/ms after`);
  const overflow = net.link.overflowDrops - linkBefore.overflowDrops;
  ok(overflow <= 0.01 * (net.link.datagrams - linkBefore.datagrams), `${overflow} overruns`);
  const stats = tx.endpoint.peerStats(rx.address)!;
  ok(
    stats.pacingRateBytesPerMs <= 1.3 * DRAIN_BYTES_PER_MS / 4,
    `pacing ${stats.pacingRateBytesPerMs.toFixed(0)} bytes/ms`,
  );
});

Deno.test("retransmissions count against the window: through a blackout, probes take in flight at most one datagram past it", () => {
  const windowBytes = 8192;
  const datagramBytes = 1400;
  for (const seed of [11, 12, 13]) {
    const net = new BottleneckNet({
      seed,
      drainBytesPerMs: DRAIN_BYTES_PER_MS,
      queueDatagramsMax: QUEUE_DATAGRAMS,
      lossProbability: 0.2,
      config: { windowBytes, datagramBytes },
    });
    const rx = net.host("10.0.0.100:7000", "rx");
    const tx = net.host("10.0.0.1:7000", "tx");
    saturate(net, tx, rx, MESSAGE_BYTES, 2000);
    net.scheduler.runUntil(100);
    // Nothing gets through for a while: tail-loss probes, then RTOs, each want to resend.
    net.setLoss(1);
    net.scheduler.runUntil(600);
    net.setLoss(0.2);
    const before = rx.flowFrom(tx.address).messages;
    net.scheduler.runUntil(2000);
    ok(
      tx.bytesInFlightMax <= windowBytes + datagramBytes,
      `seed ${seed}: ${tx.bytesInFlightMax} bytes in flight`,
    );
    ok(rx.flowFrom(tx.address).messages > before, `seed ${seed}: no recovery after the blackout`);
  }
});

Deno.test("a blackout right after the receiver slowed, with more in flight than the shrunken window, ends in one RTO, not one per datagram", () => {
  // Seed 1 at 5 % loss: the receiver drains 16 times slower from 300 ms; at 550 ms the window
  // has shrunk to its least (4 datagrams) while ~22 datagrams sent before are still in flight,
  // and a 500 ms blackout loses them all.
  const net = new BottleneckNet({
    seed: 1,
    drainBytesPerMs: DRAIN_BYTES_PER_MS,
    queueDatagramsMax: QUEUE_DATAGRAMS,
    lossProbability: 0.05,
  });
  const rx = net.host("10.0.0.100:7000", "rx");
  const tx = net.host("10.0.0.1:7000", "tx");
  saturate(net, tx, rx, MESSAGE_BYTES, 60_000);
  net.scheduler.runUntil(300);
  net.setDrain(DRAIN_BYTES_PER_MS / 16);
  net.scheduler.runUntil(550);
  const s = tx.endpoint.peerStats(rx.address)!;
  // The case is only tested if the window did shrink below what is in flight.
  ok(s.bytesInFlight > s.cwndBytes + 1400, `in flight ${s.bytesInFlight}, window ${s.cwndBytes}`);
  net.setLoss(1);
  net.scheduler.runUntil(1050);
  net.setLoss(0.05);
  const before = rx.flowFrom(tx.address).messages;
  // Past the blackout the next RTO (backed off to at most rtoMaxMs, 2 s) must get data through.
  let recoveredAfterMs = -1;
  for (let t = 1050; t <= 1050 + 10_000; t += 5) {
    net.scheduler.runUntil(t);
    if (rx.flowFrom(tx.address).messages > before) {
      recoveredAfterMs = t - 1050;
      break;
    }
  }
  ok(
    recoveredAfterMs >= 0 && recoveredAfterMs <= 2_500,
    `first delivery ${recoveredAfterMs} ms after the blackout (-1: none in 10 s)`,
  );
  ok(tx.bytesInFlightMax <= 32768 + 1400, `${tx.bytesInFlightMax} bytes in flight`);
});
