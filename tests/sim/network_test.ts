import { assertEquals } from "../assert.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { SimNetwork } from "../../src/sim/network.ts";
import { SimScheduler } from "../../src/sim/scheduler.ts";

function threeNodes(): {
  scheduler: SimScheduler;
  network: SimNetwork<string>;
  got: string[];
} {
  const scheduler = new SimScheduler();
  const network = new SimNetwork<string>(scheduler, new Sfc32(1));
  const got: string[] = [];
  for (const address of ["a", "b", "c"]) {
    network.attach(address, (from, packet) => got.push(`${from}>${address}:${packet}`));
  }
  return { scheduler, network, got };
}

Deno.test("SimNetwork cutOneWay drops one direction of a link only", () => {
  const { scheduler, network, got } = threeNodes();
  network.cutOneWay("a", "b");
  network.send("a", "b", "1");
  network.send("b", "a", "2");
  network.send("a", "c", "3");
  network.send("c", "b", "4");
  scheduler.runUntil(10);
  assertEquals(got.sort(), ["a>c:3", "b>a:2", "c>b:4"]);
  assertEquals(network.stats.partitioned, 1);
});

Deno.test("SimNetwork heal ends one-way cuts and two-way partitions alike", () => {
  const { scheduler, network, got } = threeNodes();
  network.cutOneWay("a", "b");
  network.partition(["c"]);
  network.send("a", "b", "1");
  network.send("a", "c", "2");
  scheduler.runUntil(10);
  assertEquals(got, []);
  network.heal();
  network.send("a", "b", "3");
  network.send("a", "c", "4");
  scheduler.runUntil(20);
  assertEquals(got.sort(), ["a>b:3", "a>c:4"]);
});
