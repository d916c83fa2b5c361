/**
 * Whether an ownership change preceded a duplicate, on hand-made observations: a death, a
 * departure or a return of a node that could own the job, in any node's view, inside the
 * duplicate's window; not a suspicion, not a node ranked below every node that attempted it,
 * not a change outside the window.
 */

import { assertEquals } from "../assert.ts";
import {
  type Attempt,
  DUPLICATE_LOOKBACK_MS,
  type MemberNotice,
  ownershipChanged,
} from "../../src/chaos/verdicts.ts";

const PREFS = ["n1", "n2", "n3", "n4", "n5"];
const receipt = { at: 100_000, duplicates: 1 };
const tries: Attempt[] = [
  { node: "n2", kind: "first", startedAtMs: 100_000, latencyMs: 5, outcome: "success" },
  { node: "n2", kind: "retry", startedAtMs: 101_000, latencyMs: 5, outcome: "success" },
];
const notice = (event: string, subject: string, atMs: number): MemberNotice => ({
  observer: "n4",
  subject,
  event,
  atMs,
});

Deno.test("ownershipChanged: deaths, departures and returns of a possible owner in the window", () => {
  assertEquals(ownershipChanged(receipt, tries, PREFS, []), false);
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n1", 99_000)]),
    true,
  );
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-left", "n2", 100_500)]),
    true,
  );
  // A suspicion moves no job.
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-suspect", "n1", 99_000)]),
    false,
  );
  // A node ranked below the only node that attempted it owns nothing here.
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n5", 99_000)]),
    false,
  );
  // Outside the window.
  const early = 100_000 - DUPLICATE_LOOKBACK_MS - 1;
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n1", early)]),
    false,
  );
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-dead", "n1", 103_000)]),
    false,
  );
  // A return counts only after the same observer held it dead (a death before the window).
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [
      notice("member-dead", "n1", early),
      notice("member-alive", "n1", 99_500),
    ]),
    true,
  );
  assertEquals(
    ownershipChanged(receipt, tries, PREFS, [notice("member-alive", "n1", 99_500)]),
    false,
  );
});
