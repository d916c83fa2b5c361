/**
 * Job limits: what one job may hold (src/jobs/job_limits.ts enforces them, the job codec
 * decodes by them, the API and the UDP client path refuse past them)
 *
 * Part of hookd's configuration (see src/config.ts): each default with its unit in its name
 * and the reason for its value, and the validator of this area's relations.
 */

/**
 * The bounds of one job's fields, in the units the job codec counts (UTF-8 bytes of each
 * string, numbers of items). They are part of the wire and WAL formats: every node must agree
 * on them, so they are constants, not per-node options. Each is enforced in three places from
 * this one object: the API and the UDP client path refuse a submit past one (400 naming the
 * field and the limit), the encoders assert them (a job past one is our bug, caught where it is
 * made), and the decoders refuse bytes past them (hostile or corrupt input). Before they were
 * one object, the API counted a URL in characters and the codec in bytes: a URL of 5,000 "é"
 * passed the API, and every peer then dropped the replication message carrying it.
 *
 * Per-node options may only be stricter: `delivery.payloadBytesMax`,
 * `delivery.jobHeadersBytesMax` and `api.idempotencyKeyCharsMax` are checked against these.
 */
export const JOB_LIMITS = Object.freeze({
  /**
   * Job id, bytes. Ids are minted by hookd (hex, or a hash of the idempotency key: 64 chars at
   * most), so this only stops hostile bytes; it also fits the `webhook-id` header.
   */
  idBytesMax: 128,
  /**
   * Target URL, UTF-8 bytes: the common 8 KiB request-line limit of servers. In bytes, not
   * characters, because the codec stores UTF-8 and a receiver's server counts bytes too.
   */
  urlBytesMax: 8192,
  /**
   * Payload, UTF-8 bytes: the ceiling `delivery.payloadBytesMax` (the limit a node enforces,
   * 1 MiB by default) may be raised to. It bounds what a decoder allocates for one field.
   */
  payloadBytesMax: 16 * 1024 * 1024,
  /**
   * A job's own headers, count. 256 is far above what a webhook needs (a tenant, a trace id),
   * and bounds the per-header framing (8 bytes each) a record carries.
   */
  headersMax: 256,
  /**
   * One header name or one header value, UTF-8 bytes. Twice `delivery.jobHeadersBytesMax`
   * (counted in characters, Latin-1 values: at most 2 UTF-8 bytes each), so any job the
   * delivery check allows fits.
   */
  headerBytesMax: 16 * 1024,
  /** All header names and values of one job together, UTF-8 bytes (same reason). */
  headersBytesMax: 16 * 1024,
  /**
   * Signing secrets of one job (current and old ones during rotation); the delivery check
   * allows 8, the codec's u8 count could carry 255.
   */
  secretsMax: 16,
  /**
   * One signing secret, UTF-8 bytes. A Standard Webhooks secret is `whsec_` and the base64 of
   * at most 64 bytes (94 characters); 1 KiB leaves room for a longer scheme later.
   */
  secretBytesMax: 1024,
  /**
   * Idempotency key, bytes (printable ASCII, so characters). The API's own bound
   * (`api.idempotencyKeyCharsMax`, 256) may not exceed it.
   */
  idempotencyKeyBytesMax: 1024,
});
