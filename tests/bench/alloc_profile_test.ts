/**
 * The cost model's allocation sums (alloc_profile.ts): a V8 sampling heap profile summed per
 * component and per site, by the CPU split's rules.
 */

import { assertEquals, assertThrows } from "../assert.ts";
import {
  addAllocations,
  emptySums,
  parseHeapProfile,
  topSites,
} from "../../src/bench/alloc_profile.ts";

const SRC = "file:///x/src";

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

function node(functionName: string, url: string, selfSize: number, children: Node[] = []): Node {
  return { callFrame: { functionName, url, lineNumber: 9 }, selfSize, children };
}

Deno.test("addAllocations charges bytes to the nearest component and names the site of ours", () => {
  const profile = parseHeapProfile(JSON.stringify({
    head: node("(root)", "", 0, [
      node("receive", `${SRC}/transport/endpoint.ts`, 100, [
        // The runtime's function that allocated is named with our caller.
        node("subarray", "", 40),
        // A lib helper is charged to its caller's component, and named as our caller's site.
        node("str", `${SRC}/lib/bytes.ts`, 30),
        node("decodeMessage", `${SRC}/jobs/job_messages.ts`, 20),
      ]),
      node("(V8 API)", "", 5),
    ]),
  }));
  const sums = addAllocations(profile, emptySums());
  assertEquals(sums.bytes, 195);
  assertEquals(sums.components.transport, 170);
  assertEquals(sums.components.codecs, 20);
  assertEquals(sums.components.runtime_other, 5);
  assertEquals(sums.sites.get("subarray in receive (transport/endpoint.ts:10)"), 40);
  assertEquals(sums.sites.get("str in receive (transport/endpoint.ts:10)"), 30);
  assertEquals(topSites(sums, 2), [
    ["receive (transport/endpoint.ts:10)", 100],
    ["subarray in receive (transport/endpoint.ts:10)", 40],
  ]);
  // Two nodes' profiles sum.
  addAllocations(profile, sums);
  assertEquals(sums.bytes, 390);
});

Deno.test("parseHeapProfile refuses a file that is not a sampling heap profile", () => {
  assertThrows(() => parseHeapProfile(JSON.stringify({ nodes: [], samples: [] })), Error);
  assertThrows(() => parseHeapProfile("{"), Error);
});
