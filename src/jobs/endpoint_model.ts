/**
 * The replicated endpoint model (docs/endpoints.md): what an endpoint is, its version, the
 * merge rule every replica applies, and the pure step from a client's write to the endpoint's
 * next value.
 *
 * Owns plain data and pure functions only (no I/O, no clock, no randomness): the caller passes
 * the wall time and the minted id in. The endpoint table (endpoint_table.ts) holds the values;
 * the codec (endpoint_codec.ts) moves them between nodes and onto the WAL inside the job
 * store's records.
 *
 * Why last-writer-wins on the whole value: endpoint writes are rare, made by people and
 * scripts, and each `endpoint` record carries the endpoint's whole value, so the join is the
 * maximum under one total order (the version) and needs no per-field bookkeeping. A write's
 * version is stamped past the one it replaces (`nextVersion`), so a write supersedes what its
 * originator saw whatever the wall clocks say.
 */

import { fail } from "../lib/assert.ts";

/** Endpoint ids start so; 24 hex digits follow (minted from the core's RNG). */
export const ENDPOINT_ID_PREFIX = "ep_";

/** Why an endpoint is disabled ("" while it is enabled). */
export type DisabledReason = "" | "manual" | "gone" | "failing";

export const DISABLED_REASONS: readonly DisabledReason[] = ["", "manual", "gone", "failing"];

/**
 * An endpoint value's version: the originator's wall time (raised past the version replaced)
 * and the `endpoint` record's stamp. Compared as (atMs, origin, seq).
 */
export interface EndpointVersion {
  readonly atMs: number;
  readonly origin: string;
  readonly seq: number;
}

/** What a client sets on an endpoint (the API validates every field). */
export interface EndpointFields {
  readonly url: string;
  /** Empty: every event type. */
  readonly eventTypes: readonly string[];
  /** `whsec_` and base64. */
  readonly secret: string;
  readonly description: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Attempts per second across the cluster; 0: no limit. */
  readonly rateLimitPerS: number;
  readonly ordered: boolean;
  readonly disabled: boolean;
  /** "" exactly when enabled. */
  readonly disabledReason: DisabledReason;
}

/** One endpoint as every node holds it. */
export interface EndpointState extends EndpointFields {
  readonly id: string;
  /** Wall-clock epoch ms of the create, at the node that took it. */
  readonly createdAtMs: number;
  /**
   * The secret a rotation replaced ("" when none): deliveries are signed under it too until
   * `previousSecretUntilMs` (docs/endpoints.md, "Secret rotation").
   */
  readonly previousSecret: string;
  /** Wall-clock epoch ms the previous secret stops signing (0 when there is none). */
  readonly previousSecretUntilMs: number;
  /**
   * The latest delivery to this endpoint any owner recorded (`endpoint-health` records; 0:
   * none yet). Joined by maximum, outside the version's last-writer-wins (`mergeEndpoint`).
   */
  readonly lastSuccessAtMs: number;
  /** A tombstone: deleted, kept for `endpointTombstoneMs` so older writes lose to it. */
  readonly deleted: boolean;
  readonly version: EndpointVersion;
}

/** A client's write, already validated. */
export type EndpointWrite =
  | { readonly kind: "create"; readonly fields: EndpointFields }
  /**
   * A create with an Idempotency-Key (endpoint_keyed.ts): its id comes from the key, and it is
   * read from a majority first like an update; `secretGiven` says whether the client chose the
   * secret (a generated one does not count when a retry is compared with what the key made).
   */
  | {
    readonly kind: "create-keyed";
    readonly id: string;
    readonly fields: EndpointFields;
    readonly secretGiven: boolean;
  }
  | { readonly kind: "update"; readonly id: string; readonly patch: Partial<EndpointFields> }
  | { readonly kind: "delete"; readonly id: string }
  /**
   * A new secret (minted by the API when the client gave none); the current one keeps signing
   * for `overlapMs` after the write's version time.
   */
  | {
    readonly kind: "rotate";
    readonly id: string;
    readonly secret: string;
    readonly overlapMs: number;
  }
  /** Written by a job's owner (a 410, a failing window), never by a client. */
  | { readonly kind: "disable"; readonly id: string; readonly reason: "gone" | "failing" };

/** Orders two versions: negative when `a` is older. Distinct records never compare equal. */
export function compareVersions(a: EndpointVersion, b: EndpointVersion): number {
  if (a.atMs !== b.atMs) return a.atMs < b.atMs ? -1 : 1;
  if (a.origin !== b.origin) return a.origin < b.origin ? -1 : 1;
  return a.seq - b.seq;
}

/**
 * The join of two values of one endpoint: the one with the greater version, whole. A maximum
 * under a total order, so commutative, associative and idempotent. Two values under one
 * version are one record (seqs are never reused), with one exception: the deleted mark a
 * snapshot's requester writes over an endpoint its server dropped (catchup_client.ts), the
 * same value with `deleted` set. The tie goes by their canonical text, so the rule stays a
 * total order, and there the mark wins (`deleted` is the first field that differs, and
 * `true` sorts after `false`).
 */
export function mergeEndpoint(a: EndpointState, b: EndpointState): EndpointState {
  if (a.id !== b.id) fail(`merging endpoint ${a.id} with ${b.id}`);
  const byVersion = compareVersions(a.version, b.version);
  const winner = byVersion !== 0
    ? (byVersion > 0 ? a : b)
    : (canonicalText(a) >= canonicalText(b) ? a : b);
  // `lastSuccessAtMs` is a max register beside the last-writer-wins value (a product of two
  // joins is a join): an owner's success record must never undo a client's write racing it,
  // and a client's write built on an older success must not lower it.
  const lastSuccessAtMs = Math.max(a.lastSuccessAtMs, b.lastSuccessAtMs);
  return winner.lastSuccessAtMs === lastSuccessAtMs ? winner : { ...winner, lastSuccessAtMs };
}

