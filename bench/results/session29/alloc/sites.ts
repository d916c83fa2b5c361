import { addAllocations, emptySums, parseHeapProfile, topSites } from "../../../../src/bench/alloc_profile.ts";
const dir = Deno.args[0]!; const jobs = Number(Deno.args[1]); const n = Number(Deno.args[2] ?? 40);
const sums = emptySums();
let nodes = 0;
for (const e of Deno.readDirSync(dir)) if (e.name.endsWith(".heapprofile")) { addAllocations(parseHeapProfile(Deno.readTextFileSync(`${dir}/${e.name}`)), sums); nodes++; }
let total = 0; for (const [, b] of topSites(sums, 100000)) total += b;
console.log("nodes", nodes, "total KB/job/node", (total / 1024 / jobs / nodes).toFixed(2));
for (const [s, b] of topSites(sums, n)) console.log((b / 1024 / jobs / nodes).toFixed(3), s);
