/**
 * Endpoint limits: what one endpoint may hold (docs/endpoints.md). The API refuses an endpoint
 * past one (400 naming the field), the endpoint codec asserts them when it encodes and refuses
 * bytes past them when it decodes.
 *
 * Part of hookd's configuration (see src/config.ts). Like `JOB_LIMITS`, they are part of the
 * wire and WAL formats, so every node must agree on them: constants, not per-node options.
 * An endpoint's URL, headers and secret use `JOB_LIMITS`' bounds, since its jobs carry them.
 */
export const ENDPOINT_LIMITS = Object.freeze({
  /** Endpoint id, bytes: `ep_` and 24 hex digits are minted; this stops hostile bytes. */
  idBytesMax: 64,
  /** Event types one endpoint subscribes to: far above a product's event catalogue. */
  eventTypesMax: 256,
  /**
   * One event type, characters (printable ASCII without spaces, e.g. `invoice.paid`): Svix
   * allows 256; 128 is plenty and keeps a job's routing data small.
   */
  eventTypeCharsMax: 128,
  /** The free-text description, UTF-8 bytes. */
  descriptionBytesMax: 4096,
  /**
   * `rate_limit_per_s`, attempts per second, across the cluster. A receiver taking more than
   * this wants no limit (0).
   */
  rateLimitPerSMax: 100_000,
  /**
   * Endpoints one cluster holds (tombstones not counted); a create past it is refused. Every
   * node holds every endpoint in memory and walks them for a list page and for each event's
   * fan-out, so the bound keeps both small.
   */
  endpointsMax: 10_000,
  /**
   * One endpoint's value encoded (every field; the version's origin address not counted, so
   * every node measures a value alike), bytes: a create or PATCH past it is refused (400). The
   * per-field bounds alone allow about 53 KB (an 8 KiB URL, 256 event types of 128 characters,
   * 8 KiB of headers, a 4 KiB description); times `endpointsMax` that was about 0.5 GB on every
   * node. 16 KiB still takes any one field at its bound, and bounds the whole table at about
   * 160 MB (a real endpoint is a few hundred bytes).
   */
  endpointBytesMax: 16 * 1024,
  /** Endpoints a list page returns by default, and at most. */
  listLimitDefault: 100,
  listLimitMax: 1000,
});
