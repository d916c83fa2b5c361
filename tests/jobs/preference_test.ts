import { assert, assertEquals } from "../assert.ts";
import { ownerOf, preferenceList } from "../../src/jobs/preference.ts";

const VOTERS: string[] = [1, 2, 3, 4, 5].map((i) => `10.0.0.${i}:7000`);
const FIRST = VOTERS[0]!;

Deno.test("preference lists are the same whatever order the voters are given in", () => {
  for (let i = 0; i < 200; i++) {
    const id = `job_${i}`;
    assertEquals(preferenceList(id, VOTERS), preferenceList(id, [...VOTERS].reverse()));
  }
});

Deno.test("ownership spreads evenly, and a dead voter's jobs move to their next voters only", () => {
  const counts = new Map<string, number>();
  const moved = new Map<string, number>();
  const n = 20_000;
  for (let i = 0; i < n; i++) {
    const id = `job_${i.toString(36)}`;
    const owner = ownerOf(id, VOTERS, () => false)!;
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
    const without = ownerOf(id, VOTERS, (v) => v === FIRST)!;
    if (owner !== FIRST) assertEquals(without, owner, "jobs of live owners do not move");
    else {
      assertEquals(without, preferenceList(id, VOTERS)[1], "a dead owner's job goes to its next");
      moved.set(without, (moved.get(without) ?? 0) + 1);
    }
  }
  for (const v of VOTERS) {
    const share = counts.get(v)! / n;
    assert(share > 0.17 && share < 0.23, `${v} owns ${share} of the jobs`);
  }
  // The dead voter's jobs spread over the four others.
  for (const [v, c] of moved) assert(c / counts.get(FIRST)! > 0.18, `${v} took ${c}`);
  assertEquals(moved.size, 4);
});

Deno.test("ownerOf is undefined only when every voter is down", () => {
  assertEquals(ownerOf("job_x", VOTERS, () => true), undefined);
  assertEquals(ownerOf("job_x", VOTERS, (v) => v !== VOTERS[3]), VOTERS[3]);
});
