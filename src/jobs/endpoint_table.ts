/**
 * A node's endpoint table: every endpoint of the cluster (docs/endpoints.md), tombstones of
 * deleted ones included until `endpointTombstoneMs` after their delete.
 *
 * Owns in-memory endpoint values only. It applies values through the merge rule of
 * endpoint_model.ts (last writer wins by version), so the order and number of times records
 * arrive do not matter. It never does I/O and never reads a clock (callers pass wall-clock
 * times in). The job table (job_table.ts) owns one and routes `endpoint` and `endpoint-state`
 * records to it, so every path a record takes (live replication, anti-entropy, catch-up pages,
 * snapshots, WAL replay) reaches it through `JobTable.apply`.
 */

import { assert, fail } from "../lib/assert.ts";
import { type EndpointState, mergeEndpoint } from "./endpoint_model.ts";

/** Endpoint list cursors start so (an id follows). */
const CURSOR_PREFIX = "e";

export interface EndpointTableOptions {
  /** A tombstone is dropped this long after its delete's version time. */
  readonly endpointTombstoneMs: number;
}

export class EndpointTable {
  readonly #tombstoneMs: number;
  readonly #byId = new Map<string, EndpointState>();
  #live = 0;
  #changes = 0;

  constructor(options: EndpointTableOptions) {
    assert(options.endpointTombstoneMs >= 0, "endpointTombstoneMs must be >= 0");
    this.#tombstoneMs = options.endpointTombstoneMs;
  }

  /** Endpoints not deleted. */
  get size(): number {
    return this.#live;
  }

  /**
   * Values applied that changed the table, ever: a reader that remembers it knows whether any
   * endpoint changed since (the job store re-reads rate limits for its engine then).
   */
  get changes(): number {
    return this.#changes;
  }

  /** Values held, tombstones included. */
  get held(): number {
    return this.#byId.size;
  }

  /** Merges a value in; returns whether the table changed. */
  apply(incoming: EndpointState): "changed" | "unchanged" {
    const current = this.#byId.get(incoming.id);
    const merged = current === undefined ? incoming : mergeEndpoint(current, incoming);
    if (merged === current) return "unchanged";
    if (current !== undefined && !current.deleted) this.#live--;
    if (!merged.deleted) this.#live++;
    this.#byId.set(incoming.id, merged);
    this.#changes++;
    assert(this.#live >= 0 && this.#live <= this.#byId.size, "live endpoint count out of range");
    return "changed";
  }

  /**
   * An owner's success record: the endpoint's `lastSuccessAtMs` rises to at least `atMs`
   * (the same join `mergeEndpoint` applies to it). Dropped when the endpoint is not held: the
   * record only delays a failing endpoint's disable, and the value it would join arrives
   * with its own success time from whoever holds it.
   */
  raiseLastSuccess(id: string, atMs: number): "changed" | "unchanged" {
    const current = this.#byId.get(id);
    if (current === undefined || current.lastSuccessAtMs >= atMs) return "unchanged";
    this.#byId.set(id, { ...current, lastSuccessAtMs: atMs });
    return "changed";
  }

  /** The value held for `id`, tombstone included (writes build on it). */
  value(id: string): EndpointState | undefined {
    return this.#byId.get(id);
  }

  /** A live (not deleted) endpoint. */
  get(id: string): EndpointState | undefined {
    const s = this.#byId.get(id);
    return s === undefined || s.deleted ? undefined : s;
  }

  /**
   * Live endpoints in id order, at most `limit`, from `cursor` (a `nextCursor` handed out
   * before: "e" and the last id of the page before; anything else starts over). `nextCursor`
   * is absent on the last page.
   */
  list(limit: number, cursor?: string): { items: EndpointState[]; nextCursor?: string } {
    if (!(limit >= 1)) fail(`list limit ${limit} must be >= 1`);
    const after = cursor !== undefined && cursor.startsWith(CURSOR_PREFIX)
      ? cursor.slice(CURSOR_PREFIX.length)
      : undefined;
    const ids = [...this.#byId.keys()].filter((id) => after === undefined || id > after).sort();
    const items: EndpointState[] = [];
    let next: string | undefined;
    for (const id of ids) {
      const s = this.#byId.get(id)!;
      if (s.deleted) continue;
      if (items.length === limit) {
        next = items[items.length - 1]!.id;
        break;
      }
      items.push(s);
    }
    return next === undefined ? { items } : { items, nextCursor: CURSOR_PREFIX + next };
  }

  /** Every value held, tombstones included: what checkpoints write and snapshots ship. */
  values(): IterableIterator<EndpointState> {
    return this.#byId.values();
  }

  /** Drops tombstones past their horizon at wall time `nowWallMs`; returns how many. */
  expire(nowWallMs: number): number {
    let dropped = 0;
    for (const [id, s] of this.#byId) {
      if (s.deleted && s.version.atMs + this.#tombstoneMs <= nowWallMs) {
        this.#byId.delete(id);
        dropped++;
      }
    }
    return dropped;
  }
}
