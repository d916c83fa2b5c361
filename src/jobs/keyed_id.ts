/**
 * The ids of keyed jobs (submits with an Idempotency-Key), and which incarnation of a key is
 * live at a given time. Pure functions: the job table, the replication core and the
 * simulator's checker share them.
 *
 * An incarnation of a key is the job a first submit of that key makes; a later submit within
 * the window names the same job (a retry), a submit after it makes a new incarnation. Each
 * incarnation's id is a hash of the key and the window-sized epoch of its first submit's wall
 * time, `floor(submittedAtMs / windowMs)`. Why that is enough to keep incarnations apart:
 * two submits in one epoch are less than a window apart, so the later one is a retry of the
 * earlier by their own timestamps; a new incarnation is only made once the window of the
 * previous one has passed, which puts it in a later epoch, so under another id. And why a
 * retry still finds its job: the live incarnation of a key at time t was first submitted
 * within a window of t, so its epoch is epoch(t) - 1, epoch(t) or epoch(t) + 1 (the last when
 * the node that took it has a clock ahead): three ids to look at, no index by key needed.
 */

import { createHash } from "node:crypto";
import { assert } from "../lib/assert.ts";
import { KEYED_ID_PREFIX } from "./job_model.ts";

/** The epoch (a window-sized slice of wall time) that `wallMs` falls in. */
export function keyEpoch(wallMs: number, windowMs: number): number {
  assert(windowMs > 0, "the idempotency window is positive");
  return Math.floor(wallMs / windowMs);
}

/** The id of the incarnation of `key` first submitted in `epoch`. */
export function keyedJobId(key: string, epoch: number): string {
  return KEYED_ID_PREFIX +
    createHash("sha256").update(`${epoch}\u0000${key}`).digest("hex").slice(0, 32);
}

/**
 * The ids a live incarnation of `key` at `wallMs` may have, this epoch's first. `idOf` names
 * an incarnation: a job's (`keyedJobId`) or an event's (`keyedEventId`, event_model.ts).
 */
export function candidateIds(
  key: string,
  wallMs: number,
  windowMs: number,
  idOf: (key: string, epoch: number) => string,
): string[] {
  const e = keyEpoch(wallMs, windowMs);
  return [idOf(key, e), idOf(key, e - 1), idOf(key, e + 1)];
}

/**
 * Whether an incarnation first submitted at `submittedAtMs` is live for a submit stamped
 * `wallMs`: they are less than a window apart (either way: the two stamps come from two
 * nodes' clocks, and a confirm round resends an old stamp).
 */
export function isLiveFor(submittedAtMs: number, wallMs: number, windowMs: number): boolean {
  return Math.abs(wallMs - submittedAtMs) < windowMs;
}
