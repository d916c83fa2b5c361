/**
 * Creates with an `Idempotency-Key` (docs/endpoints.md, "Idempotent creates"): the endpoint's
 * id is a hash of the key, so a client retrying a create after a 503 names the same endpoint
 * instead of making a second one. The create reads that id from a majority first (as a PATCH
 * does, endpoint_reads.ts); what it finds decides, here, what the retry gets.
 *
 * Owns the key-to-id rule and the comparison of a retry with the endpoint its key made. Pure:
 * no I/O, no clock.
 *
 * Why no epoch, unlike a keyed job's id (keyed_id.ts): a job's key must be free again after
 * its window, since a job finishes and is forgotten; an endpoint lives until deleted, and one
 * id per key needs one read, where an epoch's three candidates would need three (a retry across
 * an epoch boundary that read only one would make a second endpoint). So a key names its
 * endpoint for as long as the cluster holds it: while it lives, and its tombstone
 * (`endpointTombstoneMs`, 30 days) after a DELETE.
 */

import { createHash } from "node:crypto";
import {
  applyWrite,
  canonicalText,
  ENDPOINT_ID_PREFIX,
  type EndpointFields,
  type EndpointState,
  fieldsOf,
} from "./endpoint_model.ts";

/** The id of the endpoint a create with Idempotency-Key `key` makes: `ep_` and 24 hex digits. */
export function keyedEndpointId(key: string): string {
  return ENDPOINT_ID_PREFIX +
    createHash("sha256").update(`endpoint\u0000${key}`).digest("hex").slice(0, 24);
}

/**
 * What a keyed create gets when its key's endpoint is already held (`current`, the newest a
 * majority holds): `same` when `fields` are what it holds (its secret compared only when the
 * client gave one: a generated secret differs on every try), else a conflict (409), also for
 * an endpoint deleted since.
 */
export function keyedCreateAnswer(
  current: EndpointState,
  fields: EndpointFields,
  secretGiven: boolean,
): "same" | "different" | "deleted" {
  if (current.deleted) return "deleted";
  const asked = applyWrite(
    undefined,
    { kind: "create", fields: secretGiven ? fields : { ...fields, secret: current.secret } },
    current.version,
    current.id,
  );
  if (!asked.ok) return "different";
  // The client's fields only: what the nodes keep beside them (the last success, a rotation's
  // previous secret) moves on its own and is no part of the body a retry repeats.
  const comparable: EndpointState = { ...current, ...fieldsOf(asked.value) };
  return canonicalText(comparable) === canonicalText(current) ? "same" : "different";
}
