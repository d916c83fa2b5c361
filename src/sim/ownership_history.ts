/**
 * Who owned a job, in every node's view, over a simulated run: replays the membership events
 * each node life reported (`MemberLog`) to tell whether a duplicate delivery followed an
 * ownership change. An ownership change, for one job in a time window, is any of:
 * - a ready node life whose owner of the job changed in the window (it held a voter ranked
 *   above the owner dead or left, or alive again), even for one event only;
 * - two ready node lives that disagree on the owner at some instant of the window (one holds
 *   the other dead while the other does not know: both deliver).
 * A life counts from the moment its store caught up (it delivers nothing before), with the
 * view its events built until then; a crashed life stops counting when it ended. As the job
 * store does, a life leaves a voter its membership has not reported its jobs until the grace
 * after the life's start (`unheardVoterGraceMs`), then holds it dead until it hears of it.
 *
 * Owns the replay only; pure over the run's records (no node is touched).
 */

import { ownerOf } from "../jobs/preference.ts";
import type { LifeLog, MemberLog } from "./sim_history.ts";

interface LifeView {
  readonly node: string;
  /** The voter address of this node (never down in its own view). */
  readonly self: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly readyAtMs: number;
  /** This life's events, in time order. */
  readonly events: MemberLog[];
}

export class OwnershipHistory {
  readonly #voters: readonly string[];
  readonly #lives: LifeView[] = [];
  readonly #unheardGraceMs: number;

  /** `voters[i]` is the address of `nodeIds[i]`. */
  constructor(
    voters: readonly string[],
    nodeIds: readonly string[],
    lives: readonly LifeLog[],
    readyLog: ReadonlyArray<{ node: string; life: number; atMs: number }>,
    memberLog: readonly MemberLog[],
    /** The stores' `unheardVoterGraceMs`. */
    unheardGraceMs: number,
  ) {
    this.#voters = voters;
    this.#unheardGraceMs = unheardGraceMs;
    for (const l of lives) {
      const ready = readyLog.find((r) => r.node === l.node && r.life === l.life);
      if (ready === undefined) continue; // never caught up: it delivered nothing
      this.#lives.push({
        node: l.node,
        self: voters[nodeIds.indexOf(l.node)] ?? l.node,
        startMs: l.startMs,
        endMs: l.endMs ?? Infinity,
        readyAtMs: ready.atMs,
        events: memberLog.filter((e) => e.node === l.node && e.life === l.life),
      });
    }
  }

  /** Whether the ownership of `jobId` changed, or was disputed, during [fromMs, toMs]. */
  changed(jobId: string, fromMs: number, toMs: number): boolean {
    const lives = this.#lives.filter((l) => l.readyAtMs <= toMs && l.endMs >= fromMs);
    if (lives.length === 0) return false;
    // Instants where some view may change: the window's start, every event and every
    // readiness inside it.
    const instants = new Set<number>([fromMs]);
    for (const l of lives) {
      if (l.readyAtMs > fromMs) instants.add(l.readyAtMs);
      for (const e of l.events) if (e.atMs > fromMs && e.atMs <= toMs) instants.add(e.atMs);
    }
    // Every event on its own: a stale `dead` and its refutation read in one instant (a node
    // draining its backlog after a stall) still moved the job for that instant, long enough
    // for an attempt to start.
    for (const l of lives) {
      const view = new LifeReplay(l, this.#unheardGraceMs);
      let owner: string | undefined;
      let counting = false;
      for (const e of l.events) {
        if (e.atMs > toMs || e.atMs > l.endMs) break;
        if (!counting && e.atMs > Math.max(fromMs, l.readyAtMs)) {
          counting = true;
          owner = view.ownerOf(jobId, this.#voters, e.atMs);
        }
        view.apply(e);
        if (counting && view.ownerOf(jobId, this.#voters, e.atMs) !== owner) return true;
      }
      const graceEndsMs = l.startMs + this.#unheardGraceMs;
      if (graceEndsMs > fromMs && graceEndsMs <= toMs) instants.add(graceEndsMs);
    }
    const sorted = [...instants].sort((a, b) => a - b);
    const last = new Map<LifeView, string | undefined>();
    for (const t of sorted) {
      const owners = new Set<string | undefined>();
      for (const l of lives) {
        if (t < l.readyAtMs || t > l.endMs) continue;
        const owner = this.#ownerAt(l, jobId, t);
        owners.add(owner);
        if (last.has(l) && last.get(l) !== owner) return true;
        last.set(l, owner);
      }
      if (owners.size > 1) return true;
    }
    return false;
  }

  #ownerAt(l: LifeView, jobId: string, atMs: number): string | undefined {
    const view = new LifeReplay(l, this.#unheardGraceMs);
    for (const e of l.events) {
      if (e.atMs > atMs) break;
      view.apply(e);
    }
    return view.ownerOf(jobId, this.#voters, atMs);
  }
}

/**
 * One life's voter view replayed as its store builds it (job_store.ts `membershipChanged`): a
 * voter its membership has not reported keeps its jobs (`unheard`) until the grace after the
 * life's start, then is gone; once reported, it is gone while held dead or left.
 */
class LifeReplay {
  readonly #self: string;
  readonly #unheardUntilMs: number;
  readonly #heard = new Set<string>();
  readonly #gone = new Set<string>();

  constructor(life: LifeView, unheardGraceMs: number) {
    this.#self = life.self;
    this.#unheardUntilMs = life.startMs + unheardGraceMs;
  }

  apply(e: MemberLog): void {
    this.#heard.add(e.subject);
    if (e.type === "member-dead" || e.type === "member-left") this.#gone.add(e.subject);
    else this.#gone.delete(e.subject);
  }

  ownerOf(jobId: string, voters: readonly string[], atMs: number): string | undefined {
    return ownerOf(jobId, voters, (v) =>
      v !== this.#self &&
      (this.#gone.has(v) || (!this.#heard.has(v) && atMs >= this.#unheardUntilMs)));
  }
}