/**
 * The value as text with sorted keys: equal values, equal texts. `lastSuccessAtMs` is left
 * out: it is joined by maximum whatever the version (`mergeEndpoint`).
 */
export function canonicalText(s: EndpointState): string {
  const headers = Object.keys(s.headers).sort().map((k) => [k, s.headers[k]!]);
  return JSON.stringify([
    s.id,
    s.url,
    s.eventTypes,
    s.secret,
    s.description,
    headers,
    s.rateLimitPerS,
    s.ordered,
    s.disabled,
    s.disabledReason,
    s.createdAtMs,
    s.previousSecret,
    s.previousSecretUntilMs,
    s.deleted,
    s.version.atMs,
    s.version.origin,
    s.version.seq,
  ]);
}

/**
 * The version a write stamped `stamp` at wall time `wallMs` gets: past the value it replaces,
 * so it wins over what its originator saw even when its clock is behind that value's.
 */
export function nextVersion(
  current: EndpointState | undefined,
  stamp: { readonly origin: string; readonly seq: number },
  wallMs: number,
): EndpointVersion {
  const atMs = current === undefined ? wallMs : Math.max(wallMs, current.version.atMs + 1);
  return { atMs, origin: stamp.origin, seq: stamp.seq };
}

/**
 * The endpoint's next value after `write`, or why it cannot be made: `not_found` for an
 * update or delete of an endpoint this node does not hold (or holds deleted). `newId` is the
 * id a create takes (minted by the caller).
 */
export function applyWrite(
  current: EndpointState | undefined,
  write: EndpointWrite,
  version: EndpointVersion,
  newId: string,
):
  | { ok: true; value: EndpointState }
  | { ok: false; reason: "not_found" }
  | { ok: false; reason: "unchanged" } {
  if (write.kind === "create" || write.kind === "create-keyed") {
    if (current !== undefined) fail(`endpoint id ${newId} minted twice`);
    return {
      ok: true,
      value: {
        ...normalised(write.fields),
        id: newId,
        createdAtMs: version.atMs,
        previousSecret: "",
        previousSecretUntilMs: 0,
        lastSuccessAtMs: 0,
        deleted: false,
        version,
      },
    };
  }
  if (current === undefined || current.deleted) return { ok: false, reason: "not_found" };
  switch (write.kind) {
    case "update": {
      const fields = normalised({ ...fieldsOf(current), ...definedOnly(write.patch) });
      // A secret set by PATCH replaces the old one at once (no overlap: that is a rotation).
      const replaced = fields.secret !== current.secret
        ? { previousSecret: "", previousSecretUntilMs: 0 }
        : {};
      return { ok: true, value: { ...current, ...fields, ...replaced, version } };
    }
    case "delete":
      return { ok: true, value: { ...current, deleted: true, version } };
    case "rotate":
      // To the secret it has already: a retry of a rotation that took effect (its answer was
      // lost, or `no_quorum`). Written again unchanged, like a repeated PATCH; made a second
      // rotation it would make the new secret its own previous one and drop the old secret
      // receivers still verify with.
      if (write.secret === current.secret) return { ok: true, value: { ...current, version } };
      // A second rotation within the overlap drops the older secret: the previous one is the
      // secret just replaced, as Svix does (one overlap at a time).
      return {
        ok: true,
        value: {
          ...current,
          secret: write.secret,
          previousSecret: current.secret,
          previousSecretUntilMs: version.atMs + write.overlapMs,
          version,
        },
      };
    case "disable":
      // Once: an endpoint disabled already (by anyone, for any reason) keeps its reason.
      if (current.disabled) return { ok: false, reason: "unchanged" };
      return {
        ok: true,
        value: { ...current, disabled: true, disabledReason: write.reason, version },
      };
  }
}

/**
 * The secrets a delivery to this endpoint is signed with at wall time `wallMs`: the current
 * one, then the one a rotation replaced while its overlap lasts.
 */
export function secretsAt(s: EndpointState, wallMs: number): string[] {
  const out = s.secret !== "" ? [s.secret] : [];
  if (s.previousSecret !== "" && wallMs < s.previousSecretUntilMs) out.push(s.previousSecret);
  return out;
}

/**
 * Where the endpoint's failing window starts (docs/endpoints.md): the latest of its creation,
 * its last write (a PATCH, a rotation, a re-enable gives it a fresh window) and its last
 * recorded success.
 */
export function failingWindowStartMs(s: EndpointState): number {
  return Math.max(s.createdAtMs, s.version.atMs, s.lastSuccessAtMs);
}

/** The fields a client sets, from a held value. */
export function fieldsOf(s: EndpointState): EndpointFields {
  return {
    url: s.url,
    eventTypes: s.eventTypes,
    secret: s.secret,
    description: s.description,
    headers: s.headers,
    rateLimitPerS: s.rateLimitPerS,
    ordered: s.ordered,
    disabled: s.disabled,
    disabledReason: s.disabledReason,
  };
}

/** A disabled endpoint has a reason ("manual" when none was given); an enabled one has none. */
function normalised(f: EndpointFields): EndpointFields {
  const disabledReason: DisabledReason = f.disabled
    ? (f.disabledReason === "" ? "manual" : f.disabledReason)
    : "";
  return { ...f, disabledReason };
}

function definedOnly(patch: Partial<EndpointFields>): Partial<EndpointFields> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
}

/** Whether an endpoint takes events of `type` (the fan-out rule of docs/endpoints.md). */
export function wantsEvent(s: EndpointState, type: string): boolean {
  return !s.deleted && !s.disabled && (s.eventTypes.length === 0 || s.eventTypes.includes(type));
}
